"""Microversion negotiation through the ``OpenStack-API-Version`` header."""

from __future__ import annotations

import functools

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


# Versions already worked out, by the header's value.  Clients send one
# version all day, so the few values in use are parsed once each.
_KNOWN: dict[str | None, Version] = {}
_KNOWN_MAX = 256


def from_header_value(value: str | None) -> Version:
    """``from_headers`` for a request whose ``OpenStack-API-Version`` header
    is ``value`` (None when absent).

    No other header takes part in the negotiation, so the answer is a
    function of this value: each value is negotiated once and its answer
    reused.  Refusals are not remembered (they raise every time).
    """
    try:
        return _KNOWN[value]
    except KeyError:
        pass
    version = from_headers([] if value is None else [(HEADER, value)])
    if len(_KNOWN) < _KNOWN_MAX:
        _KNOWN[value] = version
    return version


@functools.lru_cache(maxsize=64)
def parse(version: str) -> Version:
    """A version string of the API's own (the handlers' minimums), parsed
    once: the same few are asked about on every request."""
    return microversion_parse.parse_version_string(version)
