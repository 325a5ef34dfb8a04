"""How much does tdebench's harness add to what it measures?

Side by side in one run, on the same DuckDB database file and the same connection:
  A. tdebench's power test (per-query clock + process counters, answer checks, an append of
     every measurement to results.jsonl);
  B. the same 22 queries in the same order timed by a bare Python loop.
A and B alternate for --rounds rounds (which goes first alternates too), so drift of this noisy
machine hits both alike. Two ratios are printed, each as a ratio of the groups' medians and as
the median of each round's own ratio (paired), each with a bootstrap CI:
  - measured: the sum of the 22 query times tdebench records vs the bare loop's sum — how far
    the harness distorts the numbers it reports (target: under 2%);
  - wall clock: the whole power test vs the bare loop — what checking answers and storing
    results costs in time between queries (never inside a measured query).

    .venv/bin/python bench/harness_overhead.py [--scale 0.1] [--rounds 15]

Tiny, for CI: --scale 0.01 --rounds 2.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tdebench.engines import NONE, get_engine
from tdebench.engines.base import Connection, Database, Engine
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.stats import overhead
from tdebench.results import TrialKey
from tdebench.store import ResultStore, read_run
from tdebench.workloads.base import RunContext
from tdebench.workloads.tpch import TpchWorkload, streams
from tdebench.workloads.tpch.queries import query


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=15)
    args = data_arguments(parser).parse_args()
    started_load = os.getloadavg()

    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        root = Path(tmp)
        workload, ctx, conn = loaded_duckdb(root, args.scale, args.data_dir, args.seed)
        database = ctx.database
        sqls = [query(q, ctx.dialect) for q in streams.POWER_ORDER]

        def harness() -> float:
            workload.run("power", ctx, conn, warmup=False)
            return 0.0  # the recorded query times are read from the store after the round

        def bare() -> float:
            total = 0.0
            for sql in sqls:
                start = time.perf_counter_ns()
                conn.execute(sql)
                total += (time.perf_counter_ns() - start) / 1e9
            return total

        harness(), bare()  # warm both paths once
        measured: dict[str, list[float]] = {"tdebench": [], "bare loop": []}
        wall: dict[str, list[float]] = {"tdebench": [], "bare loop": []}
        for number in range(args.rounds):
            paths = (("tdebench", harness), ("bare loop", bare))
            for name, work in paths if number % 2 == 0 else paths[::-1]:  # neither always goes first
                start = time.perf_counter()
                measured[name].append(work())
                wall[name].append(time.perf_counter() - start)
        recorded = [m for m in read_run(root / "out").measurements if m.step.startswith("q")]
        per_round = len(sqls)
        recorded = recorded[-per_round * args.rounds:]
        measured["tdebench"] = [sum(m.metrics["elapsed_s"] for m in recorded[i:i + per_round])
                                for i in range(0, len(recorded), per_round)]
        conn.close()
        database.close()

    print(f"TPC-H power test on DuckDB, scale {args.scale:g}, {args.rounds} interleaved rounds; load average "
          f"{' / '.join(f'{v:.2f}' for v in started_load)} at start, "
          f"{' / '.join(f'{v:.2f}' for v in os.getloadavg())} at end")
    for label, times in (("measured", measured), ("wall clock", wall)):
        print_ratios(label, times, "tdebench", "bare loop")
    print("the first ratio compares the medians of the two groups, the paired one each round's tdebench time with "
          "the bare loop's beside it\ntarget: measured ratio under 1.02")


def data_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The workload data's arguments, --seed and --data-dir, added to `parser`."""
    parser.add_argument("--seed", type=int, default=1, help="the plan seed the workload's data is made from")
    parser.add_argument("--data-dir", type=Path, default=Path.home() / ".cache" / "tdebench" / "data")
    return parser


def loaded_duckdb(root: Path, scale: float, data_dir: Path, seed: int, memory_mb: int | None = None,
                  options: Mapping[str, Any] | None = None) -> tuple[TpchWorkload, RunContext, Connection]:
    """A DuckDB database (no encryption) in `root`/db loaded with TPC-H at `scale` (the workload's
    `options`, e.g. keys), its context recording into `root`/out, and the open connection the
    power test runs on."""
    engine = get_engine("duckdb", memory_mb=memory_mb)
    workload = TpchWorkload()
    workload.prepare(scale, data_dir, seed)
    (root / "db").mkdir()
    database = engine.provision(root / "db", NONE, None)
    database.create()
    store = ResultStore(root / "out")
    store.start("name = 'bench'\n", {})
    ctx = tpch_context(engine, database, store, scale, data_dir, seed, options=options)
    conn = database.connect()
    workload.load(ctx, conn)
    return workload, ctx, conn


def tpch_context(engine: Engine, database: Database, store: ResultStore, scale: float, data_dir: Path, seed: int,
                 repetition: int = 1, options: Mapping[str, Any] | None = None) -> RunContext:
    """The context TPC-H runs `database` in, one stream, with the workload's `options` (plan keys
    such as load_part_rows), recording into `store` as repetition `repetition` of the engine's
    unencrypted trial (the bench scripts tell their databases apart by it)."""
    recorder = Recorder(store, TrialKey(engine.name, "none", "tpch", scale, repetition), MonotonicClock())
    return RunContext(database=database, dialect=engine.dialect, recorder=recorder, scale=scale, streams=1,
                      data_dir=data_dir, seed=seed, options=options or {})


def print_ratios(label: str, times: dict[str, list[float]], treatment: str, baseline: str) -> None:
    """Two lines: the ratio of the medians of `treatment`'s times to `baseline`'s, with its CI and
    p-value, and the median of each round's own ratio (paired), with its CI."""
    result = overhead(times[baseline], times[treatment])
    print(f"{label:10s}: {treatment} {statistics.median(times[treatment]) * 1000:8.1f} ms, "
          f"{baseline} {statistics.median(times[baseline]) * 1000:8.1f} ms, "
          f"ratio {1 + result.pct / 100:.4f} ({result.pct:+.2f}% [{result.ci_low:+.2f}, {result.ci_high:+.2f}], "
          f"p={result.p_value:.3g})")
    ratio, low, high = paired_ratio(times[baseline], times[treatment])
    print(f"{'':10s}  paired: median of the {len(times[treatment])} rounds' own ratios {ratio:.4f} "
          f"[{low:.4f}, {high:.4f}]")


def paired_ratio(bare: list[float], measured: list[float]) -> tuple[float, float, float]:
    """The median over rounds of measured / bare within the round, with a 95% bootstrap CI over
    rounds: drift of the machine between rounds cancels in each round's ratio."""
    ratios = np.array(measured) / np.array(bare)
    picks = np.random.default_rng(1).integers(0, len(ratios), size=(2000, len(ratios)))
    low, high = np.percentile(np.median(ratios[picks], axis=1), [2.5, 97.5])
    return float(np.median(ratios)), float(low), float(high)


if __name__ == "__main__":
    main()
