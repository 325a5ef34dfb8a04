"""The runner: executes a plan's trials, one at a time, storing every number as it is taken.

A trial goes through fixed phases:
  provision → load (+ canaries) → [cold: stop the engine, sync, drop OS cache] → open → warm-ups
  → [cold: stop, drop caches, start again] → measured tests → close → at-rest scan (verdict)
  → remove the workspace.
A failing trial is recorded with its error and the run goes on; the workspace is removed on
success, failure and Ctrl-C alike.
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tdebench import verify
from tdebench.engines import Engine, get_engine
from tdebench.keys import KeySource
from tdebench.measure import affinity
from tdebench.measure.clock import Clock, MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.measure.sampler import Sampler, load_1m
from tdebench.plan import Plan, TrialSpec, round_trials, schedule
from tdebench.report.noise import widest_headline
from tdebench.report.records import summary_records
from tdebench.store import BUDGET, MOST_ROUNDS, REACHED, ResultStore, Stopping, TrialOutcome, Verdict, read_run
from tdebench.workloads import WORKLOADS, RunContext, Workload
from tdebench.workloads.base import read_canaries, write_canaries

CANARY_COUNT = 4


class Progress(Protocol):
    """What the runner tells whoever watches it (a progress bar, or nothing)."""

    def phase(self, text: str) -> None: ...

    def trial_started(self, index: int, total: int, spec: TrialSpec) -> None: ...

    def trial_finished(self, outcome: TrialOutcome, verdict: Verdict | None) -> None: ...


class SilentProgress:
    def phase(self, text: str) -> None:
        pass

    def trial_started(self, index: int, total: int, spec: TrialSpec) -> None:
        pass

    def trial_finished(self, outcome: TrialOutcome, verdict: Verdict | None) -> None:
        pass


@dataclass
class RunSummary:
    trials: int = 0
    failed: list[TrialOutcome] = field(default_factory=list)
    unexpected_verdicts: list[Verdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unexpected_verdicts


def drop_os_cache() -> bool:
    """Write dirty pages and drop the OS page cache; True only if the kernel accepted it."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
    except OSError:
        return False
    return True


def remove_tree(path: Path, tries: int = 5) -> None:
    """Remove a workspace; a process that is still exiting may add a file while it goes, so
    try again briefly rather than leave a directory (with a key file, perhaps) behind."""
    for _ in range(tries):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.2)


def new_canaries(count: int = CANARY_COUNT, kind: str = "CANARY") -> list[str]:
    """Random strings that cannot appear on disk by chance, fresh for each trial (`kind`
    "MARKER" for the markers beside them, see workloads.base.write_canaries)."""
    return [f"TDEBENCH-{kind}-{secrets.token_hex(12)}" for _ in range(count)]


@dataclass
class _TrialFacts:
    """What a trial's phases learn that its verdict and outcome record."""

    canaries: list[str] = field(default_factory=new_canaries)
    markers: list[str] = field(default_factory=lambda: new_canaries(kind="MARKER"))
    canaries_readable: bool = False
    cache_dropped: bool = False
    engine_state: str = ""
    view_hits: int | None = None
    connection_closed: bool = False  # a workload went cold (go_cold) and closed the connection it was given


@dataclass
class Runner:
    plan: Plan
    store: ResultStore
    data_dir: Path
    keys: KeySource = field(default_factory=KeySource)
    clock: Clock = field(default_factory=MonotonicClock)
    progress: Progress = field(default_factory=SilentProgress)
    engine_factory: Callable[..., Engine] = get_engine
    workload_factory: Callable[[str], Workload] = lambda name: WORKLOADS[name]()
    drop_cache: Callable[[], bool] = drop_os_cache
    workspace_parent: Path | None = None
    # set by the CLI's SIGINT/SIGTERM handler: a driver that turns the KeyboardInterrupt into
    # its own error (PyMySQL's "lost connection") must not make an interrupted trial look failed
    interrupted: threading.Event = field(default_factory=threading.Event)

    def run(self) -> RunSummary:
        summary = RunSummary()
        self._prepare()
        start = self.clock.now_ns()
        root = Path(tempfile.mkdtemp(prefix="tdebench-", dir=self.workspace_parent))
        root.chmod(0o711)  # servers running as their own user (postgres) must reach their workspace
        try:
            self._trials(schedule(self.plan), root, summary)
            if self.plan.adaptive:
                self._add_rounds(root, summary, start)
        finally:
            remove_tree(root)
        return summary

    def _trials(self, trials: list[TrialSpec], root: Path, summary: RunSummary) -> None:
        total = summary.trials + len(trials)
        for spec in trials:
            if self.interrupted.is_set():
                raise KeyboardInterrupt
            summary.trials += 1
            self.progress.trial_started(summary.trials, total, spec)
            outcome, verdict = self._trial(spec, root)
            if outcome.status != "ok":
                summary.failed.append(outcome)
            if verdict is not None and not verdict.as_expected:
                summary.unexpected_verdicts.append(verdict)
            self.progress.trial_finished(outcome, verdict)

    def _add_rounds(self, root: Path, summary: RunSummary, start_ns: int) -> None:
        """Adaptive repetitions: after the plan's rounds, add interleaved rounds one at a time
        until every headline overhead's CI half-width is within `target_ci_pct`, the time
        budget cannot fit another round, or `max_repetitions` is reached; store why it stopped."""
        plan = self.plan
        assert plan.target_ci_pct is not None
        rounds = plan.repetitions
        while True:
            run = read_run(self.store.directory)
            widest = widest_headline(run, summary_records(run))
            elapsed_min = (self.clock.now_ns() - start_ns) / 60e9
            per_round_min = elapsed_min / rounds
            if widest is None or widest[1] <= plan.target_ci_pct:
                reason = REACHED
            elif rounds >= plan.max_repetitions:
                reason = MOST_ROUNDS
            elif plan.max_minutes is not None and elapsed_min + per_round_min > plan.max_minutes:
                reason = BUDGET
            else:
                rounds += 1
                self.progress.phase(f"round {rounds}: {widest[0]} ±{widest[1]:.1f}% > target ±{plan.target_ci_pct:g}%")
                self._trials(round_trials(plan, rounds), root, summary)
                continue
            self.store.append(Stopping(rounds=rounds, reason=reason, target_ci_pct=plan.target_ci_pct,
                                       widest=widest[0] if widest else "",
                                       widest_ci_pct=widest[1] if widest else math.nan,
                                       elapsed_s=elapsed_min * 60.0))
            self.store.sync()
            return

    def _prepare(self) -> None:
        for workload_spec in self.plan.workloads:
            workload = self.workload_factory(workload_spec.name)
            for scale in workload_spec.scales:
                self.progress.phase(f"preparing {workload_spec.name} data at scale {scale:g}")
                workload.prepare(scale, self.data_dir, self.plan.seed)

    def _trial(self, spec: TrialSpec, root: Path) -> tuple[TrialOutcome, Verdict | None]:
        key = spec.key
        engine = self.engine_factory(key.engine, memory_mb=key.memory_mb)
        encryption = engine.encryption(key.encryption)
        workload = self.workload_factory(key.workload)
        workspace = root / key.id.replace("/", "_")
        workspace.mkdir(parents=True)
        secret = None if encryption.is_baseline else self.keys.key_for(key.id)
        database = engine.provision(workspace, encryption, secret)
        # with pin_cpus, every look at the engine's processes pins them (and tdebench) first
        engine_processes = affinity.pinned(self.plan.pin_cpus, database.engine_processes)
        own_cpus, pinned_to = affinity.available_cpus(), None
        recorder = Recorder(self.store, key, self.clock, processes=engine_processes)
        facts = _TrialFacts()

        def go_cold() -> bool:
            facts.connection_closed = True
            dropped = self._go_cold(database)
            facts.cache_dropped = facts.cache_dropped and dropped
            return dropped

        ctx = RunContext(database=database, dialect=engine.dialect, recorder=recorder, scale=key.scale,
                         streams=spec.workload.streams, data_dir=self.data_dir, seed=self.plan.seed,
                         query_timeout_s=spec.workload.query_timeout_s, options=spec.workload.option_values(),
                         go_cold=go_cold if self.plan.cache == "cold" else None,
                         provision=engine.provision, canaries=tuple(facts.canaries), markers=tuple(facts.markers),
                         new_key=lambda purpose: self.keys.key_for(f"{key.id}/{purpose}"),
                         connection_closed=lambda: setattr(facts, "connection_closed", True))
        expected = "plaintext" if encryption.is_baseline else "encrypted"
        start, load_start = self.clock.now_ns(), load_1m()
        error, verdict = "", None
        try:
            with Sampler(self.store, key, self.plan.sample_interval_s, engine_processes):
                self._phases(spec, workload, ctx, facts)
                if self.plan.pin_cpus is not None:  # read back while the engine still runs
                    pinned_to = affinity.applied(engine_processes())
        except Exception as exc:  # the trial fails, the run goes on
            if self.interrupted.is_set():
                raise KeyboardInterrupt from exc
            error = f"{type(exc).__name__}: {exc}"
            if secret is not None:
                error = secret.scrub(error)
            if database.key is not None:  # a workload may have changed the key (maintenance: rekey)
                error = database.key.scrub(error)
        finally:
            database.close()  # also on Ctrl-C; run() then removes every workspace
            if self.plan.pin_cpus is not None:
                affinity.release(own_cpus)
        try:
            verdict = self._verdict(key, expected, database, workspace, facts)
        finally:
            remove_tree(workspace)
        outcome = TrialOutcome(trial=key, status="failed" if error else "ok", cache=self.plan.cache,
                               cache_dropped=facts.cache_dropped, elapsed_s=(self.clock.now_ns() - start) / 1e9,
                               error=error, key_derived=secret is not None and self.keys.derived,
                               load_start=load_start, load_end=load_1m(),
                               engine_cpus=pinned_to[0] if pinned_to else None,
                               driver_cpus=pinned_to[1] if pinned_to else None,
                               cache_mb=engine.cache_mb())
        self.store.append(outcome)
        self.store.sync()
        return outcome, verdict

    def _phases(self, spec: TrialSpec, workload: Workload, ctx: RunContext, facts: "_TrialFacts") -> None:
        """Load, then run every test, noting in `facts` what the verdict needs to know."""
        database, recorder = ctx.database, ctx.recorder
        with recorder.measure("open", "create"):
            database.create()
        conn = database.connect()
        try:
            workload.load(ctx, conn)
            write_canaries(database, conn, facts.canaries, facts.markers)
            facts.canaries_readable = read_canaries(conn) == set(facts.canaries)
        finally:
            conn.close()
        facts.engine_state = database.encryption_state()  # raises if the engine is not encrypted yet
        recorder.record("load", "database", {"size_bytes": float(database.size_bytes())})
        facts.cache_dropped = self.plan.cache == "cold" and self._go_cold(database)
        with recorder.measure("open", "connect"):
            conn = database.connect()
        try:
            for test in spec.workload.tests:
                for _ in range(self.plan.warmups):
                    conn = self._reopened(conn, database, facts)
                    workload.run(test, ctx, conn, warmup=True)
                if self.plan.cache == "cold":
                    self._close(conn, facts)
                    facts.cache_dropped = self._go_cold(database) and facts.cache_dropped
                    conn = database.connect()
                else:
                    conn = self._reopened(conn, database, facts)
                workload.run(test, ctx, conn, warmup=False)
        finally:
            self._close(conn, facts)
        view = database.plaintext_view()
        if view is not None:  # the positive control of a layer below the engine, while mounted
            facts.view_hits = sum(s.hits for s in verify.scan([view], facts.canaries, view, live=True))

    @staticmethod
    def _reopened(conn, database, facts: "_TrialFacts"):
        """The connection for the next run: a workload that went cold per statement closed the
        one it was given, so the next run gets a new one (untimed)."""
        if not facts.connection_closed:
            return conn
        facts.connection_closed = False
        return database.connect()

    @staticmethod
    def _close(conn, facts: "_TrialFacts") -> None:
        """Close the connection the last run was given, unless a workload going cold already did."""
        if not facts.connection_closed:
            conn.close()
        facts.connection_closed = False

    def _go_cold(self, database) -> bool:
        """Stop the engine (servers shut down, mounts unmount, embedded files close), then drop
        the OS page cache; the next connect starts it again with nothing cached anywhere.
        True only if the kernel really dropped its cache."""
        database.close()
        return self.drop_cache()

    def _verdict(self, key, expected: str, database, workspace: Path, facts: "_TrialFacts") -> Verdict:
        try:
            scans = verify.scan([workspace], facts.canaries, workspace, database.plaintext_signature(),
                                markers=facts.markers)
            label = verify.label_first_hit(scans, workspace, facts.canaries)
            verdict = verify.judge(key, expected, scans, facts.canaries_readable, first_hit_label=label,
                                   view_hits=facts.view_hits, engine_state=facts.engine_state,
                                   column_layer=database.encryption.layer == "column")
        except Exception as exc:
            verdict = verify.error_verdict(key, expected, f"{type(exc).__name__}: {exc}")
        self.store.append(verdict)
        return verdict
