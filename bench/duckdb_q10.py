"""What makes DuckDB's TPC-H Q10 take 0.04 s in some io-bound trials and 0.10 s in others?

The io-bound plan (TPC-H SF 0.1, DuckDB at 48 MB, cold, files evicted, lockstep) had Q10 at about
0.04 s in some trials and 0.10 s in others, in every arm, with the same plan in every load
(bench/plan_stability.py): the query whose leaving out narrows DuckDB's placebo spread most (5.0%
to 4.4% over rounds; the next, q5, to 4.5%: the floor is spread over the queries). This script loads the database
once, copies it for `--arms` databases (the plan's none, placebo and encryption: 3), and runs
their power tests cold and side by side as the runner's lockstep does: each database closed and
its files evicted, then the 22 queries in turn, the first to go rotating with every query, the
arms' order shuffled per round. Every setting of `--memory-mb` x `--threads` x `--allocator`
(the engine's allocator setting: "flush" returns freed memory to the kernel after each task) is
run once a round, in an order shuffled per round, so drift of the machine hits all alike.

Q10 runs with DuckDB's profiler on (its peak buffer memory and temp-directory size: what
spilled; its slowest operator's time), and with the process's CPU time and minor page faults
counted around it: the memory the process took from the kernel during the query, page by page
(the other arms' instances are idle then). The runs are split in two by that memory (the
threshold that splits all runs' values into two groups best, two-means, the same for every
setting): a busy machine blurs the times, not the pages. Per setting the script prints each
group's count with its median time and CPU, how often the arm that ran Q10 first in its turn took
the new pages and how often a later one did, what else differs (buffer peak, spill, the slowest
operator), and the spread of ln(arm / arm) over rounds for Q10 and for the power test's composite
(the geometric mean of its 22 query times): the placebo's spread, which sets the plan's floor;
then the composite's median, which says what a setting costs every arm alike.

`--from-run FILE` reads a run's results.jsonl (or .jsonl.xz) instead and prints DuckDB's Q10 by
its place in the lockstep turn (first, second, ...): how the io-bound example's runs split; then
the spread over rounds of the placebo's composite ln ratio with every query, and with each of the
three queries left out whose leaving out narrows it most (`bench/place_in_turn.py`, which does the
same for any engine's query).

    .venv/bin/python bench/duckdb_q10.py [--scale 0.1] [--rounds 6] [--arms 3]
        [--memory-mb 48 56 64] [--threads 2 1] [--allocator default flush]
    .venv/bin/python bench/duckdb_q10.py --from-run docs/examples/io-bound/results.jsonl.xz

Tiny, for CI: --scale 0.01 --rounds 2 --arms 2 --memory-mb 48 --threads 1.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import resource
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness_overhead import data_arguments, tpch_context
from place_in_turn import from_run

from tdebench.engines import NONE, get_engine
from tdebench.engines.base import Connection, Database
from tdebench.engines.duckdb import ALLOCATOR_DEFAULT, ALLOCATOR_FLUSH
from tdebench.measure import oscache
from tdebench.store import ResultStore
from tdebench.workloads.tpch import TpchWorkload, streams
from tdebench.workloads.tpch.queries import query

QUERY = 10
PAGE = os.sysconf("SC_PAGE_SIZE")
PROFILED = json.dumps({"SYSTEM_PEAK_BUFFER_MEMORY": "true", "SYSTEM_PEAK_TEMP_DIR_SIZE": "true",
                       "OPERATOR_TIMING": "true", "OPERATOR_TYPE": "true"})


@dataclass(frozen=True)
class Setting:
    memory_mb: int
    threads: int
    allocator: str

    def __str__(self) -> str:
        return f"{self.memory_mb} MB, {self.threads} thr, {self.allocator}"


@dataclass
class Run:
    """One arm's Q10 in one round, and its power test's composite."""
    setting: Setting
    round: int
    arm: int
    first: bool  # the arm ran Q10 first in its turn
    seconds: float
    cpu_s: float
    new_mib: float  # minor page faults during the query, in MiB: memory taken from the kernel
    buffer_mib: float  # DuckDB's peak buffer memory
    temp_mib: float  # DuckDB's peak temp-directory size: what spilled
    slowest: str  # the slowest operator and its time
    composite: float = math.nan


def profile(path: Path) -> tuple[float, float, str]:
    """Peak buffer memory and temp-directory size (MiB) and the slowest operator of the profile."""
    tree = json.loads(path.read_text())
    operators: list[tuple[float, str]] = []
    stack = list(tree.get("children", []))
    while stack:
        node = stack.pop()
        operators.append((node.get("operator_timing", 0.0), node.get("operator_type", "?")))
        stack.extend(node.get("children", []))
    timing, name = max(operators, default=(0.0, "?"))
    return (tree.get("system_peak_buffer_memory", 0) / 2**20, tree.get("system_peak_temp_dir_size", 0) / 2**20,
            f"{name} {1000 * timing:.0f} ms")


def measured(conn: Connection, profile_path: Path) -> tuple[float, float, int]:
    """Q10 on `conn` with DuckDB's profiler writing to `profile_path`: seconds, the process's CPU
    seconds and minor page faults."""
    conn.execute(f"SET custom_profiling_settings = '{PROFILED}'")
    conn.execute("PRAGMA enable_profiling = 'json'")
    conn.execute(f"SET profiling_output = '{profile_path}'")
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    conn.execute(query(QUERY, "duckdb"))
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    conn.execute("PRAGMA disable_profiling")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, after.ru_minflt - before.ru_minflt


def power_round(setting: Setting, workspaces: list[Path], round_number: int, rng: random.Random,
                scratch: Path) -> list[Run]:
    """The arms' power tests cold and side by side (the runner's lockstep), Q10 measured closely."""
    engine = get_engine("duckdb", memory_mb=setting.memory_mb, settings={"allocator": setting.allocator})
    databases: list[Database] = [engine.provision(ws, NONE, None) for ws in workspaces]
    arms = rng.sample(range(len(workspaces)), len(workspaces))
    conns: dict[int, Connection] = {}
    runs: list[Run] = []
    times: dict[int, list[float]] = {arm: [] for arm in arms}
    try:
        for arm in arms:
            if not oscache.evict_files(workspaces[arm]):
                raise SystemExit(f"{workspaces[arm]}: its files stayed in the page cache")
            conns[arm] = databases[arm].connect()
            conns[arm].execute(f"SET threads = {setting.threads}")
        for turn, number in enumerate(streams.POWER_ORDER):
            start = turn % len(arms)
            for position, arm in enumerate(arms[start:] + arms[:start]):
                if number != QUERY:
                    began = time.perf_counter()
                    conns[arm].execute(query(number, "duckdb"))
                    times[arm].append(time.perf_counter() - began)
                    continue
                path = scratch / f"profile-{arm}.json"
                seconds, cpu, faults = measured(conns[arm], path)
                times[arm].append(seconds)
                runs.append(Run(setting, round_number, arm, position == 0, seconds, cpu, faults * PAGE / 2**20,
                                *profile(path)))
    finally:
        for conn in conns.values():
            conn.close()
        for database in databases:
            database.close()
    for run in runs:
        run.composite = math.exp(statistics.fmean(math.log(t) for t in times[run.arm]))
    return runs


def two_means(values: list[float]) -> float:
    """The threshold between the two groups of `values` with the least within-group sum of squares."""
    ordered = sorted(values)
    best, threshold = math.inf, ordered[-1]
    for cut in range(1, len(ordered)):
        low, high = ordered[:cut], ordered[cut:]
        cost = sum((v - statistics.fmean(low)) ** 2 for v in low) + sum((v - statistics.fmean(high)) ** 2 for v in high)
        if cost < best:
            best, threshold = cost, (ordered[cut - 1] + ordered[cut]) / 2
    return threshold


def arm_spread(runs: list[Run], value: str) -> float:
    """The spread (standard deviation, %) over rounds of ln(arm k / arm 0) of `value`, every k > 0
    pooled: the placebo's spread for this many arms."""
    by_round: dict[int, dict[int, float]] = {}
    for run in runs:
        by_round.setdefault(run.round, {})[run.arm] = getattr(run, value)
    logs = [math.log(arms[k] / arms[0]) for arms in by_round.values() for k in arms if k != 0]
    return 100 * statistics.stdev(logs) if len(logs) > 1 else math.nan


def median(runs: list[Run], value: str) -> float:
    return statistics.median(getattr(r, value) for r in runs) if runs else math.nan


def ms(runs: list[Run], value: str) -> str:
    """The runs' median `value` (seconds) in ms, "-" for none."""
    return f"{1000 * median(runs, value):5.0f}ms" if runs else f"{'-':>7s}"


def report(runs: list[Run], settings: list[Setting]) -> None:
    threshold = two_means([r.new_mib for r in runs])
    print(f"Q{QUERY}'s new memory (minor page faults during the query): 'new' above {threshold:.1f} MiB, "
          "'reused' below (two-means over all runs)")
    print(f"{'setting':24s} {'reused':>6s} {'time':>7s} {'CPU':>7s} {'new':>4s} {'time':>7s} {'CPU':>7s}  "
          f"new when first / later  spread ln(arm/arm): Q{QUERY}  power  power geomean")
    for setting in settings:
        mine = [r for r in runs if r.setting == setting]
        reused, new = [r for r in mine if r.new_mib <= threshold], [r for r in mine if r.new_mib > threshold]
        first, later = [r for r in mine if r.first], [r for r in mine if not r.first]
        new_first, new_later = sum(r in new for r in first), sum(r in new for r in later)
        print(f"{str(setting):24s} {len(reused):6d} {ms(reused, 'seconds')} {ms(reused, 'cpu_s')} "
              f"{len(new):4d} {ms(new, 'seconds')} {ms(new, 'cpu_s')}  "
              f"{new_first:>6d}/{len(first):<3d}{new_later:>5d}/{len(later):<3d}"
              f"       {arm_spread(mine, 'seconds'):16.1f}%  {arm_spread(mine, 'composite'):5.1f}%  "
              f"{1000 * median(mine, 'composite'):10.1f} ms")
    print("\nwhat else differs (medians):  new MiB  buffer peak MiB  spilled MiB  slowest operator")
    for setting in settings:
        mine = [r for r in runs if r.setting == setting]
        for mode, group in (("reused", [r for r in mine if r.new_mib <= threshold]),
                            ("new", [r for r in mine if r.new_mib > threshold])):
            if group:
                slowest = statistics.median_low(sorted(r.slowest for r in group))
                print(f"{str(setting):24s} {mode:6s}  {median(group, 'new_mib'):7.1f}  "
                      f"{median(group, 'buffer_mib'):15.1f}  {median(group, 'temp_mib'):11.1f}  {slowest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--arms", type=int, default=3, help="databases side by side (the plan's arms)")
    parser.add_argument("--memory-mb", type=int, nargs="+", default=[48, 56, 64])
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--allocator", nargs="+", choices=(ALLOCATOR_DEFAULT, ALLOCATOR_FLUSH),
                        default=[ALLOCATOR_DEFAULT, ALLOCATOR_FLUSH])
    parser.add_argument("--from-run", type=Path, help="a run's results.jsonl[.xz]: its DuckDB Q10 by place in turn")
    args = data_arguments(parser).parse_args()
    if args.from_run is not None:
        from_run(args.from_run, "duckdb", QUERY)  # bench/place_in_turn.py, for any engine and query
        return
    if args.arms < 2:
        parser.error("--arms: at least 2, to compare arms")
    settings = [Setting(*s) for s in itertools.product(args.memory_mb, args.threads, args.allocator)]
    started_load = os.getloadavg()

    workload = TpchWorkload()
    workload.prepare(args.scale, args.data_dir, args.seed)
    with tempfile.TemporaryDirectory(prefix="tdebench-bench-") as tmp:
        root = Path(tmp)
        engine = get_engine("duckdb", memory_mb=max(args.memory_mb))
        workspaces = [root / f"arm{arm}" for arm in range(args.arms)]
        workspaces[0].mkdir()
        database = engine.provision(workspaces[0], NONE, None)
        database.create()
        store = ResultStore(root / "out")
        store.start("name = 'bench'\n", {})
        ctx = tpch_context(engine, database, store, args.scale, args.data_dir, args.seed)
        conn = database.connect()
        try:
            workload.load(ctx, conn)
        finally:
            conn.close()
            database.close()
        size_mib = sum(f.stat().st_size for f in database.files()) / 2**20
        for workspace in workspaces[1:]:  # the same file for every arm: loaded once
            workspace.mkdir()
            for file in database.files():
                shutil.copy2(file, workspace / file.name)
        rng = random.Random(1)
        runs: list[Run] = []
        for round_number in range(args.rounds):
            for setting in rng.sample(settings, len(settings)):
                runs += power_round(setting, workspaces, round_number, rng, root)

    print(f"DuckDB TPC-H SF {args.scale:g} ({size_mib:.0f} MiB on disk), {args.arms} copies cold and side by side, "
          f"{args.rounds} rounds; load average {' / '.join(f'{v:.2f}' for v in started_load)} at start, "
          f"{' / '.join(f'{v:.2f}' for v in os.getloadavg())} at end")
    report(runs, settings)


if __name__ == "__main__":
    main()
