"""Virtual users: one connection each, running the mix back to back, as threads of this
process or (servers) as threads of worker processes.

Threads of one process share one interpreter lock: their Python work (a pure-Python MySQL
protocol, the inputs, the histograms) takes turns, so together they can never use more than
about one core, and on a fast server the driver rather than the server could set the pace
(`bench/oltp_driver.py` measures both). With `processes=N` the users are spread in turn over N
worker processes (the workload asks for one per CPU), each with an interpreter lock of its
own. The workers are forked after the caller has opened every connection, each inheriting its
users' open connections (and the rest of this process's memory): no key, password or
connection parameter is pickled, sent or written anywhere, and no worker opens a connection of
its own. Each worker sends its users' `UserLog`s back over a pipe, which are merged exactly as
the threads' logs are (counts add up, histograms merge bucket by bucket), and ends its users'
sessions itself (a TLS session's state is the worker's by then, `_end_sessions`).
Embedded engines keep threads: they run inside this process, and an open SQLite or DuckDB
connection cannot cross a fork (DuckDB admits one writing process per database file).

The timeline is fixed before the first user starts: all users run from t0 (worker processes
receive it together once every one of them is ready: a barrier), the ramp-up
ends at t0 + rampup_s and the measured window starts there; it ends after duration_s, or
(count mode) when the window's N-th transaction commits. A transaction belongs to the window
if it ends inside it; its latency runs from its first attempt's start to its end, retries
included. Ramp-up transactions warm the caches and are not counted. The stop signal, the
count mode's tickets and the window's end live in shared memory (`_Shared`), which forked
workers see as threads do. A worker ignores Ctrl-C (its parent stops it), dies with its
parent (PR_SET_PDEATHSIG) and is killed if it has not ended JOIN_AFTER_INTERRUPT_S after the
stop, so no run, finished, failed or interrupted, leaves one behind.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import random
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection as Pipe
from multiprocessing.process import BaseProcess
from typing import Any

import psutil

from tdebench.engines.base import Connection
from tdebench.measure import process as counters
from tdebench.workloads.oltp.errors import classify
from tdebench.workloads.oltp.histogram import Histogram
from tdebench.workloads.oltp.inputs import KINDS, NEW_ORDER, Inputs, Terminal
from tdebench.workloads.oltp.transactions import COMMITTED, ROLLBACK

GIVE_UP_AFTER = 10
"""A user that gets this many errors in a row (no retry helps, e.g. a lost connection) stops."""
JOIN_AFTER_INTERRUPT_S = 30.0
"""How long a user may take to finish its transaction after the stop before it is abandoned
(a thread) or killed (a worker process)."""
READY_TIMEOUT_S = 60.0  # a forked worker says it is ready within this, or the run fails
POLL_S = 0.01  # how often the driver looks at the clock and the users while it waits
_FORK = multiprocessing.get_context("fork")
_PR_SET_PDEATHSIG = 1  # prctl(2)


@dataclass(frozen=True)
class Settings:
    virtual_users: int
    rampup_s: float
    duration_s: float
    transactions: int  # 0: run for duration_s; N: the window ends with its N-th committed transaction
    interval_s: float  # length of one point of the throughput time series
    max_retries: int  # retries of one transaction after deadlocks, conflicts, serialization failures


@dataclass
class Tally:
    """One transaction type's results in the measured window."""

    committed: int = 0
    rollbacks: int = 0  # the spec's 1% New-Orders rolled back on purpose
    retries: Counter[str] = field(default_factory=Counter)  # by reason
    errors: Counter[str] = field(default_factory=Counter)  # by type
    latency: Histogram = field(default_factory=Histogram)

    def merge(self, other: "Tally") -> None:
        self.committed += other.committed
        self.rollbacks += other.rollbacks
        self.retries.update(other.retries)
        self.errors.update(other.errors)
        self.latency.merge(other.latency)

    def to_json(self) -> dict[str, Any]:
        return {"committed": self.committed, "rollbacks": self.rollbacks, "retries": dict(self.retries),
                "errors": dict(self.errors), "latency": self.latency.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Tally":
        return cls(int(data["committed"]), int(data["rollbacks"]), Counter(data["retries"]), Counter(data["errors"]),
                   Histogram.from_json(data["latency"]))


@dataclass
class UserLog:
    """What one virtual user did."""

    tallies: dict[str, Tally] = field(default_factory=lambda: {kind: Tally() for kind in KINDS})
    intervals: dict[int, Counter[str]] = field(default_factory=dict)  # index → committed by type
    committed_all: Counter[str] = field(default_factory=Counter)  # by type, ramp-up and overrun included
    errors_outside: Counter[str] = field(default_factory=Counter)  # during ramp-up or after the window
    first_errors: dict[str, str] = field(default_factory=dict)  # error type → its first message
    gave_up: str = ""

    def merge(self, other: "UserLog") -> None:
        """Add `other`'s results: counts add up, histograms merge bucket by bucket, intervals
        by their number (every driver's window starts at the same moment)."""
        for kind, tally in other.tallies.items():
            self.tallies.setdefault(kind, Tally()).merge(tally)
        for index, committed in other.intervals.items():
            self.intervals.setdefault(index, Counter()).update(committed)
        self.committed_all.update(other.committed_all)
        self.errors_outside.update(other.errors_outside)
        for kind, message in other.first_errors.items():
            self.first_errors.setdefault(kind, message)
        self.gave_up = "; ".join(filter(None, (self.gave_up, other.gave_up)))

    def to_json(self) -> dict[str, Any]:
        """The whole log as JSON, which `from_json` reads back exactly (a cluster's other drivers
        send theirs this way: nothing pickled crosses the network)."""
        return {"tallies": {kind: tally.to_json() for kind, tally in self.tallies.items()},
                "intervals": {str(index): dict(committed) for index, committed in self.intervals.items()},
                "committed_all": dict(self.committed_all), "errors_outside": dict(self.errors_outside),
                "first_errors": dict(self.first_errors), "gave_up": self.gave_up}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "UserLog":
        return cls({kind: Tally.from_json(tally) for kind, tally in data["tallies"].items()},
                   {int(index): Counter(committed) for index, committed in data["intervals"].items()},
                   Counter(data["committed_all"]), Counter(data["errors_outside"]), dict(data["first_errors"]),
                   str(data["gave_up"]))


@dataclass(frozen=True)
class Interval:
    elapsed_s: float
    committed: Counter[str]


@dataclass
class Outcome:
    """A whole run, all users merged."""

    window_s: float
    tallies: dict[str, Tally]
    intervals: list[Interval]
    committed_all: Counter[str]  # by type over the whole run: what the database must show
    errors_outside: Counter[str]
    first_errors: dict[str, str]
    gave_up: list[str]
    engine: dict[str, float]  # process counters of the engine over the window (cpu_s, read_bytes, …)
    driver_cpu_s: float  # CPU time of this process and its worker processes (embedded engines run in it too)
    log: UserLog  # every user's log merged: what a cluster's other driver sends to the trial's owner
    elsewhere: int = 0  # of `committed`, the transactions other hosts' users committed (a cluster's drivers)

    @property
    def new_orders_total(self) -> int:
        """Committed New-Orders over the whole run, which the database's d_next_o_id counts too."""
        return self.committed_all[NEW_ORDER]

    @property
    def committed(self) -> int:
        return sum(t.committed for t in self.tallies.values())

    @property
    def errors(self) -> Counter[str]:
        total = Counter(self.errors_outside)
        for tally in self.tallies.values():
            total.update(tally.errors)
        return total


Run = Callable[[str, Inputs], str]
User = tuple[Connection, Run, Terminal]


class WorkerFailed(RuntimeError):
    """A worker process that crashed (a bug, not a database error), died or would not stop."""


def _rollback(conn: Connection) -> None:
    """End whatever transaction an error left open; nothing open is fine too."""
    try:
        conn.execute("ROLLBACK")
    except Exception:
        pass


class _Shared:
    """What the users of one run share while it runs, in shared memory: a worker process forked
    after it is made reads and writes the same values as a thread does."""

    def __init__(self) -> None:
        self._stop = _FORK.RawValue(ctypes.c_bool, False)
        self._window_end = _FORK.RawValue(ctypes.c_longlong, -1)  # -1: not known yet
        self._tickets = _FORK.Value(ctypes.c_longlong, 0)  # with a lock: count mode's committed transactions

    def stop(self) -> None:
        self._stop.value = True

    @property
    def stopped(self) -> bool:
        return bool(self._stop.value)

    @property
    def window_end(self) -> int | None:
        end = self._window_end.value
        return None if end < 0 else int(end)

    def end_window(self, ns: int) -> None:
        self._window_end.value = ns

    def ticket(self) -> int:
        """The next ticket, 0, 1, 2, …, each handed out once over all users."""
        with self._tickets.get_lock():
            ticket = int(self._tickets.value)
            self._tickets.value = ticket + 1
        return ticket


class _Run:
    """One run of the mix: the shared timeline and stop signal; each user keeps its own log."""

    def __init__(self, settings: Settings, now: Callable[[], int] = time.perf_counter_ns) -> None:
        self.settings = settings
        self.now = now
        self.shared = _Shared()
        self.interval_ns = round(settings.interval_s * 1e9)
        self.t0 = self.window_start = 0

    def begin(self, t0: int) -> None:
        """Fix the timeline at t0 (perf_counter_ns is CLOCK_MONOTONIC: one clock for all processes)."""
        self.t0 = t0
        self.window_start = t0 + round(self.settings.rampup_s * 1e9)
        if not self.settings.transactions:
            self.shared.end_window(self.window_start + round(self.settings.duration_s * 1e9))

    @property
    def window_end(self) -> int | None:
        """The window's end; in count mode None until its last transaction commits."""
        return self.shared.window_end

    def user(self, number: int, conn: Connection, run: Run, terminal: Terminal, log: UserLog) -> None:
        jitter = random.Random(number)  # backoff only; the terminal's stream stays the inputs'
        errors_in_a_row = 0
        while not self.shared.stopped:
            kind = terminal.kind()
            inputs = terminal.next(kind)
            began = self.now()
            retries: Counter[str] = Counter()
            outcome, error = self._attempts(conn, run, kind, inputs, retries, jitter)
            ended = self.now()
            if outcome is None and error is None:
                break  # abandoned while retrying after the window: not a result
            if outcome == COMMITTED:
                log.committed_all[kind] += 1
            counted = self._in_window(ended, outcome == COMMITTED)
            if error is not None:
                errors_in_a_row += 1
                (log.tallies[kind].errors if counted else log.errors_outside)[error[0]] += 1
                log.first_errors.setdefault(error[0], error[1])
                if errors_in_a_row >= GIVE_UP_AFTER:
                    log.gave_up = f"user {number} stopped after {GIVE_UP_AFTER} errors in a row: {error[1]}"
                    break
                continue
            errors_in_a_row = 0
            if not counted:
                continue
            tally = log.tallies[kind]
            tally.retries.update(retries)
            tally.latency.add((ended - began) / 1e9)
            if outcome == ROLLBACK:
                tally.rollbacks += 1
            else:
                tally.committed += 1
                index = (ended - self.window_start) // self.interval_ns
                log.intervals.setdefault(index, Counter())[kind] += 1

    def _attempts(self, conn: Connection, run: Run, kind: str, inputs: Inputs, retries: Counter[str],
                  jitter: random.Random) -> tuple[str | None, tuple[str, str] | None]:
        """(outcome, None), (None, (error type, message)), or (None, None) if abandoned."""
        while True:
            try:
                return run(kind, inputs), None
            except Exception as exc:
                _rollback(conn)
                problem = classify(exc)
                if not problem.retryable:
                    return None, (problem.kind, f"{kind}: {type(exc).__name__}: {exc}")
                if sum(retries.values()) >= self.settings.max_retries:
                    last = exc.__cause__ or exc  # a Conflict's message is its kind; the engine's says more
                    return None, (f"retries exhausted ({problem.kind})",
                                  f"{kind}: still failing after {self.settings.max_retries} retries: {last}")
                if self.shared.stopped:
                    return None, None
                retries[problem.kind] += 1
                # a short random pause, so two colliding users do not collide again at once
                time.sleep(jitter.uniform(0, min(0.0005 * 2 ** sum(retries.values()), 0.05)))

    def _in_window(self, ended: int, committed: bool) -> bool:
        if ended < self.window_start:
            return False
        window_end = self.shared.window_end
        if not self.settings.transactions:
            assert window_end is not None, "begin() fixes a duration-mode window's end"
            return ended < window_end
        if window_end is not None and ended >= window_end:
            return False
        if not committed:
            return True
        ticket = self.shared.ticket()
        if ticket == self.settings.transactions - 1:
            self.shared.end_window(ended)
        return ticket < self.settings.transactions

    def sleep_until(self, deadline_ns: int, running: Callable[[], bool]) -> None:
        """Until the deadline, or until every user has ended or one has stopped the run."""
        while (left := deadline_ns - self.now()) > 0 and running() and not self.shared.stopped:
            time.sleep(min(left / 1e9, POLL_S))

    def wait_for_window_end(self, running: Callable[[], bool]) -> None:
        """Count mode: until the window's last transaction commits (or the users end, or stop)."""
        while self.window_end is None and running() and not self.shared.stopped:
            time.sleep(POLL_S)


class _Threads:
    """Every virtual user (numbered) a thread of this process."""

    def __init__(self, run: _Run, users: Sequence[tuple[int, User]]) -> None:
        self.run = run
        self.logs = [UserLog() for _ in users]
        self.crashed: list[BaseException] = []
        self.threads = [threading.Thread(target=self._body, args=(number, *user, log), name=f"oltp-user-{number}",
                                         daemon=True)
                        for (number, user), log in zip(users, self.logs)]

    def start(self, t0: int | None = None, at: Callable[[], int] | None = None) -> None:
        """Start every user at t0 (default: `at()`, the moment every driver agreed on, or now)."""
        self.run.begin(t0 if t0 is not None else at() if at is not None else self.run.now())
        for thread in self.threads:
            thread.start()

    def running(self) -> bool:
        return any(thread.is_alive() for thread in self.threads)

    def driver_processes(self) -> list[psutil.Process]:
        return [psutil.Process()]

    def finish(self) -> list[UserLog]:
        """Stop the users and return their logs; a user's crash is raised."""
        self.abandon()
        if self.crashed:
            raise self.crashed[0]
        return self.logs

    def abandon(self) -> None:
        """Stop the users and wait for them (the run failed or was interrupted)."""
        self.run.shared.stop()
        for thread in self.threads:
            if thread.ident is not None:  # started (a failed barrier stops the users before they start)
                thread.join(JOIN_AFTER_INTERRUPT_S)

    def _body(self, number: int, conn: Connection, run: Run, terminal: Terminal, log: UserLog) -> None:
        try:
            self.run.user(number, conn, run, terminal, log)
        except BaseException as exc:  # a bug, not a database error: raised by finish()
            self.crashed.append(exc)
            self.run.shared.stop()


class _Processes:
    """The virtual users spread over forked worker processes, threads in each (module docstring)."""

    def __init__(self, run: _Run, users: Sequence[User], workers: int) -> None:
        self.run = run
        numbered = list(enumerate(users, start=1))
        self.groups = [numbered[i::workers] for i in range(min(workers, len(users)))]  # users spread in turn
        self.workers: list[tuple[BaseProcess, Pipe]] = []
        self.begun = False
        self._processes: list[psutil.Process] = []

    def start(self, at: Callable[[], int] | None = None) -> None:
        """Fork the workers, wait until every one is ready, then send them all the same t0 (`at()`,
        the moment every driver agreed on, or now)."""
        parent = os.getpid()
        # Python's advice for fork without exec: a worker's garbage collector then leaves the
        # objects it inherited alone, instead of walking (and so copying) all of this process's heap
        gc.freeze()
        try:
            for number, group in enumerate(self.groups, start=1):
                ours, theirs = _FORK.Pipe()
                worker = _FORK.Process(target=_worker, args=(self.run, group, theirs, parent),
                                       name=f"oltp-worker-{number}", daemon=True)
                self.workers.append((worker, ours))
                worker.start()
                theirs.close()
        finally:
            gc.unfreeze()
        for number, (_, pipe) in enumerate(self.workers, start=1):
            if not pipe.poll(READY_TIMEOUT_S):
                raise WorkerFailed(f"oltp worker process {number} was not ready within {READY_TIMEOUT_S:g} s")
            pipe.recv()
        self._processes = [psutil.Process(), *(psutil.Process(started.pid) for started, _ in self.workers)]
        t0 = at() if at is not None else self.run.now()
        self.run.begin(t0)
        for _, pipe in self.workers:
            pipe.send(t0)
        self.begun = True

    def running(self) -> bool:
        return any(worker.is_alive() for worker, _ in self.workers)

    def driver_processes(self) -> list[psutil.Process]:
        return self._processes

    def finish(self) -> list[UserLog]:
        """Stop the users and return their logs, received over the pipes; WorkerFailed if a
        worker crashed, died or did not stop in time (the others are ended all the same)."""
        self.run.shared.stop()
        logs: list[UserLog] = []
        problems: list[str] = []
        deadline = time.monotonic() + JOIN_AFTER_INTERRUPT_S
        try:
            for number, (worker, pipe) in enumerate(self.workers, start=1):
                received, problem = self._receive(number, worker, pipe, deadline)
                logs += received
                if problem:
                    problems.append(problem)
        finally:
            self._end_all()
        if problems:
            raise WorkerFailed("; ".join(problems))
        return logs

    def abandon(self) -> None:
        """Stop the users and end every worker (the run failed or was interrupted)."""
        self.run.shared.stop()
        self._end_all()

    def _receive(self, number: int, worker: BaseProcess, pipe: Pipe, deadline: float) -> tuple[list[UserLog], str]:
        """A worker's logs (one per user), or none and what went wrong."""
        if not pipe.poll(max(deadline - time.monotonic(), 0.0)):
            return [], f"oltp worker process {number} did not stop within {JOIN_AFTER_INTERRUPT_S:g} s"
        try:
            kind, payload = pipe.recv()
        except EOFError:
            worker.join(1.0)
            return [], f"oltp worker process {number} ended with exit code {worker.exitcode}"
        if kind == _CRASHED:
            return [], f"oltp worker process {number} crashed:\n{payload}"
        return payload, ""

    def _end_all(self) -> None:
        """No worker outlives this: a worker not yet begun is told to go; each gets a moment to
        exit on its own, then SIGKILL (a second Ctrl-C while waiting goes straight to it)."""
        started = [(worker, pipe) for worker, pipe in self.workers if worker.pid is not None]
        try:
            if not self.begun:
                for _, pipe in started:
                    try:
                        pipe.send(None)
                    except OSError:
                        pass
            deadline = time.monotonic() + _EXIT_S
            for worker, _ in started:
                worker.join(max(deadline - time.monotonic(), 0.0))
        finally:
            for worker, pipe in started:
                if worker.exitcode is None:
                    worker.kill()
                worker.join()
                pipe.close()


_READY, _LOG, _CRASHED = "ready", "log", "crashed"
_EXIT_S = 5.0  # how long a stopped worker may take to exit before SIGKILL


def _worker(run: _Run, users: Sequence[tuple[int, User]], pipe: Pipe, parent: int) -> None:
    """A worker process's life: ready, wait for t0, run its virtual users (threads) until the stop,
    send their logs."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent stops us
    _die_with(parent)
    pipe.send(_READY)
    t0 = pipe.recv()
    if t0 is None:  # the run ended before it began
        return
    crew = _Threads(run, users)
    try:
        crew.start(t0)
        for thread in crew.threads:
            thread.join()
        logs = crew.finish()
    except BaseException:
        run.shared.stop()
        pipe.send((_CRASHED, traceback.format_exc()))
    else:
        pipe.send((_LOG, logs))
        _end_sessions(users)


def _end_sessions(users: Sequence[tuple[int, User]]) -> None:
    """End the users' sessions from the process that used them: an encrypted session's (TLS)
    state is this process's, so the parent's close of its copy, with the state it had at the
    fork, would reach the server as a corrupt record (PostgreSQL logs "SSL error: decryption
    failed or bad record mac" per session); after this the parent's close finds the session
    ended and sends nothing the server reads."""
    for _, (conn, _, _) in users:
        try:
            conn.close()
        except Exception:
            pass


def _die_with(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies (Linux), and go now if it already has."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def drive(settings: Settings, users: Sequence[User],
          engine_processes: Callable[[], Sequence[psutil.Process] | None], *, processes: int = 0,
          at: Callable[[], int] | None = None, others: Callable[[], list[UserLog]] | None = None) -> Outcome:
    """Run the mix, every (connection, runner, terminal) a virtual user: a thread of this process,
    or with `processes` > 0 a thread of one of that many worker processes (users spread over them
    in turn); return the merged results. The connections are opened by the caller, before the
    clock starts, and closed by it afterwards (a worker's connections are its own while it runs:
    the caller must not use them meanwhile).

    Several drivers of one server (a cluster's `driver_hosts`): `at()` is called once every local
    user is ready and returns t0, the start every driver agreed on, as this machine's
    perf_counter_ns (a barrier); `others()`, called once the local users have stopped, returns
    the logs of the users the other drivers ran over the same window, merged with these."""
    run = _Run(settings)
    crew: _Threads | _Processes = (_Processes(run, users, processes) if processes
                                   else _Threads(run, list(enumerate(users, start=1))))
    try:
        crew.start(at=at)
        run.sleep_until(run.window_start, crew.running)
        before, driver_before = counters.take(engine_processes()), counters.take(crew.driver_processes())
        if settings.transactions:
            run.wait_for_window_end(crew.running)
        else:
            assert run.window_end is not None
            run.sleep_until(run.window_end, crew.running)
        after, driver_after = counters.take(engine_processes()), counters.take(crew.driver_processes())
        window_end = run.window_end if run.window_end is not None else run.now()
    except BaseException:
        crew.abandon()
        raise
    logs, elsewhere = crew.finish(), others() if others is not None else []
    return _merge(run, window_end, logs + elsewhere, counters.delta(before, after),
                  counters.delta(driver_before, driver_after)["cpu_s"],
                  sum(tally.committed for log in elsewhere for tally in log.tallies.values()))


def _merge(state: _Run, window_end: int, logs: list[UserLog], engine: dict[str, float],
           driver_cpu_s: float, elsewhere: int = 0) -> Outcome:
    merged = UserLog()
    for log in logs:
        merged.merge(log)
    window = max(window_end - state.window_start, 0)
    count = -(-window // state.interval_ns) if window else 0
    intervals = [Interval(min(state.interval_ns, window - i * state.interval_ns) / 1e9,
                          merged.intervals.get(i, Counter())) for i in range(count)]
    return Outcome(window_s=window / 1e9, tallies=merged.tallies, intervals=intervals,
                   committed_all=merged.committed_all, errors_outside=merged.errors_outside,
                   first_errors=merged.first_errors, gave_up=[log.gave_up for log in logs if log.gave_up],
                   engine=engine, driver_cpu_s=driver_cpu_s, log=merged, elsewhere=elsewhere)
