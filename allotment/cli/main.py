"""The ``allotment`` command: what osc-placement does not cover.

Allocation candidates with granular groups, ``same_subtree``,
``root_required`` and ``in:`` lists; the reshaper from a JSON file;
consumer types and usage by type; one host's tree with its usage; capacity
and usage per host.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from allotment.cli import candidates as cand
from allotment.cli import compare
from allotment.cli.connect import make_client
from allotment.cli.explain import explain, server_explanation
from allotment.cli.output import FORMATS, bar, emit
from allotment.client import LATEST, ApiError, ClientError, PlacementClient
from allotment.client import report as reports


class _Lazy:
    """Connects on first use, so ``--help`` and usage errors never do."""

    def __init__(self, ctx: click.Context, **options: Any) -> None:
        self._ctx, self._options, self._client = ctx, options, None
        self.format = options.pop("fmt")

    @property
    def options(self) -> dict[str, Any]:
        """How the command was asked to connect."""
        return dict(self._options)

    @property
    def client(self) -> PlacementClient:
        if self._client is None:
            self._client = self._ctx.with_resource(make_client(**self._options))
        return self._client


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep:
            raise click.BadParameter(f"{value!r} is not NAME:VALUE", param_hint="--header")
        out[name.strip()] = content.strip()
    return out


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="OS_PLACEMENT_URL", help="Placement endpoint, e.g. "
              "http://127.0.0.1:8778 (with --token; otherwise keystone is asked).")
@click.option("--token", envvar="OS_TOKEN", help="X-Auth-Token to send with --url "
              "(on a noauth2 service, 'admin' is an administrator).")
@click.option("--os-cloud", "cloud", envvar="OS_CLOUD", help="Cloud in clouds.yaml.")
@click.option("--database-url", help="Talk to the database in-process (no API server).")
@click.option("--os-placement-api-version", "microversion", default=LATEST,
              envvar="OS_PLACEMENT_API_VERSION", show_default=True,
              help="Microversion to speak.")
@click.option("-H", "--header", "headers", multiple=True, metavar="NAME:VALUE",
              help="Extra header for every request, e.g. 'X-Roles: admin,service'.")
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True)
@click.pass_context
def cli(ctx: click.Context, url, token, cloud, database_url, microversion, headers,
        fmt) -> None:
    """Operate a Placement service (allotment or upstream)."""
    ctx.obj = _Lazy(ctx, url=url, token=token, cloud=cloud, database_url=database_url,
                    microversion=microversion, headers=_headers(headers), fmt=fmt)


@cli.command("candidates")
@click.option("-r", "--resources", help="Unsuffixed group: RC:N,RC:N.")
@click.option("--required", multiple=True, help="Traits: A,!B or in:A,B (repeatable).")
@click.option("--member-of", multiple=True,
              help="Aggregates: UUID, in:U1,U2 or !in:U1,U2 (repeatable).")
@click.option("--in-tree", help="Only the tree of this provider.")
@click.option("-g", "--group", "groups", multiple=True, metavar="'SUFFIX key=value ...'",
              help="A granular group, e.g. '_GPU resources=VGPU:1 required=CUSTOM_A100'. "
                   "Keys: resources, required, member_of, in_tree. A group without "
                   "resources is resourceless.")
@click.option("--group-policy", type=click.Choice(["none", "isolate"]))
@click.option("--same-subtree", multiple=True, metavar="SUFFIX,SUFFIX",
              help="Groups to satisfy under one subtree (repeatable).")
@click.option("--root-required", metavar="TRAIT,!TRAIT", help="Traits of the root.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many candidates.")
@click.option("--why", is_flag=True,
              help="When nothing fits, find out which part of the request rules every "
                   "host out (by asking smaller requests). json/yaml output becomes "
                   "{candidates, why}.")
@click.option("--explain", "explain_hosts", type=click.IntRange(1, 1000), metavar="N",
              help="Ask allotment's explain extension why each host (up to N) yields "
                   "no candidate. json/yaml output becomes {candidates, explanation}.")
@click.pass_obj
def candidates_cmd(obj: _Lazy, resources, required, member_of, in_tree, groups,
                   group_policy, same_subtree, root_required, limit, why,
                   explain_hosts) -> None:
    """Which hosts and providers could satisfy a request, and how much of each."""
    request = cand.build_request(
        resources=resources, required=required, member_of=member_of, in_tree=in_tree,
        groups=groups, group_policy=group_policy, same_subtree=same_subtree,
        root_required=root_required, limit=limit)
    found = cand.describe(obj.client, request)
    if explain_hosts:
        names = cand.provider_names(obj.client)
        rows = server_explanation(obj.client, request, names, explain_limit=explain_hosts)
        tables = [("", ["#", "host", "provider", "resources", "groups"],
                   cand.table_rows(found)),
                  ("", ["host", "why it yields no candidate"],
                   [[r["host"], r["why"]] for r in rows])]
        emit(obj.format, {"candidates": found, "explanation": rows}, tables)
        return
    reasons = explain(obj.client, request) if why and not found else []
    tables = [("", ["#", "host", "provider", "resources", "groups"], cand.table_rows(found))]
    if reasons:
        tables.append(("", ["why nothing fits"], [[r] for r in reasons]))
    emit(obj.format, {"candidates": found, "why": reasons} if why else found, tables)
    if not found and obj.format == "table":
        click.echo("No candidate fits this request.", err=True)


@cli.command("reshape")
@click.argument("body", type=click.File("r"))
@click.pass_obj
def reshape_cmd(obj: _Lazy, body) -> None:
    """POST /reshaper with BODY, a JSON file ({"inventories": ..., "allocations": ...};
    '-' reads standard input). Needs the service role."""
    try:
        data = json.load(body)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="BODY") from None
    if not isinstance(data, dict) or set(data) != {"inventories", "allocations"}:
        raise click.BadParameter("needs exactly the keys 'inventories' and 'allocations'",
                                 param_hint="BODY")
    obj.client.reshaper.reshape(data["inventories"], data["allocations"])
    emit(obj.format, {"reshaped": sorted(data["inventories"]),
                      "consumers": sorted(data["allocations"])},
         [("", ["reshaped providers", "consumers"],
           [[", ".join(sorted(data["inventories"])), ", ".join(sorted(data["allocations"]))]])])


@cli.command("usages")
@click.option("--project", required=True, help="Project id.")
@click.option("--user", help="Only this user's consumers.")
@click.option("--consumer-type", help="One type, 'all' (summed) or 'unknown'.")
@click.pass_obj
def usages_cmd(obj: _Lazy, project, user, consumer_type) -> None:
    """A project's usage per consumer type (microversion 1.38+)."""
    usages = obj.client.usages.totals(project, user_id=user, consumer_type=consumer_type)
    classes = sorted({rc for entry in usages.values() if isinstance(entry, dict)
                      for rc in entry if rc != "consumer_count"})
    rows = [[ctype, entry.get("consumer_count", ""), *(entry.get(rc, 0) for rc in classes)]
            for ctype, entry in sorted(usages.items()) if isinstance(entry, dict)]
    emit(obj.format, usages, [("", ["consumer type", "consumers", *classes], rows)])


@cli.group("consumer")
def consumer_group() -> None:
    """One consumer: its allocations and its type."""


def _consumer_tables(record: dict[str, Any]) -> list:
    facts = [[k, record.get(k, "")] for k in ("consumer_type", "project_id", "user_id",
                                              "consumer_generation")]
    rows = [[rp, ", ".join(f"{rc}={n}" for rc, n in sorted(a["resources"].items()))]
            for rp, a in sorted(record.get("allocations", {}).items())]
    return [("", ["field", "value"], facts), ("", ["provider", "resources"], rows)]


@consumer_group.command("show")
@click.argument("consumer")
@click.pass_obj
def consumer_show(obj: _Lazy, consumer) -> None:
    """A consumer's allocations, type, project and user."""
    record = obj.client.allocations.get(consumer)
    emit(obj.format, record, _consumer_tables(record))


@consumer_group.command("set-type")
@click.argument("consumer")
@click.argument("consumer_type")
@click.pass_obj
def consumer_set_type(obj: _Lazy, consumer, consumer_type) -> None:
    """Give CONSUMER the type CONSUMER_TYPE, keeping its allocations."""
    client = obj.client
    record = client.allocations.get(consumer)
    if not record.get("allocations"):
        raise click.ClickException(f"consumer {consumer} has no allocations")
    client.allocations.put(consumer, record["allocations"], project_id=record["project_id"],
                           user_id=record["user_id"],
                           consumer_generation=record.get("consumer_generation"),
                           consumer_type=consumer_type)
    record = client.allocations.get(consumer)
    emit(obj.format, record, _consumer_tables(record))


def _provider_rows(report: reports.ProviderReport) -> list[list[Any]]:
    indent = "  " * report.depth + ("└ " if report.depth else "")
    classes = list(report.usage) or [""]
    rows = []
    for i, rc in enumerate(classes):
        amount = report.usage.get(rc)
        first = i == 0
        rows.append([
            indent + report.name if first else "", rc,
            bar(amount.used, amount.capacity) if amount else "",
            ", ".join(report.traits) if first else "",
            "\n".join(report.aggregates) if first else "",
        ])
    return rows


@cli.command("tree")
@click.argument("host")
@click.pass_obj
def tree_cmd(obj: _Lazy, host) -> None:
    """HOST's tree (a provider name or uuid): providers, inventories, usage,
    traits, aggregates, and the sharing providers serving it."""
    tree = reports.tree_report(obj.client, host)
    columns = ["provider", "class", "usage", "traits", "aggregates"]
    tables = [(f"tree of {tree.root.name} ({tree.root.uuid})", columns,
               [row for p in tree.providers for row in _provider_rows(p)])]
    if tree.sharing:
        tables.append(("sharing providers", columns,
                       [row for p in tree.sharing for row in _provider_rows(p)]))
    emit(obj.format, tree.as_dict(), tables)


@cli.command("hosts")
@click.option("--name", default="", help="Only hosts whose name contains this.")
@click.pass_obj
def hosts_cmd(obj: _Lazy, name) -> None:
    """Every host (tree): capacity and usage per resource class."""
    hosts = reports.host_summaries(obj.client, name)
    rows = []
    for host in hosts:
        classes = list(host.usage) or [""]
        for i, rc in enumerate(sorted(classes)):
            amount = host.usage.get(rc)
            label = host.name + (" (sharing)" if host.sharing else "")
            rows.append([label if i == 0 else "", host.providers if i == 0 else "", rc,
                         bar(amount.used, amount.capacity) if amount else ""])
    emit(obj.format, [h.as_dict() for h in hosts],
         [("", ["host", "providers", "class", "usage"], rows)])


cli.add_command(compare.command)


def main(argv: list[str] | None = None) -> int:
    try:
        # A command that ends with ctx.exit(code) gives its code back here.
        code = cli.main(args=argv, prog_name="allotment", standalone_mode=False)
        if isinstance(code, int):
            return code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (ApiError, ClientError) as exc:
        click.echo(f"Error: {exc}", err=True)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
