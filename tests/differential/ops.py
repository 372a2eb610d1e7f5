"""Random sequences of Placement writes and reads, as hypothesis strategies.

An operation is a small frozen record that names providers and consumers by
their position among those created so far (taken modulo their number when
replayed), so any prefix or subsequence hypothesis shrinks to still means
something.  :mod:`tests.differential.replay` turns operations into HTTP
requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

# What the worlds are made of: a few of each, so that requests meet them.
CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF", "VGPU", "IPV4_ADDRESS",
           "CUSTOM_MAGIC")
TRAITS = ("HW_CPU_X86_AVX2", "HW_NUMA_ROOT", "STORAGE_DISK_SSD", "CUSTOM_GOLD",
          "MISC_SHARES_VIA_AGGREGATE")
AGGREGATES = ("A", "B", "C")
SHARES = "MISC_SHARES_VIA_AGGREGATE"
# Names a request may use that no world has (or may not use at all).
STRANGE_CLASSES = ("CUSTOM_NOWHERE", "vcpu")
STRANGE_TRAITS = ("CUSTOM_NOWHERE", "hw_cpu_x86_avx2")
VERSIONS = ("1.10", "1.12", "1.16", "1.17", "1.21", "1.22", "1.24", "1.25", "1.28",
            "1.29", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37", "1.38", "1.39")
SUFFIXES = ("1", "2", "10", "_A", "_B", "X-y")


@dataclass(frozen=True)
class Provider:
    """A new provider: a root, a child of an earlier one, or a sharing pool."""

    parent: int | None
    sharing: bool = False


@dataclass(frozen=True)
class SetInventory:
    provider: int
    # rc -> (total, reserved, min_unit, max_unit, step_size, allocation_ratio)
    inventories: tuple[tuple[str, tuple[int, int, int, int, int, float]], ...]


@dataclass(frozen=True)
class SetTraits:
    provider: int
    traits: tuple[str, ...]


@dataclass(frozen=True)
class SetAggregates:
    provider: int
    aggregates: tuple[str, ...]


@dataclass(frozen=True)
class Allocate:
    """A new consumer taking ``amount`` of a class from each provider named."""

    parts: tuple[tuple[int, str, int], ...]


@dataclass(frozen=True)
class Reshape:
    """``POST /reshaper``: new inventories for some providers, at once, and
    every consumer's allocations as they are (or moved to ``target``)."""

    inventories: tuple[tuple[int, tuple[tuple[str, tuple], ...]], ...]
    move_to: int | None = None


@dataclass(frozen=True)
class Free:
    consumer: int


@dataclass(frozen=True)
class DeleteProvider:
    provider: int


@dataclass(frozen=True)
class Read:
    """Any other ``GET``: ``path`` may name ``@providerN`` or ``@project``."""

    version: str
    path: str


@dataclass(frozen=True)
class Query:
    """``GET /allocation_candidates`` with ``params`` at ``version``."""

    version: str
    params: tuple[tuple[str, str], ...]


def _inventory() -> st.SearchStrategy:
    @st.composite
    def build(draw):
        total = draw(st.sampled_from((1, 2, 4, 8, 16, 64, 1024, 4096, 4096)))
        reserved = draw(st.sampled_from((0, 0, 0, 1)))
        reserved = min(reserved, total - 1)
        max_unit = draw(st.sampled_from((total, total, total, 1, max(1, total // 2))))
        step = draw(st.sampled_from((1, 1, 1, 1, 2)))
        min_unit = draw(st.sampled_from((1, 1, step)))
        # 3.4e38, the largest ratio either accepts, makes a capacity past
        # 64 bits, which both must write whole.
        ratio = draw(st.sampled_from((1.0, 1.0, 2.0, 0.5, 1.0, 1.0, 2.0, 0.5, 3.4e38)))
        return total, reserved, min_unit, max(max_unit, min_unit), step, ratio
    return build()


def _writes() -> st.SearchStrategy:
    ref = st.integers(0, 30)
    return st.one_of(
        st.builds(Provider, parent=st.none(), sharing=st.booleans()),
        st.builds(Provider, parent=ref, sharing=st.just(False)),
        st.builds(SetInventory, provider=ref, inventories=st.lists(
            st.tuples(st.sampled_from(CLASSES), _inventory()),
            min_size=1, max_size=3, unique_by=lambda t: t[0]).map(tuple)),
        st.builds(SetTraits, provider=ref, traits=st.lists(
            st.sampled_from(TRAITS[:-1]), max_size=2, unique=True).map(tuple)),
        st.builds(SetAggregates, provider=ref, aggregates=st.lists(
            st.sampled_from(AGGREGATES), max_size=2, unique=True).map(tuple)),
        st.builds(Allocate, parts=st.lists(
            st.tuples(ref, st.sampled_from(CLASSES), st.sampled_from((1, 2, 4, 64))),
            min_size=1, max_size=2).map(tuple)),
        st.builds(Free, consumer=st.integers(0, 10)),
        st.builds(Reshape, inventories=st.lists(st.tuples(ref, st.lists(
            st.tuples(st.sampled_from(CLASSES), _inventory()), max_size=2,
            unique_by=lambda t: t[0]).map(tuple)), min_size=1, max_size=2).map(tuple),
            move_to=st.none() | ref),
        st.builds(DeleteProvider, provider=ref),
    )


@st.composite
def _trait_expr(draw, version: tuple[int, int]) -> str:
    # Names no world has turn up now and then, not in most requests.
    names = TRAITS * 6 + STRANGE_TRAITS
    if version >= (1, 39) and draw(st.booleans()):
        any_of = draw(st.lists(st.sampled_from(names), min_size=2, max_size=3, unique=True))
        return "in:" + ",".join(any_of)
    traits = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    forbid = version >= (1, 22)
    return ",".join(("!" + t if forbid and draw(st.booleans()) else t) for t in traits)


@st.composite
def _group_params(draw, suffix: str, version: tuple[int, int],
                  aggs: dict[str, str]) -> list[tuple[str, str]]:
    out = []
    resourceless = version >= (1, 35) and suffix and draw(st.integers(0, 5)) == 0
    if not resourceless:
        # Mostly what schedulers ask for, sometimes anything.
        typical = ([("VCPU", "MEMORY_MB"), ("VCPU", "MEMORY_MB", "DISK_GB"), ("DISK_GB",),
                    ("IPV4_ADDRESS",), ("VCPU",)] if not suffix else
                   [("VGPU",), ("SRIOV_NET_VF",), ("VCPU", "MEMORY_MB"), ("VCPU",)])
        if draw(st.integers(0, 2)):
            classes = list(draw(st.sampled_from(typical)))
        else:
            classes = draw(st.lists(st.sampled_from(CLASSES * 8 + STRANGE_CLASSES),
                                    min_size=1, max_size=2, unique=True))
        amounts = [draw(st.sampled_from((1, 1, 1, 2, 4, 64))) for _ in classes]
        out.append((f"resources{suffix}", ",".join(
            f"{rc}:{n}" for rc, n in zip(classes, amounts, strict=True))))
    if draw(st.integers(0, 3)) == 0 or resourceless:
        out.append((f"required{suffix}", draw(_trait_expr(version))))
    if version >= (1, 21) and draw(st.integers(0, 4)) == 0:
        chosen = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=2,
                               unique=True))
        value = ",".join(aggs[a] for a in chosen)
        if version >= (1, 24) and len(chosen) > 1:
            value = "in:" + value
        if version >= (1, 32) and draw(st.integers(0, 3)) == 0:
            value = "!" + value
        out.append((f"member_of{suffix}", value))
    return out


@st.composite
def queries(draw, aggs: dict[str, str], providers: int = 8) -> Query:
    """One candidates request; ``aggs`` maps aggregate names to UUIDs."""
    # Mostly the microversions schedulers use today.
    version_text = draw(st.sampled_from(VERSIONS + VERSIONS[-11:] * 2))
    version = tuple(int(x) for x in version_text.split("."))
    params: list[tuple[str, str]] = []
    if draw(st.integers(0, 4)) != 0:
        params += draw(_group_params("", version, aggs))
    if version >= (1, 25):
        count = draw(st.sampled_from((0, 0, 1, 1, 2, 3)))
        suffixes = SUFFIXES if version >= (1, 33) else SUFFIXES[:3]
        chosen = draw(st.lists(st.sampled_from(suffixes), min_size=count, max_size=count,
                               unique=True))
        for suffix in chosen:
            params += draw(_group_params(suffix, version, aggs))
        if chosen and draw(st.integers(0, 5)) != 0:
            params.append(("group_policy", draw(st.sampled_from(("none", "isolate")))))
        if version >= (1, 36) and len(chosen) >= 2 and draw(st.integers(0, 3)) == 0:
            params.append(("same_subtree", ",".join(chosen[:2])))
        if version >= (1, 31) and chosen and draw(st.integers(0, 4)) == 0:
            params.append((f"in_tree{chosen[0]}", f"@provider{draw(st.integers(0, providers))}"))
    if version >= (1, 31) and draw(st.integers(0, 6)) == 0:
        params.append(("in_tree", f"@provider{draw(st.integers(0, providers))}"))
    if version >= (1, 35) and draw(st.integers(0, 4)) == 0:
        params.append(("root_required", draw(_trait_expr((1, 35)))))
    if version >= (1, 16) and draw(st.integers(0, 2)) == 0:
        params.append(("limit", str(draw(st.integers(1, 5)))))
    return Query(version_text, tuple(params))


@st.composite
def reads(draw, aggs: dict[str, str]) -> Read:
    """Provider listings with filters, usages, traits and aggregates."""
    version = draw(st.sampled_from(("1.0", "1.3", "1.4", "1.14", "1.18", "1.22", "1.31",
                                    "1.38", "1.39")))
    n = draw(st.integers(0, 8))
    kind = draw(st.sampled_from(("list", "list", "list", "usages", "project", "traits",
                                 "aggregates", "inventories", "allocations")))
    if kind == "usages":
        return Read(version, f"/resource_providers/@provider{n}/usages")
    if kind == "project":
        return Read(version, "/usages?project_id=@project")
    if kind == "traits":
        return Read(version, f"/resource_providers/@provider{n}/traits")
    if kind == "aggregates":
        return Read(version, f"/resource_providers/@provider{n}/aggregates")
    if kind == "inventories":
        return Read(version, f"/resource_providers/@provider{n}/inventories")
    if kind == "allocations":
        return Read(version, f"/resource_providers/@provider{n}/allocations")
    params = []
    if draw(st.booleans()):
        classes = draw(st.lists(st.sampled_from(CLASSES * 4 + STRANGE_CLASSES),
                                min_size=1, max_size=2, unique=True))
        params.append("resources=" + ",".join(f"{rc}:{draw(st.sampled_from((1, 2, 64)))}"
                                              for rc in classes))
    if draw(st.integers(0, 2)) == 0:
        params.append("required=" + draw(_trait_expr((1, 39) if version == "1.39" else (1, 22))))
    if draw(st.integers(0, 3)) == 0:
        params.append("member_of=" + aggs[draw(st.sampled_from(AGGREGATES))])
    if draw(st.integers(0, 4)) == 0:
        params.append(f"in_tree=@provider{n}")
    return Read(version, "/resource_providers" + ("?" + "&".join(params) if params else ""))


@st.composite
def scenarios(draw) -> list:
    """Writes building a world, then reads against it, interleaved."""
    from tests.differential.replay import AGGREGATE_UUIDS

    ops: list = []
    # A world worth asking about: hosts (a root, NUMA nodes, devices) and
    # sharing pools in their aggregates, then any writes at all.
    for _ in range(draw(st.integers(1, 4))):
        host = sum(isinstance(op, Provider) for op in ops)
        ops.append(Provider(None))
        root_classes = draw(st.sampled_from(
            [("VCPU", "MEMORY_MB", "DISK_GB"), ("DISK_GB",), ()]))
        if root_classes:
            ops.append(SetInventory(host, tuple((rc, draw(_inventory())) for rc in root_classes)))
        if draw(st.integers(0, 2)):
            ops.append(SetAggregates(host, draw(st.sampled_from((("A",), ("B",), ("A", "B"))))))
        if draw(st.integers(0, 3)) == 0:
            ops.append(SetTraits(host, draw(st.sampled_from(
                (("HW_CPU_X86_AVX2",), ("CUSTOM_GOLD",), ("HW_NUMA_ROOT",))))))
        children = draw(st.lists(st.sampled_from(
            [("VCPU", "MEMORY_MB"), ("VGPU",), ("SRIOV_NET_VF",), ()]), max_size=3))
        for classes in children:
            child = sum(isinstance(op, Provider) for op in ops)
            ops.append(Provider(host))
            if classes:
                ops.append(SetInventory(child, tuple((rc, draw(_inventory())) for rc in classes)))
            if draw(st.integers(0, 3)) == 0:
                ops.append(SetTraits(child, draw(st.sampled_from(
                    (("HW_NUMA_ROOT",), ("CUSTOM_GOLD",), ("STORAGE_DISK_SSD",))))))
            if draw(st.integers(0, 4)) == 0:
                ops.append(SetAggregates(child, ("A",)))
    for _ in range(draw(st.integers(0, 2))):
        pool = sum(isinstance(op, Provider) for op in ops)
        ops.append(Provider(None, sharing=True))
        classes = draw(st.sampled_from([("DISK_GB",), ("IPV4_ADDRESS",), ("CUSTOM_MAGIC",),
                                        ("DISK_GB", "IPV4_ADDRESS")]))
        ops.append(SetInventory(pool, tuple((rc, draw(_inventory())) for rc in classes)))
        if draw(st.integers(0, 3)) == 0:
            ops.append(SetAggregates(pool, draw(st.sampled_from((("B",), ("A", "C"))))))
        if draw(st.integers(0, 3)) == 0:
            ops.append(SetTraits(pool, ("CUSTOM_GOLD",)))
    ops += draw(st.lists(_writes(), max_size=10))
    asked = draw(st.lists(st.one_of(queries(AGGREGATE_UUIDS), queries(AGGREGATE_UUIDS),
                                    reads(AGGREGATE_UUIDS)), min_size=1, max_size=8))
    for q in asked:
        ops.insert(draw(st.integers(len(ops) // 2, len(ops))), q)
    return ops
