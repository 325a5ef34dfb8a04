"""Encrypting an existing database: the time from a loaded, unencrypted database to the same
data encrypted with the trial's encryption and key — the first question a team with a 500 GB
database asks — and its throughput (database bytes / elapsed / 1024², the MB/s of
Moulianitakis & Asimakopoulos (2019), docs/references.md).

Each run starts from nothing, beside the trial's own database, in `<workspace>/maintenance-encrypt`:

1. an unencrypted database of the same engine is provisioned, loaded with the same TPC-H data,
   given the trial's canaries and closed (PostgreSQL: analyzed first, so the canaries are in
   its statistics too, as a real database's values would be);
2. measured: the engine's `encrypt_existing` turns it into the trial's encryption with the
   trial's key (the step is named after the method, e.g. `pragma-rekey`); `size_bytes` is the
   unencrypted database's, every file it wrote, as in the report's database size;
3. checked: what the engine says about its encryption (`encryption_state`), the data (row
   counts, canaries, TPC-H Q1), an fs layer's decrypted view, and then — closed — the at-rest
   scan of everything left in the directory, which must say `encrypted` by the runner's rules;
4. the directory is removed.

The scan's positive control is the run's `none` trials, as for every verdict: the same engine
unencrypted, where the same scan must find the canaries. (Scanning the unencrypted copy too
would double the scan time, which dominates a server trial at small scales.)
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import psutil

from tdebench.engines import dialects
from tdebench.engines.base import NONE, Database, NotSupported, SensitiveColumns, reencrypts
from tdebench.measure.recorder import Recorder
from tdebench.results import Verdict
from tdebench.workloads.base import CANARY_TABLE, RunContext, WrongAnswer, write_canaries
from tdebench.workloads.maintenance import checks
from tdebench.workloads.maintenance.outcomes import FAILED, NOT_APPLICABLE, NOT_APPLICABLE_STEP, OK, UNSUPPORTED
from tdebench.workloads.tpch import PRIMARY_KEYS, SENSITIVE, TABLES, TpchWorkload

TEST = "encrypt"
DIRECTORY = "maintenance-encrypt"


def sensitive_columns() -> tuple[SensitiveColumns, ...]:
    """What a column-level encryption seals: TPC-H's personal columns and the canary column,
    as the runner's normal load seals them."""
    return (*(SensitiveColumns(table, tuple(columns), PRIMARY_KEYS[table]) for table, columns in SENSITIVE.items()),
            SensitiveColumns(CANARY_TABLE, ("canary",), ("id",)))


def run(ctx: RunContext, *, warmup: bool) -> None:
    target = ctx.database.encryption
    if not target.encrypts:
        ctx.recorder.record(TEST, NOT_APPLICABLE_STEP, {}, warmup=warmup, answer=NOT_APPLICABLE)
        return
    if ctx.scratch_database is None or not ctx.canaries:
        raise RuntimeError("the encrypt test needs the runner's scratch_database and canaries")
    workspace = ctx.database.workspace / DIRECTORY
    workspace.mkdir()
    source = ctx.scratch_database(workspace, NONE, None)
    database = ctx.scratch_database(workspace, target, ctx.database.key)
    try:
        problems = _convert(ctx, source, database, workspace, warmup)
    finally:
        try:
            database.close()
        finally:
            source.close()
            shutil.rmtree(workspace, ignore_errors=True)
    if problems:
        raise WrongAnswer(f"encrypt ({target.name}): " + "; ".join(problems))


def _convert(ctx: RunContext, source: Database, database: Database, workspace: Path, warmup: bool) -> list[str]:
    before = _load(ctx, source)
    size = source.size_bytes()
    recorder = Recorder(ctx.recorder.store, ctx.recorder.trial, ctx.recorder.clock,
                        processes=lambda: _processes(database))
    try:
        converting = reencrypts(database, "encrypt-existing")
        method, metrics = recorder.timed(lambda: converting.encrypt_existing(source, sensitive_columns()))
    except NotSupported as exc:
        ctx.recorder.record(TEST, exc.method, {}, warmup=warmup, answer=UNSUPPORTED)
        return []
    metrics["size_bytes"] = float(size)
    problems = _check(ctx, database, workspace, before)
    ctx.recorder.record(TEST, method, metrics, warmup=warmup, answer=FAILED if problems else OK)
    return problems


def _load(ctx: RunContext, source: Database) -> checks.Contents:
    """The unencrypted copy, loaded by the TPC-H workload (its load steps are not recorded:
    they are not this trial's load), with the trial's canaries."""
    quiet = dataclasses.replace(ctx, database=source,
                                recorder=Recorder(_Discard(), ctx.recorder.trial, ctx.recorder.clock))
    source.create()
    conn = source.connect()
    try:
        TpchWorkload().load(quiet, conn)
        write_canaries(source, conn, ctx.canaries, ctx.markers)
        spec = dialects.dialect(ctx.dialect)
        if spec.statistics_hold_values:  # gathered before the conversion, so it must cover them
            conn.execute(spec.analyze([*TABLES, CANARY_TABLE]))
        return checks.contents(conn)
    finally:
        conn.close()
        source.close()


def _check(ctx: RunContext, database: Database, workspace: Path, before: checks.Contents) -> list[str]:
    """Engine state, data and decrypted view while open; then the at-rest scan, closed."""
    problems = []
    try:
        engine_state = database.encryption_state()
    except Exception as exc:  # EncryptionNotActive, or the engine could not tell
        engine_state, problems = "", [f"engine state: {exc}"]
    conn = database.connect()
    try:
        after = checks.contents(conn)
        problems += checks.differences(before, after)
        wrong = checks.q1_problem(conn, ctx.dialect, ctx.scale)
        problems += [wrong] if wrong else []
    finally:
        conn.close()
    view_hits = ctx.view_hits(database)  # raises if a mount vanished
    verdict = _at_rest(ctx, database, workspace, readable=after.canaries == set(ctx.canaries),
                       view_hits=view_hits, engine_state=engine_state)
    if verdict.verdict != "encrypted":
        problems.append(f"at rest: {verdict.verdict}: {verdict.first_hit or ''} {verdict.detail}".replace("  ", " "))
    return problems


def _at_rest(ctx: RunContext, database: Database, workspace: Path, *, readable: bool, view_hits: int | None,
             engine_state: str) -> Verdict:
    """The runner's at-rest scan and verdict rules, on this directory with the database closed."""
    database.close()
    return ctx.judge_at_rest(workspace, "encrypted", readable=readable, like=database, view_hits=view_hits,
                             engine_state=engine_state)


def _processes(database: Database) -> list[psutil.Process]:
    """Whose CPU and I/O the conversion costs: this process (which drives it, and copies files
    for the fs layer) and the engine's processes as they are at the moment."""
    found = {process.pid: process for process in [psutil.Process(), *(database.engine_processes() or [])]}
    return list(found.values())


class _Discard:
    """A result store that keeps nothing (for the unencrypted copy's load)."""

    def append(self, record: object) -> None:
        pass
