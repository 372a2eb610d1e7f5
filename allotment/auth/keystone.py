"""Keystone's tokens checked by keystonemiddleware's auth_token (``[api]
auth_strategy = keystone``), everywhere but the root document."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from keystonemiddleware import auth_token
from oslo_config import cfg

from allotment.auth.public import WSGIApp, is_root


def _without_unset_headers(application: WSGIApp) -> WSGIApp:
    """``application``, handed an environ without None-valued headers.

    auth_token sets the headers a token does not fill (the system scope of a
    project token, the domain of a project-scoped one ...) to None in the
    environ, where PEP 3333 allows only strings; header parsers that expect
    strings fail on them.  A None header is an absent one.
    """

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        for key in [k for k, v in environ.items() if v is None and k.startswith("HTTP_")]:
            del environ[key]
        return application(environ, start_response)

    return app


class KeystoneAuthMiddleware(auth_token.AuthProtocol):
    """keystonemiddleware's auth_token, except for the root document."""

    def __init__(self, application: WSGIApp, conf: cfg.ConfigOpts) -> None:
        self._unauthenticated_app = application
        # Options come from the [keystone_authtoken] group of our own
        # ConfigOpts, not the global one.
        super().__init__(_without_unset_headers(application),
                         {"oslo_config_config": conf})

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if is_root(environ):
            return self._unauthenticated_app(environ, start_response)
        return super().__call__(environ, start_response)
