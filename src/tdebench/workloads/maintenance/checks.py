"""What proves that a maintenance step left the data intact: every table's row count, the
canaries read back, and TPC-H Q1 (which reads every lineitem row) against its reference."""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.engines.base import Connection
from tdebench.workloads.base import CANARY_TABLE, read_canaries
from tdebench.workloads.tpch import TABLES, answer_problem


@dataclass(frozen=True)
class Contents:
    """What a database holds, as far as the checks look: comparable before and after."""

    rows: tuple[tuple[str, int], ...]  # (table, row count) of every TPC-H table and the canary table
    canaries: frozenset[str]


def contents(conn: Connection) -> Contents:
    tables = [*TABLES, CANARY_TABLE]
    rows = tuple((table, int(conn.execute(f"SELECT count(*) FROM {table}")[0][0])) for table in tables)
    return Contents(rows, frozenset(read_canaries(conn)))


def differences(before: Contents, after: Contents) -> list[str]:
    """What changed between two `contents`, in words; empty when nothing did."""
    found = [f"{table}: {dict(before.rows).get(table)} rows before, {count} after"
             for table, count in after.rows if dict(before.rows).get(table) != count]
    if before.canaries != after.canaries:
        found.append(f"{len(before.canaries - after.canaries)} canaries no longer readable")
    return found


def q1_problem(conn: Connection, dialect: str, scale: float) -> str | None:
    """TPC-H Q1's answer checked against the reference (None when right or not checkable)."""
    return answer_problem(conn, 1, dialect, scale)
