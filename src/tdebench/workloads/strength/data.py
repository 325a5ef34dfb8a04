"""The strength workload's two tables, made as Parquet once per run and bulk loaded.

- `strength_same`: `rows` identical rows (one 64-byte value): plaintext that repeats, for the
  repeated-ciphertext test;
- `strength_rows`: `rows` rows of an id and a value derived from the plan's seed and the id
  (SHA-256 in hex), loaded last so that they fill the file's later pages: the data the tamper
  test flips a byte in and reads back, each value known to tdebench.

Files live in `<data_dir>/strength/seed<seed>/<table>-<rows>.parquet`, written under a
temporary name and renamed into place (workloads/parquet.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from tdebench.engines.base import Connection, Database
from tdebench.workloads.parquet import write_once

SAME_TABLE, ROWS_TABLE = "strength_same", "strength_rows"
SAME_VALUE = "tdebench strength: the same row again and again, 64 bytes each...."
_SELECTS = {
    SAME_TABLE: "SELECT $value AS payload FROM range($rows)",
    ROWS_TABLE: "SELECT i::INTEGER AS id, sha256('tdebench-strength/' || $seed || '/' || i) AS payload "
                "FROM range(1, $rows + 1) AS t(i)",
}
COLUMNS = {SAME_TABLE: ("payload",), ROWS_TABLE: ("id", "payload")}
KEYS = {SAME_TABLE: (), ROWS_TABLE: ("id",)}
_CREATE = {SAME_TABLE: f"CREATE TABLE {SAME_TABLE} (payload VARCHAR(100) NOT NULL)",
           ROWS_TABLE: f"CREATE TABLE {ROWS_TABLE} (id INTEGER PRIMARY KEY, payload VARCHAR(100) NOT NULL)"}


def value(seed: int, row: int) -> str:
    """Row `row`'s value: 64 hex digits, known to tdebench and unlike every other row's."""
    return hashlib.sha256(f"tdebench-strength/{seed}/{row}".encode()).hexdigest()


VALUE_BYTES = 64  # every value of strength_rows, as stored (UTF-8)
VALUE_PATTERN = rb"[0-9a-f]{%d}" % VALUE_BYTES  # what each looks like
OTHER_VALUE = "-" * VALUE_BYTES  # as long as a value, and unlike it in every byte (`rewrite`)


def values(seed: int, rows: int) -> dict[str, int]:
    """Every row's value, to its row: what finds a row by its value in an unencrypted file."""
    return {value(seed, row): row for row in range(1, rows + 1)}


def path(data_dir: Path, seed: int, table: str, rows: int) -> Path:
    return Path(data_dir) / "strength" / f"seed{seed}" / f"{table}-{rows}.parquet"


def prepare(data_dir: Path, rows: int, seed: int) -> None:
    """Both tables' Parquet files, made where missing."""
    parameters = {"value": SAME_VALUE, "rows": rows, "seed": str(seed)}
    for table, select in _SELECTS.items():
        write_once(path(data_dir, seed, table, rows), select,
                   {name: value for name, value in parameters.items() if f"${name}" in select})


def load(database: Database, conn: Connection, data_dir: Path, rows: int, seed: int) -> None:
    """Create both tables and bulk load them (`rows` each), the repeated one first, stored
    uncompressed where the engine would compress them (`Database.store_verbatim`): the forgery
    needs each value where an unencrypted twin has it."""
    database.store_verbatim(conn)
    for table in (SAME_TABLE, ROWS_TABLE):
        conn.execute(_CREATE[table])
        database.seal_columns(conn, table, COLUMNS[table][-1:], KEYS[table])
        database.bulk_load(conn, table, COLUMNS[table], path(data_dir, seed, table, rows))


def differences(conn: Connection, rows: int, seed: int, changed: Mapping[int, str] | None = None) -> str | None:
    """What the tables hold that was not written (None: every row as written), in words; `changed`:
    rows of strength_rows expected to hold another value (a forgery's)."""
    expected = dict(changed or {})
    found = [(str(payload), int(n)) for payload, n in
             conn.execute(f"SELECT payload, count(*) FROM {SAME_TABLE} GROUP BY payload")]
    problems = []
    if found != [(SAME_VALUE, rows)]:
        other = sum(n for payload, n in found if payload != SAME_VALUE)
        problems.append(f"{SAME_TABLE}: {other} of {sum(n for _, n in found)} rows changed (written: {rows})")
    read = conn.execute(f"SELECT id, payload FROM {ROWS_TABLE} ORDER BY id")
    differ = [int(row) for row, payload in read if payload != expected.get(int(row), value(seed, int(row)))]
    if len(read) != rows or differ:
        first = f", the first id {differ[0]}" if differ else ""
        problems.append(f"{ROWS_TABLE}: {len(differ)} of {len(read)} rows changed{first} (written: {rows})")
    return "; ".join(problems) or None


def rewrite(conn: Connection, seed: int, row: int, changes_only: bool = False) -> None:
    """Row `row` of strength_rows deleted and inserted again with its own value, in one transaction:
    a commit that puts the value in the engine's write-ahead log, the table's content unchanged (an
    UPDATE to the same value writes nothing in SQLite, which compares the cell first). For a log
    that holds only the bytes a change alters (`LogFile.changes_only`: InnoDB logs a row deleted and
    inserted again with the same value as a delete mark), the value is set to `OTHER_VALUE` first
    and back, so that every byte of it changes and is logged."""
    statements = ([(f"UPDATE {ROWS_TABLE} SET payload = ? WHERE id = ?", (OTHER_VALUE, row)),
                   (f"UPDATE {ROWS_TABLE} SET payload = ? WHERE id = ?", (value(seed, row), row))] if changes_only else
                  [(f"DELETE FROM {ROWS_TABLE} WHERE id = ?", (row,)),
                   (f"INSERT INTO {ROWS_TABLE} (id, payload) VALUES (?, ?)", (row, value(seed, row)))])
    conn.execute("BEGIN")
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    except Exception:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
