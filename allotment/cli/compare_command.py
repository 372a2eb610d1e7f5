"""``allotment compare``: do two Placement services answer alike?"""

from __future__ import annotations

import json

import click

from allotment.client import PlacementClient
from allotment.client.compare import compare


def _short(answer) -> str:
    status, body = answer
    text = json.dumps(body, sort_keys=True) if not isinstance(body, str) else body
    return f"{status} {text[:300]}{'...' if len(text) > 300 else ''}"


@click.command("compare")
@click.argument("other_url")
@click.option("--other-token", help="X-Auth-Token for OTHER_URL (default: --token).")
@click.option("--sample", default=20, show_default=True,
              help="Providers, consumers, projects and trees to read.")
@click.pass_context
def command(ctx: click.Context, other_url: str, other_token: str | None,
            sample: int) -> None:
    """Read a sample of what this service serves from it and from OTHER_URL
    (e.g. upstream Placement and allotment on one database) and report every
    read whose status or body differ.  Exits 1 when one does."""
    obj = ctx.obj
    token = other_token or obj.options.get("token")
    if not token:
        raise click.UsageError("give --other-token (or --token) for OTHER_URL")
    with PlacementClient.from_url(other_url, token=token) as other:
        count, differences = compare(obj.client, other, sample=sample)
    for diff in differences:
        click.echo(f"DIFFERS {diff.read.path} (microversion {diff.read.version})")
        click.echo(f"  this:  {_short(diff.first)}")
        click.echo(f"  other: {_short(diff.second)}")
    click.echo(f"{count} reads compared, {len(differences)} differ")
    if differences:
        ctx.exit(1)
