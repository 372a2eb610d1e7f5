"""Hypothesis strategies for instances close to what a JSON schema allows.

``near(schema)`` draws mostly valid documents and breaks them at every level
in the ways that divide validators: 1.0 for an integer, 1.5, booleans for
numbers, huge integers, NaN and infinities, values on and just past each
bound, strings that match a pattern except for a trailing newline, UUIDs in
every spelling, unicode, extra, missing and non-string keys, tuples for
arrays and duplicated items.
"""

from __future__ import annotations

import functools
import uuid

from hypothesis import strategies as st

ODD_SCALARS = [
    None, True, False, 0, 1, -1, 1.0, -0.0, 1.5, 0.5, 2.0, 2 ** 31 - 1, 2 ** 31, 2 ** 63,
    10 ** 40, -(10 ** 40), 1e300, float("nan"), float("inf"), float("-inf"), 3.40282e38,
    3.5e38, "", "x", "1", "1.0", "true", "null", "ABC\n", "\n", "é", "☃" * 3, "\x00",
    "VCPU", "CUSTOM_X", "none", "isolate",
]
ODD_CONTAINERS = [[], {}, (), ("a",), ["a"], [1, 1], {"a": 1}, {1: "a"}, {None: 1}, [[]]]

_U = uuid.UUID("2290d4af-9e6e-400b-9d65-1ee01376f71a")
UUID_SPELLINGS = [
    str(_U), str(_U).upper(), _U.hex, _U.urn, "{" + str(_U) + "}", str(_U) + "\n",
    str(_U)[:-1], str(_U) + "0", str(_U).replace("-", "_"), "not-a-uuid", "",
    "2290d4af9e6e400b9d651ee01376f71a", "2290d4af-9e6e400b-9d65-1ee01376f71a",
    "uuid:" + str(_U), "{" + _U.hex + "}",
]

wild = st.one_of(
    st.sampled_from(ODD_SCALARS), st.sampled_from(ODD_CONTAINERS),
    st.integers(), st.floats(), st.text(max_size=8),
    st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4)),
                 lambda kids: st.one_of(st.lists(kids, max_size=3),
                                        st.dictionaries(st.text(max_size=4), kids, max_size=3)),
                 max_leaves=6),
)


def mostly(good: st.SearchStrategy, *bad: st.SearchStrategy) -> st.SearchStrategy:
    """``good`` seven times in ten, else one of ``bad``: most documents should
    be valid or nearly so, or the valid side is hardly explored."""
    if not bad:
        return good
    return _weighted(good, st.one_of(bad), 7, 10)


@st.composite
def _weighted(draw, good: st.SearchStrategy, bad: st.SearchStrategy,
              good_in: int, out_of: int):
    # st.composite, not flatmap: flatmap builds a new strategy every draw.
    return draw(good if draw(st.integers(0, out_of - 1)) < good_in else bad)


def _types(schema: dict) -> list[str]:
    found = schema.get("type")
    if found is None:
        return []
    return found if isinstance(found, list) else [found]


def _numbers(schema: dict, integer: bool) -> st.SearchStrategy:
    low, high = schema.get("minimum"), schema.get("maximum")
    edges: list[object] = [0, 1, 2, 1.0, 1.5, -0.0, True, False, 2 ** 64, -(2 ** 64),
                           float("nan"), float("inf"), float("-inf")]
    for b in (low, high):
        if b is not None:
            edges += [b, b - 1, b + 1, float(b), b - 0.5, b + 0.5, b * 2 ** 40]
    if integer:
        good = st.integers(min_value=low, max_value=high)
        # An integral float is an integer to both validators.
        good = st.one_of(good, good.map(float)) if high is None or high < 2 ** 53 else good
    else:
        good = st.one_of(st.integers(min_value=low, max_value=high),
                         st.floats(min_value=low, max_value=high, allow_nan=False))
    return mostly(good, st.sampled_from(edges), st.integers(), st.floats())


def _strings(schema: dict) -> st.SearchStrategy:
    bad: list[st.SearchStrategy] = [st.text(max_size=6)]
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    good: st.SearchStrategy = st.text(min_size=low, max_size=min(high or 12, 12))
    if "pattern" in schema:
        matching = st.from_regex(schema["pattern"], fullmatch=True)
        good = matching
        bad += [st.from_regex(schema["pattern"]), matching.map(lambda v: v + "\n"),
                matching.map(str.lower)]
    if "enum" in schema:
        values = schema["enum"]
        good = st.sampled_from(values)
        bad += [good.map(lambda v: v + "\n"), good.map(str.upper)]
    if schema.get("format") == "uuid":
        good = st.uuids().map(str)
        bad.append(st.sampled_from(UUID_SPELLINGS))
    for n in (low, high):
        if n:
            bad.append(st.sampled_from([max(n - 1, 0), n, n + 1]).flatmap(
                lambda k: st.sampled_from(["A" * k, "é" * k, "A" * max(k - 1, 0) + "\n"])))
    return mostly(good, *bad)


def _arrays(schema: dict) -> st.SearchStrategy:
    items = near(schema["items"]) if "items" in schema else wild
    low = schema.get("minItems", 0)
    # Drawn items rarely repeat by chance; "doubled" repeats one on purpose.
    good = st.lists(items, min_size=low, max_size=low + 4)
    doubled = st.lists(items, min_size=1, max_size=3).map(lambda xs: xs + xs[:1])
    return mostly(good, doubled, st.lists(items, max_size=low + 1), good.map(tuple))


@functools.cache
def _key(pattern: str | None) -> st.SearchStrategy:
    odd = st.sampled_from(["", "a", "1", "é", "VCPU", "project_id", "\n"])
    if pattern is None:
        return st.one_of(st.text(max_size=6), odd)
    matching = st.from_regex(pattern, fullmatch=True)
    return mostly(matching, matching.map(lambda v: v + "\n"), matching.map(str.lower),
                  st.from_regex(pattern), odd)


def _objects(schema: dict) -> st.SearchStrategy:
    props = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    required = set(schema.get("required", []))
    extra_schema = schema.get("additionalProperties", True)

    @st.composite
    def build(draw):
        out: dict = {}
        for name, sub in props.items():
            if draw(st.integers(0, 19)) < (19 if name in required else 10):
                out[name] = draw(near(sub))
        low = schema.get("minProperties", 0) if not props else 0
        for pattern, sub in patterns.items():
            for _ in range(draw(st.integers(low, low + 1))):
                out[draw(_key(pattern))] = draw(near(sub))
        if draw(st.integers(0, 5)) == 3:  # a key nothing names
            value = near(extra_schema) if isinstance(extra_schema, dict) else wild
            out[draw(_key(None))] = draw(value)
        if draw(st.integers(0, 59)) == 37:  # rare (0 would be drawn often)
            out[draw(st.sampled_from([1, None, 1.5, ("a",)]))] = draw(wild)
        return out

    return build()


# Strategies by schema object: building them is far dearer than drawing.
_MADE: dict[int, tuple[object, st.SearchStrategy]] = {}


def near(schema: object) -> st.SearchStrategy:
    """Documents near the ones ``schema`` describes (see the module doc)."""
    if not isinstance(schema, dict):
        return wild
    made = _MADE.get(id(schema))
    if made is None or made[0] is not schema:
        made = _MADE[id(schema)] = (schema, _near(schema))
    return made[1]


def _near(schema: dict) -> st.SearchStrategy:
    options: list[st.SearchStrategy] = [near(sub) for sub in schema.get("anyOf", [])]
    for name in _types(schema) or ([] if options else ["object"]):
        if name == "object":
            options.append(_objects(schema))
        elif name == "array":
            options.append(_arrays(schema))
        elif name == "string":
            options.append(_strings(schema))
        elif name in ("integer", "number"):
            options.append(_numbers(schema, name == "integer"))
        elif name == "boolean":
            options.append(st.booleans())
        elif name == "null":
            options.append(st.none())
    # One node in about fifteen is something else altogether.
    return st.deferred(lambda: _weighted(st.one_of(options), wild, 14, 15))
