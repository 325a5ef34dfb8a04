"""Where does the variance between trials come from? One run, arms side by side.

A TPC-H power test is run in trials the way the runner runs them (fresh workspace, fresh key,
load, close, reopen, warm-ups, measured queries, the resource sampler running), each trial
in one of several *arms*. An arm differs from the reference arm in one factor only, so its
spread against the reference's shows what that factor contributes:

  reference     the trial as the runner ran it before this study: a fresh database per trial,
                DuckDB's threads = cores (its default), Python's GC free to run inside a
                measured query, the sampler on, 1 warm-up;
  one-database  one database loaded before round 1 and reused (each trial only reopens it);
  threads-1     DuckDB `SET threads = 1`;
  gc-paused     the collector paused while a query is timed (Recorder.pause_gc);
  no-sampler    no resource sampler thread;
  warmups-0, warmups-3   0 or 3 warm-ups instead of 1;
  harness       the trial as the runner runs it now (the engine's and the Recorder's defaults).

Every trial runs the measured power test `--repeats` times on the same connection, so on log
scale each query's time splits into a between-trial and a within-trial variance component
(one-way random-effects ANOVA). The composite is the geometric mean of the 22 query times;
"1 shot" is the first measured pass (what one trial reports when it runs the test once),
"median of k" takes each query's median over the k passes first. Arms come in rounds: round r
runs one trial of every arm, in an order shuffled by r, so drift of the machine hits all arms
alike. Each arm is run for the baseline and, for the reference and harness arms, also an
encryption, which gives the overhead paired within a round vs unpaired (groups resampled
independently, as the report did before paired rounds).

Beside each measured pass the CPU every other process used meanwhile is taken from
/proc/stat (in cores), because on a shared machine that is most of the story: each arm's
median composite is printed per band of it (quiet, about one core, more), and for DuckDB the
passes of every arm are pooled by the threads they ran with. Every collection of Python's GC
is timed (gc.callbacks), so the share of measured query time it took is a measurement, not
an inference from spreads.

Spreads are standard deviations of ln(time) ×100 (≈ CV % for small spreads); CIs are 95%
percentile bootstraps over trials (or rounds), 2000 resamples, fixed seed. Not covered: a
fresh process per trial (the runner runs every trial in one) and servers (their processes
are the servers', not the driver's).

    .venv/bin/python bench/precision.py [--engine duckdb|sqlite] [--scale 0.1] [--rounds 5]
        [--repeats 3] [--arms reference harness …] [--raw raw.json]

Tiny, for CI: --scale 0.01 --rounds 2 --repeats 2.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import psutil

from tdebench.engines import NONE, get_engine
from tdebench.engines.base import Database, Engine
from tdebench.keys import KeySource
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.measure.sampler import Sampler
from tdebench.results import Measurement, TrialKey
from tdebench.store import ResultStore
from tdebench.workloads.base import RunContext
from tdebench.workloads.tpch import TpchWorkload, streams

RESAMPLES = 2000
ENCRYPTION = {"duckdb": "aes-256-gcm", "sqlite": "aes-256-cbc"}


CORES = len(os.sched_getaffinity(0))


@dataclass(frozen=True)
class Arm:
    """How the trials of one arm are run; each field is one candidate cause of variance."""

    name: str
    what: str
    fresh: bool = True  # a fresh database (workspace, key, load) per trial; False: one, reused
    threads: int | None = CORES  # DuckDB `SET threads`; None: the engine's own setting
    pause_gc: bool = False  # Python's collector paused while a query is timed (Recorder.pause_gc)
    sampler: bool = True
    warmups: int = 1


REFERENCE = Arm("reference",
                "before this study: fresh database, DuckDB threads = cores, GC free, sampler on, 1 warm-up")
HARNESS = Arm("harness", "the runner's trial now: the engine's settings, GC paused in queries (Recorder defaults)",
              threads=None, pause_gc=True)


def arms_for(engine: str) -> dict[str, Arm]:
    """Every arm this engine can run, by name; each but `harness` differs from `reference` in one field."""
    arms = [REFERENCE,
            replace(REFERENCE, name="one-database", what="one database loaded once, reopened per trial", fresh=False),
            replace(REFERENCE, name="threads-1", what="DuckDB SET threads = 1", threads=1),
            replace(REFERENCE, name="gc-paused", what="GC paused while a query is timed", pause_gc=True),
            replace(REFERENCE, name="no-sampler", what="no resource sampler thread", sampler=False),
            replace(REFERENCE, name="warmups-0", what="no warm-up", warmups=0),
            replace(REFERENCE, name="warmups-3", what="3 warm-ups", warmups=3),
            HARNESS]
    if engine != "duckdb":
        arms = [replace(a, threads=None) for a in arms if a.name != "threads-1"]
    return {arm.name: arm for arm in arms}


DEFAULT_ARMS = ("reference", "one-database", "threads-1", "gc-paused", "no-sampler", "warmups-0", "harness")
PAIRED = ("reference", "harness")  # arms also run with the engine's encryption


class _Collected(ResultStore):
    """A store that keeps what the harness records in memory instead of a file."""

    def __init__(self) -> None:
        self.records: list[object] = []

    def append(self, record: object) -> None:
        self.records.append(record)

    def sync(self) -> None:
        pass


@dataclass
class Trial:
    """One trial's raw numbers: `passes[r][i]` is query `QUERIES[i]`'s time (s) in pass r."""

    arm: str
    encryption: str
    round: int
    passes: list[list[float]]
    others: list[float]  # per pass: CPU used by other processes meanwhile, in cores
    load_avg: float  # 1-minute load average at its end
    gc_s: float  # time Python's collector ran inside measured queries
    gc_hits: int  # measured queries a collection ran in


QUERIES = streams.POWER_ORDER


class Study:
    def __init__(self, engine: Engine, scale: float, repeats: int, data_dir: Path, root: Path) -> None:
        self.engine = engine
        self.scale = scale
        self.repeats = repeats
        self.data_dir = data_dir
        self.root = root
        self.workload = TpchWorkload()
        self.keys = KeySource()
        self.shared: dict[str, Database] = {}  # one-database arms: encryption -> loaded database

    def close(self) -> None:
        for database in self.shared.values():
            database.close()

    def _loaded(self, encryption: str, name: str) -> Database:
        """A new database in its own workspace with a fresh key, loaded as the runner loads it."""
        workspace = self.root / name
        workspace.mkdir()
        setting = self.engine.encryption(encryption)
        secret = None if setting.is_baseline else self.keys.key_for(name)
        database = self.engine.provision(workspace, setting, secret)
        database.create()
        conn = database.connect()
        try:
            self.workload.load(self._context(database, _Collected()), conn)
        finally:
            conn.close()
        return database

    def _context(self, database: Database, store: ResultStore, pause_gc: bool = True) -> RunContext:
        recorder = _Watched(store, TrialKey(self.engine.name, database.encryption.name, "tpch", self.scale, 1),
                            MonotonicClock(), pause_gc=pause_gc)
        return RunContext(database=database, dialect=self.engine.dialect, recorder=recorder, scale=self.scale,
                          streams=1, data_dir=self.data_dir)

    def trial(self, arm: Arm, encryption: str, round_number: int) -> Trial:
        name = f"{arm.name}-{encryption}-r{round_number}"
        if arm.fresh:
            database = self._loaded(encryption, name)
        elif encryption not in self.shared:
            database = self.shared[encryption] = self._loaded(encryption, f"shared-{encryption}")
        else:
            database = self.shared[encryption]
        store = _Collected()
        ctx = self._context(database, store, arm.pause_gc)
        others: list[float] = []
        sampling = (Sampler(store, ctx.recorder.trial, 1.0, database.engine_processes) if arm.sampler
                    else nullcontext())
        try:
            with sampling:
                conn = database.connect()
                try:
                    if arm.threads is not None and self.engine.name == "duckdb":
                        conn.execute(f"SET threads = {arm.threads}")
                    for _ in range(arm.warmups):
                        self.workload.run("power", ctx, conn, warmup=True)
                    ctx.recorder.windows.clear()
                    with _GcWatch() as collections:
                        for _ in range(self.repeats):
                            before = _cpu_seconds()
                            self.workload.run("power", ctx, conn, warmup=False)
                            others.append(_others_cores(before, _cpu_seconds()))
                finally:
                    conn.close()
        finally:
            if arm.fresh:
                database.close()
                shutil.rmtree(database.workspace, ignore_errors=True)
        times = [m.metrics["elapsed_s"] for m in store.records
                 if isinstance(m, Measurement) and not m.warmup and m.step.startswith("q")]
        passes = [times[i:i + len(QUERIES)] for i in range(0, len(times), len(QUERIES))]
        inside = [(start, end) for start, end in collections
                  if any(s <= start and end <= e for s, e in ctx.recorder.windows)]
        hits = {w for w in ctx.recorder.windows for start, end in inside if w[0] <= start and end <= w[1]}
        return Trial(arm.name, encryption, round_number, passes, others, os.getloadavg()[0],
                     sum(end - start for start, end in inside) / 1e9, len(hits))


    def busy_core_pairs(self, threads: int | None, pairs: int) -> list[tuple[float, float]]:
        """(alone, beside a busy core) composites (s) of adjacent passes on one database: before
        every other pass this script starts a process that spins on one core, and stops it
        after. Adjacent passes see nearly the same ambient load, so their ratio is what one
        busy core costs the engine's queries at this thread count."""
        if NONE.name not in self.shared:
            self.shared[NONE.name] = self._loaded(NONE.name, f"shared-{NONE.name}")
        database = self.shared[NONE.name]
        store = _Collected()
        ctx = self._context(database, store)
        found: list[tuple[float, float]] = []
        conn = database.connect()
        try:
            if threads is not None:
                conn.execute(f"SET threads = {threads}")
            self.workload.run("power", ctx, conn, warmup=True)
            for number in range(pairs):
                composites = {}
                for busy in ((False, True) if number % 2 == 0 else (True, False)):
                    with _busy_core() if busy else nullcontext():
                        del store.records[:]
                        self.workload.run("power", ctx, conn, warmup=False)
                    times = [m.metrics["elapsed_s"] for m in store.records
                             if isinstance(m, Measurement) and m.step.startswith("q")]
                    composites[busy] = math.exp(float(np.mean(np.log(times))))
                found.append((composites[False], composites[True]))
        finally:
            conn.close()
        return found


@contextmanager
def _busy_core() -> Iterator[None]:
    """A process of this script's own spinning on one core while the block runs."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # started and spinning before the measured pass begins
        yield
    finally:
        spinner.kill()
        spinner.wait()


@dataclass
class _Watched(Recorder):
    """The harness's Recorder, noting when the clock of each timed statement (a query) ran, for
    the GC attribution; `measure` (a whole test) is not noted."""

    windows: list[tuple[int, int]] = field(default_factory=list)
    _statement: bool = False

    def timed(self, work, *, process: bool = True):
        self._statement = True
        try:
            return super().timed(work, process=process)
        finally:
            self._statement = False

    def _start(self, process: bool):
        stop = super()._start(process)
        if not self._statement:
            return stop
        start = time.perf_counter_ns()

        def stopped() -> dict[str, float]:
            metrics = stop()
            self.windows.append((start, time.perf_counter_ns()))
            return metrics

        return stopped


class _GcWatch:
    """Records (start, end) in perf_counter ns of every collection Python's GC runs meanwhile."""

    def __enter__(self) -> list[tuple[int, int]]:
        self.runs: list[tuple[int, int]] = []
        self._started = 0
        gc.callbacks.append(self._callback)
        return self.runs

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        now = time.perf_counter_ns()
        if phase == "start":
            self._started = now
        elif self._started:
            self.runs.append((self._started, now))


def _cpu_seconds() -> tuple[float, float, float]:
    """(this process's CPU s, the machine's busy CPU s, wall s) now."""
    own = psutil.Process().cpu_times()
    machine = psutil.cpu_times()
    busy = machine.user + machine.nice + machine.system + getattr(machine, "irq", 0.0) + getattr(
        machine, "softirq", 0.0) + getattr(machine, "steal", 0.0)
    return own.user + own.system, busy, time.monotonic()


def _others_cores(before: tuple[float, float, float], after: tuple[float, float, float]) -> float:
    """The CPU every other process used between two `_cpu_seconds`, in cores (in a virtual
    machine, time the host gave other guests, `steal`, included)."""
    own, machine, wall = (a - b for a, b in zip(after, before))
    return max(0.0, machine - own) / max(wall, 1e-9)


# -- statistics on log scale --------------------------------------------------------------------

def _rng() -> np.random.Generator:
    return np.random.default_rng(20261123)


def log_times(trials: Sequence[Trial]) -> np.ndarray:
    """ln(seconds) as an array [trial, pass, query]."""
    return np.log(np.array([t.passes for t in trials], dtype=float))


def components(values: np.ndarray) -> tuple[float, float]:
    """Between- and within-group variance of `values` [group, repeat] (one-way random-effects
    ANOVA, the between part clipped at 0)."""
    groups, repeats = values.shape
    within = float(np.mean(np.var(values, axis=1, ddof=1))) if repeats > 1 else math.nan
    between_ms = repeats * float(np.var(values.mean(axis=1), ddof=1)) if groups > 1 else math.nan
    between = max(0.0, (between_ms - within) / repeats) if repeats > 1 else between_ms
    return between, within


def single_shot(logs: np.ndarray) -> np.ndarray:
    """Per trial: ln of the geometric mean of the first measured pass."""
    return logs[:, 0, :].mean(axis=1)


def median_of_k(logs: np.ndarray) -> np.ndarray:
    """Per trial: ln of the geometric mean of each query's median over the trial's passes."""
    return np.median(logs, axis=1).mean(axis=1)


def spread_pct(values: np.ndarray) -> float:
    return 100 * float(np.std(values, ddof=1)) if len(values) > 1 else math.nan


def bootstrap(values: np.ndarray, statistic, resamples: int = RESAMPLES) -> tuple[float, float]:
    """95% percentile interval of `statistic` over resamples of `values`' first axis."""
    if len(values) < 2:
        return math.nan, math.nan
    rng = _rng()
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    samples = np.array([statistic(values[p]) for p in picks])
    samples = samples[np.isfinite(samples)]
    if not samples.size:
        return math.nan, math.nan
    low, high = np.percentile(samples, [2.5, 97.5])
    return float(low), float(high)


@dataclass
class ArmSummary:
    name: str
    trials: int
    geomean_ms: float
    one_shot: tuple[float, float, float]  # spread %, 95% CI
    median_k: tuple[float, float, float]
    between: float  # composite: between-trial sd %
    within: float  # composite: pass-to-pass sd % within a trial
    query_between: float  # median over queries of the per-query between-trial sd %
    query_within: float
    bands: list[tuple[float, int]]  # by_load
    others: float  # mean CPU of other processes, cores
    load_avg: float
    gc_pct: float  # % of measured query time Python's collector ran in
    gc_hits: int


BANDS = ((0.0, 0.25, "quiet"), (0.25, 1.2, "~1 core"), (1.2, math.inf, ">1.2 cores"))


def by_load(trials: Sequence[Trial]) -> list[tuple[float, int]]:
    """Per band of the CPU other processes used during a pass (BANDS): the median composite of
    the arm's passes in that band (ms) and how many there were."""
    found: list[tuple[float, int]] = []
    for low, high, _ in BANDS:
        values = [math.exp(float(np.mean(np.log(p)))) * 1000 for t in trials for p, o in zip(t.passes, t.others)
                  if low <= o < high]
        found.append((statistics.median(values) if values else math.nan, len(values)))
    return found


def summarize(name: str, trials: Sequence[Trial]) -> ArmSummary:
    logs = log_times(trials)
    shots, medians = single_shot(logs), median_of_k(logs)
    between, within = components(logs.mean(axis=2))
    per_query = [components(logs[:, :, i]) for i in range(logs.shape[2])]
    measured = float(np.exp(logs).sum())
    return ArmSummary(
        name=name, trials=len(trials), geomean_ms=1000 * math.exp(float(np.mean(shots))),
        one_shot=(spread_pct(shots), *bootstrap(shots, spread_pct)),
        median_k=(spread_pct(medians), *bootstrap(medians, spread_pct)),
        between=100 * math.sqrt(between), within=100 * math.sqrt(within),
        query_between=float(np.median([100 * math.sqrt(b) for b, _ in per_query])),
        query_within=float(np.median([100 * math.sqrt(w) for _, w in per_query])),
        bands=by_load(trials),
        others=statistics.fmean(o for t in trials for o in t.others),
        load_avg=statistics.fmean(t.load_avg for t in trials),
        gc_pct=100 * sum(t.gc_s for t in trials) / measured, gc_hits=sum(t.gc_hits for t in trials))


def spread_ratio(reference: np.ndarray, arm: np.ndarray) -> tuple[float, float, float]:
    """The arm's trial-to-trial spread as a multiple of the reference's (below 1: the factor the
    arm removes was adding variance), with a CI resampling both arms' trials independently."""
    def ratio(a: np.ndarray, b: np.ndarray) -> float:
        base = spread_pct(a)
        return spread_pct(b) / base if base > 0 else math.nan

    rng = _rng()
    samples = [ratio(reference[rng.integers(0, len(reference), len(reference))],
                     arm[rng.integers(0, len(arm), len(arm))]) for _ in range(RESAMPLES)]
    finite = np.array([x for x in samples if np.isfinite(x)])
    low, high = np.percentile(finite, [2.5, 97.5]) if finite.size else (math.nan, math.nan)
    return ratio(reference, arm), float(low), float(high)


def paired_vs_unpaired(base: Sequence[Trial], treat: Sequence[Trial],
                       composite) -> dict[str, tuple[float, float, float]]:
    """The overhead of `treat` over `base` (%), with its 95% CI, estimated two ways from the
    same trials: paired (mean of the within-round log ratios, bootstrap over rounds) and
    unpaired (difference of the groups' mean logs, each group resampled on its own)."""
    by_round = {t.round: t for t in base}
    pairs = [(by_round[t.round], t) for t in treat if t.round in by_round]
    b = composite(log_times([p[0] for p in pairs]))
    t = composite(log_times([p[1] for p in pairs]))
    diffs = t - b
    low, high = bootstrap(diffs, lambda d: float(np.mean(d)))
    paired = (_pct(float(np.mean(diffs))), _pct(low), _pct(high))
    rng = _rng()
    samples = [float(np.mean(t[rng.integers(0, len(t), len(t))]) - np.mean(b[rng.integers(0, len(b), len(b))]))
               for _ in range(RESAMPLES)]
    low, high = np.percentile(samples, [2.5, 97.5])
    unpaired = (_pct(float(np.mean(t) - np.mean(b))), _pct(float(low)), _pct(float(high)))
    return {"paired": paired, "unpaired": unpaired}


def _pct(log_ratio: float) -> float:
    return 100 * (math.exp(log_ratio) - 1)


# -- the run -------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> tuple[list[Trial], dict[int | None, list[tuple[float, float]]]]:
    engine = get_engine(args.engine)
    arms = arms_for(args.engine)
    encryption = ENCRYPTION[args.engine]
    cells = [(arms[name], NONE.name) for name in args.arms]
    cells += [(arms[name], encryption) for name in args.arms if name in PAIRED]
    TpchWorkload().prepare(args.scale, args.data_dir, 1)
    trials: list[Trial] = []
    with tempfile.TemporaryDirectory(prefix="tdebench-precision-") as tmp:
        study = Study(engine, args.scale, args.repeats, args.data_dir, Path(tmp))
        try:
            for round_number in range(1, args.rounds + 1):
                order = list(cells)
                random.Random(f"precision/{round_number}").shuffle(order)
                for arm, enc in order:
                    trials.append(study.trial(arm, enc, round_number))
                print(f"  round {round_number}/{args.rounds} done, load average {os.getloadavg()[0]:.2f}",
                      flush=True)
            settings = (CORES, max(1, CORES - 1)) if args.engine == "duckdb" else (None,)
            busy = {threads: study.busy_core_pairs(threads, args.busy_pairs)
                    for threads in dict.fromkeys(settings)} if args.busy_pairs else {}
        finally:
            study.close()
    return trials, busy


def report(args: argparse.Namespace, trials: Sequence[Trial], busy: dict[int | None, list[tuple[float, float]]],
           started_load: tuple[float, ...]) -> None:
    def of(arm: str, enc: str = "none") -> list[Trial]:
        return [t for t in trials if t.arm == arm and t.encryption == enc]

    arms = arms_for(args.engine)
    print(f"\nTPC-H power on {args.engine} {get_engine(args.engine).version()}, scale {args.scale:g}, {CORES} cores: "
          f"{args.rounds} rounds, {args.repeats} measured passes per trial; load average "
          f"{' / '.join(f'{v:.2f}' for v in started_load)} at start, "
          f"{' / '.join(f'{v:.2f}' for v in os.getloadavg())} at end")
    print("spread: sd of ln(time) x100 (~ CV %) [95% CI over trials]; composite: geomean of the 22 query times; "
          "1 shot: a trial's first measured pass; median of k: each query's median over the trial's passes\n")
    summaries = {name: summarize(name, of(name)) for name in args.arms}
    bands = "".join(f"  {label:>14s}" for _, _, label in BANDS)
    print(f"{'arm':13s} {'n':>2s} {'geomean':>8s}  {'1 shot':>18s}  {'median of k':>18s}  {'between':>7s} "
          f"{'within':>6s}  {'per query':>11s}  {'others':>6s} {'load':>5s}  {'GC in queries':>13s}{bands}")
    for name, s in summaries.items():
        print(f"{name:13s} {s.trials:2d} {s.geomean_ms:6.1f}ms  "
              f"{s.one_shot[0]:5.1f} [{s.one_shot[1]:4.1f},{s.one_shot[2]:5.1f}]  "
              f"{s.median_k[0]:5.1f} [{s.median_k[1]:4.1f},{s.median_k[2]:5.1f}]  "
              f"{s.between:6.1f}% {s.within:5.1f}%  {s.query_between:4.1f}%/{s.query_within:4.1f}%  "
              f"{s.others:5.2f}c {s.load_avg:5.2f}  {s.gc_pct:5.2f}% in {s.gc_hits:3d}"
              + "".join(f"  {ms:6.1f}ms ({n:3d})" if n else f"  {'-':>6s}   ({n:3d})" for ms, n in s.bands))
    print("between / within: the composite's sd between trials / between passes of one trial (ANOVA); per query: "
          "the same, median over the 22 queries;\nothers: mean CPU of other processes during the passes (cores); "
          "load: 1-min load average; GC in queries: share of measured query time Python's collector ran in, and "
          "in how many queries;\nquiet, ~1 core, >1.2 cores: the median composite of the passes measured while other "
          "processes used that much CPU (number of passes)")
    if "reference" in summaries:
        print("\nwhat each factor contributes: the arm's trial-to-trial spread (1 shot) as a multiple of the "
              "reference's [95% CI]; below 1: what the arm changes was adding variance")
        reference = single_shot(log_times(of("reference")))
        for name in args.arms:
            if name != "reference":
                ratio = spread_ratio(reference, single_shot(log_times(of(name))))
                print(f"  {name:13s} {ratio[0]:5.2f} [{ratio[1]:4.2f}, {ratio[2]:5.2f}]  {arms[name].what}")
    if args.engine == "duckdb":
        print("\nDuckDB threads, every arm's baseline passes pooled by the threads it ran with: median composite "
              "while other processes used that much CPU (passes)")
        for threads in sorted({_threads(arms[name]) for name in args.arms}, reverse=True):
            pooled = [t for name in args.arms if _threads(arms[name]) == threads for t in of(name)]
            print(f"  threads = {threads}:" + "".join(
                f"  {label} {ms:5.1f}ms ({n:3d})" if n else f"  {label}   -   ({n:3d})"
                for (_, _, label), (ms, n) in zip(BANDS, by_load(pooled))))
    if busy:
        print(f"\none busy core: {args.busy_pairs} pairs of adjacent passes on one database, one of each pair "
              "beside a process of this script spinning on one core: median composite, and the ratio "
              "[95% CI over pairs]")
        for threads, pairs in busy.items():
            alone, beside = (np.log(np.array([p[i] for p in pairs])) for i in (0, 1))
            low, high = bootstrap(beside - alone, lambda d: float(np.mean(d)))
            label = f"threads = {threads}" if threads is not None else args.engine
            print(f"  {label:12s} alone {1000 * math.exp(float(np.median(alone))):5.1f}ms, beside a busy core "
                  f"{1000 * math.exp(float(np.median(beside))):5.1f}ms: "
                  f"x{math.exp(float(np.mean(beside - alone))):.2f} "
                  f"[{math.exp(low):.2f}, {math.exp(high):.2f}]")
    encryption = ENCRYPTION[args.engine]
    for name in (n for n in PAIRED if n in args.arms):
        for label, composite in (("1 shot", single_shot), ("median of k", median_of_k)):
            result = paired_vs_unpaired(of(name), of(name, encryption), composite)
            line = ", ".join(f"{kind} {v[0]:+.1f}% [{v[1]:+.1f}, {v[2]:+.1f}] (±{(v[2] - v[1]) / 2:.1f})"
                             for kind, v in result.items())
            print(f"overhead {encryption} vs none, {name}, {label}: {line}")


def _threads(arm: Arm) -> int:
    """The threads a DuckDB arm's queries ran on (DuckDB's default: one per core)."""
    return arm.threads if arm.threads is not None else CORES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=tuple(ENCRYPTION), default="duckdb")
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="measured passes per trial (≥2)")
    parser.add_argument("--arms", nargs="+", default=None,
                        help=f"default: {' '.join(DEFAULT_ARMS)}; also: warmups-3")
    parser.add_argument("--busy-pairs", type=int, default=6,
                        help="pairs of passes alone / beside one busy core, per thread setting (0: none)")
    parser.add_argument("--raw", type=Path, help="also write every trial's raw times to this JSON file")
    parser.add_argument("--data-dir", type=Path, default=Path.home() / ".cache" / "tdebench" / "data")
    args = parser.parse_args()
    available = arms_for(args.engine)
    if args.arms is None:
        args.arms = [a for a in DEFAULT_ARMS if a in available]
    unknown = [name for name in args.arms if name not in available]
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)} for {args.engine}; valid: {', '.join(available)}")
    if args.repeats < 2 or args.rounds < 2:
        parser.error("--repeats and --rounds must be at least 2 (spreads need two values)")
    started_load = os.getloadavg()
    started = time.monotonic()
    trials, busy = run(args)
    if args.raw:
        raw = {"trials": [t.__dict__ for t in trials],
               "busy_core_pairs": [{"threads": threads, "alone_s": a, "beside_busy_core_s": b}
                                   for threads, pairs in busy.items() for a, b in pairs]}
        args.raw.write_text(json.dumps(raw, indent=1) + "\n")
    report(args, trials, busy, started_load)
    print(f"study took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
