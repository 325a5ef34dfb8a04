"""The runner: executes a plan's trials, storing every number as it is taken.

Trials run one at a time, or (order = "lockstep") a round's group of comparable trials side by
side: through the same phases together, their load and measured tests step by step in turn.
A trial goes through fixed phases:
  provision → load (+ canaries) → [cold: stop the engine, sync, drop OS cache] → open → warm-ups
  → [cold: stop, drop caches, start again] → measured tests → close → at-rest scan (verdict)
  → remove the workspace.
A failing trial is recorded with its error and the run goes on; the workspace is removed on
success, failure and Ctrl-C alike; a trial that fills its work directory's file system fails with
one line, "no space left on <mount> (<n> MiB free)", whichever engine said so in whichever words.
The runner runs the trials its store does not have yet: all of them in a new run; in a resumed
one (`tdebench run --resume`, its store cut down to the complete trials by
`store.keep_complete`) the rest, in the same order.
"""

from __future__ import annotations

import errno
import fcntl
import math
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import psutil

from tdebench import runstate, verify
from tdebench.capture import Capture
from tdebench.engines import Engine, get_engine
from tdebench.engines.base import NONE, Database, PlaintextViewGone
from tdebench.engines.dialects import DIALECTS
from tdebench.keys import KeySource, Secret
from tdebench.measure import affinity, oscache
from tdebench.measure.clock import Clock, MonotonicClock
from tdebench.measure.load import OthersCpu, QuietWait, wait_for_quiet
from tdebench.measure.recorder import Recorder
from tdebench.measure.sampler import Sampler, load_1m
from tdebench.plan import (Group, Plan, TrialSpec, comparison_group, finished_rounds, group_of, lockstep_groups,
                           round_trials, schedule, to_run)
from tdebench.results import (BUDGET, MOST_ROUNDS, PASSPHRASE, REACHED, Record, RunData, Stopping, TrialKey,
                              TrialOutcome, Verdict)
from tdebench.store import OutputError, ResultStore, read_run
from tdebench.workloads import WORKLOADS, RunContext, Workload
from tdebench.workloads.base import OtherDrivers, Session, read_canaries, write_canaries

OPENS = 5
"""Connections opened and timed per trial after its load (test "open", step "connect"), the last
one kept for the tests: a key derivation is paid per connection, not per query, so the report
gives it as a figure of its own (report/summaries/connection.py); the median of five opens per trial
keeps one slow open (a page not yet in the OS cache, a scheduler hiccup) from being the figure."""
CANARY_COUNT = 4
DIED_WAIT_S = 0.5
"""How long a failed trial's processes are given to be seen ended (`Database.died`): a killed
server's client sees its socket closed a moment before the server's exit status can be read."""


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
    """The whole run's trials: those kept from before an interruption (`kept`) and those run now."""

    trials: int = 0
    kept: int = 0
    failed: list[TrialOutcome] = field(default_factory=list)
    unexpected_verdicts: list[Verdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unexpected_verdicts


def kept_summary(stored: RunData) -> RunSummary:
    """The summary of a run's complete trials before any more run (none in a new run)."""
    done = stored.complete_trials()
    return RunSummary(trials=len(done), kept=len(done),
                      failed=[o for o in stored.trials if o.trial in done and o.status != "ok"],
                      unexpected_verdicts=[v for v in stored.verdicts if v.trial in done and v.unexpected])


def remove_tree(path: Path, tries: int = 5) -> None:
    """Remove a workspace; a process that is still exiting may add a file while it goes, so
    try again briefly rather than leave a directory (with a key file, perhaps) behind."""
    for _ in range(tries):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.2)


_NO_SPACE_WORDS = (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))  # "No space left on device", …


def _out_of_space(exc: BaseException, disk_full: Callable[[BaseException], bool] | None) -> bool:
    """Whether `exc`, or an error it arose from (its cause or context: SQLite's failed rollback
    after the full disk had rolled the transaction back, a driver's error inside a Conflict), says
    the disk is full: an OSError ENOSPC or EDQUOT, the C library's words for them in its message
    (DuckDB and PostgreSQL quote them), or the driver's own error for it (`Dialect.disk_full`)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if any(words in str(cause) for words in _NO_SPACE_WORDS) or (disk_full is not None and disk_full(cause)):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


@contextmanager
def data_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's lock (an flock on `.prepare.lock`, released if the process dies)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / ".prepare.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    view_gone: str = ""  # why a layer's decrypted view could not be scanned (its mount vanished)
    capture_failed: str = ""  # why the transient capture could not start (e.g. no inotify instance left)

    def at_rest(self, key: TrialKey) -> verify.TrialScan:
        """The at-rest rules for this trial's canaries and markers: its verdict's, and its workload's
        for what it writes beside the database (`RunContext.judge_at_rest`)."""
        return verify.TrialScan(key, tuple(self.canaries), tuple(self.markers))


@dataclass
class _Trial:
    """One trial's parts while it runs, alone or side by side with its lockstep group."""

    spec: TrialSpec
    engine: Engine
    workload: Workload
    workspace: Path
    secret: Secret | None
    database: Database
    processes: Callable[[], Sequence[psutil.Process] | None]  # the engine's (pinned with pin_cpus)
    ctx: RunContext
    facts: _TrialFacts
    start_ns: int
    load_start: float | None
    error: str = ""  # set by the first phase that failed; later phases are skipped
    pinned_to: tuple[tuple[int, ...] | None, tuple[int, ...]] | None = None  # affinity.applied
    capture: Capture | None = None  # the transient capture, from provisioning to close (None: off)
    quiet: QuietWait | None = None  # the wait for a quiet machine before the trial (None: quiet_wait_s = 0)

    @property
    def key(self) -> TrialKey:
        return self.spec.key


class _Unrecorded(ResultStore):
    """A store that keeps nothing: the priming loads' measurements are not results."""

    def append(self, record: Record) -> None:
        pass

    def sync(self) -> None:
        pass


def _group_text(key: TrialKey) -> str:
    """A lockstep group as progress names it: "duckdb/tpch/sf0.01" (the round is added by callers)."""
    memory = f" {key.memory_mb} MB" if key.memory_mb is not None else ""
    return f"{key.engine}{memory}/{key.workload}/sf{key.scale:g}"


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
    # empties the OS page cache before a cold measured test: (the plan's evict, the workspace) -> done
    empty_cache: Callable[[str, Path], bool] = oscache.empty
    workspace_parent: Path | None = None
    # set by the CLI's SIGINT/SIGTERM handler: a driver that turns the KeyboardInterrupt into
    # its own error (PyMySQL's "lost connection") must not make an interrupted trial look failed
    interrupted: threading.Event = field(default_factory=threading.Event)
    host: str | None = None  # a cluster worker's host identity, stored with every trial it runs
    drivers: OtherDrivers | None = None  # a cluster unit's other drivers of one server (oltp's driver_hosts)
    # the plan's quiet_wait_s: the others' CPU since the previous call (measure/load.OthersCpu, made
    # when first needed), and the pause between looks (None: on `interrupted`, so Ctrl-C ends it)
    others_cpu: Callable[[], float] | None = None
    pause: Callable[[float], None] | None = None

    def run(self) -> RunSummary:
        """Run the plan's trials that the store does not have complete yet, in the schedule's
        order (a lockstep group of which some are complete runs the others side by side), then,
        for an adaptive plan that has not stopped yet, add rounds after the highest one stored.
        The summary covers the kept trials too."""
        stored = read_run(self.store.directory)
        done = stored.complete_trials()
        summary = kept_summary(stored)
        trials = to_run(self.plan, done)
        adding = self.plan.adaptive and stored.stopping is None
        if not trials and not adding:
            return summary
        self._prepare([(w.name, scale) for w in self.plan.workloads for scale in w.scales])
        root = self._root()
        try:
            with runstate.recording(root):  # a killed run's servers and mounts can be found again
                self._prime(root, schedule(self.plan))
                start = self.clock.now_ns()  # max_minutes budgets the rounds
                self._trials(trials, root, summary)
                if adding:
                    self._add_rounds(root, summary, start - int(elapsed_before(stored) * 1e9))
        finally:
            runstate.remove_root(root)
        return summary

    def run_trials(self, trials: list[TrialSpec]) -> RunSummary:
        """Run just `trials`, in the order given, whatever the store holds: a cluster worker's
        unit of work (a round of one comparison group, cluster.py). Their data is prepared and
        their groups primed first, as `run` does for the whole plan."""
        summary = RunSummary()
        self._prepare(list(dict.fromkeys((spec.key.workload, spec.key.scale) for spec in trials)))
        root = self._root()
        try:
            with runstate.recording(root):
                self._prime(root, trials)
                self._trials(trials, root, summary)
        finally:
            runstate.remove_root(root)
        return summary

    def _root(self) -> Path:
        """A new directory for this run's trial workspaces, registered and marked (runstate.py)."""
        return runstate.new_root(self.workspace_parent or Path(tempfile.gettempdir()))

    def _trials(self, trials: list[TrialSpec], root: Path, summary: RunSummary) -> None:
        total = summary.trials + len(trials)
        groups = lockstep_groups(trials) if self.plan.order == "lockstep" else [[trial] for trial in trials]
        for group in groups:
            if self.interrupted.is_set():
                raise KeyboardInterrupt
            quiet = self._wait_for_quiet()
            if len(group) == 1:
                self.progress.trial_started(summary.trials + 1, total, group[0])
            else:
                self.progress.phase(f"{_group_text(group[0].key)}/r{group[0].key.repetition}: "
                                    f"{len(group)} configurations side by side")
            for spec, (outcome, verdict) in zip(group, self._group(group, root, quiet)):
                summary.trials += 1
                if len(group) > 1:
                    self.progress.trial_started(summary.trials, total, spec)
                if outcome.status != "ok":
                    summary.failed.append(outcome)
                if verdict is not None and verdict.unexpected:
                    summary.unexpected_verdicts.append(verdict)
                self.progress.trial_finished(outcome, verdict)

    def _wait_for_quiet(self) -> QuietWait | None:
        """Before a trial, or a lockstep group's round (no trial is open: nothing timed waits),
        wait while other processes keep the machine busy, the plan's quiet_wait_s at most; None
        when the plan asks for no wait."""
        if not self.plan.quiet_wait_s:
            return None
        if self.others_cpu is None:
            self.others_cpu = OthersCpu().reading

        def busy(pct: float, waited_s: float) -> None:
            self.progress.phase(f"waiting for the machine to quiet down: others use {pct:.0f}% of a core "
                                f"({waited_s:.0f} s of at most {self.plan.quiet_wait_s:g} s)")

        wait = wait_for_quiet(self.plan.quiet_wait_s, self.others_cpu, self.pause or self._pause, busy)
        if wait.gave_up:
            self.progress.phase(f"the machine is still busy after {wait.waited_s:.0f} s (others use "
                                f"{wait.others_pct:.0f}% of a core): the trial starts anyway, and the report "
                                f"marks it busy")
        return wait

    def _pause(self, seconds: float) -> None:
        """Sleep, ending at once on Ctrl-C (the signal handler sets `interrupted` and raises)."""
        if self.interrupted.wait(seconds):
            raise KeyboardInterrupt

    def _prime(self, root: Path, trials: list[TrialSpec]) -> None:
        """Before anything is measured, one unrecorded load of each engine's baseline per
        workload, scale and memory of `trials` (unless the plan asks for no warm-ups): a
        process's first large load pays for growing its heap (DuckDB's first lineitem load took
        0.7 s instead of 0.1 s), which would otherwise land on whichever configuration happens
        to load first."""
        if self.plan.warmups == 0:
            return
        primer = replace(self, store=_Unrecorded(self.store.directory))
        seen = set()
        for spec in trials:
            key = replace(spec.key, encryption=NONE.name, repetition=0)
            if group_of(key) in seen:
                continue
            seen.add(group_of(key))
            if self.interrupted.is_set():
                raise KeyboardInterrupt
            self.progress.phase(f"priming {_group_text(key)}: one unrecorded load of none")
            trial = primer._start(TrialSpec(key, spec.workload), root)
            try:
                trial.database.create()
                conn = trial.database.connect()
                try:
                    trial.workload.load(trial.ctx, conn)
                finally:
                    conn.close()
            except Exception as exc:  # the trials will fail the same way, and say so
                if self.interrupted.is_set():
                    raise KeyboardInterrupt from exc
            finally:
                trial.database.close()
                trial.database.drop()
                remove_tree(trial.workspace)

    def _add_rounds(self, root: Path, summary: RunSummary, start_ns: int) -> None:
        """Adaptive repetitions (`next_rounds`), one round at a time, until they stop; store why.
        The time budget is counted from `start_ns`."""
        while trials := more_rounds(self.plan, self.store, (self.clock.now_ns() - start_ns) / 1e9, self.progress):
            self._trials(trials, root, summary)

    def _prepare(self, needed: list[tuple[str, float]]) -> None:
        """Make each (workload, scale)'s data in the data directory, one process at a time: the
        workers of a cluster on one machine share it, and two writing one Parquet file at once
        would spoil it."""
        for name, scale in needed:
            self.progress.phase(f"preparing {name} data at scale {scale:g}")
            with data_lock(self.data_dir):
                self.workload_factory(name).prepare(scale, self.data_dir, self.plan.seed)

    def _group(self, group: list[TrialSpec], root: Path,
               quiet: QuietWait | None = None) -> list[tuple[TrialOutcome, Verdict | None]]:
        """Run trials side by side (one alone unless the order is lockstep): provision and load
        each, warm each up, then run each measured test on all of them in turn, step by step;
        close them, then judge each at rest and remove its workspace. `quiet`: the wait for a
        quiet machine before them, recorded with each."""
        own_cpus = affinity.available_cpus()
        trials: list[_Trial] = []
        ended = False
        try:
            for spec in group:
                trials.append(self._start(spec, root))
                trials[-1].capture, trials[-1].quiet = self._capture(trials[-1]), quiet
            first, rest = trials[0], trials[1:]
            with Sampler(self.store, first.key, self.plan.sample_interval_s, first.processes,
                         beside=[(trial.key, trial.processes) for trial in rest]):
                self._in_turn(trials, self._load_steps)
                for test in group[0].workload.tests:
                    for trial in trials:
                        self._guard(trial, lambda: self._warm_up(trial, test))
                    self._in_turn(trials, lambda trial: self._measured_steps(trial, test))
                for trial in trials:
                    self._finish(trial)
            ended = True
        finally:
            runstate.fault_point("trial-closing")  # the tests' fault injection (runstate.FAULT)
            for trial in trials:  # also on Ctrl-C; run() then removes every workspace
                self._release(trial, quietly=True)
                trial.database.close()
                if not ended:  # what lives outside the workspace (a remote server's database) goes too
                    trial.database.drop()
                    if trial.capture is not None:
                        trial.capture.close()
            if self.plan.pin_cpus is not None:
                affinity.release(own_cpus)
        return [self._end(trial) for trial in trials]

    def _start(self, spec: TrialSpec, root: Path) -> "_Trial":
        """Provision a trial's database in a workspace of its own, with what its phases need."""
        key = spec.key
        remote = self.plan.engine(key.engine).remote
        # a server tdebench did not start (engines/remote.py) is named by the plan's url
        key_form, settings = self.plan.engine(key.engine).key_form, self.plan.engine(key.engine).settings
        engine = self.engine_factory(key.engine, memory_mb=key.memory_mb, **({"remote": remote} if remote else {}),
                                     **({"key_form": key_form} if key_form != PASSPHRASE else {}),
                                     **({"settings": dict(settings)} if settings else {}))
        encryption = engine.encryption(key.encryption)
        workspace = root / key.id.replace("/", "_")
        runstate.make_dir(workspace, 0o711)  # a server's user passes through; its engine narrows it
        secret = self.keys.key_for(key.id) if encryption.encrypts else None
        start, load_start = self.clock.now_ns(), load_1m()
        database = engine.provision(workspace, encryption, secret)
        # with pin_cpus, every look at the engine's processes pins them (and tdebench) first
        processes = affinity.pinned(self.plan.pin_cpus, database.engine_processes)
        recorder = Recorder(self.store, key, self.clock, processes=processes,
                            process_counters=not engine.capabilities.remote, server_counters=database.server_counters,
                            layer_processes=database.layer_processes)
        facts = _TrialFacts()
        trial: _Trial | None = None  # made below; go_cold runs only after _start returns it

        def go_cold() -> bool:
            dropped = self._go_cold(database, trial.capture if trial is not None else None)
            facts.cache_dropped = facts.cache_dropped and dropped
            return dropped

        session = Session(database, go_cold if self.plan.cache == "cold" else None)
        ctx = RunContext(database=database, dialect=engine.dialect, recorder=recorder, scale=key.scale,
                         streams=spec.workload.streams, data_dir=self.data_dir, seed=self.plan.seed,
                         query_timeout_s=spec.workload.query_timeout_s, options=spec.workload.option_values(),
                         session=session, scratch_database=engine.provision, canaries=tuple(facts.canaries),
                         markers=tuple(facts.markers),
                         new_key=lambda purpose: self.keys.key_for(f"{key.id}/{purpose}"), at_rest=facts.at_rest(key),
                         drivers=self.drivers)
        trial = _Trial(spec=spec, engine=engine, workload=self.workload_factory(key.workload), workspace=workspace,
                       secret=secret, database=database, processes=processes, ctx=ctx, facts=facts,
                       start_ns=start, load_start=load_start)
        return trial

    def _capture(self, trial: "_Trial") -> Capture | None:
        """Start the transient capture of a trial's files (capture.py), unless the plan turned it
        off (capture_every_s = 0) or the engine writes nowhere tdebench may read."""
        database = trial.database
        directories, root = database.capture_dirs(), database.scan_root()
        if not self.plan.capture_every_s or not directories or root is None:
            return None
        try:
            return Capture(directories, root, trial.facts.canaries, trial.facts.markers,
                           database.plaintext_signature(), database.engine_processes, database.file_kind,
                           self.plan.capture_every_s, apart=trial.workload.judged_apart).start()
        except OSError as exc:  # the trial runs on; its verdict says the files at rest alone were judged
            trial.facts.capture_failed = f"{type(exc).__name__}: {exc}"
            return None

    def _guard(self, trial: "_Trial", work: Callable[[], object]) -> None:
        """Run a phase of a trial that has not failed yet; an exception fails the trial, not the run."""
        if trial.error:
            return
        try:
            work()
        except Exception as exc:
            self._fail(trial, exc)

    def _fail(self, trial: "_Trial", exc: Exception) -> None:
        if self.interrupted.is_set():
            raise KeyboardInterrupt from exc
        if isinstance(exc, OutputError):  # nothing more can be recorded: the run stops, cleaning up
            raise exc
        dialect = DIALECTS.get(trial.engine.dialect)
        if not trial.engine.capabilities.remote and _out_of_space(exc, dialect.disk_full if dialect else None):
            error = runstate.no_space_left(trial.workspace)  # the engine's words would name a file, not the cause
        else:
            error = f"{type(exc).__name__}: {exc}"
            died = trial.database.died(DIED_WAIT_S)
            if died:  # the cause first: the client's "lost connection" is only what followed
                error = f"{died}; the trial then failed with {error}"
        if trial.secret is not None:
            error = trial.secret.scrub(error)
        if trial.database.key is not None:  # a workload may have changed the key (maintenance: rekey)
            error = trial.database.key.scrub(error)
        trial.error = error

    def _load_steps(self, trial: "_Trial") -> Generator[None, None, None]:
        """Create and load the database with the canaries, then open the connection the tests use."""
        database, recorder, facts = trial.database, trial.ctx.recorder, trial.facts
        runstate.fault_point("trial-create")
        with recorder.measure("open", "create"):
            database.create()
        conn = database.connect()
        runstate.fault_point("trial-load")
        try:
            yield from trial.workload.load_steps(trial.ctx, conn)
            write_canaries(database, conn, facts.canaries, facts.markers)
            planted = trial.workload.plant_canaries(trial.ctx, conn, facts.canaries)  # in the data the tests read
            facts.canaries_readable = read_canaries(conn) == set(facts.canaries) and planted
        finally:
            conn.close()
        facts.engine_state = database.encryption_state()  # raises if the engine is not encrypted yet
        recorder.record("load", "database", {"size_bytes": float(database.size_bytes()),
                                             "data_bytes": float(database.data_bytes())})
        facts.cache_dropped = self.plan.cache == "cold" and self._go_cold(database, trial.capture)
        for opening in range(1, OPENS):  # each closed again, untimed
            with recorder.measure("open", "connect", pass_number=opening):
                conn = database.connect()
            conn.close()
        with recorder.measure("open", "connect", pass_number=OPENS):  # the connection the tests use
            trial.ctx.session.connection()

    def _warm_up(self, trial: "_Trial", test: str) -> None:
        """The plan's warm-ups of `test`, unrecorded as figures; none for a workload whose results
        are outcomes, not timings (`Workload.timed` False: strength), which a warm-up would only
        repeat — its spill through a file-system layer takes minutes."""
        if not trial.workload.timed:
            return
        for _ in range(self.plan.warmups):
            trial.workload.run(test, trial.ctx, trial.ctx.session.connection(), warmup=True)

    def _in_turn(self, trials: list["_Trial"],
                 steps_of: Callable[["_Trial"], Generator[None, None, None]]) -> None:
        """Run each trial's steps (`steps_of`: its load, or a measured test). Side by side
        (lockstep), the trials take turns step by step (a table's load, a TPC-H query), the
        first to go rotating with every turn, so that whatever the machine does in a given
        second falls on every configuration alike."""
        running = [(trial, steps_of(trial)) for trial in trials if not trial.error]
        turn = 0
        try:
            while running:
                start = turn % len(running)
                for trial, steps in running[start:] + running[:start]:
                    if not self._advance(trial, steps):
                        running.remove((trial, steps))
                turn += 1
        finally:  # interrupted: end the others' steps now (their connections close) before the databases
            for _, steps in running:
                try:
                    steps.close()
                except Exception:  # noqa: BLE001 - already leaving on the interruption
                    pass

    def _measured_steps(self, trial: "_Trial", test: str) -> Generator[None, None, None]:
        runstate.fault_point("trial-queries")
        session = trial.ctx.session
        conn = session.go_cold() if session.cold else session.connection()  # untimed, like every reconnect
        yield from trial.workload.steps(test, trial.ctx, conn, warmup=False)

    def _advance(self, trial: "_Trial", steps: Generator[None, None, None]) -> bool:
        """Run a trial's next step; False when its test is over or has failed."""
        try:
            next(steps)
        except StopIteration:
            return False
        except Exception as exc:
            self._fail(trial, exc)
            return False
        return True

    def _finish(self, trial: "_Trial") -> None:
        """Close the tests' connection; then, if the trial went well, what is read while the
        engine still runs: the decrypted view's canaries (the positive control of a layer below
        the engine, while mounted) and the CPUs the engine was pinned to."""
        self._release(trial)
        self._guard(trial, lambda: self._while_open(trial))

    def _release(self, trial: "_Trial", quietly: bool = False) -> None:
        """Close the tests' connection, a failed trial's too; failing to close fails a trial that
        was ok (`quietly`: ignored, on the way out of an interruption)."""
        try:
            trial.ctx.session.release()
        except Exception as exc:
            if not quietly and not trial.error:
                self._fail(trial, exc)

    def _while_open(self, trial: "_Trial") -> None:
        try:
            trial.facts.view_hits = verify.view_hits(trial.database.plaintext_view(), trial.facts.canaries, live=True)
        except PlaintextViewGone as exc:  # the verdict says so (error); the measurements stand
            trial.facts.view_gone = str(exc)
        if self.plan.pin_cpus is not None:
            trial.pinned_to = affinity.applied(trial.processes())

    def _end(self, trial: "_Trial") -> tuple[TrialOutcome, Verdict | None]:
        """Judge a closed trial at rest, remove its workspace, and store how it ended."""
        key = trial.key
        # nothing encrypts the baseline nor a layer with no cipher (fs-passthrough): both at rest in plaintext
        expected = "encrypted" if trial.database.encryption.encrypts else "plaintext"
        runstate.fault_point("trial-scan")
        try:
            verdict = self._verdict(key, expected, trial.database, trial.facts, trial.capture, trial.error)
        finally:
            try:
                trial.database.drop()
            finally:
                runstate.fault_point("trial-removing")
                remove_tree(trial.workspace)
        facts, pinned_to = trial.facts, trial.pinned_to
        outcome = TrialOutcome(trial=key, status="failed" if trial.error else "ok", cache=self.plan.cache,
                               cache_dropped=facts.cache_dropped,
                               evicted=self.plan.evict if self.plan.cache == "cold" else "",
                               elapsed_s=(self.clock.now_ns() - trial.start_ns) / 1e9,
                               error=trial.error, key_derived=trial.secret is not None and self.keys.derived,
                               key_form=trial.database.key_form,
                               load_start=trial.load_start, load_end=load_1m(),
                               engine_cpus=pinned_to[0] if pinned_to else None,
                               driver_cpus=pinned_to[1] if pinned_to else None,
                               cache_mb=trial.engine.cache_mb(), host=self.host,
                               quiet_waited_s=trial.quiet.waited_s if trial.quiet else None,
                               quiet_others_pct=trial.quiet.others_pct if trial.quiet else None)
        self.store.append(outcome)
        self.store.sync()
        return outcome, verdict

    def _go_cold(self, database: Database, capture: Capture | None) -> bool:
        """Stop the engine (servers shut down, mounts unmount, embedded files close), let the
        transient capture scan what the engine closed (a scan after the eviction would read those
        pages back), then empty the OS page cache as the plan's `evict` says
        (measure/oscache.py): the next connect starts the engine again with none of the
        database's pages cached anywhere. True only if the cache really was emptied."""
        database.close()
        if capture is not None:
            capture.settle()
        return self.empty_cache(self.plan.evict, database.workspace)

    def _verdict(self, key: TrialKey, expected: str, database: Database, facts: "_TrialFacts",
                 capture: Capture | None, failed: str = "") -> Verdict:
        """The trial's verdict: its closed database's files at rest, and what the transient
        capture caught while it ran (stopped here, after the close). A failed trial's (`failed`:
        its error) is `error`, what the scan found kept in the detail: the positive controls and
        the engine's own report were not all taken (a dead gocryptfs left files that look
        encrypted, and its view was never read), so "encrypted" would claim what was not checked.
        Only a leak stands (plaintext where encryption was expected): what its files hold is a
        finding however the trial ended (report.findings.judged)."""
        root = database.scan_root()
        try:
            transient = capture.stop() if capture is not None else None
            if root is None:  # nothing tdebench may read: a remote server without data_path
                verdict = verify.not_verified(key, expected, facts.engine_state)
            else:
                verdict = facts.at_rest(key).judge(root, expected, readable=facts.canaries_readable,
                                                   signature=database.plaintext_signature(),
                                                   column_layer=database.encryption.layer == "column",
                                                   view_hits=facts.view_hits, engine_state=facts.engine_state,
                                                   view_gone=facts.view_gone, transient=transient,
                                                   kind_of=database.file_kind)
        except Exception as exc:
            verdict = verify.error_verdict(key, expected, f"{type(exc).__name__}: {exc}")
        leak = verdict.verdict == "plaintext" and expected == "encrypted"  # found, failed or not
        if failed and verdict.verdict != "error" and not leak:
            found = f"{verdict.verdict} ({verdict.detail})" if verdict.detail else verdict.verdict
            verdict = replace(verdict, verdict="error",
                              detail=f"the trial failed ({failed}); its files at rest were judged {found}")
        if facts.capture_failed:
            verdict = replace(verdict, detail=f"{verdict.detail}; the transient capture could not start "
                                              f"({facts.capture_failed}): only the files at rest were judged")
        if capture is not None:
            verdict = replace(verdict, capture_cpu_s=round(capture.stats.cpu_s, 4))
        self.store.append(verdict)
        return verdict


def next_rounds(plan: Plan, run: RunData, elapsed_s: float,
                progress: Progress = SilentProgress()) -> tuple[list[TrialSpec], Stopping | None]:
    """Adaptive repetitions, per comparison group (`plan.comparison_group`): after the rounds
    `run` holds (the plan's, or more in a resumed run), the trials of one more round of every
    group whose widest headline CI half-width is still above `target_ci_pct`, unless none is,
    none can have more (`max_repetitions`), or the time budget (`elapsed_s` of it spent) fits no
    such group's next round: then no trials and the `Stopping` record that says why. A group
    that reached the target is left alone, so a cheap group (DuckDB's 5-second rounds) may run
    three times the rounds of an expensive one (SQLite's nine ciphers) in the same budget. The
    runner and a cluster run's client (each host's rounds pair within it) both add rounds so.
    The report's modules are imported here, not with the runner: they bring in matplotlib and
    SciPy, a couple of seconds of every cluster unit's start, which runs trials and never this."""
    from tdebench.report.summaries.noise import widest_headlines, widest_of
    from tdebench.report.data.records import group_label, summary_records

    assert plan.target_ci_pct is not None
    widths = widest_headlines(run, summary_records(run), plan.target_tests)
    rounds = _rounds_by_group(plan, run)
    wide = sorted((group for group, (_, width) in widths.items() if width > plan.target_ci_pct),
                  key=lambda group: -widths[group][1])
    open_groups = [group for group in wide if rounds.get(group, 0) < plan.max_repetitions]
    chosen = _within_budget(open_groups, _round_seconds(plan, run, elapsed_s),
                            None if plan.max_minutes is None else plan.max_minutes * 60.0 - elapsed_s)
    if chosen:
        label, width = widths[chosen[0]]
        progress.phase(f"adding rounds to {len(chosen)} group(s): {label} ±{width:.1f}% "
                       f"> target ±{plan.target_ci_pct:g}%")
        return [trial for group in chosen for trial in round_trials(plan, rounds.get(group, 0) + 1, {group})], None
    reason = REACHED if not wide else MOST_ROUNDS if not open_groups else BUDGET
    widest = widest_of(widths)
    return [], Stopping(rounds=max(rounds.values(), default=0), reason=reason, target_ci_pct=plan.target_ci_pct,
                        widest=widest[0] if widest else "", widest_ci_pct=widest[1] if widest else math.nan,
                        elapsed_s=elapsed_s,
                        group_rounds={group_label(g): n for g, n in sorted(rounds.items(), key=lambda i: str(i[0]))},
                        target_tests=plan.target_tests)


def more_rounds(plan: Plan, store: ResultStore, elapsed_s: float,
                progress: Progress = SilentProgress()) -> list[TrialSpec]:
    """One step of adaptive repetitions, as the runner and a cluster run's client both take it:
    the trials of the next rounds (`next_rounds`, from what `store` holds so far), or none once
    they stop, with the `Stopping` record that says why stored and synced."""
    trials, stopping = next_rounds(plan, read_run(store.directory), elapsed_s, progress)
    if stopping is not None:
        store.append(stopping)
        store.sync()
    return trials


def elapsed_before(run: RunData) -> float:
    """The time a resumed run spent before its last resume (0 if never resumed), which adaptive
    rounds count against the plan's max_minutes."""
    return run.resumes[-1].elapsed_before_s if run.resumes else 0.0


def _rounds_by_group(plan: Plan, run: RunData) -> dict[Group, int]:
    """Each comparison group's highest round among the run's complete trials (at least the
    plan's repetitions: a group whose trials all failed still ran them)."""
    rounds: dict[Group, int] = {}
    for spec in schedule(plan):  # the plan's repetitions, or a workload's own (strength: 1)
        group = comparison_group(spec.key)
        rounds[group] = max(rounds.get(group, 0), spec.key.repetition)
    for group, finished in finished_rounds(run).items():
        rounds[group] = max(rounds.get(group, 0), finished)
    return rounds


def _round_seconds(plan: Plan, run: RunData, elapsed_s: float) -> dict[Group, float]:
    """What one more round of each comparison group will take, in seconds: the group's share of
    its trials' elapsed time (side by side in lockstep, so a round counts its longest trial;
    else their sum), scaled so that all the rounds this run part measured add up to `elapsed_s`
    (the scans, workspaces and priming that no trial's elapsed time holds)."""
    per_round: dict[Group, dict[int, list[float]]] = {}
    for outcome in run.trials:
        rounds = per_round.setdefault(comparison_group(outcome.trial), {})
        rounds.setdefault(outcome.trial.repetition, []).append(outcome.elapsed_s)
    together = max if plan.order == "lockstep" else sum
    spent = {group: [together(times) for times in rounds.values()] for group, rounds in per_round.items()}
    measured = sum(sum(times) for times in spent.values())
    scale = elapsed_s / measured if measured > 0 and elapsed_s > 0 else 1.0
    return {group: scale * max(times) for group, times in spent.items()}


def _within_budget(groups: Sequence[Group], seconds: dict[Group, float], left_s: float | None) -> list[Group]:
    """The groups (in the order given, widest CI first) whose next rounds fit, one after the
    other, in `left_s` (None: no budget); a group whose round does not fit is skipped for a
    cheaper one after it."""
    if left_s is None:
        return list(groups)
    chosen = []
    for group in groups:
        cost = seconds.get(group, 0.0)
        if cost <= left_s:
            chosen.append(group)
            left_s -= cost
    return chosen

