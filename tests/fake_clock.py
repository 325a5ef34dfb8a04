"""A clock for tests: the runner reads time only through a `measure.clock.Clock`, so its tests
can move it by hand and get exact, instant timings."""

from __future__ import annotations


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
