"""CPU time and I/O of a backup or a restore: the engine's processes and the tools it ran.

The Recorder measures the engine's processes (a server's process tree; this process for an
embedded engine). Backup tools (mariadb-backup, pg_basebackup, gzip, tar, …) are children of
this process that have ended, and been waited for, by the time the step ends, so the kernel
has added their CPU time and block I/O to this process's `RUSAGE_CHILDREN`: its difference
across the step is what the tools cost. A server started during the step (a restore) is still
running at its end and is measured as an engine process instead, from zero.
"""

from __future__ import annotations

import dataclasses
import resource
from collections.abc import Callable, Iterable
from typing import TypeVar

import psutil

from tdebench.engines.base import Database
from tdebench.measure.recorder import Recorder

T = TypeVar("T")
SECTOR = 512  # Linux counts a process's block I/O in ru_inblock/ru_oublock in 512-byte units


def _children() -> tuple[float, float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_inblock * SECTOR, usage.ru_oublock * SECTOR


def processes_of(databases: Iterable[Database]) -> Callable[[], list[psutil.Process]]:
    """The processes of every database, each once (an embedded engine's are this process)."""

    def processes() -> list[psutil.Process]:
        found: dict[int, psutil.Process] = {}
        for database in databases:
            own = database.engine_processes()
            for process in own if own is not None else [psutil.Process()]:
                found.setdefault(process.pid, process)
        return list(found.values())

    return processes


def timed(recorder: Recorder, work: Callable[[], T], databases: Iterable[Database]) -> tuple[T, dict[str, float]]:
    """Run `work`; its metrics are those of the databases' processes plus the tools it ran:
    `cpu_s`, `read_bytes` and `write_bytes` include the tools', and `tool_cpu_s` is their share."""
    measuring = dataclasses.replace(recorder, processes=processes_of(list(databases)))
    cpu_before, read_before, written_before = _children()
    result, metrics = measuring.timed(work)
    cpu_after, read_after, written_after = _children()
    metrics["tool_cpu_s"] = cpu_after - cpu_before
    metrics["cpu_s"] = metrics.get("cpu_s", 0.0) + metrics["tool_cpu_s"]
    metrics["read_bytes"] = metrics.get("read_bytes", 0.0) + (read_after - read_before)
    metrics["write_bytes"] = metrics.get("write_bytes", 0.0) + (written_after - written_before)
    return result, metrics
