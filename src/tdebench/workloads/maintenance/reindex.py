"""Index rebuild of the largest table, lineitem (Dolyetyus (n.d.), docs/references.md, rebuilt
every index of its database).

Per dialect, the engine's own way to rebuild lineitem's indexes, in `sql/<dialect>/rebuild.sql`
(statements ending in `;`, `{table}` and `{key}` filled in, a line `-- step: <method>` naming the
step it is recorded as), and the query that lists the table's indexes, `sql/<dialect>/indexes.sql`.
Which dialects have a rebuild is which files exist:

| dialect  | method (step)       | statement                                                            |
|----------|---------------------|----------------------------------------------------------------------|
| postgres | `reindex-table`     | `REINDEX TABLE lineitem`: its primary key and foreign-key indexes     |
| mysql    | `alter-table-force` | `ALTER TABLE lineitem FORCE`: InnoDB keeps a table in its primary-key |
|          |                     | index, so rebuilding that index rebuilds the table, and FORCE does    |
|          |                     | exactly this (with the secondary indexes). `OPTIMIZE TABLE` would do  |
|          |                     | the same for InnoDB ("recreate + analyze") plus a statistics update,  |
|          |                     | which is not an index rebuild                                        |
| sqlite   | `reindex`           | `REINDEX lineitem`: its primary-key and foreign-key indexes           |
| duckdb   | `rebuild-table`     | DuckDB has no REINDEX and cannot drop a primary key, and TPC-H gives  |
|          |                     | it no other index, so its one index (the key's ART) is rebuilt with   |
|          |                     | its table, in one transaction: copy, drop, rename, ADD PRIMARY KEY    |

Checked: lineitem has the same indexes (by name; DuckDB: its key) and rows afterwards.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tdebench.engines.base import Connection
from tdebench.workloads import sqlfiles
from tdebench.workloads.tpch import PRIMARY_KEYS

TABLE = "lineitem"
_KEY = ", ".join(PRIMARY_KEYS[TABLE])
_STEP = "-- step: "
DIALECTS = sqlfiles.dialects_with(__package__, "rebuild")
"""The dialects with a rebuild: those with a `sql/<dialect>/rebuild.sql`."""


@dataclass(frozen=True)
class Rebuild:
    method: str  # the step it is recorded as
    statements: tuple[str, ...]
    indexes: str  # lists the table's indexes, one per row


@functools.cache
def rebuild(dialect: str) -> Rebuild:
    text, indexes = sqlfiles.read(__package__, dialect, "rebuild"), sqlfiles.read(__package__, dialect, "indexes")
    if text is None or indexes is None:
        raise ValueError(f"no index rebuild for dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    lines = text.splitlines()
    method = next(line.removeprefix(_STEP).strip() for line in lines if line.startswith(_STEP))
    body = "\n".join(line for line in lines if not line.startswith("--"))
    statements = tuple(part.strip().format(table=TABLE, key=_KEY) for part in body.split(";") if part.strip())
    return Rebuild(method, statements, indexes.strip().format(table=TABLE))


@dataclass(frozen=True)
class TableState:
    indexes: frozenset[str]
    rows: int


def state(conn: Connection, dialect: str) -> TableState:
    indexes = frozenset(str(row[0]) for row in conn.execute(rebuild(dialect).indexes))
    return TableState(indexes, int(conn.execute(f"SELECT count(*) FROM {TABLE}")[0][0]))


def problems(before: TableState, after: TableState) -> list[str]:
    found = []
    if not after.indexes:
        found.append(f"{TABLE} has no index after the rebuild")
    elif after.indexes != before.indexes:
        found.append(f"{TABLE}'s indexes changed: {sorted(before.indexes)} before, {sorted(after.indexes)} after")
    if after.rows != before.rows:
        found.append(f"{TABLE} had {before.rows} rows before the rebuild and {after.rows} after")
    return found
