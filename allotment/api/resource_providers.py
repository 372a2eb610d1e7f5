"""/resource_providers and /resource_providers/{uuid}.

Also the request helpers the provider sub-resources share: Placement's
wording of body validation errors, provider URLs and the usages endpoint.
"""

from __future__ import annotations

import falcon
import jsonschema

from allotment import errors
from allotment.api import body, query, rendering
from allotment.api.resource import Resource, authorize, version
from allotment.service import resource_providers as service

POST_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 200},
        "uuid": {"type": "string", "format": "uuid"},
    },
    "required": ["name"],
    "additionalProperties": False,
}
_PARENT = {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}
POST_SCHEMA_1_14 = {**POST_SCHEMA, "properties": {
    **POST_SCHEMA["properties"], "parent_provider_uuid": _PARENT}}
PUT_SCHEMA = {**POST_SCHEMA, "properties": {"name": POST_SCHEMA["properties"]["name"]}}
PUT_SCHEMA_1_14 = {**PUT_SCHEMA, "properties": {
    **PUT_SCHEMA["properties"], "parent_provider_uuid": _PARENT}}

# Query keys GET /resource_providers accepts, by the microversion adding them.
_LIST_KEYS = (((1, 0), "name"), ((1, 0), "uuid"), ((1, 3), "member_of"),
              ((1, 4), "resources"), ((1, 14), "in_tree"), ((1, 18), "required"))


# -- shared request helpers ------------------------------------------------

def at_least(req: falcon.Request, minimum: tuple[int, int]) -> bool:
    return version(req) >= minimum


def provider_url(req: falcon.Request, uuid: str) -> str:
    return f"{req.env.get('SCRIPT_NAME', '')}/resource_providers/{uuid}"


def provider_body(req: falcon.Request, row) -> dict:
    url = provider_url(req, row.uuid)
    rels = ["inventories", "usages"]
    if at_least(req, (1, 1)):
        rels.append("aggregates")
    if at_least(req, (1, 6)):
        rels.append("traits")
    if at_least(req, (1, 11)):
        rels.append("allocations")
    data = {
        "uuid": row.uuid,
        "name": row.name,
        "generation": row.generation,
        "links": [{"rel": "self", "href": url}]
        + [{"rel": rel, "href": f"{url}/{rel}"} for rel in rels],
    }
    if at_least(req, (1, 14)):
        data["parent_provider_uuid"] = row.parent_provider_uuid
        data["root_provider_uuid"] = row.root_provider_uuid
    return data


def stamp(row):
    return row.updated_at or row.created_at


# -- query parsing ---------------------------------------------------------

def _is_uuid_like(value: str) -> bool:
    return body.FORMAT_CHECKER.conforms(value, "uuid")


def _bad_query(exc: jsonschema.ValidationError) -> errors.BadRequest:
    return errors.BadRequest(f"Invalid query string parameters: {exc}")


def _validate_query(params: dict[str, str], allowed: list[str], uuid_keys: set[str]) -> None:
    """Placement validates the query (last value of each key) by JSON schema."""
    schema = {"type": "object", "additionalProperties": False, "properties": {
        key: ({"type": "string", "format": "uuid"} if key in uuid_keys
              else {"type": "string"}) for key in allowed}}
    try:
        # Placement checks these with jsonschema's stock format checker.
        jsonschema.validate(params, schema, format_checker=jsonschema.FormatChecker())
    except jsonschema.ValidationError as exc:
        raise _bad_query(exc) from None


def parse_member_of(values: list[str], ver: tuple[int, int],
                    suffix: str = "") -> tuple[list[set[str]], set[str]]:
    """member_of values -> (list of any-of sets required, set forbidden)."""
    if ver < (1, 24) and len(values) > 1:
        raise errors.BadRequest(
            f"Multiple member_of{suffix} parameters are not supported")
    required: list[set[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if "," in value and not (value.startswith("in:") or value.startswith("!in:")):
            raise errors.BadRequest(
                "Multiple values for 'member_of' must be prefixed with the 'in:' or "
                f"'!in:' keyword using the valid microversion. Got: {value}")
        wanted: set[str] = set()
        unwanted: set[str] = set()
        if value.startswith("!in:"):
            unwanted = set(value[4:].split(","))
        elif value.startswith("!"):
            unwanted = {value[1:]}
        elif value.startswith("in:"):
            wanted = set(value[3:].split(","))
        else:
            wanted = {value}
        for agg in sorted(wanted | unwanted):
            if not _is_uuid_like(agg):
                raise errors.BadRequest(
                    "Invalid query string parameters: Expected 'member_of' parameter "
                    f"to contain valid UUID(s). Got: {agg}")
        if wanted:
            required.append(wanted)
        if unwanted:
            if ver < (1, 32):
                raise errors.BadRequest(
                    f"Forbidden member_of{suffix} parameters are not supported in the "
                    "specified microversion")
            forbidden |= unwanted
    return required, forbidden


def parse_required(values: list[str], ver: tuple[int, int]) -> tuple[list[set[str]], set[str]]:
    """required values -> (list of any-of trait sets, set of forbidden traits)."""
    allow_forbidden = ver >= (1, 22)
    allow_any = ver >= (1, 39)
    if not allow_any:
        values = values[-1:]  # repeats only count from 1.39
    required: list[set[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if value.startswith("in:"):
            if not allow_any:
                raise errors.BadRequest(
                    "Invalid query string parameters: The format "
                    "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since "
                    f"microversion 1.39. Got: {value}")
            any_of = {t.strip() for t in value[3:].split(",")}
            if not all(any_of):
                raise errors.BadRequest(
                    "Invalid query string parameters: Expected 'required' parameter "
                    "value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty "
                    f"trait in: {value}")
            if any(t.startswith("!") for t in any_of):
                raise errors.BadRequest(
                    "Invalid query string parameters: The format "
                    "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden "
                    f"traits. Got: {value}")
            required.append(any_of)
            continue
        names = [t.strip() for t in value.split(",")]
        # Leading '!'s are all stripped, as upstream does ("!!A" forbids A).
        unwanted = {t.lstrip("!") for t in names if t.startswith("!")}
        if not all(names) or not all(unwanted):
            form = ("HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden
                    else "HW_CPU_X86_VMX,CUSTOM_MAGIC")
            raise errors.BadRequest(
                "Invalid query string parameters: Expected 'required' parameter "
                f"value of the form: {form}. Got an empty trait in: {value}")
        if unwanted and not allow_forbidden:
            raise errors.BadRequest(
                "Invalid query string parameters: Expected 'required' parameter "
                f"value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}")
        required.extend({t} for t in names if not t.startswith("!"))
        forbidden |= unwanted
    return required, forbidden


def parse_resources(value: str) -> dict[str, int]:
    """'VCPU:2,MEMORY_MB:1024' -> {"VCPU": 2, "MEMORY_MB": 1024}."""
    if value.strip() == "":
        raise errors.BadRequest(
            "Badly formed resources parameter. Expected resources query string "
            "parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
    result: dict[str, int] = {}
    for item in value.split(","):
        try:
            name, amount_text = item.split(":")
        except ValueError:
            raise errors.BadRequest(
                "Badly formed resources parameter. Expected resources query string "
                "parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. "
                f"Got: {item}.") from None
        try:
            amount = int(amount_text)
        except ValueError:
            raise errors.BadRequest(
                f"Requested resource {name} expected positive integer amount. "
                f"Got: {amount_text}.") from None
        if amount < 1:
            raise errors.BadRequest(
                f"Requested resource {name} requires amount >= 1. Got: {amount}.")
        result[name] = amount
    return result


def list_filters(req: falcon.Request) -> service.ProviderFilters:
    ver = version(req)
    allowed = [key for since, key in _LIST_KEYS if ver >= since]
    pairs = query.pairs(req)
    for key, value in pairs:
        if "\x00" in key or "\x00" in value:
            raise errors.BadRequest(
                "Invalid query string parameters: NUL characters are not allowed")
    last = dict(pairs)
    uuid_keys = {"uuid", "in_tree"}
    _validate_query(last, allowed, uuid_keys)
    filters = service.ProviderFilters()
    if "member_of" in last:
        filters.member_of, filters.forbidden_aggregates = parse_member_of(
            [v for k, v in pairs if k == "member_of"], ver)
    if "required" in last:
        filters.required_traits, filters.forbidden_traits = parse_required(
            [v for k, v in pairs if k == "required"], ver)
    # Empty name/uuid values filter nothing, as upstream's truthiness test.
    filters.name = last.get("name") or None
    filters.uuid = last.get("uuid") or None
    if "in_tree" in last:
        filters.in_tree = last["in_tree"]
    if "resources" in last:
        filters.resources = parse_resources(last["resources"])
    return filters


# -- resources -------------------------------------------------------------

class ResourceProviders(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        authorize(req, "placement:resource_providers:list")
        rows = service.list_providers(self.db, list_filters(req))
        rendering.send_json(
            req, resp, {"resource_providers": [provider_body(req, r) for r in rows]},
            last_modified=rendering.latest(*(stamp(r) for r in rows)))

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body.require_json(req)
        authorize(req, "placement:resource_providers:create")
        data = body.json_body(req, POST_SCHEMA_1_14 if at_least(req, (1, 14)) else POST_SCHEMA)
        row = service.create_provider(self.db, name=data["name"], uuid=data.get("uuid"),
                                      parent_uuid=data.get("parent_provider_uuid"))
        if at_least(req, (1, 20)):
            # Upstream answers 200 (not 201) with the provider from 1.20.
            rendering.send_json(req, resp, provider_body(req, row), last_modified=stamp(row))
        else:
            rendering.no_content(resp, 201)
        resp.location = provider_url(req, row.uuid)


class ResourceProvider(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, "placement:resource_providers:show")
        row = service.get_provider(self.db, uuid)
        rendering.send_json(req, resp, provider_body(req, row), last_modified=stamp(row))

    def on_put(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        body.require_json(req)
        authorize(req, "placement:resource_providers:update")
        service.get_provider(self.db, uuid)  # 404 before body errors, as upstream
        data = body.json_body(req, PUT_SCHEMA_1_14 if at_least(req, (1, 14)) else PUT_SCHEMA)
        row = service.update_provider(
            self.db, uuid, name=data["name"],
            parent_uuid=data.get("parent_provider_uuid", service.UNCHANGED),
            allow_reparenting=at_least(req, (1, 37)))
        rendering.send_json(req, resp, provider_body(req, row), last_modified=stamp(row))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, "placement:resource_providers:delete")
        service.delete_provider(self.db, uuid)
        rendering.no_content(resp)
