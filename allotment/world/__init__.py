"""The provider world each API process keeps in memory, kept current by the
change feed.

``model`` holds the world (an engine snapshot plus what listings need) and
applies changes to it; ``cache`` keeps what requests make of it; ``sync``
asks the feed (``allotment.storage.cursor``) what changed and applies it;
``preemptible`` keeps the world's preemptible consumers, read again where
the world moved.
Requests get the world through :meth:`allotment.world.sync.Replica.current`
(the runtime owns the replica), which first brings it up to date with
everything committed before the request began.
"""
