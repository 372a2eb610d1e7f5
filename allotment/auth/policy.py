"""Policy enforcement: one oslo.policy Enforcer per application.

Each :class:`Policy` owns its Enforcer, built from the ConfigOpts it is given
(never the global ``cfg.CONF``), so several applications with different
``[oslo_policy]`` settings can live in one process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import policy as oslo_policy

from allotment import errors
from allotment.auth import policies, rule_checks

LOG = logging.getLogger(__name__)


def denied_message(action: str) -> str:
    """The detail of a 403 for ``action``, worded as Placement words it."""
    return f"Policy does not allow {action} to be performed."


class _RulesDenied(Exception):
    """What the enforcer raises when the rules say no."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args)


# How often (seconds) the policy files are looked at for changes.  oslo.policy
# would stat them on every check; a changed file takes effect within this.
RELOAD_INTERVAL = 1.0
# Decisions remembered at most; a cloud has a handful of distinct callers.
MAX_DECISIONS = 4096


_SCALARS = (str, int, bool, float, type(None))


def _frozen(value: Any) -> Any:
    # Credentials are mostly strings and None: those are taken as they are
    # before the (slower) abstract-type checks.
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Mapping):
        # In the mapping's own order, unsorted: equal keys still mean equal
        # mappings (the same entries in the same order), and the mappings
        # asked about are built in one fixed order, so sorting would buy no
        # more remembered decisions.
        return tuple([(k, v if type(v) in _SCALARS else _frozen(v))
                      for k, v in value.items()])
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(sorted(map(str, value)))
    return value


# The attributes oslo.context's own ``to_policy_values`` is made of: a
# context class that does not override it is judged on these alone.
_POLICY_ATTRIBUTES = (
    "user_id", "user_domain_id", "system_scope", "domain_id", "project_id",
    "project_domain_id", "roles", "is_admin_project", "service_user_id",
    "service_user_domain_id", "service_project_id", "service_project_domain_id",
    "service_roles")
_STANDARD_VALUES = oslo_context.RequestContext.to_policy_values


def _credentials(ctx: oslo_context.RequestContext) -> Any:
    """What the rules will see of the caller, frozen for remembering.

    oslo.context hands policy values out as a mapping that reads every
    entry through abstract-mapping calls; where the context class keeps the
    standard values, the same attributes are read straight off it."""
    if type(ctx).to_policy_values is _STANDARD_VALUES:
        return tuple([v if type(v) in _SCALARS else _frozen(v)
                      for v in map(ctx.__getattribute__, _POLICY_ATTRIBUTES)])
    return _frozen(ctx.to_policy_values())


class Policy:
    """Checks actions against Placement's rules and the operator's overrides.

    Honours ``[oslo_policy] policy_file`` (a missing file just means the
    defaults apply), ``policy_dirs`` and ``enforce_new_defaults``.  Scope is
    always checked: every Placement API rule is project scoped.

    A decision depends only on the action, the target, the caller's
    credentials and the rules, and the same few callers ask the same few
    questions all day: decisions are remembered until the rules change
    (the policy files are looked at once a second).
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts,
        rules: list[oslo_policy.RuleDefault] | None = None,
    ) -> None:
        # Before any rule is parsed (see rule_checks).
        rule_checks.load_on_first_use()
        enforcer = oslo_policy.Enforcer(conf)
        # Every default changed during the secure-RBAC work; warning about
        # each of them on every start would drown real messages.
        enforcer.suppress_default_change_warnings = True
        enforcer.register_defaults(
            rules if rules is not None else policies.list_rules())
        enforcer.load_rules()
        self.enforcer = enforcer
        self._decisions: dict[tuple, tuple[str, str] | None] = {}
        self._rules = enforcer.rules
        self._looked = time.monotonic()
        self._lock = threading.Lock()

    def _fresh_decisions(self) -> dict:
        now = time.monotonic()
        if now - self._looked >= RELOAD_INTERVAL:
            with self._lock:
                self._looked = now
                self.enforcer.load_rules()
                if self.enforcer.rules is not self._rules:
                    self._rules = self.enforcer.rules
                    self._decisions = {}
        if len(self._decisions) > MAX_DECISIONS:
            self._decisions = {}
        return self._decisions

    def _decide(self, ctx: oslo_context.RequestContext, action: str,
                target: Mapping[str, Any]) -> tuple[str, str] | None:
        """None when allowed, else (kind, detail) of the refusal."""
        decisions = self._fresh_decisions()
        key = (action, _frozen(target), _credentials(ctx))
        try:
            return decisions[key]
        except KeyError:
            pass
        except TypeError:  # something unhashable: decide without remembering
            key = None
        try:
            self.enforcer.authorize(action, dict(target), ctx, do_raise=True,
                                    exc=_RulesDenied)
            decision = None
        except _RulesDenied:
            decision = ("rules", denied_message(action))
        except oslo_policy.InvalidScope:
            # Placement words a scope mismatch differently from a rule
            # denial: the detail is the bare action name.
            decision = ("scope", action)
        if key is not None:
            decisions[key] = decision
        return decision

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
        decision = self._decide(ctx, action, target)
        if decision is None:
            return True
        kind, detail = decision
        if kind == "rules":
            LOG.debug("Policy check for %s failed with credentials %s",
                      action, ctx.to_policy_values())
        else:
            LOG.debug("Token scope does not suit %s", action)
        raise errors.Forbidden(detail)

    def check(
        self,
        ctx: oslo_context.RequestContext,
        action: str,
        target: Mapping[str, Any],
    ) -> bool:
        """Like :meth:`authorize` but answers False instead of raising."""
        return self._decide(ctx, action, target) is None


def get_enforcer() -> oslo_policy.Enforcer:
    """Enforcer for the ``oslopolicy-*`` tools (``oslo.policy.enforcer``).

    Reads ``placement.conf`` from the usual places, so the tools see the
    operator's ``[oslo_policy]`` settings and policy file.
    """
    from allotment import conf as allotment_conf

    return Policy(allotment_conf.load()).enforcer
