"""Microversion arithmetic for the client.

Versions are strings ("1.30") at the API surface and (major, minor) tuples
for comparison.  ``LATEST`` is the newest version this client understands;
it never sends "latest" itself, because a newer service could change what
"latest" means under it.
"""

from __future__ import annotations

from allotment.client.exceptions import MicroversionUnsupported

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"
LATEST = "1.39"
MINIMUM = "1.0"

# Features and the first microversion that has them; the client consults
# this table before sending, and when reading version-dependent answers.
FEATURES: dict[str, str] = {
    "aggregates": "1.1",
    "custom_resource_classes": "1.2",
    "member_of": "1.3",
    "resources_filter": "1.4",
    "delete_all_inventory": "1.5",
    "traits": "1.6",
    "put_resource_class": "1.7",
    "allocation_project_user": "1.8",
    "usages": "1.9",
    "allocation_candidates": "1.10",
    "allocations_dict": "1.12",
    "post_allocations": "1.13",
    "nested_providers": "1.14",
    "required_traits_filter": "1.18",
    "aggregate_generations": "1.19",
    "create_returns_body": "1.20",
    "candidates_member_of": "1.21",
    "forbidden_traits": "1.22",
    "error_codes": "1.23",
    "multiple_member_of": "1.24",
    "granular": "1.25",
    "consumer_generations": "1.28",
    "nested_candidates": "1.29",
    "reshaper": "1.30",
    "candidates_in_tree": "1.31",
    "forbidden_aggregates": "1.32",
    "arbitrary_suffixes": "1.33",
    "mappings": "1.34",
    "root_required": "1.35",
    "same_subtree": "1.36",
    "reparent": "1.37",
    "consumer_types": "1.38",
    "any_traits": "1.39",
}

Version = tuple[int, int]


def parse(version: str | Version) -> Version:
    if isinstance(version, tuple):
        return version
    try:
        major, minor = version.strip().split(".")
        parsed = (int(major), int(minor))
    except (AttributeError, ValueError):
        raise ValueError(f"not a microversion: {version!r}") from None
    if parsed[0] < 0 or parsed[1] < 0:
        raise ValueError(f"not a microversion: {version!r}")
    return parsed


def render(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def at_least(version: str | Version, feature_or_version: str) -> bool:
    needed = FEATURES.get(feature_or_version, feature_or_version)
    return parse(version) >= parse(needed)


def require(version: str | Version, feature: str) -> None:
    """Raise :class:`MicroversionUnsupported` unless ``version`` has ``feature``."""
    if not at_least(version, feature):
        shown = version if isinstance(version, str) else render(version)
        raise MicroversionUnsupported(feature, FEATURES[feature], shown)


def header_value(version: str | Version) -> str:
    return f"{SERVICE_TYPE} {render(parse(version))}"
