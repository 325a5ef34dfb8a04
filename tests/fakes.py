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
"""

from __future__ import annotations

import random
from pathlib import Path

from tdebench.store import (CipherSpeed, FileScan, Measurement, ResultStore, Sample, TrialKey, TrialOutcome,
                             Verdict)

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


def _base_seconds(step: str) -> float:
    """A query's typical time: different per query so the per-query plot has shape."""
    return 0.010 + 0.004 * (int(step[1:]) % 7)


def _noise(*identity: object) -> float:
    """±1% noise, the same every time for the same record."""
    return 1.0 + random.Random("/".join(map(str, identity))).uniform(-0.01, 0.01)


def _query(trial: TrialKey, factor: float, test: str, stream: int, step: str) -> Measurement:
    seconds = _base_seconds(step) * factor * _noise(trial.id, test, stream, step)
    if (trial, test, step) == NOISY:
        seconds *= 1.6
    answer = "ok" if test == "power" else "unchecked"
    if trial == FAILED and step == FAILED_AT:
        answer = "failed"
    if trial == TIMED_OUT and step == TIMED_OUT_AT:
        # the time until the query was stopped, as the workload records it; no cpu_s
        return Measurement(trial, test, step, {"elapsed_s": QUERY_TIMEOUT_S * 1.0002},
                           stream=stream, answer="timeout")
    return Measurement(trial, test, step, {"elapsed_s": seconds, "cpu_s": seconds * 0.9},
                       stream=stream, answer=answer)


def _trial_measurements(trial: TrialKey, factor: float, size_mib: float) -> list[Measurement]:
    records = [Measurement(trial, "load", "total", {"elapsed_s": 0.5 * factor * _noise(trial.id, "load")}),
               Measurement(trial, "load", "database", {"size_bytes": size_mib * MIB})]
    if trial.encryption == "none" and trial.engine == "duckdb" and trial.repetition == 1:
        records.append(Measurement(trial, "power", "q1", {"elapsed_s": 100 * _base_seconds("q1")},
                                   stream=0, warmup=True, answer="ok"))
    for step in QUERIES:
        records.append(_query(trial, factor, "power", 0, step))
        if trial == FAILED and step == FAILED_AT:
            return records
    records.append(Measurement(trial, "power", "total", {"elapsed_s": sum(
        r.metrics["elapsed_s"] for r in records if r.test == "power" and not r.warmup)}))
    if trial == TIMED_OUT:  # the power test raised WrongAnswer after its last query
        return records
    for stream in STREAMS:
        records += [_query(trial, factor, "throughput", stream, step) for step in QUERIES]
    records.append(Measurement(trial, "throughput", "total", {"elapsed_s": 0.6 * factor * _noise(trial.id, "tt")}))
    return records


def _verdict(trial: TrialKey) -> Verdict:
    database = f"{trial.engine}.db"
    if trial.encryption == "none":
        scan = FileScan(database, 4 * MIB, hits=12, first_hit_offset=8192, entropy_mean=3.1,
                        low_entropy_blocks=900, blocks=1024, plaintext_header=True)
        return Verdict(trial, "plaintext", "plaintext", 1, scan.bytes, f"{database}@8192 (utf-8)",
                       detail="canaries found: positive control", files=(scan,))
    scan = FileScan(database, 4 * MIB, hits=0, first_hit_offset=None, entropy_mean=7.99,
                    low_entropy_blocks=0, blocks=1024, plaintext_header=False)
    if trial.engine == "duckdb" and trial.encryption == LAYERED:
        return Verdict(trial, "encrypted", "encrypted", 1, scan.bytes, None,
                       detail=f"no canary and no plaintext header found; the decrypted view showed "
                              f"them {VIEW_HITS} times", files=(scan,),
                       engine_state="2 of 2 tablespaces encrypted, 0 rotating", view_hits=VIEW_HITS)
    return Verdict(trial, "encrypted", "encrypted", 1, scan.bytes, None, files=(scan,))


def _samples(trial: TrialKey, factor: float) -> list[Sample]:
    """One a second: CPU busy while the queries run, memory growing, the disk busy while loading."""
    if not (trial.repetition <= 2 if trial.engine == "duckdb" else trial.repetition == 1):
        return []
    samples = []
    for second in range(1, SAMPLES + 1):
        loading = second <= 3
        cpu = (35.0 if loading else 80.0 + (second % 3) * 5.0) * factor ** 2
        mem = (200.0 + (second - 1) * 5.0 + trial.repetition * 3.0) * MIB * (1.0 + 2.0 * (factor - 1.0))
        samples.append(Sample(trial, t_s=second * 1.0 + 0.001 * trial.repetition, cpu_pct=min(cpu, 100.0),
                              mem_bytes=mem, mem_pct=100.0 * mem / ENVIRONMENT["memory_bytes"],
                              disk_read_bytes=(4.0 if loading else 0.5) * MIB,
                              disk_write_bytes=(8.0 if loading else 0.25) * MIB,
                              disk_busy_pct=60.0 if loading else 3.0))
    return samples


def _trials(placebo: bool = False, memories: tuple[int | None, ...] = (None,)) -> list[tuple[TrialKey, float, float]]:
    arms = {engine: {**settings, **({"placebo": settings["none"]} if placebo else {})}
            for engine, settings in SETTINGS.items()}
    return [(TrialKey(engine, encryption, WORKLOAD, SCALE, repetition, memory), _squeezed(factor, size, memory), size)
            for repetition in range(1, REPETITIONS + 1)
            for engine, settings in arms.items()
            for memory in memories
            for encryption, (factor, size) in settings.items()]


def _squeezed(factor: float, size_mib: float, memory: int | None) -> float:
    """An encryption costs SQUEEZE times as much when the database does not fit in its memory."""
    return 1.0 + (factor - 1.0) * SQUEEZE if memory is not None and size_mib > memory else factor


SQUEEZE = 3.0


def write_fake_run(directory: Path, plan: str = PLAN, placebo: bool = False,
                   memories: tuple[int | None, ...] | None = None, cache: str = "warm",
                   slow: dict[str, float] | None = None, environment: dict | None = None) -> None:
    """Write plan.toml, environment.json and results.jsonl of a small two-engine run; with
    `placebo`, both engines also ran the A/A arm (none again: same times, same size). With
    `memories` (memory_mb values; None: the engine's default), every configuration ran at each,
    each trial records its cache (the value, or 0 for no limit) and encryption costs SQUEEZE
    times as much where the database is larger than the memory; `cache` is the trials' cache
    mode ("cold": the OS cache was dropped). `slow` multiplies every time of an engine's trials
    (every encryption's, `none`'s too; sizes stay), e.g. {"duckdb": 1.1}; the noise stays the
    same, so two fake runs differ by exactly that factor. `environment` replaces ENVIRONMENT."""
    store = ResultStore(directory)
    store.start(plan, ENVIRONMENT if environment is None else environment)
    for cipher, chunk, speed in (("aes-256-gcm", 4096, 2900.0), ("aes-256-gcm", MIB, 4100.0),
                                 ("aes-256-ctr", MIB, 5200.0), ("aes-256-cbc", MIB, 1100.0),
                                 ("chacha20-poly1305", MIB, 1900.0)):
        store.append(CipherSpeed(cipher, chunk, speed, library="OpenSSL 3.0.fake"))
    for trial, factor, size in _trials(placebo, memories or (None,)):
        for record in _trial_measurements(trial, factor * (slow or {}).get(trial.engine, 1.0), size):
            store.append(record)
        for sample in _samples(trial, factor):
            store.append(sample)
        failed = trial == FAILED
        if not failed:
            store.append(_verdict(trial))
        error = ""
        if failed:
            error = "database disk image is malformed"
        elif trial == TIMED_OUT:
            error = (f"WrongAnswer: tpch power: 1 wrong or missing answer(s): {TIMED_OUT_AT} stopped by "
                     f"the {QUERY_TIMEOUT_S:g} s query timeout")
        store.append(TrialOutcome(trial, "failed" if error else "ok", cache=cache, cache_dropped=cache == "cold",
                                  elapsed_s=2.0, error=error,
                                  cache_mb=None if memories is None else trial.memory_mb or 0))
