from tests.cli.conftest import live  # noqa: F401 - the same seeded live server
