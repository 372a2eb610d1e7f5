"""The benchmark's Markdown report."""

from __future__ import annotations

import math
import platform
import statistics
from dataclasses import dataclass, field

from benchmarks.side_by_side.measure import Claims, Timing

NAMES = ("upstream", "allotment")


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    ms = seconds * 1000
    return f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def _cell(t: Timing) -> str:
    if t.timed_out and not t.samples:
        return "timed out"
    return _ms(t.p50)


def ratio(timings: dict[str, Timing]) -> float | None:
    up, al = timings["upstream"].p50, timings["allotment"].p50
    if timings["upstream"].timed_out and not timings["upstream"].samples and al:
        return math.inf
    if up is None or al is None or al == 0:
        return None
    return up / al


def _ratio_text(value: float | None) -> str:
    if value is None:
        return "—"
    return "∞" if math.isinf(value) else f"{value:.1f}x"


def pair(timings: dict[str, Timing]) -> str:
    return (f"upstream {_cell(timings['upstream'])} ms, "
            f"allotment {_cell(timings['allotment'])} ms, {_ratio_text(ratio(timings))}")


@dataclass
class Section:
    title: str
    load: dict[str, float] = field(default_factory=dict)
    reads: dict[str, dict[str, Timing]] = field(default_factory=dict)
    churn: dict[str, tuple[Timing, Timing, Timing, int]] = field(default_factory=dict)
    claims: dict[str, Claims] = field(default_factory=dict)
    memory: dict[str, list[float]] = field(default_factory=dict)

    def render(self) -> list[str]:
        lines = [f"### {self.title}", "",
                 "| scenario (p50 ms) | answer size | upstream | allotment | speed-up |",
                 "|---|---|---|---|---|"]
        for label, timings in self.reads.items():
            size = timings["allotment"].answer_size
            size_text = "" if size is None else str(size)
            if timings["upstream"].answer_size not in (None, size):
                size_text = f"{timings['upstream'].answer_size} / {size}"
            lines.append(f"| {label} | {size_text} | {_cell(timings['upstream'])} | "
                         f"{_cell(timings['allotment'])} | {_ratio_text(ratio(timings))} |")
        lines.append("")
        if self.load:
            up, al = self.load["upstream"], self.load["allotment"]
            lines.append(f"- REST load (provider, inventory, trait, aggregate writes): "
                         f"upstream {up:.0f}/s, allotment {al:.0f}/s ({al / up:.1f}x)")
        for name, (quiet, churned, first, writes) in self.churn.items():
            lines.append(
                f"- churn, {name} (limit=1000, a host's inventory rewritten every 100 ms, "
                f"{writes} writes): quiet p50 {_ms(quiet.p50)} ms, under churn "
                f"{_ms(churned.p50)} ms ({churned.p50 / quiet.p50:.2f}x), first answer "
                f"after a write {_ms(first.p50)} ms ({first.p50 / quiet.p50:.2f}x)")
        if self.claims:
            up, al = self.claims["upstream"], self.claims["allotment"]
            for name, c in self.claims.items():
                lines.append(
                    f"- claims, {name}: {c.rate:.0f}/s ({c.made} in {c.seconds:.0f} s, "
                    f"{c.conflicts} conflicts, {c.errors} errors), VCPU used {c.vcpu_used}, "
                    f"over-allocated inventories: {len(c.over_allocated)}")
            lines.append(f"- claims speed-up: {al.rate / up.rate:.1f}x")
        for name, sizes in self.memory.items():
            if sizes:
                lines.append(f"- worker memory, {name}: "
                             + ", ".join(f"{s:.0f} MB" for s in sizes))
        lines.append("")
        return lines


@dataclass
class Report:
    command: str
    sections: list[Section] = field(default_factory=list)

    def section(self, title: str) -> Section:
        self.sections.append(Section(title))
        return self.sections[-1]

    def render(self) -> str:
        candidates = [r for s in self.sections for label, t in s.reads.items()
                      if "/resource_providers" not in label and (r := ratio(t)) is not None]
        finite = [r for r in candidates if not math.isinf(r)]
        lines = ["## Side by side with upstream Placement 16.0.0", "",
                 f"Command: `{self.command}`  ",
                 f"Machine: {platform.machine()}, Python {platform.python_version()}", ""]
        if finite:
            lines += [f"Allocation candidates: geometric mean speed-up "
                      f"{statistics.geometric_mean(finite):.1f}x, lowest "
                      f"{min(finite):.1f}x over {len(candidates)} scenarios "
                      f"({len(candidates) - len(finite)} where upstream timed out).", ""]
        for section in self.sections:
            lines += section.render()
        return "\n".join(lines)
