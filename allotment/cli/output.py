"""Output in the three formats every command offers: ``table`` (default,
for people), ``json`` and ``yaml`` (for scripts)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
import yaml
from prettytable import PrettyTable

FORMATS = ("table", "json", "yaml")
BAR_WIDTH = 20


def emit(fmt: str, data: Any, tables: Iterable[tuple[str, Sequence[str], list[list[Any]]]]
         ) -> None:
    """``data`` for json/yaml; ``tables`` (title, columns, rows) for a table."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    elif fmt == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=True), nl=False)
    else:
        first = True
        for title, columns, rows in tables:
            if not first:
                click.echo("")
            first = False
            if title:
                click.echo(title)
            table = PrettyTable(list(columns))
            table.align = "l"
            for row in rows:
                table.add_row(row)
            click.echo(table.get_string())


def bar(used: int, capacity: int, width: int = BAR_WIDTH) -> str:
    """``[#####.......]  12/48 (25%)``: usage at a glance in a terminal."""
    fraction = used / capacity if capacity else 0.0
    filled = min(width, round(fraction * width))
    return f"[{'#' * filled}{'.' * (width - filled)}] {used}/{capacity} ({fraction:.0%})"
