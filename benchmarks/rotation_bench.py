"""What a limited answer costs in each order while other schedulers write.

Run: ``.venv/bin/python benchmarks/rotation_bench.py [--hosts 1000 10000]
[--shapes flat numa] [--limits 10 1000] [--answers 300]``.  Asserts
nothing; prints, per world and limit, the mean milliseconds of one answer
(``engine.rounds.assemble``, as the API's kept rounds make it) in the
deterministic and in the rotating order (``[allotment]
rotate_allocation_candidates``), each answer after one more provider's
generation moved, as another scheduler's claim moves it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allotment.engine import rounds
from allotment.engine.live import LiveSnapshot
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup
from benchmarks.engine_bench import flat_world, nested_world

SHAPES = {"flat": flat_world, "numa": nested_world}


class _Encoder:
    """A candidate written as its host's UUID, a tree as its root's: the
    encoding's own cost left out of both orders alike."""

    shape = "rotation-bench"

    def candidate(self, cand) -> bytes:
        return cand.anchor.encode()

    def tree(self, summaries: tuple) -> bytes:
        return summaries[0].encode()


def mean_answer_ms(snap: LiveSnapshot, sections: dict, limit: int, rotate: bool,
                   answers: int) -> float:
    """``sections``: what the rounds keep between answers, as a world's
    kept answers do."""
    request = AllocationCandidatesRequest(
        (SearchGroup(resources={"VCPU": 1, "MEMORY_MB": 64}),), limit=limit)
    encoder = _Encoder()
    rng = random.Random(2)
    spent = 0.0
    for _ in range(answers):
        start = time.perf_counter()
        rounds.assemble(snap, lambda kind: sections.setdefault(kind, {}), 0, request,
                        encoder, lambda members: tuple(snap.uuids[m] for m in members),
                        rotate=rotate)
        spent += time.perf_counter() - start
        # Another scheduler's claim: some provider's generation moves on.
        i = rng.randrange(len(snap.uuids))
        snap.set_generation(snap.uuids[i], snap.generation_of(i) + 1)
    return spent / answers * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["flat", "numa"])
    parser.add_argument("--limits", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--answers", type=int, default=300)
    args = parser.parse_args()
    print(f"{'shape':6} {'hosts':>6} {'limit':>6} {'deterministic ms':>17} {'rotating ms':>12}")
    for shape in args.shapes:
        for hosts in args.hosts:
            snap = LiveSnapshot.build(SHAPES[shape](hosts, random.Random(1)))
            for limit in args.limits:
                # Each order twice, alternating: the second of each is printed
                # (the first fills what the rounds keep).
                figures, kept = {}, {False: {}, True: {}}
                for rotate in (False, True, False, True):
                    figures[rotate] = mean_answer_ms(snap, kept[rotate], limit, rotate,
                                                     args.answers)
                print(f"{shape:6} {hosts:>6} {limit:>6} {figures[False]:>17.3f} "
                      f"{figures[True]:>12.3f}", flush=True)


if __name__ == "__main__":
    main()
