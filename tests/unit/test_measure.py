import os

import pytest

from tdebench.measure import process
from tdebench.measure.clock import FakeClock, MonotonicClock

METRICS = ["cpu_s", "read_bytes", "write_bytes", "read_chars", "write_chars"]


def test_delta_names_and_cpu_work():
    before = process.take()
    total = 0
    while process.delta(before, process.take())["cpu_s"] < 0.05:
        total += sum(i * i for i in range(10_000))
    spent = process.delta(before, process.take())
    assert list(spent) == METRICS
    assert all(isinstance(v, float) for v in spent.values())
    assert spent["cpu_s"] >= 0.05


def test_delta_after_writing_and_fsync(tmp_path):
    before = process.take()
    with open(tmp_path / "f", "wb") as fh:
        fh.write(os.urandom(1 << 20))
        fh.flush()
        os.fsync(fh.fileno())
    spent = process.delta(before, process.take())
    assert spent["write_chars"] >= 1 << 20
    assert spent["write_bytes"] >= 0


def test_delta_is_plain_subtraction_per_pid_summed():
    a = process.ProcessCounters(1.0, 10, 20, 30, 40)
    b = process.ProcessCounters(1.5, 15, 20, 130, 41)
    assert process.delta({1: a}, {1: b}) == {"cpu_s": 0.5, "read_bytes": 5.0, "write_bytes": 0.0,
                                             "read_chars": 100.0, "write_chars": 1.0}
    # pid 2 started in between (counts from zero); pid 3 ended in between (its interval is lost)
    started = process.ProcessCounters(0.25, 1, 2, 3, 4)
    assert process.delta({1: a, 3: a}, {1: b, 2: started}) == {
        "cpu_s": 0.75, "read_bytes": 6.0, "write_bytes": 2.0, "read_chars": 103.0, "write_chars": 5.0}


def test_take_of_a_process_tree():
    import subprocess
    import sys

    import psutil

    child = subprocess.Popen([sys.executable, "-c", "import time; sum(range(3_000_000)); time.sleep(5)"])
    try:
        me = psutil.Process()
        snapshot = process.take([me, *me.children()])
        assert set(snapshot) >= {me.pid, child.pid}
    finally:
        child.kill()
        child.wait()
    assert child.pid not in process.take([psutil.Process(child.pid)] if psutil.pid_exists(child.pid) else [])


def test_fake_clock():
    clock = FakeClock()
    assert clock.now_ns() == 0
    clock.advance(1_500)
    assert clock.now_ns() == 1_500
    assert FakeClock(start_ns=7).now_ns() == 7
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_monotonic_clock_moves_forward():
    clock = MonotonicClock()
    first = clock.now_ns()
    assert clock.now_ns() >= first
