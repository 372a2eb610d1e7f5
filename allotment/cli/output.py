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
            click.echo(table_text(columns, rows))


def table_text(columns: Sequence[str], rows: list[list[Any]]) -> str:
    """The table as PrettyTable draws it, every column aligned left."""
    plain = _plain(columns, rows)
    if plain is not None:
        return plain
    table = PrettyTable(list(columns))
    table.align = "l"
    for row in rows:
        table.add_row(row)
    return table.get_string()


def _plain(columns: Sequence[str], rows: list[list[Any]]) -> str | None:
    """:func:`table_text` drawn directly when every cell is one line of
    printable ASCII (a string or an integer), where a character is a column
    wide: PrettyTable measures each cell's width on screen and takes a
    quarter of a second for the 10,000 rows of a large cloud's hosts.
    None otherwise."""
    if not columns or len(set(columns)) != len(columns):
        return None
    lines = []
    for row in (columns, *rows):
        if len(row) != len(columns):
            return None
        cells = []
        for cell in row:
            kind = type(cell)
            if kind is int:
                cell = str(cell)
            elif kind is not str or not (cell.isascii() and cell.isprintable()):
                return None
            cells.append(cell)
        lines.append(cells)
    widths = [max(map(len, column)) for column in zip(*lines, strict=True)]
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    text = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
            for cells in lines]
    return "\n".join([border, text[0], border, *text[1:], border])


def bar(used: int, capacity: int, width: int = BAR_WIDTH) -> str:
    """``[#####.......]  12/48 (25%)``: usage at a glance in a terminal."""
    fraction = used / capacity if capacity else 0.0
    filled = min(width, round(fraction * width))
    return f"[{'#' * filled}{'.' * (width - filled)}] {used}/{capacity} ({fraction:.0%})"
