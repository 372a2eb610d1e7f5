"""The ``allotment`` command: what osc-placement does not cover.

Allocation candidates with granular groups, ``same_subtree``,
``root_required`` and ``in:`` lists; the reshaper from a JSON file;
consumer types and usage by type; one host's tree with its usage; capacity
and usage per host.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import click

from allotment.cli import candidates_command as cand
from allotment.cli import compare_command as compare
from allotment.cli.connect import make_client
from allotment.cli.fit_reasons import explain, server_report
from allotment.cli.output import FORMATS, bar, emit
from allotment.client import LATEST, ApiError, ClientError, PlacementClient
from allotment.client import report as reports
from allotment.client.versions import parse as parse_version

# Exit status of `candidates` when nothing fits (as grep's "no match").
NOTHING_FITS = 1
CANDIDATE_COLUMNS = ["#", "host", "provider", "resources", "used/capacity", "groups"]


class _Lazy:
    """Connects on first use, so ``--help`` and usage errors never do."""

    def __init__(self, ctx: click.Context, **options: Any) -> None:
        self._ctx, self._options, self._client = ctx, options, None
        self._read_version: str | None = None
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

    @property
    def read_version(self) -> str:
        """The newest version both sides know: read-only views ask at it,
        whatever ``--os-placement-api-version`` says, so a version set for
        other tools never makes them fail."""
        if self._read_version is None:
            server = self.client.versions()
            newest = min(parse_version(LATEST), parse_version(server["max_version"]))
            self._read_version = f"{newest[0]}.{newest[1]}"
        return self._read_version


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep:
            raise click.BadParameter(f"{value!r} is not NAME:VALUE", param_hint="--header")
        out[name.strip()] = content.strip()
    return out


def _set_format(ctx: click.Context, _param, value: str | None) -> None:
    if value is not None:
        ctx.find_object(_Lazy).format = value


def format_option(command):
    """``-f/--format`` after the command name too, as osc takes it."""
    return click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default=None,
                        expose_value=False, callback=_set_format, is_eager=False,
                        help="Output format (overrides the one before the command).")(command)


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
@click.option("--ignore-consumer", "ignore_consumers", multiple=True, metavar="UUID",
              help="Answer as if this consumer held nothing (repeatable; allotment's "
                   "ignore_consumers extension). Each candidate lists whom it displaces.")
@click.option("--preempt", is_flag=True,
              help="Also candidates that fit once preemptible consumers go (allotment's "
                   "preempt extension), each with the consumers it would evict.")
@format_option
@click.pass_obj
def candidates_cmd(obj: _Lazy, resources, required, member_of, in_tree, groups,
                   group_policy, same_subtree, root_required, limit, why,
                   explain_hosts, ignore_consumers, preempt) -> None:
    """Which hosts and providers could satisfy a request, and how much of each."""
    request = cand.build_request(
        resources=resources, required=required, member_of=member_of, in_tree=in_tree,
        groups=groups, group_policy=group_policy, same_subtree=same_subtree,
        root_required=root_required, limit=limit)
    if ignore_consumers or preempt:
        request = dataclasses.replace(request, ignore_consumers=ignore_consumers,
                                      preempt=preempt)
    found = cand.describe(obj.client, request)
    if explain_hosts:
        names = cand.provider_names(obj.client)
        report = server_report(obj.client, request, names, explain_limit=explain_hosts)
        rows = report["explanation"]
        tables = [("", CANDIDATE_COLUMNS, cand.table_rows(found)),
                  ("what the service examined", ["counter", "value"],
                   [[k, v] for k, v in report["counters"].items()]),
                  ("hosts ruled out, by reason", ["reason", "hosts"],
                   [[k, v] for k, v in report["reasons"].items()]),
                  ("nearest misses first", ["host", "why it yields no candidate"],
                   [[r["host"], r["why"]] for r in rows])]
        emit(obj.format, {"candidates": found, **report}, tables)
        if not found:
            click.get_current_context().exit(NOTHING_FITS)
        return
    reasons = explain(obj.client, request) if why and not found else []
    tables = [("", CANDIDATE_COLUMNS, cand.table_rows(found))]
    if ignore_consumers or preempt:
        tables.append(("consumers in the way", ["#", "host", "", "consumer"],
                       cand.what_if_rows(found)))
    if reasons:
        tables.append(("", ["why nothing fits"], [[r] for r in reasons]))
    emit(obj.format, {"candidates": found, "why": reasons} if why else found, tables)
    if not found:
        if obj.format == "table":
            click.echo("No candidate fits this request.", err=True)
        click.get_current_context().exit(NOTHING_FITS)


@cli.command("capacity")
@click.option("-r", "--resources", help="Unsuffixed group: RC:N,RC:N (or RC=N).")
@click.option("--required", multiple=True, help="Traits: A,!B or in:A,B (repeatable).")
@click.option("--member-of", multiple=True,
              help="Aggregates: UUID, in:U1,U2 or !in:U1,U2 (repeatable).")
@click.option("-g", "--group", "groups", multiple=True, metavar="'SUFFIX key=value ...'",
              help="A granular group, as for candidates.")
@click.option("--group-policy", type=click.Choice(["none", "isolate"]))
@click.option("--same-subtree", multiple=True, metavar="SUFFIX,SUFFIX")
@click.option("--root-required", metavar="TRAIT,!TRAIT", help="Traits of the root.")
@click.option("--hosts", "show_hosts", type=click.IntRange(min=0), default=20,
              show_default=True, help="Hosts to list, roomiest first (0: all).")
@format_option
@click.pass_obj
def capacity_cmd(obj: _Lazy, resources, required, member_of, groups, group_policy,
                 same_subtree, root_required, show_hosts) -> None:
    """How many more instances of a request (a flavor) fit: per host, per
    aggregate and in total, placed as the scheduler's search places them
    (nested trees, granular groups and sharing providers included); and the
    largest amount of each class that still fits anywhere.  allotment only
    (its headroom extension), one request."""
    request = cand.build_request(
        resources=resources, required=required, member_of=member_of, in_tree=None,
        groups=groups, group_policy=group_policy, same_subtree=same_subtree,
        root_required=root_required, limit=1)
    request.headroom = True
    request.extensions = True
    found = obj.client.allocation_candidates.get(request, version=obj.read_version)
    if found.headroom is None:
        raise click.ClickException(
            "The service did not answer with headroom: it is not allotment (the "
            "headroom extension needs allotment).")
    room = found.headroom
    hosts = sorted(room["hosts"], key=lambda h: (-h["count"], h["name"]))
    listed = hosts if not show_hosts else hosts[:show_hosts]
    tables = [("", ["instances that fit"], [[room["total"]]]),
              (f"per host ({len(hosts)} with room)", ["host", "instances"],
               [[h["name"], h["count"]] for h in listed])]
    if room["aggregates"]:
        tables.append(("per aggregate", ["aggregate", "instances"],
                       [[a, n] for a, n in sorted(room["aggregates"].items())]))
    tables.append(("largest amount that still fits in one provider", ["class", "amount"],
                   [[rc, n] for rc, n in sorted(room["largest"].items())]))
    emit(obj.format, room, tables)


@cli.command("reshape")
@click.argument("body", type=click.File("r"))
@format_option
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
@format_option
@click.pass_obj
def usages_cmd(obj: _Lazy, project, user, consumer_type) -> None:
    """A project's usage per consumer type (microversion 1.38+)."""
    version = obj.client.version_for(None)
    if parse_version(version) < (1, 9):
        version = "1.9"  # the first with /usages
    if consumer_type and parse_version(version) < (1, 38):
        version = "1.38"
    usages = obj.client.usages.totals(project, user_id=user, consumer_type=consumer_type,
                                      version=version)
    if not any(isinstance(entry, dict) for entry in usages.values()):
        # Before 1.38: one total per class, not grouped by consumer type.
        emit(obj.format, usages,
             [("", ["class", "used"], [[rc, n] for rc, n in sorted(usages.items())])])
        return
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
    rows = [[a.get("host", ""), a.get("provider", rp),
             ", ".join(f"{rc}={n}" for rc, n in sorted(a["resources"].items()))]
            for rp, a in sorted(record.get("allocations", {}).items(),
                                key=lambda item: (item[1].get("host", ""),
                                                  item[1].get("provider", ""), item[0]))]
    return [("", ["field", "value"], facts), ("", ["host", "provider", "resources"], rows)]


def _consumer(obj: _Lazy, consumer: str) -> dict[str, Any]:
    """The consumer's record at the newest version, each allocation with
    its provider's name and its host's (the root's) name."""
    client, version = obj.client, obj.read_version
    record = client.allocations.get(consumer, version=version)
    if not record.get("allocations"):
        raise click.ClickException(
            f"No consumer {consumer}: it holds no allocations (Placement keeps no "
            "consumer without allocations).")
    names: dict[str, Any] = {}

    def provider(uuid: str):
        if uuid not in names:
            names[uuid] = client.providers.find(uuid, version="1.14")
        return names[uuid]

    for uuid, allocation in record["allocations"].items():
        found = provider(uuid)
        if found is None:
            continue
        root = provider(found.root_provider_uuid or uuid)
        allocation["provider"] = found.name
        allocation["host"] = root.name if root is not None else ""
    return record


@consumer_group.command("show")
@click.argument("consumer")
@format_option
@click.pass_obj
def consumer_show(obj: _Lazy, consumer) -> None:
    """A consumer's allocations (with provider and host names), type, project
    and user."""
    record = _consumer(obj, consumer)
    emit(obj.format, record, _consumer_tables(record))


@consumer_group.command("set-type")
@click.argument("consumer")
@click.argument("consumer_type")
@format_option
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
    record = _consumer(obj, consumer)
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
@format_option
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


def _cell(amount: reports.Amount | None) -> str:
    return f"{amount.used}/{amount.capacity} ({amount.percent:.0f}%)" if amount else ""


@cli.command("hosts")
@click.option("--name", default="", help="Only hosts whose name contains this.")
@click.option("--aggregate", metavar="UUID", help="Only trees with a provider in it.")
@click.option("--trait", help="Only trees with a provider that has it.")
@click.option("--class", "resource_class", metavar="RC",
              help="Only trees with inventory of it (and sort --sort usage by it).")
@click.option("--sort", type=click.Choice(reports.SORTS), default="name", show_default=True,
              help="usage: fullest first (the busiest class, or --class).")
@click.option("--by-aggregate", is_flag=True, help="Also print totals per aggregate.")
@format_option
@click.pass_obj
def hosts_cmd(obj: _Lazy, name, aggregate, trait, resource_class, sort, by_aggregate) -> None:
    """Every host (tree): capacity and usage per resource class, and the totals.

    One request against allotment (the listing extension), however many
    hosts; against upstream Placement, several per provider."""
    found = reports.host_list(obj.client, name, aggregate=aggregate, trait=trait,
                              resource_class=resource_class, sort=sort)
    if obj.format != "table":
        emit(obj.format, found.as_dict(), [])
        return
    classes = sorted({rc for h in found.hosts for rc in h.usage})
    if resource_class:
        classes = [resource_class]
    rows = [[h.name + (" (sharing)" if h.sharing else ""), h.providers,
             *(_cell(h.usage.get(rc)) for rc in classes)] for h in found.hosts]
    tables = [("", ["host", "providers", *classes], rows),
              (f"total of {len(found.hosts)} hosts", classes,
               [[_cell(found.total.get(rc)) for rc in classes]])]
    if by_aggregate:
        tables.append(("per aggregate", ["aggregate", *classes],
                       [[agg, *(_cell(usage.get(rc)) for rc in classes)]
                        for agg, usage in sorted(found.by_aggregate.items())]))
    emit(obj.format, None, tables)


cli.add_command(compare.command)


def main(argv: list[str] | None = None) -> int:
    try:
        code = cli.main(args=argv, prog_name="allotment", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (ApiError, ClientError) as exc:
        click.echo(f"Error: {exc}", err=True)
        return 1
    # A command that ends with ctx.exit(N) hands N back here.
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
