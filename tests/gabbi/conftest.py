"""Servers for the gabbi lane, started once per backend and test process."""

from __future__ import annotations

import pytest

from tests.gabbi.servers import Backend


@pytest.fixture(scope="session")
def gabbi_backends(tmp_path_factory):
    made: dict[str, Backend] = {}

    def get(name: str) -> Backend:
        if name not in made:
            made[name] = Backend(name, tmp_path_factory.mktemp(f"gabbi-{name}"))
        return made[name]

    yield get
    for backend in made.values():
        backend.stop()
