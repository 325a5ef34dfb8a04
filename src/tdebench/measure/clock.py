"""Clocks: the runner reads time only through a `Clock`, so its tests can use an exact fake
(tests/fake_clock.py)."""

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

