"""upstream Placement's import name, served by allotment.

Only thin shims live here; everything they do is allotment's.
"""
