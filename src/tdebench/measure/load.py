"""How busy the machine was with work that is not the benchmark's: the CPU time of every
process other than tdebench's own process tree and the engine's processes.

It is the machine's busy CPU time (psutil's system-wide counters: user, nice, system, irq,
softirq and steal, which a hypervisor's other guests take) minus the CPU time of our
processes, per interval of the resource sampler. Subtracting ours rather than adding up the
others' catches short-lived neighbours (a compiler's many processes) that no process listing
would see.

Our processes are counted with their reaped children's time (Linux's cutime and cstime), so a
PostgreSQL backend or a backup tool that ends between two readings still counts as ours. A
child counted alive in earlier intervals is counted again when its parent reaps it, so an
interval can come out negative for the others: it is clamped at zero. The error therefore
goes one way only: a neighbour may be missed for an interval, our own work is never taken for
a neighbour's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import psutil

BUSY_OTHERS_PCT = 10.0
"""A trial is busy (report/summaries/noise.py), and the runner waits before a trial (`wait_for_quiet`),
when other processes use more than 10% of one core on average. An idle machine's background
(the kernel's threads, a shell, systemd) stays near 1–3%; at 10% of a core a neighbour takes a
few percent of a 2-core machine's time, the size of the overheads this tool has to resolve."""

ProcessKey = tuple[int, float]  # pid and start time: a pid can be reused, the pair cannot


def busy_seconds(times: object) -> float:
    """The busy CPU seconds of psutil.cpu_times() (all cores): everything but idle and I/O
    wait; guest time is already inside user time."""
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def tree_totals(roots: Iterable[psutil.Process]) -> dict[ProcessKey, float]:
    """CPU seconds so far of `roots` and all their descendants, each with its reaped children's,
    per process; a process that ends while being read is left out."""
    totals: dict[ProcessKey, float] = {}
    seen: set[int] = set()
    for root in roots:
        try:
            members = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for process in members:
            if process.pid in seen:
                continue
            seen.add(process.pid)
            try:
                with process.oneshot():
                    cpu = process.cpu_times()
                    key = (process.pid, process.create_time())
            except psutil.NoSuchProcess:
                continue
            totals[key] = cpu.user + cpu.system + cpu.children_user + cpu.children_system
    return totals


def ours_spent(before: dict[ProcessKey, float], after: dict[ProcessKey, float]) -> float:
    """CPU seconds our processes spent between two readings: a process in both counts its
    growth, a new one all of its time (it started in between), an ended one nothing more."""
    return sum(max(0.0, total - before.get(key, 0.0)) for key, total in after.items())


def others_pct(machine_busy_s: float, ours_s: float, interval_s: float) -> float:
    """The others' CPU over an interval as a percentage of one core (100 = one core busy all
    along), never below zero (see the module's docstring)."""
    if interval_s <= 0:
        return 0.0
    return max(0.0, (machine_busy_s - ours_s) / interval_s * 100.0)


class OthersCpu:
    """Reads, interval by interval, how much CPU processes other than ours used.

    `processes` names the engine's processes (None or empty for an embedded engine); this
    process and all its descendants are always ours.
    """

    def __init__(self, processes: Callable[[], Sequence[psutil.Process] | None] | None = None,
                 machine: Callable[[], object] = psutil.cpu_times,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.processes = processes
        self.machine = machine
        self.clock = clock
        self._own = psutil.Process()
        self._busy, self._ours, self._at = self._read()

    def _read(self) -> tuple[float, dict[ProcessKey, float], float]:
        engine = self.processes() if self.processes is not None else None
        return busy_seconds(self.machine()), tree_totals([self._own, *(engine or ())]), self.clock()

    def reading(self) -> float:
        """The others' CPU since the previous reading (or the start), % of one core."""
        busy, ours, at = self._read()
        pct = others_pct(busy - self._busy, ours_spent(self._ours, ours), at - self._at)
        self._busy, self._ours, self._at = busy, ours, at
        return pct


QUIET_WINDOW_S = 2.0
"""How long `wait_for_quiet` watches the others' CPU at a time: long enough that a compiler's
burst or a cron job shows, short enough to cost little before a trial of minutes."""


@dataclass(frozen=True)
class QuietWait:
    """What `wait_for_quiet` did before a trial: how long it waited beyond its first look, and
    the others' CPU (% of one core) at its last look, as the trial started."""

    waited_s: float
    others_pct: float

    @property
    def gave_up(self) -> bool:
        """The machine was still busy when the wait ran out: the trial started anyway."""
        return self.others_pct > BUSY_OTHERS_PCT


def wait_for_quiet(limit_s: float, reading: Callable[[], float], pause: Callable[[float], None],
                   busy: Callable[[float, float], None] = lambda pct, waited_s: None,
                   window_s: float = QUIET_WINDOW_S) -> QuietWait:
    """Look at the others' CPU over `window_s` (`reading`: `OthersCpu.reading`, the sampler's
    measure, read once to start the window) and, while it is above BUSY_OTHERS_PCT, wait window
    by window, `limit_s` at most, telling `busy` the reading and the time waited so far. `pause`
    sleeps; it raises to break off (Ctrl-C), so a long wait never holds up an interrupted run."""
    reading()
    pause(window_s)
    pct, waited = reading(), 0.0
    while pct > BUSY_OTHERS_PCT and waited < limit_s:
        busy(pct, waited)
        step = min(window_s, limit_s - waited)
        pause(step)
        waited += step
        pct = reading()
    return QuietWait(waited_s=round(waited, 3), others_pct=round(pct, 1))
