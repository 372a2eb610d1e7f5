"""Microversion negotiation through the ``OpenStack-API-Version`` header."""

from __future__ import annotations

import microversion_parse

from allotment import errors

SERVICE_TYPE = "placement"
MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)
VERSIONS: list[str] = [f"1.{minor}" for minor in range(MAX_VERSION[1] + 1)]
HEADER = "openstack-api-version"

Version = microversion_parse.Version


def min_version_string() -> str:
    return VERSIONS[0]


def max_version_string() -> str:
    return VERSIONS[-1]


def from_headers(headers: dict[str, str]) -> Version:
    """The requested version; the minimum when the header is absent.

    406 for a well-formed version we do not serve, 400 for a malformed one,
    with upstream's messages.
    """
    try:
        return microversion_parse.extract_version(headers, SERVICE_TYPE, VERSIONS)
    except ValueError as exc:
        raise errors.NotAcceptable(f"Invalid microversion: {exc}") from exc
    except TypeError as exc:
        raise errors.BadRequest(f"Invalid microversion: {exc}") from exc


def parse(version: str) -> Version:
    return microversion_parse.parse_version_string(version)
