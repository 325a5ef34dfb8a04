"""Taking a measurement: clock and process counters around a step, appended to the store at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Protocol, TypeVar

import psutil

from tdebench.collector import GC_PAUSE
from tdebench.measure.clock import Clock
from tdebench.measure import process as counters
from tdebench.results import Measurement, TrialKey

T = TypeVar("T")


@dataclass
class Step:
    """What a workload may set on a step while it runs: the answer check of a query."""

    answer: str | None = None




class Appends(Protocol):
    """Where a Recorder puts each measurement: a ResultStore, or a sink that keeps nothing."""

    def append(self, record: Measurement) -> None: ...


@dataclass
class Recorder:
    """Measures the steps of one trial and stores each the moment it ends.

    `process=False` skips the process counters, for steps that run concurrently with others
    (throughput streams), where this process's CPU time and I/O cannot be given to one query.
    `timed` statements run with Python's garbage collector paused (`collector.GcPause`) unless
    `pause_gc` is False (bench/precision.py's reference arm).
    """

    store: Appends
    trial: TrialKey
    clock: Clock
    # the engine's processes whose CPU and I/O are measured; None, or None from it: this process (embedded engines)
    processes: Callable[[], Sequence[psutil.Process] | None] | None = None
    pause_gc: bool = True
    # False: the engine's processes cannot be watched (a server tdebench did not start), so no
    # process counters are recorded rather than this process's passed off as the engine's
    process_counters: bool = True
    # of those processes, a layer's below the engine (Database.layer_processes: gocryptfs), whose
    # CPU time, reads and writes are recorded apart as well (process.LAYER_CPU, LAYER_READ, LAYER_WRITTEN)
    layer_processes: Callable[[], Sequence[psutil.Process]] | None = None
    # what the server itself counts, cumulative (Database.server_counters); recorded as server_<name> deltas
    server_counters: Callable[[], dict[str, float] | None] | None = None

    @contextmanager
    def measure(self, test: str, step: str, *, stream: int | None = None, warmup: bool = False,
                process: bool = True, pass_number: int = 1) -> Iterator[Step]:
        current = Step()
        stop = self._start(process)
        yield current
        metrics = stop()
        self.record(test, step, metrics, stream=stream, warmup=warmup, answer=current.answer,
                    pass_number=pass_number)

    def timed(self, work: Callable[[], T], *, process: bool = True) -> tuple[T, dict[str, float]]:
        """Run `work` and return its result with its metrics, without storing them yet (for
        steps whose result must be checked before the measurement is recorded)."""
        with GC_PAUSE() if self.pause_gc else nullcontext():
            stop = self._start(process)
            result = work()
            metrics = stop()
        return result, metrics

    def _start(self, process: bool) -> Callable[[], dict[str, float]]:
        server = self.server_counters() if process and self.server_counters is not None else None
        before = self._counters() if process and self.process_counters else None
        start = self.clock.now_ns()

        def stop() -> dict[str, float]:
            metrics: dict[str, float] = {"elapsed_s": (self.clock.now_ns() - start) / 1e9}
            if before is not None:
                layer = {p.pid for p in self.layer_processes()} if self.layer_processes is not None else set()
                metrics.update(counters.delta(before, self._counters(), layer))
            if server is not None and self.server_counters is not None:
                after = self.server_counters() or {}
                metrics.update({f"server_{name}": after[name] - value for name, value in server.items()
                                if name in after})
            return metrics

        return stop

    def _counters(self) -> counters.Snapshot:
        return counters.take(self.processes() if self.processes is not None else None)

    def record(self, test: str, step: str, metrics: dict[str, float], *, stream: int | None = None,
               warmup: bool = False, answer: str | None = None, pass_number: int = 1, note: str | None = None) -> None:
        self.store.append(Measurement(trial=self.trial, test=test, step=step, metrics=metrics,
                                      stream=stream, warmup=warmup, answer=answer, pass_number=pass_number, note=note))
