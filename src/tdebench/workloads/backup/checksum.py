"""Order-independent table checksums per SQL dialect: the proof that a restore lost nothing.

A table's checksum is its row count and the sum, over its rows, of a 60-bit hash of the row's
text (every column as the engine renders it as text, joined by `|`, NULL as `~null~`). A sum
does not depend on the order of the rows, so a restore that writes them in another order (a
logical dump, a new file) still matches, while a lost, added or changed row changes it (a
collision of two 60-bit hashes is negligible here). Text and hash are the engine's own, so
checksums compare a database with its restored copy, never one engine with another.

A dialect with a hash function computes the sum in SQL with its own hash (DuckDB's `hash`,
PostgreSQL's and MariaDB's `md5`): `sql/<dialect>/checksum.sql`, with a value's text as
`sql/<dialect>/value_text.sql` renders it. A dialect without those files (SQLite, which has no
hash function) has its rows fetched in pages (by rowid) and hashed with BLAKE2b here; the sum
is still order-independent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tdebench.engines.base import Connection
from tdebench.workloads import sqlfiles

NULL_TEXT = "~null~"
HASH_BITS = 60
PAGE_ROWS = 20_000  # SQLite: rows fetched per page


@dataclass(frozen=True)
class TableChecksum:
    rows: int
    hash_sum: int  # the sum of the rows' 60-bit hashes, exact (no overflow: Python int or SQL numeric)


def _sql(dialect: str, name: str) -> str | None:
    text = sqlfiles.read(__package__, dialect, name)
    return text.strip() if text is not None else None


def checksum_sql(dialect: str, table: str, columns: Sequence[str]) -> str:
    """`SELECT count(*), sum(60-bit hash of each row's text)` for a dialect with a hash function."""
    query, value = _sql(dialect, "checksum"), _sql(dialect, "value_text")
    if query is None or value is None:
        raise ValueError(f"no checksum SQL for dialect {dialect!r}")
    values = ", ".join(value.format(column=c, null=NULL_TEXT) for c in columns)
    return query.format(values=values, table=table, shift=64 - HASH_BITS, digits=HASH_BITS // 4, bits=HASH_BITS)


def value_text(value: Any) -> str:
    """A value as the Python fold renders it: exact for floats (repr round-trips), hex for bytes."""
    if value is None:
        return NULL_TEXT
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def row_hash(values: Sequence[Any]) -> int:
    text = "|".join(value_text(v) for v in values)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> (64 - HASH_BITS)


def _folded(conn: Connection, table: str, columns: Sequence[str]) -> TableChecksum:
    """A dialect without a hash function (SQLite): the same sum over rows fetched a page at a time in rowid order."""
    rows, total, last = 0, 0, None
    select = f"SELECT rowid, {', '.join(columns)} FROM {table}"
    while True:
        page = (conn.execute(f"{select} WHERE rowid > ? ORDER BY rowid LIMIT {PAGE_ROWS}", [last])
                if last is not None else conn.execute(f"{select} ORDER BY rowid LIMIT {PAGE_ROWS}"))
        for row in page:
            total += row_hash(row[1:])
        rows += len(page)
        if len(page) < PAGE_ROWS:
            return TableChecksum(rows, total)
        last = page[-1][0]


def table_checksum(conn: Connection, dialect: str, table: str, columns: Sequence[str]) -> TableChecksum:
    if _sql(dialect, "checksum") is None:
        return _folded(conn, table, columns)
    ((count, total),) = conn.execute(checksum_sql(dialect, table, columns))
    return TableChecksum(int(count), int(total or 0))


def checksums(conn: Connection, dialect: str, tables: Mapping[str, Sequence[str]]) -> dict[str, TableChecksum]:
    """Every table's checksum, by table name."""
    return {table: table_checksum(conn, dialect, table, columns) for table, columns in tables.items()}


def differences(expected: Mapping[str, TableChecksum], found: Mapping[str, TableChecksum]) -> list[str]:
    """What differs, one phrase per table, e.g. "lineitem: 60175 rows, expected 60176"."""
    problems = []
    for table, want in expected.items():
        got = found.get(table)
        if got is None:
            problems.append(f"{table}: missing")
        elif got.rows != want.rows:
            problems.append(f"{table}: {got.rows} rows, expected {want.rows}")
        elif got.hash_sum != want.hash_sum:
            problems.append(f"{table}: the same {got.rows} rows, but their checksum differs")
    return problems
