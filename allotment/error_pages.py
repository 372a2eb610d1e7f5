"""Which form an error answer takes, and the HTML and plain-text forms.

Placement renders its errors through WebOb, which offers HTML and JSON to
the client's ``Accept`` header: a client that asks for no type in
particular (no header, or ``*/*``) gets the JSON error document, one that
prefers HTML gets an HTML page, and one that accepts neither gets plain
text.  The pages here are built the same way: the title line, the class's
explanation, then the detail (HTML-escaped in the page).
"""

from __future__ import annotations

import html
from string import Template

from webob.acceptparse import create_accept_header

from allotment import errors

JSON = "application/json"
HTML = "text/html"
PLAIN = "text/plain"

_OFFERS = [HTML, JSON]

# The body of each page before the title is put around it; the classes whose
# wording names the request (its method, Accept or Content-Type) have their
# own, which leave out the explanation.
_BODY = Template("${explanation}<br /><br />\n${detail}\n${html_comment}\n")
_BODIES = {
    errors.MethodNotAllowed: Template(
        "The method ${REQUEST_METHOD} is not allowed for this resource. <br /><br />\n"
        "${detail}"),
    errors.NotAcceptable: Template(
        "The resource could not be generated that was acceptable to your browser\n"
        "(content of type ${HTTP_ACCEPT}. <br /><br />\n${detail}"),
    errors.UnsupportedMediaType: Template(
        "The request media type ${CONTENT_TYPE} is not supported by this server.\n"
        "<br /><br />\n${detail}"),
}

_PAGE = Template("<html>\n <head>\n  <title>${status}</title>\n </head>\n <body>\n"
                 "  <h1>${status}</h1>\n  ${body}\n </body>\n</html>")


def negotiate(environ: dict) -> str:
    """The type an error answer to this request is written in."""
    accept = environ.get("HTTP_ACCEPT")
    if not accept or accept == "*/*":
        return JSON
    offers = create_accept_header(accept).acceptable_offers(_OFFERS)
    return offers[0][0] if offers else PLAIN


def _template(exc: errors.PlacementError) -> Template:
    for cls in type(exc).__mro__:
        if cls in _BODIES:
            return _BODIES[cls]
    return _BODY


def html_page(exc: errors.PlacementError, environ: dict) -> str:
    template = _template(exc)
    values = {"explanation": html.escape(exc.explanation),
              "detail": html.escape(str(exc.detail or "")), "html_comment": ""}
    if template is not _BODY:
        # As in WebOb, a class's own wording may name anything of the
        # request, escaped like the detail.
        values = {**{k: html.escape(str(v)) for k, v in environ.items()
                     if isinstance(k, str) and k.isupper()}, **values}
    body = template.safe_substitute(values)
    return _PAGE.substitute(status=f"{exc.status} {exc.title}", body=body)


def plain_page(exc: errors.PlacementError, formatted_detail: str) -> str:
    """``formatted_detail`` is the detail as the JSON document carries it
    (explanation and detail, markup taken out), which is also the text here."""
    return f"{exc.status} {exc.title}\n\n{formatted_detail}"
