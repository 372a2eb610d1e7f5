"""Upstream Placement's own functional suite, run over HTTP against allotment."""
