"""The idle-floor benchmark runs and prints one row per request."""

from __future__ import annotations

from benchmarks import idle_floor


def test_a_tiny_run_prints_the_table(capsys):
    assert idle_floor.main(["--hosts", "3", "--repeat", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| request (p50 ms) | back to back | sleep 15 ms")
    rows = {line.split(" | ")[0].lstrip("| ") for line in lines[2:]}
    assert rows == {"bare socket loop (no HTTP server)", "GET /", "flat: in_tree=<one root>",
                    "GET /resource_providers/{uuid}",
                    "GET /resource_providers/{uuid}/usages",
                    "GET /resource_providers?in_tree=<root>"}
    for line in lines[2:]:
        cells = line.strip("| ").split(" | ")[1:]
        assert len(cells) == 4 and all(float(c) > 0 for c in cells)
