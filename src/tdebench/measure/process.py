"""CPU time and I/O of the tdebench process, read before and after a measured step.

For embedded engines (DuckDB, SQLite) the engine runs inside this process, so these are the
engine's own costs. `read_bytes`/`write_bytes` are what reached the storage layer (page
cache misses and write-back), `read_chars`/`write_chars` what passed through read/write
system calls, cached or not; the pair tells a warm run from a cold one. Linux only
(/proc/self/io).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import psutil


@dataclass(frozen=True)
class ProcessCounters:
    cpu_s: float  # user + system, all threads of this process (not its children)
    read_bytes: int
    write_bytes: int
    read_chars: int
    write_chars: int


def take() -> ProcessCounters:
    """The counters now (of the calling process: a forked worker reads its own)."""
    process = psutil.Process()
    cpu = process.cpu_times()
    io = process.io_counters()
    return ProcessCounters(cpu_s=cpu.user + cpu.system, read_bytes=io.read_bytes, write_bytes=io.write_bytes,
                           read_chars=io.read_chars, write_chars=io.write_chars)


def delta(before: ProcessCounters, after: ProcessCounters) -> dict[str, float]:
    """What was spent between two snapshots, as metrics named for `Measurement`."""
    start = asdict(before)
    return {name: float(value - start[name]) for name, value in asdict(after).items()}
