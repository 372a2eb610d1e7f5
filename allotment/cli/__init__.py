"""``allotment``: the operator's command line, on :mod:`allotment.client`."""
