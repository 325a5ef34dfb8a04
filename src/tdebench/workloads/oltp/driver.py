"""Virtual users: one thread and one connection each, running the mix back to back.

Threads, not processes: the key (`Secret`) must not leave this process, DuckDB allows one
writing process per database file, and each thread spends its time in the database driver
with the GIL released (DuckDB, SQLite and psycopg release it while a statement runs, PyMySQL
while it waits on the socket). `bench/oltp_driver.py` measures what the driver costs.

The timeline is fixed before the first user starts: all users run from t0, the ramp-up
ends at t0 + rampup_s and the measured window starts there; it ends after duration_s, or
(count mode) when the window's N-th transaction commits. A transaction belongs to the window
if it ends inside it; its latency runs from its first attempt's start to its end, retries
included. Ramp-up transactions warm the caches and are not counted.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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


@dataclass
class UserLog:
    """What one virtual user did."""

    tallies: dict[str, Tally] = field(default_factory=lambda: {kind: Tally() for kind in KINDS})
    intervals: dict[int, Counter[str]] = field(default_factory=dict)  # index → committed by type
    committed_all: Counter[str] = field(default_factory=Counter)  # by type, ramp-up and overrun included
    errors_outside: Counter[str] = field(default_factory=Counter)  # during ramp-up or after the window
    first_errors: dict[str, str] = field(default_factory=dict)  # error type → its first message
    gave_up: str = ""


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
    driver_cpu_s: float  # CPU time of this process (the driver; embedded engines run in it too)

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


def _rollback(conn: Connection) -> None:
    """End whatever transaction an error left open; nothing open is fine too."""
    try:
        conn.execute("ROLLBACK")
    except Exception:
        pass


class _Run:
    """One run of the mix: shared timeline and stop signal, one log per user."""

    def __init__(self, settings: Settings, now: Callable[[], int] = time.perf_counter_ns) -> None:
        self.settings = settings
        self.now = now
        self.t0 = now()
        self.window_start = self.t0 + round(settings.rampup_s * 1e9)
        self.window_end: int | None = (None if settings.transactions
                                       else self.window_start + round(settings.duration_s * 1e9))
        self.interval_ns = round(settings.interval_s * 1e9)
        self.stop = threading.Event()
        self.reached = threading.Event()  # count mode: the window's last transaction committed
        self.tickets = itertools.count()

    def user(self, number: int, conn: Connection, run: Run, terminal: Terminal, log: UserLog) -> None:
        jitter = random.Random(number)  # backoff only; the terminal's stream stays the inputs'
        errors_in_a_row = 0
        while not self.stop.is_set():
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
                    return None, (f"retries exhausted ({problem.kind})",
                                  f"{kind}: still failing after {self.settings.max_retries} retries: {exc}")
                if self.stop.is_set():
                    return None, None
                retries[problem.kind] += 1
                # a short random pause, so two colliding users do not collide again at once
                time.sleep(jitter.uniform(0, min(0.0005 * 2 ** sum(retries.values()), 0.05)))

    def _in_window(self, ended: int, committed: bool) -> bool:
        if ended < self.window_start:
            return False
        if not self.settings.transactions:
            assert self.window_end is not None
            return ended < self.window_end
        if self.window_end is not None and ended >= self.window_end:
            return False
        if not committed:
            return True
        ticket = next(self.tickets)
        if ticket == self.settings.transactions - 1:
            self.window_end = ended
            self.reached.set()
        return ticket < self.settings.transactions

    def sleep_until(self, deadline_ns: int, threads: Sequence[threading.Thread]) -> None:
        while (left := deadline_ns - self.now()) > 0 and any(t.is_alive() for t in threads):
            self.stop.wait(min(left / 1e9, 0.5))


def drive(settings: Settings, users: Sequence[tuple[Connection, Run, Terminal]],
          engine_processes: Callable[[], Sequence[psutil.Process] | None]) -> Outcome:
    """Run the mix with one thread per (connection, runner, terminal) and return the results.
    The connections are opened by the caller, before the clock starts."""
    state = _Run(settings)
    logs = [UserLog() for _ in users]
    crashed: list[BaseException] = []

    def body(number: int, conn: Connection, run: Run, terminal: Terminal, log: UserLog) -> None:
        try:
            state.user(number, conn, run, terminal, log)
        except BaseException as exc:  # a bug, not a database error: re-raised below
            crashed.append(exc)
            state.stop.set()

    threads = [threading.Thread(target=body, args=(n, conn, run, terminal, log), name=f"oltp-user-{n}",
                                daemon=True)
               for n, ((conn, run, terminal), log) in enumerate(zip(users, logs), start=1)]
    for thread in threads:
        thread.start()
    try:
        state.sleep_until(state.window_start, threads)
        before, driver_before = counters.take(engine_processes()), counters.take()
        if settings.transactions:
            while not state.reached.wait(0.5) and any(t.is_alive() for t in threads):
                pass
        else:
            assert state.window_end is not None
            state.sleep_until(state.window_end, threads)
        after, driver_after = counters.take(engine_processes()), counters.take()
        window_end = state.window_end if state.window_end is not None else state.now()
    finally:
        state.stop.set()
        for thread in threads:
            thread.join(JOIN_AFTER_INTERRUPT_S)
    if crashed:
        raise crashed[0]
    return _merge(state, window_end, logs, counters.delta(before, after),
                  counters.delta(driver_before, driver_after)["cpu_s"])


def _merge(state: _Run, window_end: int, logs: list[UserLog], engine: dict[str, float],
           driver_cpu_s: float) -> Outcome:
    tallies = {kind: Tally() for kind in KINDS}
    per_interval: dict[int, Counter[str]] = {}
    errors_outside: Counter[str] = Counter()
    committed_all: Counter[str] = Counter()
    first_errors: dict[str, str] = {}
    for log in logs:
        for kind, tally in log.tallies.items():
            tallies[kind].merge(tally)
        for index, committed in log.intervals.items():
            per_interval.setdefault(index, Counter()).update(committed)
        errors_outside.update(log.errors_outside)
        committed_all.update(log.committed_all)
        for kind, message in log.first_errors.items():
            first_errors.setdefault(kind, message)
    window = max(window_end - state.window_start, 0)
    count = -(-window // state.interval_ns) if window else 0
    intervals = [Interval(min(state.interval_ns, window - i * state.interval_ns) / 1e9,
                          per_interval.get(i, Counter())) for i in range(count)]
    return Outcome(window_s=window / 1e9, tallies=tallies, intervals=intervals,
                   committed_all=committed_all, errors_outside=errors_outside,
                   first_errors=first_errors, gave_up=[log.gave_up for log in logs if log.gave_up],
                   engine=engine, driver_cpu_s=driver_cpu_s)
