"""Errors asked for in another form than JSON: a client whose Accept header
prefers HTML gets an HTML page, one that takes neither HTML nor JSON gets
plain text, as upstream's answers (WebOb's pages) are."""

from __future__ import annotations

import pytest

from tests.harness.wsgi_client import Client

UNKNOWN = "/resource_providers/bc8d9d50-7b0d-45ef-839c-e7b5e1c4e8fd"
NOT_FOUND = "The resource could not be found."
BAD_REQUEST = ("The server could not comply with the request since it is either malformed "
               "or otherwise incorrect.")


def page(status: str, body: str) -> str:
    return (f"<html>\n <head>\n  <title>{status}</title>\n </head>\n <body>\n"
            f"  <h1>{status}</h1>\n  {body}\n </body>\n</html>")


def test_unknown_url_as_html(api):
    resp = api.get("/bc8d9d50-7b0d-45ef-839c-e7b5e1c4e8fd", headers={"Accept": "text/html"})
    assert resp.status == 404
    assert resp.headers["content-type"] == "text/html; charset=UTF-8"
    assert resp.text == page("404 Not Found", f"{NOT_FOUND}<br /><br />\n\n\n")


def test_detail_is_escaped_in_html_and_kept_in_text(api):
    headers = {"Accept": "text/html, application/json"}
    resp = api.put("/traits/CUSTOM_<b>", headers=headers)
    assert resp.status == 400
    detail = ('The trait is invalid. A valid trait must be no longer than 255 characters, '
              'start with the prefix "CUSTOM_" and use following characters: "A"-"Z", '
              '"0"-"9" and "_"')
    escaped = detail.replace('"', "&quot;")
    assert resp.text == page("400 Bad Request", f"{BAD_REQUEST}<br /><br />\n{escaped}\n\n")
    resp = api.put("/traits/CUSTOM_<b>", headers={"Accept": "text/plain"})
    assert resp.headers["content-type"] == "text/plain; charset=UTF-8"
    assert resp.text == f"400 Bad Request\n\n{BAD_REQUEST}\n\n {detail}  "


def test_multi_line_detail_keeps_its_lines_in_html(api):
    resp = api.post("/resource_providers", json={"name": 1},
                    headers={"Accept": "text/html"}, version="1.0")
    assert resp.status == 400
    assert ("JSON does not validate: 1 is not of type &#x27;string&#x27;\n\n"
            "Failed validating &#x27;type&#x27;") in resp.text


def test_bad_microversion_as_html(api):
    resp = api.get("/", headers={"Accept": "text/html"}, version="0.5")
    assert resp.status == 406
    assert resp.headers["content-type"] == "text/html; charset=UTF-8"
    assert resp.text == page("406 Not Acceptable", (
        "The resource could not be generated that was acceptable to your browser\n"
        "(content of type text/html. <br /><br />\n"
        "Invalid microversion: Unacceptable version header: 0.5"))


def test_method_not_allowed_as_html_keeps_allow(api):
    resp = api.delete("/resource_providers", headers={"Accept": "text/html"})
    assert resp.status == 405 and resp.headers["allow"] == "GET, POST"
    assert resp.text == page("405 Method Not Allowed", (
        "The method DELETE is not allowed for this resource. <br /><br />\n"
        "The method specified is not allowed for this resource."))


@pytest.mark.parametrize("accept", ["application/xml", "text/plain", "text/html;q=0"])
def test_neither_html_nor_json_is_plain_text(api, accept):
    resp = api.get("/nope", headers={"Accept": accept})
    assert resp.status == 404
    assert resp.headers["content-type"] == "text/plain; charset=UTF-8"
    assert resp.text == f"404 Not Found\n\n{NOT_FOUND}\n\n   "


@pytest.mark.parametrize("accept", ["*/*", "application/json", "text/html;q=0.5, application/json",
                                    "application/*"])
def test_json_when_json_is_preferred_or_anything_goes(api, accept):
    resp = api.get(UNKNOWN, headers={"Accept": accept})
    assert resp.status == 404 and resp.headers["content-type"] == "application/json"
    assert resp.error()["title"] == "Not Found"


def test_missing_token_as_html_and_text(app):
    anonymous = Client(app, token=None)
    resp = anonymous.get("/resource_providers", headers={"Accept": "text/html"})
    assert resp.status == 401
    explanation = ("This server could not verify that you are authorized to access the "
                   "document you requested. Either you supplied the wrong credentials "
                   "(e.g., bad password), or your browser does not understand how to "
                   "supply the credentials required.")
    assert resp.text == page("401 Unauthorized", f"{explanation}<br /><br />\n\n\n")
    resp = anonymous.get("/resource_providers", headers={"Accept": "text/plain"})
    assert resp.text == f"401 Unauthorized\n\n{explanation}\n\n   "
    resp = anonymous.get("/resource_providers")
    assert resp.headers["content-type"] == "application/json"
