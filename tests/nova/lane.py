"""nova's own functional tests, run against allotment and against upstream.

nova gates every Placement change on its functional tests, which run
Placement in-process through ``placement.tests.functional.fixtures``.  This
lane installs nova (from its sdist on PyPI, which carries the tests) into two
virtual environments under ``.upstream/nova/`` (git-ignored): one with
allotment and its fixture distribution (``nova_fixture/``) in place of
upstream Placement, one with openstack-placement 16.0.0, the baseline.  It
runs the same test files in both and compares, file by file.

Only the standard library is used here: the lane runs from any ``python3``.
``scripts/nova-functional`` is its command line.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

NOVA_VERSION = "34.0.0"
PLACEMENT_VERSION = "16.0.0"
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONSTRAINTS = HERE / "constraints.txt"
KINDS = ("allotment", "upstream")
MODES = ("eventlet", "threading")

# The placement-heavy files, as modules under nova.tests.functional.
FILES = (
    "test_report_client",
    "test_servers_provider_tree",
    "libvirt.test_reshape",
    "libvirt.test_shared_resource_provider",
    "libvirt.test_pci_in_placement",
    "libvirt.test_vgpu",
    "compute.test_resource_tracker",
    "test_nova_manage",
    "test_servers_resource_request",
    "libvirt.test_numa_servers",
    "test_aggregates",
    "test_scheduler",
    # Builds the database fixture and the service fixture separately.
    "regressions.test_bug_1679750",
)
# What CI runs (scripts/test), a few minutes on two cores: the report
# client against the service, reshapes of a booted host, and the database
# and service fixtures built apart.  With native threads nova hands the
# fixture a WAL file of its own; the two server-booting files cover that.
SUBSET = {
    "eventlet": ("test_report_client", "libvirt.test_reshape",
                 "regressions.test_bug_1679750"),
    "threading": ("libvirt.test_reshape", "regressions.test_bug_1679750"),
}
# nova's test requirements that only lint or measure.
_SKIPPED_REQUIREMENTS = ("hacking", "bandit", "coverage")


def base() -> Path:
    return Path(os.environ.get("ALLOTMENT_NOVA_DIR", ROOT / ".upstream" / "nova"))


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kwargs)


def _pip(venv: Path) -> list[str]:
    return [str(venv / "bin" / "python"), "-m", "pip"]


# -- installing --------------------------------------------------------------

def _sdist(venv: Path) -> Path:
    """nova's sdist (the wheel has no tests), downloaded once."""
    target = base() / f"nova-{NOVA_VERSION}.tar.gz"
    if not target.exists():
        _run([*_pip(venv), "download", "-q", "--no-deps", "--no-binary", ":all:",
              "-d", str(base()), f"nova=={NOVA_VERSION}"])
    return target


def _source(kind: str, venv: Path) -> Path:
    """A copy of nova's source tree for one venv: its editable install and
    stestr's repository of results are then the venv's own."""
    tree = base() / kind / f"nova-{NOVA_VERSION}"
    if not (tree / "setup.cfg").exists():
        with tarfile.open(_sdist(venv)) as archive:
            archive.extractall(base() / kind, filter="data")
    return tree


def _test_requirements(tree: Path) -> list[str]:
    wanted = []
    for line in (tree / "test-requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        name = re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0]
        if line and name.lower() not in _SKIPPED_REQUIREMENTS:
            wanted.append(line)
    return wanted


def _stamp(kind: str) -> str:
    parts = [NOVA_VERSION, PLACEMENT_VERSION, CONSTRAINTS.read_text()]
    if kind == "allotment":
        parts += [(ROOT / "pyproject.toml").read_text(),
                  (ROOT / "nova_fixture" / "pyproject.toml").read_text()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def ensure(kind: str) -> tuple[Path, Path]:
    """(venv, source tree) for ``kind``, installed if missing or out of date.

    allotment and its fixture are installed editable: the lane always runs
    the working tree's code.
    """
    venv = base() / kind / "venv"
    marker = venv / ".lane"
    stamp = _stamp(kind)
    base().mkdir(parents=True, exist_ok=True)
    with open(base() / f".{kind}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tree = base() / kind / f"nova-{NOVA_VERSION}"
        if marker.exists() and marker.read_text() == stamp and (tree / "setup.cfg").exists():
            return venv, tree
        if not (venv / "bin" / "python").exists():
            _run([sys.executable, "-m", "venv", str(venv)])
        tree = _source(kind, venv)
        install = [*_pip(venv), "install", "-q", "-c", str(CONSTRAINTS),
                   "-e", str(tree), "-r", str(tree / "requirements.txt"),
                   *_test_requirements(tree)]
        if kind == "allotment":
            install += ["-e", str(ROOT), "-e", str(ROOT / "nova_fixture")]
        else:
            install += [f"openstack-placement=={PLACEMENT_VERSION}"]
        _run(install)
        marker.write_text(stamp)
    return venv, tree


def _check_fixture(kind: str, venv: Path) -> None:
    """The ``placement`` nova imports is the one this venv is meant to have."""
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import placement.tests.functional.fixtures.placement as m; print(m.__file__)"],
        check=True, capture_output=True, text=True).stdout.strip()
    ours = where.startswith(str(ROOT / "nova_fixture"))
    if ours != (kind == "allotment"):
        raise SystemExit(f"{kind} venv imports the wrong Placement fixture: {where}")


# -- running -----------------------------------------------------------------

@dataclass
class Outcome:
    """Per test id, what became of it in one run."""

    status: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0

    def by_file(self, files: tuple[str, ...]) -> dict[str, dict[str, int]]:
        counts = {f: {"passed": 0, "failed": 0, "skipped": 0} for f in files}
        for test, status in self.status.items():
            f = file_of(test, files)
            if f is not None:
                counts[f][_bucket(status)] += 1
        return counts

    def to_json(self) -> dict:
        return {"status": self.status, "seconds": self.seconds, "wall": self.wall}


def file_of(test: str, files: tuple[str, ...]) -> str | None:
    for f in files:
        if test.startswith(f"nova.tests.functional.{f}."):
            return f
    return None


def _bucket(status: str) -> str:
    if status in ("success", "xfail"):
        return "passed"
    if status == "skip":
        return "skipped"
    return "failed"


# Reads stestr's subunit stream (in the venv, which has python-subunit) and
# prints {test id: [status, seconds]}; workers' stray output is skipped.
_PARSE = """
import json, sys
import subunit, testtools
found = {}
def on_test(test):
    if test["id"] and test["status"] != "exists":
        stamps = [t for t in test["timestamps"] if t is not None]
        seconds = (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else 0.0
        found[test["id"]] = [test["status"], seconds]
result = testtools.StreamToDict(on_test)
result.startTestRun()
subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name="stdout").run(result)
result.stopTestRun()
json.dump(found, sys.stdout)
"""


def _selector(files: tuple[str, ...]) -> str:
    names = "|".join(re.escape(f) for f in files)
    return rf"^nova\.tests\.functional\.({names})\."


def run(kind: str, mode: str, files: tuple[str, ...], *, tests: list[str] | None = None,
        concurrency: int = 2) -> Outcome:
    """Run ``files`` (or exactly ``tests``) of nova's functional tests in
    ``kind``'s venv, with eventlet or native threads (``mode``)."""
    venv, tree = ensure(kind)
    _check_fixture(kind, venv)
    env = dict(os.environ,
               OS_STDOUT_CAPTURE="1", OS_STDERR_CAPTURE="1", OS_TEST_TIMEOUT="160",
               NOVA_RAISE_ON_GREENLET_LEAK="True",
               OS_NOVA_DISABLE_EVENTLET_PATCHING="True" if mode == "threading" else "False")
    env.pop("PYTHONPATH", None)
    cmd = [str(venv / "bin" / "python"), "-m", "stestr",
           "--test-path=./nova/tests/functional", "run", "--subunit",
           f"--concurrency={concurrency}"]
    if tests:
        listing = venv / "lane-tests.txt"
        listing.write_text("".join(f"^{re.escape(t)}$\n" for t in tests))
        cmd += ["--include-list", str(listing)]
    else:
        cmd.append(_selector(files))
    started = time.monotonic()
    stream = subprocess.run(cmd, cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, check=False).stdout
    wall = time.monotonic() - started
    found = subprocess.run([str(venv / "bin" / "python"), "-c", _PARSE], input=stream,
                           stdout=subprocess.PIPE, check=True).stdout
    outcome = Outcome(wall=wall)
    for test, (status, seconds) in json.loads(found).items():
        outcome.status[test] = status
        outcome.seconds[test] = seconds
    if not outcome.status:
        raise SystemExit(f"no test ran in the {kind} venv ({mode}); see "
                         f"`cd {tree} && {venv}/bin/python -m stestr last`")
    return outcome


# -- reporting ---------------------------------------------------------------

def table(files: tuple[str, ...], outcomes: dict[str, Outcome]) -> str:
    """Per file: passed/failed/skipped for each fixture, and whether equal."""
    counts = {kind: o.by_file(files) for kind, o in outcomes.items()}
    kinds = list(outcomes)
    lines = ["| file | " + " | ".join(f"{k} (pass/fail/skip)" for k in kinds)
             + (" | same |" if len(kinds) > 1 else " |"),
             "|---" * (len(kinds) + 1 + (len(kinds) > 1)) + "|"]
    for f in files:
        cells = ["{passed}/{failed}/{skipped}".format(**counts[k][f]) for k in kinds]
        row = f"| {f} | " + " | ".join(cells)
        if len(kinds) > 1:
            row += " | " + ("yes" if len(set(cells)) == 1 else "**no**")
        lines.append(row + " |")
    return "\n".join(lines)


def regressions(outcomes: dict[str, Outcome]) -> list[str]:
    """Tests upstream's fixture passes that allotment's does not."""
    ours, theirs = outcomes["allotment"].status, outcomes["upstream"].status
    return sorted(t for t, s in theirs.items()
                  if _bucket(s) == "passed" and _bucket(ours.get(t, "missing")) != "passed")


def _failed(outcome: Outcome) -> list[str]:
    return sorted(t for t, s in outcome.status.items() if _bucket(s) == "failed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/nova-functional",
        description="Run nova's placement-heavy functional tests against allotment's "
        "Placement fixture and upstream's, and compare them file by file.")
    parser.add_argument("--subset", action="store_true",
                        help="CI's short subset: allotment's fixture only; a failure "
                        "is re-run on upstream's and counts only if it passes there")
    parser.add_argument("--mode", choices=(*MODES, "both"), default="eventlet",
                        help="eventlet monkey-patching (nova's default), native "
                        "threads, or both (default: eventlet)")
    parser.add_argument("--fixture", choices=(*KINDS, "both"), default="both",
                        help="run on one fixture only (default: both, compared)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write every test's status here")
    parser.add_argument("files", nargs="*", help="modules under nova.tests.functional "
                        "(default: the placement-heavy ones)")
    args = parser.parse_args(argv)
    modes = MODES if args.mode == "both" else (args.mode,)
    report: dict = {}
    worst = 0
    for mode in modes:
        files = tuple(args.files) or (SUBSET[mode] if args.subset else FILES)
        if args.subset:
            worst = max(worst, _subset(mode, files, args.concurrency))
            continue
        outcomes = {}
        for kind in KINDS if args.fixture == "both" else (args.fixture,):
            outcomes[kind] = run(kind, mode, files, concurrency=args.concurrency)
            # Kept as soon as it is known: a run takes a while.
            (base() / f"last-{kind}-{mode}.json").write_text(
                json.dumps(outcomes[kind].to_json(), indent=1, sort_keys=True))
        report[mode] = {k: o.to_json() for k, o in outcomes.items()}
        print(f"\n## {mode}: nova {NOVA_VERSION}, allotment's fixture against "
              f"openstack-placement {PLACEMENT_VERSION}'s\n")
        print(table(files, outcomes))
        for kind, o in outcomes.items():
            print(f"\n{kind}: {len(o.status)} tests in {o.wall:.0f} s")
        if len(outcomes) == 1:
            continue
        lost = regressions(outcomes)
        gained = sorted(set(_failed(outcomes["upstream"])) - set(_failed(outcomes["allotment"])))
        print("\nresults equal" if not lost and not gained else "\nresults differ")
        for test in lost:
            print(f"  passes on upstream, not on allotment: {test}")
        for test in gained:
            print(f"  fails on upstream only: {test}")
        if lost:
            worst = 1
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True))
    return worst


def _subset(mode: str, files: tuple[str, ...], concurrency: int) -> int:
    ours = run("allotment", mode, files, concurrency=concurrency)
    print(table(files, {"allotment": ours}))
    print(f"allotment ({mode}): {len(ours.status)} tests in {ours.wall:.0f} s")
    empty = [f for f, counts in ours.by_file(files).items() if not any(counts.values())]
    for f in empty:
        print(f"  no test of {f} ran")
    failed = _failed(ours)
    if failed:
        # nova's tests wait for servers with fixed timeouts: on a busy machine
        # one can fail for want of CPU alone.  It is run once more.
        again = run("allotment", mode, files, tests=failed, concurrency=concurrency)
        failed = [t for t in failed if _bucket(again.status.get(t, "missing")) != "passed"]
    if not failed:
        return 1 if empty else 0
    # Only a test upstream's fixture passes is a regression: a failure that
    # nova's own code or a dependency release causes fails there too.
    theirs = run("upstream", mode, files, tests=failed, concurrency=concurrency)
    lost = [t for t in failed if _bucket(theirs.status.get(t, "missing")) == "passed"]
    for test in failed:
        print(f"  {'REGRESSION' if test in lost else 'fails on upstream too'}: {test}")
    return 1 if lost or empty else 0


if __name__ == "__main__":
    sys.exit(main())
