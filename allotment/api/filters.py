"""Values of the filtering query parameters shared by GET /resource_providers
and GET /allocation_candidates: ``resources``, ``required`` and ``member_of``.

Pure functions from a raw value (and the microversion where it matters) to
typed data; errors are Placement's 400s with its wording.
"""

from __future__ import annotations

import itertools
import uuid

from allotment import errors


def is_uuid_like(value: str) -> bool:
    """Accept what Placement accepts: any spelling ``uuid.UUID`` round-trips."""
    try:
        canonical = str(uuid.UUID(value)).replace("-", "")
    except (TypeError, ValueError, AttributeError):
        return False
    plain = (value.replace("urn:", "").replace("uuid:", "").strip("{}")
             .replace("-", "").lower())
    return canonical == plain


def parse_resources(value: str) -> dict[str, int]:
    expected = ("Badly formed resources parameter. Expected resources query "
                "string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. ")
    if value.strip() == "":
        raise errors.BadRequest(expected + "Got: empty string.")
    result: dict[str, int] = {}
    for item in value.split(","):
        parts = item.split(":")
        if len(parts) != 2:
            raise errors.BadRequest(expected + f"Got: {item}.")
        name, raw = parts
        try:
            amount = int(raw)
        except ValueError:
            raise errors.BadRequest(
                f"Requested resource {name} expected positive integer amount. "
                f"Got: {raw}.") from None
        if amount < 1:
            raise errors.BadRequest(
                f"Requested resource {name} requires amount >= 1. Got: {amount}.")
        result[name] = amount
    return result


def parse_traits(value: str, *, allow_forbidden: bool, allow_any: bool
                  ) -> tuple[list[frozenset[str]], set[str]]:
    """One ``required``-style value: ``A,!B`` or (from 1.39) ``in:A,B``."""
    bad = "Invalid query string parameters: "
    if value.startswith("in:"):
        if not allow_any:
            raise errors.BadRequest(
                f"{bad}The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
                f"supported since microversion 1.39. Got: {value}")
        any_of = {t.strip() for t in value[3:].split(",")}
        if not all(any_of):
            raise errors.BadRequest(
                f"{bad}Expected 'required' parameter value of the form: "
                f"in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: {value}")
        if any(t.startswith("!") for t in any_of):
            raise errors.BadRequest(
                f"{bad}The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not "
                f"support forbidden traits. Got: {value}")
        return [frozenset(any_of)], set()
    names = [t.strip() for t in value.split(",")]
    # Any run of leading '!' means forbidden; Placement keeps that quirk.
    forbidden = {t.lstrip("!") for t in names if t.startswith("!")}
    if not all(itertools.chain(forbidden, names)):
        form = ("HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden
                else "HW_CPU_X86_VMX,CUSTOM_MAGIC")
        raise errors.BadRequest(
            f"{bad}Expected 'required' parameter value of the form: {form}. "
            f"Got an empty trait in: {value}")
    if forbidden and not allow_forbidden:
        raise errors.BadRequest(
            f"{bad}Expected 'required' parameter value of the form: "
            f"HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}")
    return [frozenset([t]) for t in names if not t.startswith("!")], forbidden


def parse_member_of(values: list[str], suffix: str, version: tuple[int, int]
                     ) -> tuple[list[frozenset[str]], set[str]]:
    if version < (1, 24) and len(values) > 1:
        raise errors.BadRequest(
            f"Multiple member_of{suffix} parameters are not supported")
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if "," in value and not value.startswith(("in:", "!in:")):
            raise errors.BadRequest(
                "Multiple values for 'member_of' must be prefixed with the "
                "'in:' or '!in:' keyword using the valid microversion. "
                f"Got: {value}")
        if value.startswith("!in:"):
            wanted, banned = [], value[4:].split(",")
        elif value.startswith("!"):
            wanted, banned = [], [value[1:]]
        elif value.startswith("in:"):
            wanted, banned = value[3:].split(","), []
        else:
            wanted, banned = [value], []
        for agg in [*wanted, *banned]:
            if not is_uuid_like(agg):
                raise errors.BadRequest(
                    "Invalid query string parameters: Expected 'member_of' "
                    f"parameter to contain valid UUID(s). Got: {agg}")
        if wanted:
            required.append(frozenset(wanted))
        if banned:
            if version < (1, 32):
                raise errors.BadRequest(
                    f"Forbidden member_of{suffix} parameters are not supported "
                    "in the specified microversion")
            forbidden.update(banned)
    return required, forbidden
