"""Python's cyclic garbage collector, paused where tdebench must not let it run: while a measured
statement's clock runs, and while a run's records are read (many new objects, none of them garbage).

A collection starts whenever enough Python objects were allocated, wherever that happens:
inside a query's interval (the driver building result rows) it is the harness's pause, not
the engine's time (`timeit` pauses the collector for the same reason); while a run's tens of
thousands of records are made, each pass scans them all again, a fifth of the read.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class GcPause:
    """Pauses the collector while at least one holder runs: measured statements (concurrent ones:
    throughput streams) and reads of a run. It is resumed, if it was on, when the last holder
    ends; the garbage that piled up is then collected at the next allocation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._resume = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._running == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0 and self._resume:
                    gc.enable()

    @property
    def held(self) -> bool:
        """Whether a holder (of any thread) has the collector paused now."""
        return self._running > 0


GC_PAUSE = GcPause()  # one per process: the collector is process-wide
