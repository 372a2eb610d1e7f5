"""Compare two services' answers to the same request.

Answers are canonicalised where Placement leaves the order unspecified (lists
of candidates, of traits, of mappings).  A limited candidates answer is
checked against the same request without ``limit``: it must be a subset of
that answer of the right size, and reach at least as many hosts as the other
service's.  Where upstream Placement is known to be wrong (see
docs/compatibility.md) the difference is recognised and named.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from tests.differential.replay import Exchange

Candidate = tuple[frozenset, frozenset]
# Known upstream defects met so far, by name (see docs/compatibility.md).
KNOWN: Counter = Counter()


def candidates(answer: dict) -> set[Candidate]:
    """Each allocation request as (allocations, mappings), order-free."""
    out = set()
    for ar in answer["allocation_requests"]:
        allocs = ar["allocations"]
        if isinstance(allocs, list):  # before 1.12
            items = ((a["resource_provider"]["uuid"], a["resources"]) for a in allocs)
        else:
            items = ((rp, a["resources"]) for rp, a in allocs.items())
        flat = frozenset((rp, rc, n) for rp, res in items for rc, n in res.items())
        mappings = frozenset((s, frozenset(rps)) for s, rps in ar.get("mappings", {}).items())
        out.add((flat, mappings))
    return out


def canonical(answer: object) -> object:
    """Lists become sorted tuples: upstream's list orders are unspecified."""
    if isinstance(answer, dict):
        return {k: canonical(v) for k, v in answer.items()}
    if isinstance(answer, list):
        return tuple(sorted((canonical(v) for v in answer), key=repr))
    return answer


def summaries(answer: dict) -> dict:
    out = {}
    for rp, s in answer.get("provider_summaries", {}).items():
        canon = dict(s)
        if "traits" in canon:
            canon["traits"] = sorted(canon["traits"])
        out[rp] = canon
    return out


def hosts(answer: dict, roots: dict[str, str], sharing: set[str] = frozenset()) -> set[str]:
    """The trees an answer's candidates are anchored in: the roots of the
    providers each candidate takes from that are not sharing providers (a
    pool serves other trees; taking from another pool reaches no other
    host), or, for a candidate of sharing providers only, theirs."""
    found: set[str] = set()
    for flat, _ in candidates(answer):
        own = {roots.get(rp, rp) for rp, _, _ in flat if rp not in sharing}
        found |= own or {roots.get(rp, rp) for rp, _, _ in flat}
    return found


def error_codes(answer: object) -> list:
    """Each error's code and title."""
    if isinstance(answer, dict) and "errors" in answer:
        return sorted((e.get("code", ""), e.get("title", "")) for e in answer["errors"])
    return []


_HTTP_DATE = re.compile(r"\A(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d "
                        r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} "
                        r"\d\d:\d\d:\d\d GMT\Z")


def header_difference(up: Exchange, al: Exchange) -> str | None:
    """The first header in which the answers differ, or None.

    The status line, Location (each service's own address taken out),
    Content-Type, Cache-Control, OpenStack-API-Version and Allow must be the
    same; Last-Modified must be there in both or neither, as an HTTP date
    (its value is the time of a write, which differs).  Vary must be the
    same on successes; on errors allotment names the microversion header
    where upstream sometimes does not (docs/compatibility.md), and nothing
    else.
    """
    if (up.status, up.reason) != (al.status, al.reason):
        return f"status line {up.status} {up.reason!r} != {al.status} {al.reason!r}"
    for name in ("location", "content-type", "cache-control", "openstack-api-version",
                 "allow"):
        if up.headers.get(name) != al.headers.get(name):
            return f"{name}: {up.headers.get(name)!r} != {al.headers.get(name)!r}"
    stamps = [ex.headers.get("last-modified") for ex in (up, al)]
    if (stamps[0] is None) != (stamps[1] is None):
        return f"last-modified: {stamps[0]!r} != {stamps[1]!r}"
    for stamp in stamps:
        if stamp is not None and not _HTTP_DATE.match(stamp):
            return f"last-modified {stamp!r} is not an HTTP date"
    vary = up.headers.get("vary"), al.headers.get("vary")
    if vary[0] != vary[1] and not (
            up.status >= 400 and vary[0] is None and vary[1] == "openstack-api-version"):
        return f"vary: {vary[0]!r} != {vary[1]!r}"
    return None


def roots_of(answer: dict) -> dict[str, str]:
    return {rp: s.get("root_provider_uuid", rp)
            for rp, s in answer.get("provider_summaries", {}).items()}


def sharing_anchor_only(extra: Iterable[Candidate], unsuffixed: dict[str, int],
                        sharing: set[str]) -> bool:
    """Whether every candidate only allotment gives takes all of the
    unsuffixed group's resources from sharing providers.

    Upstream attaches such a set of sharing allocations to one tree only
    (docs/compatibility.md, "Sharing providers and several trees").
    """
    extra = list(extra)
    if not extra or not unsuffixed:
        return False
    for flat, mappings in extra:
        served = dict(mappings).get("")
        if served is not None:
            if not served or not served <= sharing:
                return False
            continue
        # Before 1.34 there are no mappings: each class the unsuffixed
        # group asks for must come from a sharing provider.
        for rc, amount in unsuffixed.items():
            if not any(rp in sharing and c == rc and n >= amount for rp, c, n in flat):
                return False
    return True


def wrong_amounts(cands: Iterable[Candidate], requested: dict[str, int]) -> bool:
    """Whether every one of ``cands`` allocates other totals than the
    request asks for (upstream with ``group_policy=isolate`` can add a
    group's amount into a candidate it already counted it in)."""
    cands = list(cands)
    if not cands or not requested:
        return False
    for flat, _ in cands:
        totals: dict[str, int] = {}
        for _, rc, n in flat:
            totals[rc] = totals.get(rc, 0) + n
        if totals == requested:
            return False
    return True


def compare(up: Exchange, al: Exchange, *, up_all: Exchange | None = None,
            al_all: Exchange | None = None, unsuffixed: dict[str, int] | None = None,
            sharing: set[str] = frozenset(), limit: int | None = None,
            requested: dict[str, int] | None = None,
            tree_roots: dict[str, str] | None = None) -> str | None:
    """A description of the difference between two answers, or None.

    ``up_all``/``al_all`` are the answers to the request without ``limit``;
    ``tree_roots`` names each provider's root (summaries before 1.29 do not).
    """
    if up.status != al.status:
        return f"status {up.status} (upstream) != {al.status} (allotment)"
    problem = header_difference(up, al)
    if problem:
        return "headers differ: " + problem
    if up.status >= 400:
        if error_codes(up.answer) != error_codes(al.answer):
            return (f"error codes and titles {error_codes(up.answer)} != "
                    f"{error_codes(al.answer)}")
        return None
    if up.method != "GET":
        return None
    if not up.path.startswith("/allocation_candidates"):
        if canonical(up.answer) != canonical(al.answer):
            return "answers differ"
        return None
    if limit is None:
        return _compare_full(up.answer, al.answer, unsuffixed or {}, sharing, requested or {})
    assert up_all is not None and al_all is not None
    if up_all.status != 200 or al_all.status != 200:
        return None
    problem = _compare_full(up_all.answer, al_all.answer, unsuffixed or {}, sharing,
                            requested or {})
    if problem:
        return "without limit: " + problem
    for name, part, whole in (("upstream", up.answer, up_all.answer),
                              ("allotment", al.answer, al_all.answer)):
        got, everything = candidates(part), candidates(whole)
        if not got <= everything:
            return f"{name}'s limited answer is not part of its unlimited one"
        if len(part["allocation_requests"]) != min(limit, len(everything)):
            return f"{name}'s limited answer has {len(got)} candidates"
    roots = {**roots_of(up_all.answer), **roots_of(al_all.answer)}
    up_hosts, al_hosts = hosts(up.answer, roots, sharing), hosts(al.answer, roots, sharing)
    if len(al_hosts) < len(up_hosts):
        return f"limited answers reach {len(up_hosts)} (upstream) > {len(al_hosts)} hosts"
    tree_of = {**roots, **(tree_roots or {})}
    for name, part, whole in (("upstream", up.answer, up_all.answer),
                              ("allotment", al.answer, al_all.answer)):
        problem = limited_summaries(part, whole, tree_of)
        if problem:
            return f"{name}'s limited answer: {problem}"
    return None


def limited_summaries(part: dict, whole: dict, tree_of: dict[str, str]) -> str | None:
    """Whether a limited answer's summaries are upstream's, tree by tree.

    The two services' limited answers may keep different candidates, so each
    is checked against its own unlimited answer: at every microversion the
    summaries kept are exactly those of the unlimited answer whose provider
    is in the tree of a provider some kept candidate uses.
    """
    kept_trees = {tree_of.get(rp, rp) for flat, _ in candidates(part) for rp, _, _ in flat}
    got, every = summaries(part), summaries(whole)
    by_tree: dict[str, tuple[dict, dict]] = {}
    for rp, s in every.items():
        tree = tree_of.get(rp, rp)
        if tree in kept_trees:
            by_tree.setdefault(tree, ({}, {}))[0][rp] = s
    for rp, s in got.items():
        by_tree.setdefault(tree_of.get(rp, rp), ({}, {}))[1][rp] = s
    for tree in sorted(by_tree):
        want, have = by_tree[tree]
        if want != have:
            return (f"summaries of tree {tree}: {sorted(have)} where the unlimited answer "
                    f"gives {sorted(want)}")
    return None


def _compare_full(up: dict, al: dict, unsuffixed: dict[str, int],
                  sharing: set[str], requested: dict[str, int]) -> str | None:
    up_c, al_c = candidates(up), candidates(al)
    if len(up["allocation_requests"]) != len(up_c) or len(al["allocation_requests"]) != len(al_c):
        return "duplicate candidates"
    if up_c != al_c:
        if up_c < al_c and sharing_anchor_only(al_c - up_c, unsuffixed, sharing):
            KNOWN["sharing pool kept for one tree"] += 1
            return None
        if wrong_amounts(up_c - al_c, requested) and not any(
                wrong_amounts([c], requested) for c in al_c):
            KNOWN["isolate amounts counted twice"] += 1
            return None
        return (f"candidates differ: {len(up_c - al_c)} only upstream, "
                f"{len(al_c - up_c)} only allotment")
    if summaries(up) != summaries(al):
        return "provider summaries differ"
    return None
