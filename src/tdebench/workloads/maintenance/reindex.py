"""Index rebuild of the largest table, lineitem (Dolyetyus (n.d.), docs/references.md, rebuilt
every index of its database).

Per dialect, the engine's own way to rebuild lineitem's indexes:

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

from dataclasses import dataclass

from tdebench.engines.base import Connection
from tdebench.workloads.tpch import PRIMARY_KEYS

TABLE = "lineitem"
_KEY = ", ".join(PRIMARY_KEYS[TABLE])


@dataclass(frozen=True)
class Rebuild:
    method: str  # the step it is recorded as
    statements: tuple[str, ...]
    indexes: str  # lists the table's indexes, one per row


REBUILDS: dict[str, Rebuild] = {
    "postgres": Rebuild("reindex-table", (f"REINDEX TABLE {TABLE}",),
                        f"SELECT indexname FROM pg_indexes WHERE tablename = '{TABLE}'"),
    "mysql": Rebuild("alter-table-force", (f"ALTER TABLE {TABLE} FORCE",),
                     "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS "
                     f"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{TABLE}'"),
    "sqlite": Rebuild("reindex", (f"REINDEX {TABLE}",),
                      f"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '{TABLE}'"),
    "duckdb": Rebuild("rebuild-table", (
        "BEGIN TRANSACTION",
        f"CREATE TABLE {TABLE}_rebuilt AS SELECT * FROM {TABLE}",
        f"DROP TABLE {TABLE}",
        f"ALTER TABLE {TABLE}_rebuilt RENAME TO {TABLE}",
        f"ALTER TABLE {TABLE} ADD PRIMARY KEY ({_KEY})",
        "COMMIT",
    ), "SELECT constraint_type || ' (' || array_to_string(constraint_column_names, ', ') || ')' "
       f"FROM duckdb_constraints() WHERE table_name = '{TABLE}' AND constraint_type = 'PRIMARY KEY' "
       f"UNION ALL SELECT index_name FROM duckdb_indexes() WHERE table_name = '{TABLE}'"),
}


def rebuild(dialect: str) -> Rebuild:
    try:
        return REBUILDS[dialect]
    except KeyError:
        raise ValueError(f"no index rebuild for dialect {dialect!r}; known: {', '.join(REBUILDS)}") from None


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
