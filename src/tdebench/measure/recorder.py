"""Taking a measurement: clock and process counters around a step, appended to the store at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import psutil

from tdebench.measure.clock import Clock
from tdebench.measure import process as counters
from tdebench.store import Measurement, ResultStore, TrialKey

T = TypeVar("T")


@dataclass
class Step:
    """What a workload may set on a step while it runs: the answer check of a query."""

    answer: str | None = None


@dataclass
class Recorder:
    """Measures the steps of one trial and stores each the moment it ends.

    `process=False` skips the process counters, for steps that run concurrently with others
    (throughput streams), where this process's CPU time and I/O cannot be given to one query.
    """

    store: ResultStore
    trial: TrialKey
    clock: Clock
    # the engine's processes whose CPU and I/O are measured; None: this process (embedded engines)
    processes: Callable[[], Sequence[psutil.Process]] | None = None

    @contextmanager
    def measure(self, test: str, step: str, *, stream: int | None = None, warmup: bool = False,
                process: bool = True) -> Iterator[Step]:
        current = Step()
        stop = self._start(process)
        yield current
        metrics = stop()
        self.record(test, step, metrics, stream=stream, warmup=warmup, answer=current.answer)

    def timed(self, work: Callable[[], T], *, process: bool = True) -> tuple[T, dict[str, float]]:
        """Run `work` and return its result with its metrics, without storing them yet (for
        steps whose result must be checked before the measurement is recorded)."""
        stop = self._start(process)
        result = work()
        return result, stop()

    def _start(self, process: bool) -> Callable[[], dict[str, float]]:
        before = self._counters() if process else None
        start = self.clock.now_ns()

        def stop() -> dict[str, float]:
            metrics: dict[str, float] = {"elapsed_s": (self.clock.now_ns() - start) / 1e9}
            if before is not None:
                metrics.update(counters.delta(before, self._counters()))
            return metrics

        return stop

    def _counters(self) -> counters.Snapshot:
        return counters.take(self.processes() if self.processes is not None else None)

    def record(self, test: str, step: str, metrics: dict[str, float], *, stream: int | None = None,
               warmup: bool = False, answer: str | None = None) -> None:
        self.store.append(Measurement(trial=self.trial, test=test, step=step, metrics=metrics,
                                      stream=stream, warmup=warmup, answer=answer))
