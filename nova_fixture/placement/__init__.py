"""The import paths nova's functional tests use for their Placement fixture,
served by allotment (see ``allotment_nova_fixture``).  Not upstream
Placement: only what those tests import is here."""
