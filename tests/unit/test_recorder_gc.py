"""The Recorder pauses Python's garbage collector while a statement's clock runs, so a
collection (the driver allocating result rows) never lands inside a measured query; it is
resumed afterwards, also when the statement fails, and concurrent statements (throughput
streams) resume it only when the last one ends. Reading a run holds the same pause."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import pytest

from fakes import write_fake_run
from fake_clock import FakeClock
from tdebench.collector import GC_PAUSE, GcPause
from tdebench.measure.recorder import Recorder
from tdebench.results import TrialKey
from tdebench.store import RESULTS, read_run


class _Store:
    def __init__(self) -> None:
        self.records: list[object] = []

    def append(self, record: object) -> None:
        self.records.append(record)


def recorder(**kwargs) -> Recorder:
    return Recorder(_Store(), TrialKey("fake", "none", "tpch", 0.01, 1), FakeClock(), **kwargs)


@pytest.fixture(autouse=True)
def collector_on():
    # a statement another test left running would keep the pause held, and the gc.enable()
    # below would then let collections into this test's statements: name its thread
    deadline = time.monotonic() + 10
    while GC_PAUSE.held and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not GC_PAUSE.held, [t.name for t in threading.enumerate()]
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_timed_statement_runs_with_the_collector_paused_and_resumes_it() -> None:
    result, metrics = recorder().timed(lambda: gc.isenabled())
    assert result is False and "elapsed_s" in metrics
    assert gc.isenabled()


def test_no_collection_runs_inside_a_timed_statement() -> None:
    collections: list[str] = []
    here = threading.get_ident()

    def note(phase: str, info: dict) -> None:
        if threading.get_ident() == here:  # another thread's explicit gc.collect() is not this statement's
            collections.append(phase)

    def allocate_cycles() -> int:
        for _ in range(50_000):  # far past the collector's threshold
            a: list = []
            a.append(a)
        assert not gc.isenabled()
        return len(collections)

    gc.callbacks.append(note)
    try:
        inside, _ = recorder().timed(allocate_cycles)
        [[] for _ in range(10_000)]  # the next allocations outside run the pending collection
        assert inside == 0 and collections
    finally:
        gc.callbacks.remove(note)


def test_the_collector_is_resumed_after_a_failing_statement() -> None:
    def fail() -> None:
        raise RuntimeError("wrong answer")

    with pytest.raises(RuntimeError):
        recorder().timed(fail)
    assert gc.isenabled()


def test_pause_gc_false_leaves_the_collector_alone() -> None:
    result, _ = recorder(pause_gc=False).timed(lambda: gc.isenabled())
    assert result is True


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    recorder().timed(lambda: None)
    assert not gc.isenabled()


def test_concurrent_statements_resume_the_collector_when_the_last_one_ends() -> None:
    pause = GcPause()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with pause():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with pause():
            second_in.set()
            first_out.wait(5)
            seen["after the first ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"after the first ended": False}
    assert gc.isenabled()


def test_reading_a_run_holds_the_same_pause(tmp_path: Path) -> None:
    """A run's records are read with the collector paused (many new objects, none garbage) through
    the pause statements share: it is on again after the read, also after one that fails, and a
    read while a statement runs does not turn it on under the statement."""
    write_fake_run(tmp_path)
    assert read_run(tmp_path).trials and gc.isenabled()
    with GC_PAUSE():
        read_run(tmp_path)
        assert not gc.isenabled()
    assert gc.isenabled()
    (tmp_path / RESULTS).write_bytes(b"not json\n{}\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_run(tmp_path)
    assert gc.isenabled() and not GC_PAUSE.held
