"""TPC-H's canaries in its own data, and test `spill`, which makes every engine write them to a
temp file.

The runner's canaries live in a side table no query reads, so a sort, spill or temp table of
the workload's data could never carry one, and the transient capture's positive control never
fired (docs/method/verdicts.md, "Transient files"). Here they go into `c_address` of customers that
have no orders (dbgen gives orders only to customers whose key is not a multiple of 3): Q10
and Q18, the queries that return customers with their orders, never return these, and Q22
reads only their phone and balance, so every checked answer stays as the reference has it.
`c_address` is a sealed column under a column-level encryption (schema.SENSITIVE), so there a
canary reaches the disk at rest only encrypted.

Test `spill` sorts whole customer rows, each repeated by a cross join with a counter, in a
window, enough rows (about SPILL_ROWS) that every engine's sort outgrows a small cache and
spills to a temp file, carrying the canaries with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from tdebench.engines.base import Connection
from tdebench.workloads import sqlfiles

CUSTOMERS_PER_SCALE = 150_000  # spec 4.2.5.1: SF × 150,000 customers
PLANTED = 512  # customers given a canary address: every one without orders at SF 0.01 (a third)
SPILL_ROWS = 1_500_000  # rows the spill test sorts, whatever the scale: ~1,000 copies at SF 0.01

# The query, per dialect in `sql/<dialect>/spill.sql`: a window over whole customer rows, each
# repeated by a counter of `{n}` rows, each engine's own where it has one (DuckDB's range
# spills customer's rows; with a recursive WITH instead, DuckDB's plan spilled none), a
# recursive WITH elsewhere. Oracle and SQL Server spell a recursive WITH differently (no
# RECURSIVE) and have none.
SPILL_DIALECTS: tuple[str, ...] = sqlfiles.dialects_with(__package__, "spill")


def planted_keys(scale: float) -> tuple[int, ...]:
    """The customers whose address becomes a canary: the first PLANTED keys with no orders (or
    every such key at a scale with fewer). Many, not one per canary: an engine spills part of a
    sort (DuckDB: some of a window's hash partitions), and a canary in a few rows could miss it."""
    return tuple(3 * n for n in range(1, min(PLANTED, customers(scale) // 3) + 1))


def plant(conn: Connection, canaries: Sequence[str], scale: float) -> bool:
    """Write `canaries`, in turn, into the planted customers' c_address (through the engine, so a
    sealed column seals them) and read them back: True when every one reads back as written."""
    keys = planted_keys(scale)
    for n, canary in enumerate(canaries):  # a statement per canary: 512 single-row updates took 0.9 s on DuckDB
        mine = keys[n::len(canaries)]
        if mine:
            conn.execute(f"UPDATE customer SET c_address = ? WHERE c_custkey IN ({_marks(mine)})", (canary, *mine))
    rows = conn.execute(f"SELECT c_address FROM customer WHERE c_custkey IN ({_marks(keys)})", keys)
    found = {row[0] for row in rows}
    return found == set(canaries)


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" for _ in values)


def copies(scale: float) -> int:
    """How many times the spill test repeats each customer: about SPILL_ROWS rows in all."""
    return max(1, math.ceil(SPILL_ROWS / customers(scale)))


def customers(scale: float) -> int:
    return max(1, round(CUSTOMERS_PER_SCALE * scale))


def spill_sql(dialect: str, scale: float) -> str:
    if dialect not in SPILL_DIALECTS:
        raise ValueError(f"tpch's spill test has no SQL for dialect {dialect!r}; "
                         f"it has for {', '.join(SPILL_DIALECTS)}")
    text = sqlfiles.read(__package__, dialect, "spill")
    assert text is not None, dialect
    return text.strip().format(n=copies(scale))


def expected(scale: float) -> tuple[int, int]:
    """The spill test's answer, computed from the scale alone (not by the engine): each of the
    scale's customers numbered 1..copies once."""
    n = copies(scale)
    return customers(scale) * n, customers(scale) * n * (n + 1) // 2


def check(scale: float, rows: Sequence[Sequence[object]]) -> str:
    """"" when `rows` is the spill test's answer, else what is wrong (counts only: no data)."""
    want = expected(scale)
    got = tuple(int(v) for v in rows[0]) if len(rows) == 1 and len(rows[0]) == 2 else None  # type: ignore[call-overload]
    return "" if got == want else f"spill: expected (count, sum) {want}, got {got}"
