"""How close in time must two configurations be measured for their noise to cancel?

An A/A comparison: two copies of one DuckDB TPC-H database, each opened as its own instance,
compared by the spread (sd of the log ratio, about the ratio's CV) of their power composites
over --rounds rounds. Every round opens both instances, warms both up, then measures each
query k times (--passes) on each, in three layouts one after another:
  - queries in turn: q on A, q on B, next query (what order = "lockstep" does);
  - passes in turn:  a whole pass on A, a whole pass on B, k times;
  - blocked:         k passes on A, then k passes on B (two trials of one interleaved round);
each query's median over its k passes is kept, and the composite is their geometric mean.
Whoever goes first alternates from round to round. The closer in time, the more of the
machine's moment-to-moment noise the two share, and the smaller the spread.

    .venv/bin/python bench/lockstep.py [--scale 0.01] [--rounds 12] [--passes 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np

from tdebench.workloads.tpch import streams
from tdebench.engines.duckdb_extensions import duckdb_with_tpch
from tdebench.workloads.tpch.queries import query

Times = np.ndarray  # (passes, queries) in seconds


def timed(con, sql: str) -> float:
    start = time.perf_counter_ns()
    con.execute(sql).fetchall()
    return (time.perf_counter_ns() - start) / 1e9


def queries_in_turn(a, b, sqls: list[str], passes: int, flip: bool) -> tuple[Times, Times]:
    ta, tb = np.zeros((passes, len(sqls))), np.zeros((passes, len(sqls)))
    for p in range(passes):
        for j, sql in enumerate(sqls):
            pairs = ((b, tb), (a, ta)) if (p + flip) % 2 else ((a, ta), (b, tb))
            for con, times in pairs:
                times[p, j] = timed(con, sql)
    return ta, tb


def passes_in_turn(a, b, sqls: list[str], passes: int, flip: bool) -> tuple[Times, Times]:
    ta, tb = np.zeros((passes, len(sqls))), np.zeros((passes, len(sqls)))
    for p in range(passes):
        pairs = ((b, tb), (a, ta)) if (p + flip) % 2 else ((a, ta), (b, tb))
        for con, times in pairs:
            times[p] = [timed(con, sql) for sql in sqls]
    return ta, tb


def blocked(a, b, sqls: list[str], passes: int, flip: bool) -> tuple[Times, Times]:
    ta, tb = np.zeros((passes, len(sqls))), np.zeros((passes, len(sqls)))
    for con, times in (((b, tb), (a, ta)) if flip else ((a, ta), (b, tb))):
        for p in range(passes):
            times[p] = [timed(con, sql) for sql in sqls]
    return ta, tb


LAYOUTS: dict[str, Callable[..., tuple[Times, Times]]] = {
    "queries in turn": queries_in_turn, "passes in turn": passes_in_turn, "blocked": blocked}


def log_ratio(ta: Times, tb: Times) -> float:
    """ln of the ratio of the composites: the mean over queries of ln(median A / median B)."""
    return float(np.mean(np.log(np.median(ta, axis=0) / np.median(tb, axis=0))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    ratios: dict[str, list[float]] = {name: [] for name in LAYOUTS}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        first, second = Path(tmp) / "a.duckdb", Path(tmp) / "b.duckdb"
        con = duckdb_with_tpch(first)
        con.execute(f"CALL dbgen(sf={args.scale})")
        con.close()
        shutil.copy(first, second)
        sqls = [query(q, "duckdb") for q in streams.POWER_ORDER]
        for r in range(args.rounds):
            a, b = duckdb.connect(str(first)), duckdb.connect(str(second))
            try:
                for sql in sqls:  # one warm-up pass each
                    a.execute(sql).fetchall()
                    b.execute(sql).fetchall()
                for name, layout in LAYOUTS.items():
                    ratios[name].append(log_ratio(*layout(a, b, sqls, args.passes, bool(r % 2))))
            finally:
                a.close()
                b.close()
    print(f"A/A on DuckDB {duckdb.__version__} TPC-H power, scale {args.scale:g}, {args.rounds} rounds, "
          f"median of {args.passes} passes per query; {time.monotonic() - started:.0f} s, "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    reference = float(np.std(ratios["blocked"], ddof=1))
    for name, values in ratios.items():
        spread = float(np.std(values, ddof=1))
        print(f"{name:16s}: spread of the A/A ratio {spread * 100:5.1f}% (mean {np.mean(values) * 100:+5.1f}%), "
              f"{spread / reference:4.2f}x blocked's")


if __name__ == "__main__":
    main()
