"""CPU time and I/O of the engine's processes, read before and after a measured step.

For embedded engines (DuckDB, SQLite) the engine runs inside this process, so these are the
engine's own costs. For servers they are summed over the server's process tree (PostgreSQL
forks a backend per connection). `read_bytes`/`write_bytes` are what reached the storage
layer (page cache misses and write-back), `read_chars`/`write_chars` what passed through
read/write system calls, cached or not; the pair tells a warm run from a cold one. Linux
only (/proc/<pid>/io; reading another user's process needs root).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import psutil

_SELF = psutil.Process()


@dataclass(frozen=True)
class ProcessCounters:
    cpu_s: float  # user + system, all threads of the process (not its children)
    read_bytes: int
    write_bytes: int
    read_chars: int
    write_chars: int


ZERO = ProcessCounters(0.0, 0, 0, 0, 0)
Snapshot = dict[int, ProcessCounters]


def counters_of(process: psutil.Process) -> ProcessCounters:
    with process.oneshot():
        cpu = process.cpu_times()
        io = process.io_counters()
    return ProcessCounters(cpu_s=cpu.user + cpu.system, read_bytes=io.read_bytes, write_bytes=io.write_bytes,
                           read_chars=io.read_chars, write_chars=io.write_chars)


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


def delta(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """What was spent between two snapshots, as metrics named for `Measurement`.

    Per pid: a process that started in between counts from zero; one that ended in between
    is missing from `after` and its last interval is lost (undercounted, never invented).
    """
    names = [f.name for f in fields(ProcessCounters)]
    total = dict.fromkeys(names, 0.0)
    for pid, end in after.items():
        start = asdict(before.get(pid, ZERO))
        for name, value in asdict(end).items():
            total[name] += value - start[name]
    return total
