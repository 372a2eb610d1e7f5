"""How the nova lane judges its runs: per-file counts, the comparison of the
two fixtures, and when CI's subset counts a failure as a regression."""

from __future__ import annotations

from tests.nova import lane

A = "nova.tests.functional.test_report_client.SchedulerReportClientTests.test_a"
B = "nova.tests.functional.test_report_client.SchedulerReportClientTests.test_b"
C = "nova.tests.functional.libvirt.test_reshape.VGPUReshapeTests.test_c"
FILES = ("test_report_client", "libvirt.test_reshape")


def outcome(**status: str) -> lane.Outcome:
    ids = {"a": A, "b": B, "c": C}
    return lane.Outcome(status={ids[k]: v for k, v in status.items()})


def test_counts_per_file_and_marks_unequal_files():
    ours = outcome(a="success", b="fail", c="skip")
    theirs = outcome(a="success", b="success", c="skip")
    rows = lane.table(FILES, {"allotment": ours, "upstream": theirs}).splitlines()
    assert "| test_report_client | 1/1/0 | 2/0/0 | **no** |" in rows
    assert "| libvirt.test_reshape | 0/0/1 | 0/0/1 | yes |" in rows


def test_a_regression_is_a_test_only_upstream_passes():
    ours = outcome(a="fail", b="fail", c="xfail")
    theirs = outcome(a="success", b="fail", c="xfail")
    assert lane.regressions({"allotment": ours, "upstream": theirs}) == [A]
    # A test allotment never ran counts too.
    assert lane.regressions({"allotment": outcome(a="success"),
                             "upstream": outcome(a="success", c="success")}) == [C]


def test_file_of_needs_the_whole_module_name():
    assert lane.file_of(A, FILES) == "test_report_client"
    assert lane.file_of(
        "nova.tests.functional.test_report_client_extra.T.test_x", FILES) is None


def _fake_runs(monkeypatch, ours: lane.Outcome, theirs: lane.Outcome,
               again: lane.Outcome | None = None) -> list:
    calls = []

    def run(kind, mode, files, *, tests=None, concurrency=2):
        calls.append((kind, tests))
        if kind == "upstream":
            return theirs
        return ours if tests is None else (again or ours)

    monkeypatch.setattr(lane, "run", run)
    return calls


def test_subset_failure_that_upstream_passes_fails_ci(monkeypatch, capsys):
    calls = _fake_runs(monkeypatch, outcome(a="success", b="fail", c="success"),
                       outcome(b="success"))
    assert lane._subset("eventlet", FILES, 2) == 1
    assert calls == [("allotment", None), ("allotment", [B]), ("upstream", [B])]
    assert f"REGRESSION: {B}" in capsys.readouterr().out


def test_subset_failure_that_passes_when_run_again_does_not_fail_ci(monkeypatch):
    calls = _fake_runs(monkeypatch, outcome(a="success", b="fail", c="success"),
                       outcome(b="success"), again=outcome(b="success"))
    assert lane._subset("eventlet", FILES, 2) == 0
    assert calls == [("allotment", None), ("allotment", [B])]


def test_subset_failure_upstream_shares_does_not_fail_ci(monkeypatch, capsys):
    _fake_runs(monkeypatch, outcome(a="success", b="fail", c="success"), outcome(b="fail"))
    assert lane._subset("eventlet", FILES, 2) == 0
    assert f"fails on upstream too: {B}" in capsys.readouterr().out


def test_subset_without_any_test_of_a_file_fails_ci(monkeypatch, capsys):
    calls = _fake_runs(monkeypatch, outcome(a="success", b="success"), outcome())
    assert lane._subset("eventlet", FILES, 2) == 1
    assert calls == [("allotment", None)]
    assert "no test of libvirt.test_reshape ran" in capsys.readouterr().out
