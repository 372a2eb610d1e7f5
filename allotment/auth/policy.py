"""Policy enforcement: one oslo.policy Enforcer per application.

Each :class:`Policy` owns its Enforcer, built from the ConfigOpts it is given
(never the global ``cfg.CONF``), so several applications with different
``[oslo_policy]`` settings can live in one process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import policy as oslo_policy

from allotment import errors
from allotment.auth import policies

LOG = logging.getLogger(__name__)


def denied_message(action: str) -> str:
    """The detail of a 403 for ``action``, worded as Placement words it."""
    return f"Policy does not allow {action} to be performed."


class _RulesDenied(Exception):
    """What the enforcer raises when the rules say no."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args)


class Policy:
    """Checks actions against Placement's rules and the operator's overrides.

    Honours ``[oslo_policy] policy_file`` (a missing file just means the
    defaults apply), ``policy_dirs`` and ``enforce_new_defaults``.  Scope is
    always checked: every Placement API rule is project scoped.
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        rules: list[oslo_policy.RuleDefault] | None = None,
    ) -> None:
        enforcer = oslo_policy.Enforcer(conf)
        # Every default changed during the secure-RBAC work; warning about
        # each of them on every start would drown real messages.
        enforcer.suppress_default_change_warnings = True
        enforcer.register_defaults(
            rules if rules is not None else policies.list_rules())
        enforcer.load_rules()
        self.enforcer = enforcer

    def authorize(
        self,
        ctx: oslo_context.RequestContext,
        action: str,
        target: Mapping[str, Any],
    ) -> bool:
        """True when ``ctx`` may perform ``action`` on ``target``.

        :raises allotment.errors.Forbidden: when the rules deny it, or the
            token's scope is not one the rule accepts.
        :raises oslo_policy.policy.PolicyNotRegistered: for an unknown
            action, which is a programming error (500), not a denial.
        """
        try:
            self.enforcer.authorize(action, dict(target), ctx, do_raise=True,
                                    exc=_RulesDenied)
        except _RulesDenied:
            LOG.debug("Policy check for %s failed with credentials %s",
                      action, ctx.to_policy_values())
            raise errors.Forbidden(denied_message(action)) from None
        except oslo_policy.InvalidScope:
            # Placement words a scope mismatch differently from a rule
            # denial: the detail is the bare action name.
            LOG.debug("Token scope does not suit %s", action)
            raise errors.Forbidden(action) from None
        return True

    def check(
        self,
        ctx: oslo_context.RequestContext,
        action: str,
        target: Mapping[str, Any],
    ) -> bool:
        """Like :meth:`authorize` but answers False instead of raising."""
        try:
            return bool(self.enforcer.authorize(
                action, dict(target), ctx, do_raise=False))
        except oslo_policy.InvalidScope:
            # Only raised when asked to raise, but a token of the wrong scope
            # is a denial like any other, never a server error.
            return False


def get_enforcer() -> oslo_policy.Enforcer:
    """Enforcer for the ``oslopolicy-*`` tools (``oslo.policy.enforcer``).

    Reads ``placement.conf`` from the usual places, so the tools see the
    operator's ``[oslo_policy]`` settings and policy file.
    """
    from allotment import conf as allotment_conf

    return Policy(allotment_conf.load()).enforcer
