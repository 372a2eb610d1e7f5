"""The fault lab: database clusters, haproxy and allotment API hosts, each in
a network namespace of its own on this machine, faults injected between and
into them, and a checker that decides afterwards from every answer given
whether anything was lost, over-allocated or served stale.

``scripts/fault-lab`` runs it on demand; ``test_campaign.py`` runs one of
every fault class in the test suite.  Needs root (namespaces, nftables).
"""
