"""How noisy is a cold-cache power test, and how much of that noise is the way the cache is emptied?

A plan with `cache = "cold"` stops the engine and empties the OS page cache before each
measured test. The io-bound example's placebo (none against none) varied with a CV of 8% to
22% per round, too much for the ±3% asked of it. This script measures, side by side in one
run, the placebo's spread under three ways to start a measured test:

  all     the whole OS page cache dropped (drop_caches): the database is read from disk, and
          so are the engine's code, Python's modules and the driver, faulted in during queries;
  files   only the database's files evicted (fdatasync + posix_fadvise DONTNEED on every file
          of its workspace, checked with mincore): the data is read from disk, the code is not;
  warm    nothing evicted: the engine's own cache starts empty (the connection is new), the
          OS cache holds the data, so every page is decrypted again but none read from disk;
  lockstep  `files`, then both databases' power tests side by side, query by query in turn
          (which goes first alternates), as the runner's order = "lockstep" runs them: the
          eviction of one database's files leaves the other's alone, so a cold lockstep is
          possible, and drift of the machine hits each query of A and B alike.

Two databases of the same TPC-H data, both unencrypted (A and B: the placebo), are loaded
once; with `--encryption`, B is encrypted with it, and the script also prints B's cost over A
per method, with its 95% CI: whether the way the cache is emptied changes the cost itself (the
whole drop adds the same time to both, reading the engine's code back from disk, which can
dilute a ratio). Each round runs every method on both, in an order shuffled per round, so drift of the
machine hits all methods alike. Per method it prints the median power-test composite (the
geometric mean of the 22 query times, as the report's "power geomean"), the spread of
ln(A/B) over rounds (≈ the round CV in %), the placebo's 95% CI half-width for this many
rounds (the report's noise floor) and the rounds a ±3% floor would need at that spread.

    .venv/bin/python bench/cold_eviction.py [--engine sqlite|duckdb] [--scale 0.1]
        [--memory-mb 8] [--rounds 8] [--methods all files warm] [--encryption aes-256-cbc]

Needs root for `all` (without it, `all` is left out and the script says so).
Tiny, for CI: --scale 0.01 --rounds 2.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import statistics
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from harness_overhead import data_arguments, tpch_context
from scipy import stats

from tdebench.engines import NONE, get_engine
from tdebench.engines.base import Connection, Database
from tdebench.keys import KeySource
from tdebench.measure import oscache
from tdebench.store import ResultStore, read_run
from tdebench.workloads.base import RunContext
from tdebench.workloads.tpch import TpchWorkload

METHODS = ("all", "files", "warm", "lockstep")
TARGET_PCT = 3.0


def empty_cache(method: str, database: Database) -> bool:
    """Close the database (a server stops), then empty the cache as `method` says; True if it
    was emptied as asked (always for `warm`, which evicts nothing)."""
    database.close()
    if method == "all":
        return oscache.drop_all()
    if method in ("files", "lockstep"):
        return oscache.evict_files(database.workspace)
    return True


def side_by_side(contexts: list[RunContext], steps: Callable[[RunContext, Connection], Iterator[None]]) -> None:
    """`steps` (a power test's, a load's) of `contexts`' databases step by step in turn, each on a
    connection of its own, the first to go alternating every turn (the runner's lockstep)."""
    conns = [ctx.database.connect() for ctx in contexts]
    try:
        tests = [steps(ctx, conn) for ctx, conn in zip(contexts, conns)]
        for number in itertools.count():
            ended = [next(test, StopIteration) is StopIteration for test in (tests if number % 2 == 0 else tests[::-1])]
            if all(ended):
                return
    finally:
        for conn in conns:
            conn.close()


def floor_pct(log_ratios: list[float]) -> float:
    """The 95% t-interval half-width of the mean of ln(A/B), as a percentage: the noise floor."""
    n = len(log_ratios)
    if n < 2:
        return math.nan
    half = stats.t.ppf(0.975, n - 1) * statistics.stdev(log_ratios) / math.sqrt(n)
    return 100 * (math.exp(half) - 1)


def cost_pct(log_ratios: list[float]) -> tuple[float, float, float]:
    """B's cost over A from the rounds' ln(B/A): the geometric mean ratio in %, with its 95% t-interval."""
    n = len(log_ratios)
    mean = statistics.fmean(log_ratios)
    half = stats.t.ppf(0.975, n - 1) * statistics.stdev(log_ratios) / math.sqrt(n) if n > 1 else math.nan
    return tuple(100 * (math.exp(v) - 1) for v in (mean, mean - half, mean + half))  # type: ignore[return-value]


def rounds_for(spread: float, target_pct: float = TARGET_PCT) -> int:
    """Rounds whose t-interval half-width at this spread of ln(A/B) reaches ±target_pct."""
    goal = math.log(1 + target_pct / 100)
    for n in range(2, 100_000):
        if stats.t.ppf(0.975, n - 1) * spread / math.sqrt(n) <= goal:
            return n
    return 100_000


def against_text(encryption: str) -> str:
    """What the A/B scripts compare: B encrypted against A, or the placebo."""
    return f"B {encryption} against A none" if encryption != "none" else "placebo (A and B none)"


def load_averages(started: tuple[float, float, float]) -> str:
    """The load averages at the start (`started`) and now, as the A/B scripts print them."""
    return (f"load average {' / '.join(f'{v:.2f}' for v in started)} at start, "
            f"{' / '.join(f'{v:.2f}' for v in os.getloadavg())} at end")


def ab_columns(a: list[float], b: list[float], encrypted: bool, extra: str = "") -> str:
    """The columns the A/B scripts print for A's and B's values over the rounds: the spread of
    ln(A/B) in %, the placebo's floor, the rounds a ±TARGET_PCT floor needs at that spread, a
    script's own column (`extra`), and with `encrypted` B's cost over A with its 95% CI."""
    logs = [math.log(x / y) for x, y in zip(a, b)]
    spread = statistics.stdev(logs) if len(logs) > 1 else math.nan
    return (f"{100 * spread:16.1f}%  {'±' + format(floor_pct(logs), '.1f') + '%':>13s}  "
            f"{rounds_for(spread) if spread == spread else 0:>16d}{extra}"
            + ("  {:+.1f}% [{:+.1f}, {:+.1f}]".format(*cost_pct([-x for x in logs])) if encrypted else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("sqlite", "duckdb"), default="sqlite")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--memory-mb", type=int, default=8, help="the engine's cache, below the data")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--encryption", default="none",
                        help="B's encryption (default none: the placebo); A is always unencrypted")
    args = data_arguments(parser).parse_args()
    methods = list(args.methods)
    if "all" in methods and os.geteuid() != 0:
        methods.remove("all")
        print("not root: method 'all' (drop_caches) left out")
    started_load = os.getloadavg()

    engine = get_engine(args.engine, memory_mb=args.memory_mb)
    workload = TpchWorkload()
    workload.prepare(args.scale, args.data_dir, args.seed)
    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        root = Path(tmp)
        store = ResultStore(root / "out")
        store.start("name = 'bench'\n", {})
        contexts = {}
        keys = KeySource()
        for repetition, name in enumerate(("A", "B"), start=1):
            (root / name).mkdir()
            encryption = engine.encryption(args.encryption) if name == "B" else NONE
            key = None if encryption.is_baseline else keys.key_for(name)
            database = engine.provision(root / name, encryption, key)
            database.create()
            ctx = tpch_context(engine, database, store, args.scale, args.data_dir, args.seed, repetition)
            conn = database.connect()
            try:
                workload.load(ctx, conn)
            finally:
                conn.close()
            contexts[name] = ctx
        size_mib = sum(f.stat().st_size for f in (root / "A").rglob("*") if f.is_file()) / 2**20

        order: list[tuple[str, str]] = []
        not_emptied: dict[str, int] = {m: 0 for m in methods}
        rng = random.Random(1)
        for _ in range(args.rounds):
            for method in rng.sample(methods, len(methods)):
                names = rng.sample(["A", "B"], 2)
                if method == "lockstep":
                    not_emptied[method] += sum(not empty_cache(method, contexts[n].database) for n in names)
                    side_by_side([contexts[n] for n in names],
                                 lambda ctx, conn: workload.steps("power", ctx, conn, warmup=False))
                    order.extend((method, name) for name in names)
                    continue
                for name in names:
                    ctx = contexts[name]
                    if not empty_cache(method, ctx.database):
                        not_emptied[method] += 1
                    conn = ctx.database.connect()
                    try:
                        workload.run("power", ctx, conn, warmup=False)
                    finally:
                        conn.close()
                    order.append((method, name))
        for ctx in contexts.values():
            ctx.database.close()
        run = read_run(root / "out")

    composites: dict[tuple[str, str], list[float]] = {}
    by_trial: dict[int, list[list[float]]] = {1: [], 2: []}
    for m in run.measurements:
        if m.test == "power" and m.step.startswith("q") and not m.warmup:
            passes = by_trial[m.trial.repetition]
            if not passes or len(passes[-1]) == 22:
                passes.append([])
            passes[-1].append(m.metrics["elapsed_s"])
    seen = {1: 0, 2: 0}
    for method, name in order:
        repetition = 1 if name == "A" else 2
        times = by_trial[repetition][seen[repetition]]
        seen[repetition] += 1
        composites.setdefault((method, name), []).append(math.exp(float(np.mean(np.log(times)))))

    encrypted = args.encryption != "none"
    print(f"{against_text(args.encryption)}; {args.engine} {args.memory_mb} MB cache, TPC-H SF {args.scale:g} "
          f"({size_mib:,.0f} MiB on disk, {size_mib / args.memory_mb:.1f}x the cache), power test, "
          f"{args.rounds} rounds; {load_averages(started_load)}")
    print(f"{'method':8s}  {'power geomean (ms)':>18s}  {'spread of ln(A/B)':>17s}  {'placebo floor':>13s}  "
          f"rounds for ±{TARGET_PCT:g}%  not emptied" + ("  B's cost over A [95% CI]" if encrypted else ""))
    for method in methods:
        a, b = composites[(method, "A")], composites[(method, "B")]
        print(f"{method:8s}  {1000 * statistics.median(a + b):18.2f}  "
              + ab_columns(a, b, encrypted, f"  {not_emptied[method]:>11d}"))


if __name__ == "__main__":
    main()
