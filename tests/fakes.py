"""A fixed, hand-made run directory for testing statistics and reports without engines.

The numbers are deterministic (noise is seeded from each record's identity), with a few
features placed on purpose so tests can check them:
- database size: duckdb none 10 MiB, aes-256-gcm 10.5 MiB in every repetition → +5.0%;
- one failed trial (sqlite aes-256-cbc r3) that stopped in the power test with a wrong
  answer on q5;
- one slow repetition (duckdb none r3, power q9, +60%), which makes that cell noisy;
- one warm-up run (duckdb none r1, power q1) 100x slower, which must never be counted;
- one query stopped by the plan's 60 s timeout (sqlite chacha20-poly1305 r3, power q18), so
  that trial failed after its power test, as the runner marks it;
- resource samples for repetitions 1 and 2 of every duckdb trial and repetition 1 of every
  sqlite trial (none for the others), with the peaks of the duckdb baseline known;
- fs-layer-style verdicts (duckdb aes-256-ctr) with an engine-reported state and canary hits
  in the decrypted view;
- an environment value with HTML in it, which must come out escaped.

`DEMO` shapes a run the size of the demo plan (plans/quick.toml) instead: DuckDB with 3 and
SQLite with 8 encryptions (none included) and the placebo, 5 lockstep rounds, the power test
only, every trial sampled with the machine's load, noisier timings and none of the features
placed on purpose (no failure, no fs layer).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from tdebench.run import setup as runsetup
from tdebench.engines import get_engine
from tdebench.results import CipherSpeed, FileScan, Measurement, Sample, TrialKey, TrialOutcome, Verdict
from tdebench.store import ResultStore

MIB = 1024 * 1024
WORKLOAD = "tpch"
SCALE = 0.01
REPETITIONS = 3
QUERIES = [f"q{number}" for number in range(1, 23)]
STREAMS = (1, 2)

# encryption → (time factor, database size in MiB)
SETTINGS = {
    "duckdb": {"none": (1.00, 10.0), "aes-256-gcm": (1.03, 10.5), "aes-256-ctr": (1.02, 10.4)},
    "sqlite": {"none": (1.00, 8.0), "aes-256-cbc": (1.10, 8.5), "chacha20-poly1305": (1.05, 8.25)},
}
FAILED = TrialKey("sqlite", "aes-256-cbc", WORKLOAD, SCALE, 3)
FAILED_AT = "q5"
NOISY = (TrialKey("duckdb", "none", WORKLOAD, SCALE, 3), "power", "q9")
TIMED_OUT = TrialKey("sqlite", "chacha20-poly1305", WORKLOAD, SCALE, 3)
TIMED_OUT_AT = "q18"
QUERY_TIMEOUT_S = 60.0
LAYERED = "aes-256-ctr"  # duckdb's verdicts of this encryption carry engine_state and view_hits
VIEW_HITS = 7
SAMPLES = 12  # per sampled trial, one a second
# the duckdb baseline's peaks over its sampled trials (repetitions 1 and 2)
BASELINE_CPU_MAX = 90.0
BASELINE_MEM_MAX_MIB = 200.0 + 11 * 5.0 + 2 * 3.0

PLAN = """\
name = "fake"
engines = ["duckdb", "sqlite"]
repetitions = 3
cache = "warm"
order = "interleaved"

[[workloads]]
name = "tpch"
scales = [0.01]
query_timeout_s = 60
"""

ENVIRONMENT = {
    "cpu": {"model": "Fake CPU 9000 @ 3.00GHz", "cores": 8, "flags": ["aes", "avx2", "sha_ni", "vaes"]},
    "memory_bytes": 16 * 1024 * MIB,
    "kernel": "6.1.0-fake-amd64",
    "python": "3.11.2",
    "engines": {"duckdb": "1.5.5", "sqlite": "3.54.0 (SQLite3 Multiple Ciphers 2.2)"},
    "note": "<script>alert('not escaped')</script>",
}


@dataclass(frozen=True)
class Shape:
    """What a fake run holds: the default is the small run the module describes."""

    settings: dict[str, dict[str, tuple[float, float]]] = field(default_factory=lambda: SETTINGS)
    repetitions: int = REPETITIONS
    streams: tuple[int, ...] = STREAMS  # () for the power test only
    spread: float = 0.01  # timings vary by ± this fraction
    placed: bool = True  # the features above placed on purpose: failures, the slow repetition, LAYERED
    sample_all: bool = False  # samples for every trial (else the repetitions described above)
    loads: bool = False  # the machine's load recorded (others' CPU, load averages)
    kinds: bool = False  # each scanned file's kind recorded ("data"), as runs since format 2 do
    # cpu_s counted in clock ticks of this many seconds, rounded down (psutil's 10 ms before tdebench
    # read the scheduler's nanoseconds: a short query of the baseline read 0.0 s); 0: as measured
    cpu_tick: float = 0.0
    environment: dict = field(default_factory=lambda: ENVIRONMENT)
    ciphers: tuple[tuple[str, int, float], ...] = (  # (cipher, page bytes, MiB/s)
        ("aes-256-gcm", 4096, 2900.0), ("aes-256-gcm", MIB, 4100.0), ("aes-256-ctr", MIB, 5200.0),
        ("aes-256-cbc", MIB, 1100.0), ("chacha20-poly1305", MIB, 1900.0))


DEMO_PLAN = """\
name = "demo"
repetitions = 5
cache = "warm"
placebo = true
order = "lockstep"

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm", "aes-256-ctr"]

[[engines]]
name = "sqlite"
encryptions = ["none", "aes-128-cbc", "aes-256-cbc", "chacha20-poly1305", "sqlcipher", "ascon-128", "aegis-256", "rc4"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
"""
DEMO_CIPHERS = ("aes-128-gcm", "aes-128-ctr", "aes-128-cbc", "aes-192-gcm", "aes-192-ctr", "aes-192-cbc",
                "aes-256-gcm", "aes-256-ctr", "aes-256-cbc", "chacha20-poly1305", "xchacha20-poly1305",
                "aegis-128l", "aegis-256", "ascon-128", "3des-168-cbc", "rc4")
DEMO_ENVIRONMENT = {  # as environment.json records a machine, with as many settings as a real one
    "cpu_flags": {flag: True for flag in ("aes", "avx2", "avx512f", "pclmulqdq", "sha_ni", "vaes", "vpclmulqdq")},
    "cpu_governor": "performance", "cpu_model": "Fake CPU 9000 @ 3.00GHz", "cpu_turbo": "on",
    "engines": {"duckdb": "1.5.5", "sqlite": "SQLite 3.54.0, SQLite3 Multiple Ciphers 2.6.1"},
    "filesystem": "ext4", "hostname": "fake", "kernel": "6.1.0-fake-amd64", "load_average": [0.5, 0.4, 0.3],
    "logical_cores": 8, "machine": "x86_64", "memory_bytes": 16 * 1024 * MIB, "os": "Debian GNU/Linux 12 (bookworm)",
    "packages": {"apsw-sqlite3mc": "3.54.0.0", "cryptography": "48.0.0", "duckdb": "1.5.5", "numpy": "2.4.6",
                 "psutil": "7.2.2", "scipy": "1.17.1", "sqlglot": "30.30.0", "tdebench": "0.1.0"},
    "physical_cores": 4, "python": "3.11.2", "timestamp_utc": "2026-01-01T00:00:00+00:00", "virtualization": "none",
}
DEMO = Shape(
    settings={"duckdb": {"none": (1.00, 9.26), "aes-256-gcm": (1.02, 9.26), "aes-256-ctr": (1.07, 9.26)},
              "sqlite": {"none": (1.00, 13.19), "aes-128-cbc": (1.21, 13.19), "aes-256-cbc": (1.34, 13.19),
                         "chacha20-poly1305": (1.70, 13.29), "sqlcipher": (2.94, 13.45),
                         "ascon-128": (3.20, 13.29), "aegis-256": (1.11, 13.39), "rc4": (3.38, 13.19)}},
    repetitions=5, streams=(), spread=0.08, placed=False, sample_all=True, loads=True,
    environment=DEMO_ENVIRONMENT,
    ciphers=tuple((cipher, size, 1000.0 + 40.0 * index + size / 1024) for index, cipher in enumerate(DEMO_CIPHERS)
                  for size in (4096, 8192, 16384, 262144, MIB)))
BUSY = 2  # in DEMO, the trials of this repetition ran on a busy machine


def _base_seconds(step: str) -> float:
    """A query's typical time: different per query so the per-query plot has shape."""
    return 0.010 + 0.004 * (int(step[1:]) % 7)


def _noise(*identity: object, spread: float = 0.01) -> float:
    """±1% noise (± `spread`), the same every time for the same record."""
    return 1.0 + random.Random("/".join(map(str, identity))).uniform(-spread, spread)


def _query(trial: TrialKey, factor: float, test: str, stream: int, step: str, shape: Shape) -> Measurement:
    seconds = _base_seconds(step) * factor * _noise(trial.id, test, stream, step, spread=shape.spread)
    placed = trial if shape.placed else None
    if (placed, test, step) == NOISY:
        seconds *= 1.6
    answer = "ok" if test == "power" else "unchecked"
    if placed == FAILED and step == FAILED_AT:
        answer = "failed"
    if placed == TIMED_OUT and step == TIMED_OUT_AT:
        # the time until the query was stopped, as the workload records it; no cpu_s
        return Measurement(trial, test, step, {"elapsed_s": QUERY_TIMEOUT_S * 1.0002},
                           stream=stream, answer="timeout")
    cpu = seconds * 0.9
    if shape.cpu_tick:
        cpu = math.floor(cpu / shape.cpu_tick) * shape.cpu_tick
    return Measurement(trial, test, step, {"elapsed_s": seconds, "cpu_s": cpu}, stream=stream, answer=answer)


def _trial_measurements(trial: TrialKey, factor: float, size_mib: float, shape: Shape) -> list[Measurement]:
    records = [Measurement(trial, "load", "total",
                           {"elapsed_s": 0.5 * factor * _noise(trial.id, "load", spread=shape.spread)}),
               Measurement(trial, "load", "database", {"size_bytes": size_mib * MIB})]
    if trial.encryption == "none" and trial.engine == "duckdb" and trial.repetition == 1:
        records.append(Measurement(trial, "power", "q1", {"elapsed_s": 100 * _base_seconds("q1")},
                                   stream=0, warmup=True, answer="ok"))
    for step in QUERIES:
        records.append(_query(trial, factor, "power", 0, step, shape))
        if shape.placed and trial == FAILED and step == FAILED_AT:
            return records
    power = [r for r in records if r.test == "power" and not r.warmup]
    records.append(Measurement(trial, "power", "total", {  # the sum of its queries', as tpch records it
        "elapsed_s": sum(r.metrics["elapsed_s"] for r in power),
        "cpu_s": sum(r.metrics.get("cpu_s", 0.0) for r in power)}))
    if (shape.placed and trial == TIMED_OUT) or not shape.streams:  # TIMED_OUT: WrongAnswer after its last query
        return records
    for stream in shape.streams:
        records += [_query(trial, factor, "throughput", stream, step, shape) for step in QUERIES]
    records.append(Measurement(trial, "throughput", "total",
                               {"elapsed_s": 0.6 * factor * _noise(trial.id, "tt", spread=shape.spread)}))
    return records


def _verdict(trial: TrialKey, layered: bool = True, kind: str = "") -> Verdict:
    database = f"{trial.engine}.db"
    if trial.encryption in ("none", "placebo"):
        scan = FileScan(database, 4 * MIB, hits=12, first_hit_offset=8192, entropy_mean=3.1,
                        low_entropy_blocks=900, blocks=1024, plaintext_header=True, kind=kind)
        return Verdict(trial, "plaintext", "plaintext", 1, scan.bytes, f"{database}@8192 (utf-8)",
                       detail="canaries found: positive control", files=(scan,))
    scan = FileScan(database, 4 * MIB, hits=0, first_hit_offset=None, entropy_mean=7.99,
                    low_entropy_blocks=0, blocks=1024, plaintext_header=False, kind=kind)
    if layered and trial.engine == "duckdb" and trial.encryption == LAYERED:
        return Verdict(trial, "encrypted", "encrypted", 1, scan.bytes, None,
                       detail=f"no canary and no plaintext header found; the decrypted view showed "
                              f"them {VIEW_HITS} times", files=(scan,),
                       engine_state="2 of 2 tablespaces encrypted, 0 rotating", view_hits=VIEW_HITS)
    return Verdict(trial, "encrypted", "encrypted", 1, scan.bytes, None, files=(scan,))


def _samples(trial: TrialKey, factor: float, shape: Shape) -> list[Sample]:
    """One a second: CPU busy while the queries run, memory growing, the disk busy while loading."""
    if not (shape.sample_all or (trial.repetition <= 2 if trial.engine == "duckdb" else trial.repetition == 1)):
        return []
    others = (40.0 if trial.repetition == BUSY else 2.0) if shape.loads else None
    samples = []
    for second in range(1, SAMPLES + 1):
        loading = second <= 3
        cpu = (35.0 if loading else 80.0 + (second % 3) * 5.0) * factor ** 2
        mem = (200.0 + (second - 1) * 5.0 + trial.repetition * 3.0) * MIB * (1.0 + 2.0 * (factor - 1.0))
        samples.append(Sample(trial, t_s=second * 1.0 + 0.001 * trial.repetition, cpu_pct=min(cpu, 100.0),
                              mem_bytes=mem, mem_pct=100.0 * mem / shape.environment["memory_bytes"],
                              disk_read_bytes=(4.0 if loading else 0.5) * MIB,
                              disk_write_bytes=(8.0 if loading else 0.25) * MIB,
                              disk_busy_pct=60.0 if loading else 3.0, others_cpu_pct=others,
                              load_1m=None if others is None else 0.5 + others / 100.0))
    return samples


def _trials(shape: Shape, placebo: bool = False,
            memories: tuple[int | None, ...] = (None,)) -> list[tuple[TrialKey, float, float]]:
    arms = {engine: {**settings, **({"placebo": settings["none"]} if placebo else {})}
            for engine, settings in shape.settings.items()}
    return [(TrialKey(engine, encryption, WORKLOAD, SCALE, repetition, memory), _squeezed(factor, size, memory), size)
            for repetition in range(1, shape.repetitions + 1)
            for engine, settings in arms.items()
            for memory in memories
            for encryption, (factor, size) in settings.items()]


def _squeezed(factor: float, size_mib: float, memory: int | None) -> float:
    """An encryption costs SQUEEZE times as much when the database does not fit in its memory."""
    return 1.0 + (factor - 1.0) * SQUEEZE if memory is not None and size_mib > memory else factor


SQUEEZE = 3.0
DEFAULT_CACHE_MB = {"duckdb": 19251.2, "sqlite": 1.953125}
"""The cache a fake trial records without memory_mb, as the real engines report theirs on this
project's machine: DuckDB's 80% of 23.5 GiB, SQLite's 2000 KiB page cache."""


def write_fake_run(directory: Path, plan: str = PLAN, placebo: bool = False,
                   memories: tuple[int | None, ...] | None = None, cache: str = "warm",
                   shape: Shape = Shape(), slow: dict[str, float] | None = None,
                   environment: dict | None = None, facts: dict | None = None) -> None:
    """Write plan.toml, environment.json and results.jsonl of a small two-engine run; with
    `placebo`, both engines also ran the A/A arm (none again: same times, same size). With
    `memories` (memory_mb values; None: the engine's default), every configuration ran at each,
    each trial records its cache (the value, or the engine's default: DEFAULT_CACHE_MB) and encryption costs SQUEEZE
    times as much where the database is larger than the memory; `cache` is the trials' cache
    mode ("cold": the database's files were evicted from the OS cache, evict = "files"). `shape`:
    what else the run holds (DEMO: a run the size of the demo plan, to be written with DEMO_PLAN,
    placebo and memories=(None,)). `slow`
    multiplies every time of an engine's trials (every encryption's, `none`'s too; sizes stay),
    e.g. {"duckdb": 1.1}; the noise stays the same, so two fake runs differ by exactly that
    factor. `environment` replaces the shape's environment; beside either, the run records its
    engines' `facts` (environment.json's keys: {} for a run from before they were recorded), by
    default as a run of today's engines does (runsetup.engine_facts)."""
    store = ResultStore(directory)
    if facts is None:
        facts = runsetup.engine_facts({name: get_engine(name) for name in shape.settings})
    store.start(plan, {**facts, **(shape.environment if environment is None else environment)})
    for cipher, chunk, speed in shape.ciphers:
        store.append(CipherSpeed(cipher, chunk, speed, library="OpenSSL 3.0.fake"))
    for trial, factor, size in _trials(shape, placebo, memories or (None,)):
        for record in _trial_measurements(trial, factor * (slow or {}).get(trial.engine, 1.0), size, shape):
            store.append(record)
        samples = _samples(trial, factor, shape)
        for sample in samples:
            store.append(sample)
        failed = shape.placed and trial == FAILED
        if not failed:
            store.append(_verdict(trial, layered=shape.placed, kind="data" if shape.kinds else ""))
        error = ""
        if failed:
            error = "database disk image is malformed"
        elif shape.placed and trial == TIMED_OUT:
            error = (f"WrongAnswer: tpch power: 1 wrong or missing answer(s): {TIMED_OUT_AT} stopped by "
                     f"the {QUERY_TIMEOUT_S:g} s query timeout")
        store.append(TrialOutcome(trial, "failed" if error else "ok", cache=cache, cache_dropped=cache == "cold",
                                  evicted="files" if cache == "cold" else "", elapsed_s=2.0, error=error,
                                  cache_mb=(None if memories is None
                                            else trial.memory_mb or DEFAULT_CACHE_MB[trial.engine]),
                                  load_start=samples[0].load_1m if samples else None,
                                  load_end=samples[-1].load_1m if samples else None))


def as_before_defaults_were_recorded(directory: Path) -> None:
    """Every trial's cache_mb 0, as runs stored it before the engines' defaults were recorded."""
    results = directory / "results.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    for line in lines:
        if line["kind"] == "trial":
            line["cache_mb"] = 0
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
