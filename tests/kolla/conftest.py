"""The kolla lane reaches Keystone through the keystone tests' fixture."""

from tests.keystone.conftest import keystone  # noqa: F401
