"""Clocks: the runner reads time only through a `Clock`, so its tests can use an exact fake."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ns(self) -> int:
        """Nanoseconds since an arbitrary, fixed origin; only differences mean anything."""
        ...


class MonotonicClock:
    """The real clock: `time.perf_counter_ns`, monotonic and of the highest resolution."""

    def now_ns(self) -> int:
        return time.perf_counter_ns()


class FakeClock:
    """A clock that moves only when told to, for exact, instant tests."""

    def __init__(self, start_ns: int = 0) -> None:
        self._now = start_ns

    def now_ns(self) -> int:
        return self._now

    def advance(self, ns: int) -> None:
        if ns < 0:
            raise ValueError("a clock cannot go back")
        self._now += ns
