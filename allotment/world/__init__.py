"""The provider world each API process keeps in memory, kept current by the
change feed.

``model`` holds the world (an engine snapshot plus what listings need) and
applies changes to it; ``sync`` reads the feed and decides what to apply.
Requests get the world through :func:`allotment.world.sync.current`, which
first brings it up to date with everything committed before the request
began.
"""
