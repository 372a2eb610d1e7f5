"""Scratch databases for the adoption tests."""

from __future__ import annotations

import pytest

from tests.harness import backends


@pytest.fixture
def fresh_database(request, tmp_path):
    """A function making empty databases on one backend, dropped afterwards."""
    made: list[tuple[str, str]] = []

    def make(backend: str) -> str:
        scratch = tmp_path / f"db{len(made)}"
        scratch.mkdir()
        url = backends.create_database(backend, scratch, "allotment_adoption")
        made.append((backend, url))
        return url

    yield make
    for backend, url in made:
        backends.drop_database(backend, url)

