"""The request context: who is calling, and what policy judges them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from oslo_context import context as oslo_context

from allotment import errors


class PolicyChecker(Protocol):
    def authorize(
        self, ctx: RequestContext, action: str, target: Mapping[str, Any]
    ) -> bool: ...


class RequestContext(oslo_context.RequestContext):
    """Identity of a request (from keystone-style headers) plus its policy.

    Built with :meth:`from_environ`, which reads ``X_USER_ID``,
    ``X_PROJECT_ID``/``X_TENANT_ID``, ``X_ROLES``, ``OpenStack-System-Scope``
    and the request id that oslo.middleware put in the environ.
    """

    def __init__(self, *args: Any, policy: PolicyChecker | None = None,
                 **kwargs: Any) -> None:
        self.policy = policy
        super().__init__(*args, **kwargs)

    def can(
        self,
        action: str,
        target: Mapping[str, Any] | None = None,
        fatal: bool = True,
    ) -> bool:
        """Whether this caller may perform ``action`` on ``target``.

        ``target`` defaults to the caller's own project and user, as in
        Placement.  With ``fatal`` (the default) a denial raises
        :class:`allotment.errors.Forbidden`; otherwise it returns False.
        """
        if self.policy is None:
            # A context without a policy would silently allow everything or
            # deny everything; both hide a wiring mistake.
            raise RuntimeError("RequestContext has no policy attached")
        if target is None:
            target = {"project_id": self.project_id, "user_id": self.user_id}
        try:
            return self.policy.authorize(self, action, target)
        except errors.Forbidden:
            if fatal:
                raise
            return False
