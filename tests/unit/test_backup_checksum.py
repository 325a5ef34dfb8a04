"""The backup workload's table checksums: independent of row order, sensitive to every change.

The SQL of DuckDB, PostgreSQL and MariaDB runs against real engines in
tests/contract/test_backup.py; here the fold SQLite uses runs over a fake paging connection.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

import pytest

from tdebench.workloads.backup import checksum
from tdebench.workloads.backup.checksum import TableChecksum, differences, row_hash, table_checksum, value_text


class PagingTable:
    """A fake SQLite connection over one table: answers the checksum's rowid-paged SELECTs."""

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self.rows = [(rowid, *row) for rowid, row in enumerate(rows, start=1)]
        self.pages = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        limit = int(re.search(r"LIMIT (\d+)", sql).group(1))
        after = params[0] if params else 0
        self.pages += 1
        return [row for row in self.rows if row[0] > after][:limit]


ROWS = [(i, f"name {i}", i * 0.1, None if i % 7 == 0 else "2024-01-01", bytes([i % 256])) for i in range(1, 2001)]
COLUMNS = ("id", "name", "price", "day", "blob")


def test_the_sum_does_not_depend_on_row_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checksum, "PAGE_ROWS", 300)  # several pages, the last one short
    shuffled = ROWS[:]
    random.Random(7).shuffle(shuffled)
    first = PagingTable(ROWS)
    ordered = table_checksum(first, "sqlite", "t", COLUMNS)
    assert ordered == table_checksum(PagingTable(shuffled), "sqlite", "t", COLUMNS)
    assert ordered.rows == 2000 and first.pages == 7


@pytest.mark.parametrize("change", ["value", "lost row", "duplicated row", "swapped columns"])
def test_any_change_changes_the_checksum(change: str) -> None:
    rows = ROWS[:]
    if change == "value":
        rows[500] = (*rows[500][:2], rows[500][2] + 1e-9, *rows[500][3:])
    elif change == "lost row":
        del rows[1234]
    elif change == "duplicated row":
        rows[1] = rows[0]
    else:
        rows[3] = (rows[3][0], rows[3][3], rows[3][2], rows[3][1], rows[3][4])
    assert table_checksum(PagingTable(rows), "sqlite", "t", COLUMNS) != table_checksum(PagingTable(ROWS), "sqlite",
                                                                                        "t", COLUMNS)


def test_values_render_exactly() -> None:
    assert value_text(0.1 + 0.2) == "0.30000000000000004"  # round-trips, so no two floats share a text
    assert value_text(None) == checksum.NULL_TEXT and value_text(b"\x00\xff") == "00ff" and value_text(5) == "5"
    assert row_hash((1, "a")) == row_hash((1, "a")) != row_hash((1, "b"))
    assert 0 <= row_hash((1, "a")) < 2 ** checksum.HASH_BITS


def test_every_dialect_with_a_hash_function_sums_in_sql() -> None:
    for dialect in ("duckdb", "postgres", "mysql"):
        sql = checksum.checksum_sql(dialect, "t", ("a", "b"))
        assert sql.upper().startswith("SELECT COUNT(*)") and "FROM t" in sql and sql.count("'|'") == 1
    with pytest.raises(ValueError, match="no checksum SQL for dialect 'oracle'"):
        checksum.checksum_sql("oracle", "t", ("a",))


def test_differences_name_each_table() -> None:
    expected = {"a": TableChecksum(3, 10), "b": TableChecksum(2, 5), "c": TableChecksum(1, 1)}
    found = {"a": TableChecksum(2, 7), "b": TableChecksum(2, 6)}
    assert differences(expected, found) == ["a: 2 rows, expected 3",
                                            "b: the same 2 rows, but their checksum differs", "c: missing"]
    assert differences(expected, dict(expected)) == []
