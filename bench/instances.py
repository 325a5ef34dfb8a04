"""Does measuring several DuckDB instances per trial shrink the spread between trials?

bench/precision.py found, on an idle machine, that DuckDB's TPC-H power composite at SF 0.01
spreads 17–19% between trials but 6–8% between passes of one trial: every trial opens its own
instance, and an instance runs all 22 queries fast or slow together. This script measures,
side by side in one run on one database file, the spread between trials of
  - one instance per trial: open, one warm-up pass, one measured pass (what a trial does now);
  - k instances per trial: that k times, each query's median over the k measured passes;
as the CV of the composite (geometric mean of the 22 query times) over --trials trials.

    .venv/bin/python bench/instances.py [--scale 0.01] [--trials 10] [--instances 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from tdebench.workloads.tpch import streams
from tdebench.engines.duckdb_extensions import duckdb_with_tpch
from tdebench.workloads.tpch.queries import query


def one_instance(path: Path, sqls: list[str]) -> np.ndarray:
    """Open an instance, run every query once unmeasured, then once measured: the query times."""
    con = duckdb.connect(str(path))
    try:
        for sql in sqls:
            con.execute(sql).fetchall()
        times = []
        for sql in sqls:
            start = time.perf_counter_ns()
            con.execute(sql).fetchall()
            times.append((time.perf_counter_ns() - start) / 1e9)
        return np.array(times)
    finally:
        con.close()


def composite_ms(times: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(times)))) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--instances", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        path = Path(tmp) / "tpch.db"
        con = duckdb_with_tpch(path)
        con.execute(f"CALL dbgen(sf={args.scale})")
        con.close()
        sqls = [query(q, "duckdb") for q in streams.POWER_ORDER]
        single, several = [], []
        for _ in range(args.trials):  # the two designs alternate, so drift hits both alike
            single.append(composite_ms(one_instance(path, sqls)))
            passes = np.stack([one_instance(path, sqls) for _ in range(args.instances)])
            several.append(composite_ms(np.median(passes, axis=0)))
    load = os.getloadavg()[0]
    print(f"TPC-H power on DuckDB {duckdb.__version__}, scale {args.scale:g}, {args.trials} trials per design, "
          f"load average {load:.2f} at the end")
    for label, values in (("1 instance per trial", single), (f"{args.instances} instances per trial", several)):
        array = np.array(values)
        cv = array.std(ddof=1) / array.mean() * 100.0
        print(f"{label:24s}: composite median {np.median(array):6.2f} ms, CV between trials {cv:5.1f}%")


if __name__ == "__main__":
    main()
