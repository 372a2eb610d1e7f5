"""The OpenAPI 3.1 description of the API, built from the route table and
the request schemas the handlers validate with."""

from allotment.api.openapi.document import build, dumps

__all__ = ["build", "dumps"]
