"""The report's sources gathered on this machine's CPUs.

A report's sources (document.SOURCES) are independent functions of the run and its summary
records, and most of a report's build is theirs: their plots, which matplotlib draws on one core
(a 248-trial run: about 6 of its 10 seconds). Where the process may fork, they run in forked
workers, which inherit the run and the records instead of receiving a copy of them, and send back
only what they made (a Content pickles: its tables, sentences and PNG bytes), in the sources'
order. A process that should not fork gathers them one after another, with the same result: one
with a single CPU to run on, or with another thread alive, which a fork could catch holding a lock
the worker then waits on for ever (the run's progress bar draws from a thread of its own).

Ctrl-C is the parent's alone: the workers ignore SIGINT, and the parent's interrupt ends them.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")

MAX_WORKERS = 4
"""Workers at most: a report's costliest source (its resource plots) takes nearly half of the
sources' time (the cost-curve example: 2.8 of 6.0 s), so more workers than about three cannot finish
sooner."""

_WORK: tuple[Sequence[Callable[..., Any]], tuple[Any, ...]] | None = None
"""What the forked workers run: the sources and their arguments, set before the fork."""


def workers_here() -> int:
    """How many workers gathering may use here: the CPUs this process may run on (at most
    MAX_WORKERS); 1, gathering in this process, where a fork is not safe."""
    if threading.active_count() > 1 or multiprocessing.current_process().daemon:
        return 1
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


class Gathering(Generic[T]):
    """The results of `functions`, each called with `args`, computed by forked workers while the
    caller goes on (`results` waits for them); in this process where `workers` is 1. A context
    manager: leaving it ends the workers."""

    def __init__(self, functions: Sequence[Callable[..., T]], args: tuple[Any, ...], workers: int) -> None:
        global _WORK
        self._functions, self._args = functions, args
        self._pool: Any = None
        self._pending: Any = None
        if workers > 1 and len(functions) > 1:
            _WORK = (functions, args)
            try:
                self._pool = multiprocessing.get_context("fork").Pool(workers, initializer=_ignore_interrupts)
            finally:
                _WORK = None  # the workers have their copy; the parent keeps no reference to the run
            self._pending = self._pool.map_async(_one, range(len(functions)), chunksize=1)

    def results(self) -> list[T]:
        if self._pool is None:
            return [function(*self._args) for function in self._functions]
        return self._pending.get()

    def __enter__(self) -> "Gathering[T]":
        return self

    def __exit__(self, *exc: object) -> None:
        """The workers ended, whether their results were taken or the caller failed before."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()


def _one(index: int) -> Any:
    assert _WORK is not None, "a gathering worker runs only in a process forked by Gathering"
    functions, args = _WORK
    return functions[index](*args)


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
