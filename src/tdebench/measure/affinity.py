"""Pinning the engine and the driver to chosen CPUs (the plan's `pin_cpus`).

On a small machine the engine and the driver (tdebench issuing the statements, the resource
sampler, the oltp virtual users) compete for the same cores, and the scheduler moves them
around between repetitions; pinned to cores of their own they stop taking turns.

A server's processes (the server and everything it forked) are pinned to the engine's CPUs
and tdebench itself to the driver's. An embedded engine runs inside tdebench, so engine and
driver are one process: it is pinned to the engine's CPUs and the driver's are not used.
Pinning is applied again every time the engine's processes are asked for (before and after
every measured step, and by the sampler once a second), so a server restarted for a cold
cache is pinned before its next step is measured; children forked later (PostgreSQL's
backends) inherit their parent's CPUs. Linux only (sched_setaffinity).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil


def available_cpus() -> frozenset[int]:
    """The CPUs this process may run on: the ones a plan can pin to."""
    return frozenset(os.sched_getaffinity(0))


@dataclass(frozen=True)
class CpuPinning:
    """The plan's `pin_cpus = { engine = [1], driver = [0] }`."""

    engine: tuple[int, ...]
    driver: tuple[int, ...]


def _pin_own_threads(cpus: Sequence[int]) -> None:
    """Every thread of this process (sched_setaffinity sets one thread); threads started later
    inherit the affinity of the thread that starts them."""
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except (ProcessLookupError, FileNotFoundError):  # a thread that ended meanwhile
            continue


def _pin(process: psutil.Process, cpus: list[int]) -> None:
    try:
        for member in (process, *process.children(recursive=True)):
            try:
                if member.cpu_affinity() != cpus:
                    member.cpu_affinity(cpus)
            except psutil.NoSuchProcess:
                continue
            except psutil.AccessDenied:
                raise PermissionError(f"pin_cpus: not allowed to pin the engine's process {member.pid} "
                                      "(another user's: run tdebench as that user or as root, or drop "
                                      "pin_cpus)") from None
    except psutil.NoSuchProcess:
        pass


def apply(pinning: CpuPinning, processes: Sequence[psutil.Process] | None) -> None:
    """Pin the engine's `processes` (None: an embedded engine, which is this process) and
    this process as the module's docstring says."""
    own = os.getpid()
    engine = sorted(pinning.engine)
    embedded = processes is None or any(process.pid == own for process in processes)
    _pin_own_threads(engine if embedded else sorted(pinning.driver))
    for process in processes or ():
        if process.pid != own:
            _pin(process, engine)


def pinned(pinning: CpuPinning | None,
           processes: Callable[[], Sequence[psutil.Process] | None]) -> Callable[[], Sequence[psutil.Process] | None]:
    """`processes` (a database's `engine_processes`), pinning what it returns on every call;
    `processes` itself when there is nothing to pin."""
    if pinning is None:
        return processes

    def engine_processes() -> Sequence[psutil.Process] | None:
        found = processes()
        apply(pinning, found)
        return found

    return engine_processes


def applied(processes: Sequence[psutil.Process] | None) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    """The CPUs the engine's processes and this process (the driver) may run on now, as read
    back from the kernel: (engine, driver). The engine's are None when a server has no process
    running; for an embedded engine both are this process's."""
    driver = tuple(sorted(os.sched_getaffinity(0)))
    if processes is None:
        return driver, driver
    cpus: set[int] = set()
    for process in processes:
        try:
            cpus.update(process.cpu_affinity())
        except psutil.NoSuchProcess:
            continue
    return (tuple(sorted(cpus)) or None), driver


def release(cpus: Iterable[int]) -> None:
    """Give this process (every thread) back the CPUs it had before a trial pinned it."""
    _pin_own_threads(sorted(cpus))
