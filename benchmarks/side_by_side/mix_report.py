"""The scheduling mix's Markdown report."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field

from benchmarks.side_by_side.mix import Ledger, percentiles
from benchmarks.side_by_side.reporting import Reporting, Stats
from benchmarks.side_by_side.verify import Verdict


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    ms = value * 1000
    return f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def _spread(samples: list[float]) -> str:
    cuts = percentiles(samples)
    return "—" if cuts is None else " / ".join(_ms(c) for c in cuts)


def _per_instance(seconds: float | None, ledger: Ledger) -> str:
    if seconds is None or not ledger.scheduled:
        return "—"
    return _ms(seconds / ledger.scheduled)


@dataclass
class Start:
    listening: float  # seconds from starting the server to its first answer to GET /
    first: float  # seconds of the first candidates answer after that
    rss_mb: list[float] = field(default_factory=list)  # per worker, after the rounds
    # Per process after the rounds, the main one first: (RSS, PSS, USS) MB.
    memory_mb: list[tuple[float, float, float]] = field(default_factory=list)
    # The pages they all map, each counted once (measure.distinct_mb): what
    # a cgroup holding the server is charged for them; None when unreadable.
    once_mb: float | None = None
    cold_seconds: float | None = None  # a one-worker server's start to its first answer
    cold_rss_mb: float | None = None  # that worker's memory right after it
    # That server's worker killed: kill to its replacement's first answer,
    # and the replacement's RSS, PSS and USS then (cold.Cold).
    replaced_seconds: float | None = None
    replaced_mb: tuple[float, float, float] | None = None


@dataclass
class MixSection:
    title: str
    fill: dict[str, float] = field(default_factory=dict)  # config -> seconds (SQL fill)
    adopt: dict[str, float] = field(default_factory=dict)  # config -> db sync seconds
    ledgers: dict[str, Ledger] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    starts: dict[str, Start] = field(default_factory=dict)
    reports: dict[str, Reporting] = field(default_factory=dict)  # config -> in the rounds
    alone: dict[str, Stats] = field(default_factory=dict)  # config -> reports alone
    report_rate: float = 0.0  # host-periods a second asked for
    moves: float = 0.0  # share of the schedulings that were moves

    def _callers(self) -> list[str]:
        """Per caller: scheduling, moves and the hosts' reports, in the rounds."""
        lines = ["| service | caller | requests/s | p50 / p95 / p99 ms | 409s | done |",
                 "|---|---|---:|---|---|---|"]
        for name, led in self.ledgers.items():
            seconds = led.seconds or 1.0
            asked = led.gets + led.puts + led.deletes
            lines.append(f"| {name} | scheduling | {len(asked) / seconds:.1f} | "
                         f"{_spread(asked)} | {led.conflicts} | {led.scheduled} placed, "
                         f"{len(led.deleted)} deleted |")
            if self.moves:
                lines.append(f"| {name} | moves | {len(led.move_requests) / seconds:.1f} | "
                             f"{_spread(led.move_requests)} | {led.move_conflicts} | "
                             f"{led.confirmed} confirmed, {led.reverted} reverted, "
                             f"{led.move_no_room} without room, {led.move_stuck} stuck |")
            reports = self.reports.get(name)
            if reports is not None and reports.stats.seconds:
                st = reports.stats
                lines.append(
                    f"| {name} | hosts' reports | {len(st.requests) / st.seconds:.1f} | "
                    f"{_spread(st.requests)} | {st.conflicts} | {st.host_periods} of "
                    f"{st.due:.0f} host-periods due ({100 * st.host_periods / max(st.due, 1):.0f}%)"
                    f", {st.refreshes} trees read again, {st.writes} inventories changed, "
                    f"{st.failed_writes} refused 4 times |")
        return [*lines, ""]

    def _report_cost(self) -> list[str]:
        lines = []
        for name, st in self.alone.items():
            if not st.host_periods:
                continue
            db = "—" if st.db_cpu is None else _ms(st.db_cpu / st.host_periods)
            lines.append(
                f"- {name}, the hosts' reports alone for {st.seconds:.0f} s: "
                f"{st.host_periods / st.seconds:.1f} host-periods/s of "
                f"{st.due / st.seconds:.1f} asked, {len(st.requests) / st.seconds:.1f} "
                f"requests/s, p50 / p95 / p99 {_spread(st.requests)} ms, {st.conflicts} 409s;"
                f" API CPU {_ms(st.api_cpu / st.host_periods)} ms and DB CPU {db} ms"
                " per host-period")
        return lines

    def render(self) -> list[str]:
        lines = [f"### {self.title}", "",
                 "| service | scheduled/s | GET p50 / p95 / p99 ms | PUT p50 / p95 / p99 ms"
                 " | DELETE p50 / p95 / p99 ms | 409 on PUT | API CPU ms per instance"
                 " | DB CPU ms per instance | scheduled / deleted / no room / gave up"
                 " / errors | books |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        for name, led in self.ledgers.items():
            verdict = self.verdicts.get(name)
            lines.append(
                f"| {name} | {led.rate:.1f} | {_spread(led.gets)} | {_spread(led.puts)} | "
                f"{_spread(led.deletes)} | {100 * led.conflict_rate:.1f}% "
                f"({led.conflicts}/{len(led.puts)}) | {_per_instance(led.api_cpu, led)} | "
                f"{_per_instance(led.db_cpu, led)} | {led.scheduled} / {len(led.deleted)} / "
                f"{led.no_room} / {led.gave_up} / {len(led.errors)} | "
                f"{verdict.summary() if verdict else '—'} |")
        lines.append("")
        rounds = any(led.seconds for led in self.ledgers.values())
        if rounds and (self.report_rate or self.moves):
            scale = next(iter(self.reports.values())).scale if self.reports else 1.0
            lines.append(
                f"Alongside the schedulers: {100 * self.moves:.0f}% of the schedulings are "
                f"moves; the hosts' reports asked at {self.report_rate:.1f} host-periods/s"
                + (f", {scale:g} of every host once a period (scaled: see 'done')"
                   if scale != 1 else ", every host once a period") + ". The CPU per "
                "instance above is the whole round's, every caller's.")
            lines.append("")
            lines += self._callers()
        lines += self._report_cost()
        up, al = self.ledgers.get("upstream"), self.ledgers.get("allotment")
        if up and al and up.scheduled and al.scheduled and al.api_cpu:
            lines.append(
                f"- allotment against upstream: {al.rate / up.rate:.1f}x the scheduled/s, "
                f"{(up.api_cpu / up.scheduled) / (al.api_cpu / al.scheduled):.1f}x less API "
                "CPU per instance")
        for name, seconds in self.fill.items():
            adopt = (f", then `allotment-manage db sync` {self.adopt[name]:.1f} s"
                     if name in self.adopt else "")
            lines.append(f"- {name}: SQL fill {seconds:.1f} s{adopt}")
        for name, start in self.starts.items():
            rss = ", ".join(f"{s:.0f} MB" for s in start.rss_mb) or "—"
            if start.memory_mb:
                lines.append(f"- {name}: after the rounds, RSS / PSS / USS of the main process"
                             " and each worker: " + "; ".join(
                                 f"{r:.0f} / {p:.0f} / {u:.0f} MB" for r, p, u in start.memory_mb)
                             + f"; PSS summed {sum(p for _, p, _ in start.memory_mb):.0f} MB")
            if start.once_mb is not None:
                lines.append(f"- {name}: the pages the server maps, each counted once (what a "
                             f"cgroup holding it is charged for them): {start.once_mb:.0f} MB")
            lines.append(f"- {name}: listening {start.listening:.1f} s after start, first "
                         f"candidates answer then {_ms(start.first)} ms; worker RSS after "
                         f"the rounds {rss}")
            if start.cold_seconds is not None:
                lines.append(f"- {name}, one more worker started cold: first candidates "
                             f"answer {start.cold_seconds:.1f} s after its process started,"
                             f" then {start.cold_rss_mb:.0f} MB resident")
            if start.replaced_seconds is not None and start.replaced_mb is not None:
                rss, pss, uss = start.replaced_mb
                lines.append(f"- {name}, that worker killed: the worker started in its place"
                             f" answered {start.replaced_seconds:.2f} s after the kill, then"
                             f" {rss:.0f} MB resident, {pss:.0f} MB proportional,"
                             f" {uss:.0f} MB its own")
        for name, led in self.ledgers.items():
            for error in led.errors[:3]:
                lines.append(f"- {name} error: {error}")
        lines.append("")
        return lines


@dataclass
class MixReport:
    command: str
    sections: list[MixSection] = field(default_factory=list)

    def section(self, title: str) -> MixSection:
        self.sections.append(MixSection(title))
        return self.sections[-1]

    @property
    def ok(self) -> bool:
        return all(v.ok for s in self.sections for v in s.verdicts.values())

    def render(self) -> str:
        lines = ["## Scheduling mix, side by side with upstream Placement 16.0.0", "",
                 f"Command: `{self.command}`  ",
                 f"Machine: {platform.machine()}, Python {platform.python_version()}", ""]
        for section in self.sections:
            lines += section.render()
        return "\n".join(lines)
