"""The resource sampler: system CPU, engine memory and disk activity over a trial's time.

Madyatmadja et al. (2021) and Carvalho (2025) (docs/references.md) report CPU %, memory %
and disk-busy % beside their timings, to show whether the machine was in the same state for
every configuration. A background thread takes one `Sample` per interval (default 1 s) and
appends it to the store at once, with the CPU that processes other than the benchmark's used
meanwhile (measure/load.py) and the load average: the report flags a trial measured while the
machine was busy.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psutil

from tdebench.measure.load import OthersCpu
from tdebench.measure.process import helper
from tdebench.results import Sample, TrialKey
from tdebench.store import OutputError, ResultStore


def _busiest_disk_ms(counters: Mapping[str, object]) -> dict[str, int]:
    return {name: getattr(c, "busy_time", 0) for name, c in counters.items()}


Processes = Callable[[], Sequence[psutil.Process] | None]
"""A trial's engine processes, asked for at each sample (None from it: this process)."""


def _rss(processes: Sequence[psutil.Process]) -> int:
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


def load_1m() -> float | None:
    """The machine's 1-minute load average, None where the system has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


class Sampler:
    """Samples until stopped; use as a context manager around the work it watches.

    `beside`: the other trials of a lockstep group, which run at the same time: each gets the
    same machine-wide figures and its own engine's memory, and their engines' CPU is not
    counted as other processes' (one sampler per group: psutil's machine CPU % is per process)."""

    def __init__(self, store: ResultStore, trial: TrialKey, interval_s: float = 1.0,
                 processes: Processes | None = None, *,
                 beside: Sequence[tuple[TrialKey, Processes | None]] = ()) -> None:
        self.store = store
        self.watched = [(trial, processes), *beside]
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=helper(self._run), name="tdebench-sampler", daemon=True)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @staticmethod
    def _engine(processes: Processes | None) -> list[psutil.Process]:
        found = processes() if processes is not None else None
        return list(found) if found is not None else [psutil.Process()]

    def _all_engines(self) -> list[psutil.Process]:
        """Every watched trial's engine processes (OthersCpu adds this process itself)."""
        return [p for _, processes in self.watched if processes is not None for p in (processes() or ())]

    def _run(self) -> None:
        start = time.monotonic()
        total_memory = psutil.virtual_memory().total
        psutil.cpu_percent(interval=None)  # starts the system CPU measurement interval
        disk = psutil.disk_io_counters(perdisk=False)
        busy = _busiest_disk_ms(psutil.disk_io_counters(perdisk=True) or {})
        others = OthersCpu(self._all_engines)
        last = time.monotonic()
        while not self._stop.wait(self.interval_s):
            now = time.monotonic()
            new_disk = psutil.disk_io_counters(perdisk=False)
            new_busy = _busiest_disk_ms(psutil.disk_io_counters(perdisk=True) or {})
            interval_ms = (now - last) * 1000
            busiest = max((new_busy[d] - busy.get(d, new_busy[d]) for d in new_busy), default=0)
            shared: dict[str, Any] = dict(  # Sample's fields that every watched trial shares
                t_s=now - start,
                cpu_pct=psutil.cpu_percent(interval=None),
                disk_read_bytes=float(new_disk.read_bytes - disk.read_bytes) if disk and new_disk else 0.0,
                disk_write_bytes=float(new_disk.write_bytes - disk.write_bytes) if disk and new_disk else 0.0,
                disk_busy_pct=min(100.0, 100.0 * busiest / interval_ms) if interval_ms else 0.0,
                others_cpu_pct=others.reading(),
                load_1m=load_1m(),
            )
            for trial, processes in self.watched:
                rss = _rss(self._engine(processes))
                try:
                    self.store.append(Sample(trial=trial, mem_bytes=float(rss), mem_pct=100.0 * rss / total_memory,
                                             **shared))
                except OutputError:  # a full disk: the run's own next write says so in one line
                    return
            disk, busy, last = new_disk, new_busy, now
