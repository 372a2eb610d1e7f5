"""Token validation without a keystone server, for tests of the keystone path.

Replaces ``AuthProtocol.fetch_token`` (the one call of keystonemiddleware's
``auth_token`` that would reach keystone), as keystonemiddleware's own test
fixture does; everything else -- header scrubbing, the identity headers it
sets, 401s -- runs as in production.
"""

from __future__ import annotations

import datetime

from keystonemiddleware import auth_token
from keystonemiddleware.auth_token import _exceptions as ksm_exceptions

DOMAIN = {"id": "default", "name": "Default"}


class FakeKeystone:
    """Issues keystone v3 token bodies: project, system or domain scoped."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict] = {}

    def add(self, user_id: str, project_id: str | None, roles: list[str], *,
            system: bool = False, domain: bool = False) -> str:
        now = datetime.datetime.now(datetime.UTC)
        token = {
            "methods": ["password"],
            "issued_at": now.isoformat(),
            "expires_at": (now + datetime.timedelta(hours=1)).isoformat(),
            "user": {"id": user_id, "name": user_id, "domain": DOMAIN},
            "roles": [{"id": f"role-{name}", "name": name} for name in roles],
            "catalog": [],
        }
        if system:
            token["system"] = {"all": True}
        elif domain:
            token["domain"] = DOMAIN
        else:
            token["project"] = {"id": project_id, "name": project_id, "domain": DOMAIN}
        token_id = f"token-{len(self.tokens)}"
        self.tokens[token_id] = {"token": token}
        return token_id

    def fetch_token(self, token: str, **kwargs):
        try:
            return self.tokens[token]
        except KeyError:
            raise ksm_exceptions.InvalidToken() from None

    def install(self, monkeypatch) -> FakeKeystone:
        """Make every ``auth_token`` middleware validate against this."""
        monkeypatch.setattr(auth_token.AuthProtocol, "fetch_token",
                            lambda _self, token, **kw: self.fetch_token(token, **kw))
        return self
