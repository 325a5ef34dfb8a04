"""CPU time and I/O of the engine's processes, read before and after a measured step.

CPU time is the scheduler's own account, in nanoseconds: a process's CPU-time clock
(clock_gettime of the clock `clock_getcpuclockid` names, CPUCLOCK_SCHED: the sum of
`sum_exec_runtime` over every thread the process has or had, the figure of
/proc/<pid>/task/*/schedstat's first field plus the threads that already ended). psutil's
`cpu_times` (utime + stime of /proc/<pid>/stat) counts clock ticks of 10 ms, so a 2 ms query
read 0.00 or 0.01 s and an overhead against a 0.0 s baseline came out infinite.

Whose CPU time: for a server, its process tree (PostgreSQL forks a backend per connection),
each process's clock. For an embedded engine (DuckDB, SQLite) the engine runs inside this
process, on the calling thread (SQLite) or on worker threads of its own (DuckDB's task
scheduler), so this process's clock is read less tdebench's helper threads (`HELPERS`: the
resource sampler, the transient capture, the query watchdog), which run beside the engine and
are no part of its cost. The calling thread's own work around the engine call (the driver
building result rows) stays in, as it does in the elapsed time. What a helper thread spent is
kept once it ends, so the subtraction stays exact when one ends mid-step. A process that ended
between two readings loses its last interval (undercounted, never invented): a server's
short-lived child (a PostgreSQL parallel worker) is counted only while it is seen.

`read_bytes`/`write_bytes` are what reached the storage layer (page cache misses and
write-back), `read_chars`/`write_chars` what passed through read/write system calls, cached or
not (what an engine that encrypts its pages had to decrypt and encrypt); the pair tells a warm
run from a cold one. These are the process's (/proc/<pid>/io), for this process less the helper
threads' (/proc/self/task/<tid>/io: the capture's scans of the trial's files are no engine's
reads), as with the CPU time. A layer's daemon's reads and writes are also recorded apart
(`LAYER_READ`, `LAYER_WRITTEN`): what gocryptfs read from and wrote to its cipher files is what it
decrypted and encrypted. Linux only (/proc/<pid>/io; reading another user's process needs root).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from itertools import count

import psutil

_SELF = psutil.Process()
_CPUCLOCK_SCHED = 2  # the kernel's per-process CPU clock that counts scheduled time in ns


@dataclass(frozen=True)
class ProcessCounters:
    cpu_s: float  # scheduled CPU time, ns resolution, of every thread (this process: less HELPERS)
    read_bytes: int
    write_bytes: int
    read_chars: int
    write_chars: int


ZERO = ProcessCounters(0.0, 0, 0, 0, 0)
Snapshot = dict[int, ProcessCounters]


_IO_FIELDS = {"read_bytes": "read_bytes", "write_bytes": "write_bytes", "rchar": "read_chars",
              "wchar": "write_chars"}  # /proc/…/io's names → ProcessCounters's


def _thread_io(path: str) -> dict[str, int]:
    """A thread's I/O counters (its /proc/…/task/<tid>/io) by ProcessCounters's names; zeros
    when it cannot be read (the thread ended)."""
    found = dict.fromkeys(_IO_FIELDS.values(), 0)
    try:
        with open(path) as counters:
            for line in counters:
                name, _, value = line.partition(":")
                if name in _IO_FIELDS:
                    found[_IO_FIELDS[name]] = int(value)
    except OSError:
        pass
    return found


class HelperThreads:
    """tdebench's own threads that run beside an embedded engine (the sampler, the transient
    capture, the query watchdog): each runs its body inside `running()`, so that their CPU time
    and I/O, which this process's counters also count, can be taken out of the engine's
    (`cpu_ns`, `io`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, tuple[int, int]] = {}  # token → (thread ident, its tid), while the helper runs
        self._ended_ns = 0  # CPU time of the helpers that ended
        self._ended_io = dict.fromkeys(_IO_FIELDS.values(), 0)  # their I/O
        self._tokens = count()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around a helper thread's body, in that thread."""
        token = next(self._tokens)
        with self._lock:
            self._live[token] = (threading.get_ident(), threading.get_native_id())
        try:
            yield
        finally:
            with self._lock:  # gone from `_live` before its counters are: never read after the thread ends
                del self._live[token]
                self._ended_ns += time.thread_time_ns()
                for name, value in _thread_io("/proc/thread-self/io").items():
                    self._ended_io[name] += value

    def cpu_ns(self) -> int:
        """The CPU time every helper has used so far, ended ones included (monotonic)."""
        with self._lock:
            return self._ended_ns + sum(time.clock_gettime_ns(time.pthread_getcpuclockid(ident))
                                        for ident, _ in self._live.values())

    def io(self) -> dict[str, int]:
        """The I/O every helper has done so far, ended ones included, by ProcessCounters's names."""
        with self._lock:
            total = dict(self._ended_io)
            for _, tid in self._live.values():
                for name, value in _thread_io(f"/proc/self/task/{tid}/io").items():
                    total[name] += value
            return total


HELPERS = HelperThreads()


def helper(body: Callable[[], None]) -> Callable[[], None]:
    """`body` as a helper thread's target: run inside `HELPERS.running()`."""

    def run() -> None:
        with HELPERS.running():
            body()

    return run


def process_cpu_ns(pid: int) -> int:
    """The process's scheduled CPU time in ns, all its threads, ended ones included (its CPU-time
    clock, as `clock_getcpuclockid` makes its id: MAKE_PROCESS_CPUCLOCK). ProcessLookupError
    when it is gone."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | _CPUCLOCK_SCHED)
    except OSError as exc:  # EINVAL: no such process (any more)
        raise ProcessLookupError(pid) from exc


def engine_cpu_ns(pid: int) -> int:
    """`process_cpu_ns`, less the helper threads' when `pid` is this process."""
    if pid != os.getpid():
        return process_cpu_ns(pid)
    total = process_cpu_ns(pid)  # first: a helper's time between the two reads is taken out, never added
    return total - HELPERS.cpu_ns()


def counters_of(process: psutil.Process) -> ProcessCounters:
    """The process's counters; this process's less its helper threads' (`HELPERS`)."""
    try:
        cpu_ns = engine_cpu_ns(process.pid)
    except ProcessLookupError:
        raise psutil.NoSuchProcess(process.pid) from None
    io = process.io_counters()
    helpers = HELPERS.io() if process.pid == os.getpid() else dict.fromkeys(_IO_FIELDS.values(), 0)
    return ProcessCounters(cpu_s=cpu_ns / 1e9, read_bytes=io.read_bytes - helpers["read_bytes"],
                           write_bytes=io.write_bytes - helpers["write_bytes"],
                           read_chars=io.read_chars - helpers["read_chars"],
                           write_chars=io.write_chars - helpers["write_chars"])


def take(processes: Sequence[psutil.Process] | None = None) -> Snapshot:
    """The counters now, per pid, of `processes` (default: this process). A process that
    ended meanwhile is left out."""
    snapshot: Snapshot = {}
    for process in processes if processes is not None else (_SELF,):
        try:
            snapshot[process.pid] = counters_of(process)
        except psutil.NoSuchProcess:
            continue
    return snapshot


LAYER_CPU, LAYER_READ, LAYER_WRITTEN = "layer_cpu_s", "layer_read_chars", "layer_write_chars"
"""The metrics of a layer below the engine (gocryptfs), recorded apart: its CPU time and what it
read and wrote through system calls (its cipher files); each is part of the whole configuration's
`cpu_s`, `read_chars`, `write_chars` too."""


def delta(before: Snapshot, after: Snapshot, layer: Collection[int] = ()) -> dict[str, float]:
    """What was spent between two snapshots, as metrics named for `Measurement`; with `layer`
    (the pids of a layer below the engine), also their CPU time, reads and writes apart
    (LAYER_CPU, LAYER_READ, LAYER_WRITTEN).

    Per pid: a process that started in between counts from zero; one that ended in between
    is missing from `after` and its last interval is lost (undercounted, never invented).
    """
    names = [f.name for f in fields(ProcessCounters)]
    total = dict.fromkeys(names, 0.0)
    apart = {LAYER_CPU: "cpu_s", LAYER_READ: "read_chars", LAYER_WRITTEN: "write_chars"} if layer else {}
    total.update(dict.fromkeys(apart, 0.0))
    for pid, end in after.items():
        start, now = asdict(before.get(pid, ZERO)), asdict(end)
        for name, value in now.items():
            total[name] += value - start[name]
        if pid in layer:
            for metric, name in apart.items():
                total[metric] += now[name] - start[name]
    return total
