"""Tables drawn without PrettyTable look exactly as PrettyTable draws them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prettytable import PrettyTable

from allotment.cli.output import _plain, table_text

# Mostly plain ASCII (drawn directly), sometimes what only PrettyTable draws:
# wide characters, line breaks, escape codes, floats.
CELLS = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    st.integers(-10**6, 10**6),
    st.text(max_size=4), st.sampled_from(["計算", "a\nb", "\x1b[1mx\x1b[0m", "é"]),
    st.floats(allow_nan=False, allow_infinity=False), st.booleans())


def prettytable(columns, rows) -> str:
    table = PrettyTable(list(columns))
    table.align = "l"
    for row in rows:
        table.add_row(row)
    return table.get_string()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                        max_size=8), min_size=1, max_size=5, unique=True).flatmap(
    lambda columns: st.tuples(st.just(columns), st.lists(
        st.lists(CELLS, min_size=len(columns), max_size=len(columns)), max_size=6))))
def test_tables_as_prettytable_draws_them(table):
    columns, rows = table
    assert table_text(columns, rows) == prettytable(columns, rows)


def test_a_large_table_is_drawn_directly_and_alike():
    columns = ["host", "providers", "VCPU"]
    rows = [[f"cn{i}", i % 7, f"{i}/64 ({i % 100}%)"] for i in range(2000)]
    assert _plain(columns, rows) is not None
    assert table_text(columns, rows) == prettytable(columns, rows)
