"""The in-process Placement fixture nova's functional tests use, serving
allotment instead of upstream Placement.

The ``placement`` package beside this one gives it the import paths nova's
tests name (``placement.tests.functional.fixtures.placement``,
``placement.tests.fixtures``, ``placement.conf``).  The distribution is kept
apart from allotment so that installing allotment never installs a package
called ``placement``.
"""
