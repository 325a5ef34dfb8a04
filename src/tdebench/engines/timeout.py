"""Statement timeouts for engines without one of their own (DuckDB, SQLite).

One watchdog thread per connection sleeps until the running statement's deadline and then
calls the engine's `interrupt()`. Starting and ending a statement only sets a deadline under
a lock, so a timeout costs microseconds per query, not a thread per query.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tdebench.engines.base import QueryTimeout


class Watchdog:
    def __init__(self, interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt
        self._seconds: float | None = None
        self._deadline: float | None = None
        self._fired = False
        self._closed = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def set_timeout(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError("a timeout must be positive")
        self._seconds = seconds
        if seconds is not None and self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="tdebench-watchdog", daemon=True)
            self._thread.start()

    @contextmanager
    def statement(self) -> Iterator[None]:
        """Guard one statement; QueryTimeout if the watchdog had to interrupt it."""
        if self._seconds is None:
            yield
            return
        with self._cond:
            self._fired = False
            self._deadline = time.monotonic() + self._seconds
            self._cond.notify()
        try:
            yield
        except Exception:
            if self._fired:
                raise QueryTimeout(f"statement stopped after the {self._seconds:g} s timeout") from None
            raise
        finally:
            with self._cond:
                self._deadline = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._fired = True
                self._deadline = None
                self._interrupt()
