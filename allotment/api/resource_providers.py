"""/resource_providers and /resource_providers/{uuid}.

Also the request helpers the provider sub-resources share: Placement's
wording of body validation errors, provider URLs and the usages endpoint.
"""

from __future__ import annotations

import falcon
import jsonschema

from allotment import errors
from allotment.api import body, candidates_extensions, filters, query, rendering
from allotment.api.resource import Resource, authorize, set_location, version
from allotment.api.schema import first_error
from allotment.service import provider_listing
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


def post_schema(ver: tuple[int, int]) -> dict:
    """Body of POST /resource_providers; parents arrive with 1.14."""
    return POST_SCHEMA_1_14 if ver >= (1, 14) else POST_SCHEMA


def put_schema(ver: tuple[int, int]) -> dict:
    """Body of PUT /resource_providers/{uuid}."""
    return PUT_SCHEMA_1_14 if ver >= (1, 14) else PUT_SCHEMA

# Query keys GET /resource_providers accepts, by the microversion adding them.
LIST_KEYS = (((1, 0), "name"), ((1, 0), "uuid"), ((1, 3), "member_of"),
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

def _bad_query(exc: jsonschema.ValidationError) -> errors.BadRequest:
    return errors.BadRequest(f"Invalid query string parameters: {exc}")


# Placement checks these with jsonschema's stock format checker.
_STOCK_FORMATS = jsonschema.FormatChecker()


_UUID_KEYS = frozenset({"uuid", "in_tree"})


def list_query_schema(ver: tuple[int, int]) -> dict:
    """The query of GET /resource_providers (last value of each key)."""
    return {"type": "object", "additionalProperties": False, "properties": {
        key: ({"type": "string", "format": "uuid"} if key in _UUID_KEYS
              else {"type": "string"}) for since, key in LIST_KEYS if ver >= since}}


def _validate_query(params: dict[str, str], ver: tuple[int, int]) -> None:
    """Placement validates the query (last value of each key) by JSON schema."""
    error = first_error(params, list_query_schema(ver), format_checker=_STOCK_FORMATS,
                        key=("provider-query", tuple(ver)))
    if error is not None:
        raise _bad_query(error)


def parse_required(values: list[str], ver: tuple[int, int]
                   ) -> tuple[list[frozenset[str]], set[str]]:
    """required values -> (list of any-of trait sets, set of forbidden traits)."""
    if ver < (1, 39):
        values = values[-1:]  # repeats only count from 1.39
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        wanted, unwanted = filters.parse_traits(
            value, allow_forbidden=ver >= (1, 22), allow_any=ver >= (1, 39))
        required.extend(wanted)
        forbidden |= unwanted
    return required, forbidden


def list_filters(req: falcon.Request) -> service.ProviderFilters:
    ver = version(req)
    pairs = query.pairs(req)
    last = dict(pairs)
    _validate_query(last, ver)
    wanted = service.ProviderFilters()
    if "member_of" in last:
        wanted.member_of, wanted.forbidden_aggregates = filters.parse_member_of(
            [v for k, v in pairs if k == "member_of"], "", ver)
    if "required" in last:
        wanted.required_traits, wanted.forbidden_traits = parse_required(
            [v for k, v in pairs if k == "required"], ver)
    # Empty name/uuid values filter nothing, as upstream's truthiness test.
    wanted.name = last.get("name") or None
    wanted.uuid = last.get("uuid") or None
    if "in_tree" in last:
        wanted.in_tree = last["in_tree"]
    if "resources" in last:
        wanted.resources = filters.parse_resources(last["resources"])
    return wanted


# -- resources -------------------------------------------------------------

class ResourceProviders(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        authorize(req, "placement:resource_providers:list")
        if candidates_extensions.requested(req.get_header(candidates_extensions.HEADER)):
            self._detailed(req, resp)
            return
        ver = version(req)
        shape = (ver >= (1, 1), ver >= (1, 6), ver >= (1, 11), ver >= (1, 14),
                 req.env.get("SCRIPT_NAME", ""))

        def made(view) -> tuple:
            return rendering.fragment(provider_body(req, view)), stamp(view)

        found = provider_listing.list_made(self.replica, list_filters(req), shape, made)
        rendering.send_json(req, resp, {"resource_providers": [f for f, _ in found]},
                            last_modified=rendering.latest(*(when for _, when in found)))

    def _detailed(self, req: falcon.Request, resp: falcon.Response) -> None:
        """The listing extension (docs/extensions.md): each provider also
        carries its inventories, usages, traits and aggregates, so a view of
        the whole cloud is one request instead of several per provider."""
        # Each added field is what its own reading would need.
        for rule in ("placement:resource_providers:inventories:list",
                     "placement:resource_providers:usages",
                     "placement:resource_providers:traits:list",
                     "placement:resource_providers:aggregates:list"):
            authorize(req, rule)
        wide = at_least(req, (1, 14))

        def made(view, detail) -> tuple:
            # Without links: what they point at is in the entry itself.
            data = {"uuid": view.uuid, "name": view.name, "generation": view.generation}
            if wide:
                data["parent_provider_uuid"] = view.parent_provider_uuid
                data["root_provider_uuid"] = view.root_provider_uuid
            data.update(inventories=detail.inventories, usages=detail.usages,
                        traits=detail.traits, aggregates=detail.aggregates)
            return rendering.fragment(data), stamp(view)

        found = provider_listing.list_with_details(self.replica, list_filters(req), wide, made)
        rendering.send_json(req, resp, {"resource_providers": [f for f, _ in found]},
                            last_modified=rendering.latest(*(when for _, when in found)))

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body.require_json(req)
        authorize(req, "placement:resource_providers:create")
        data = body.json_body(req, post_schema(version(req)))
        row = service.create_provider(self.db, name=data["name"], uuid=data.get("uuid"),
                                      parent_uuid=data.get("parent_provider_uuid"))
        if at_least(req, (1, 20)):
            # Upstream answers 200 (not 201) with the provider from 1.20.
            rendering.send_json(req, resp, provider_body(req, row), last_modified=stamp(row))
        else:
            rendering.no_content(resp, 201)
        set_location(req, resp, provider_url(req, row.uuid))


class ResourceProvider(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, "placement:resource_providers:show")
        row = service.show_provider(self.replica, uuid)
        rendering.send_json(req, resp, provider_body(req, row), last_modified=stamp(row))

    def on_put(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        body.require_json(req)
        authorize(req, "placement:resource_providers:update")
        data = body.json_body_after(req, put_schema(version(req)),
                                    lambda: service.get_provider(self.db, uuid))
        row = service.update_provider(
            self.db, uuid, name=data["name"],
            parent_uuid=data.get("parent_provider_uuid", service.UNCHANGED),
            allow_reparenting=at_least(req, (1, 37)))
        rendering.send_json(req, resp, provider_body(req, row), last_modified=stamp(row))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, "placement:resource_providers:delete")
        service.delete_provider(self.db, uuid)
        rendering.no_content(resp)
