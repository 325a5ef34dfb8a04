import os
import threading
import time
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tdebench.measure import process
from fake_clock import FakeClock
from tdebench.measure.clock import MonotonicClock

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


def _file_system_type(path: Path) -> str:
    mounts = [p for p in psutil.disk_partitions(all=True) if path.is_relative_to(p.mountpoint)]
    return max(mounts, key=lambda p: len(p.mountpoint)).fstype if mounts else "unknown"


def test_delta_after_writing_and_fsync(tmp_path: Path) -> None:
    """What passed through write() and what reached the storage layer both grew by at least
    the bytes written and fsynced (the kernel counts a disk-backed file's pages as they are
    dirtied; a RAM file system has no storage layer, so there write_bytes cannot grow)."""
    size = 1 << 20
    before = process.take()
    with open(tmp_path / "f", "wb") as fh:
        fh.write(os.urandom(size))
        fh.flush()
        os.fsync(fh.fileno())
    spent = process.delta(before, process.take())
    assert spent["write_chars"] >= size
    if _file_system_type(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is in RAM: nothing reaches a storage layer to count in write_bytes")
    assert spent["write_bytes"] >= size


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
    child = subprocess.Popen([sys.executable, "-c", "import time; sum(range(3_000_000)); time.sleep(5)"])
    try:
        me = psutil.Process()
        snapshot = process.take([me, *me.children()])
        assert set(snapshot) >= {me.pid, child.pid}
        gone = psutil.Process(child.pid)
    finally:
        child.kill()
        child.wait()
    # a process that ended since it was listed is left out, not an error; the living one stays
    assert set(process.take([me, gone])) == {me.pid}


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


def test_a_layers_cpu_reads_and_writes_are_recorded_apart_and_within_the_total():
    engine, layer = process.ProcessCounters(1.0, 0, 0, 10, 20), process.ProcessCounters(2.0, 0, 0, 100, 200)
    spent = process.delta({1: engine, 2: layer}, {1: process.ProcessCounters(1.25, 0, 0, 15, 30),
                                                  2: process.ProcessCounters(2.5, 0, 0, 140, 260)}, layer={2})
    assert spent["cpu_s"] == 0.75 and spent[process.LAYER_CPU] == 0.5
    assert (spent["read_chars"], spent["write_chars"]) == (45, 70)
    assert (spent[process.LAYER_READ], spent[process.LAYER_WRITTEN]) == (40, 60)
    assert process.LAYER_READ not in process.delta({1: engine}, {1: engine})  # no layer, no layer metrics


def test_this_processes_reads_leave_out_tdebenchs_helper_threads(tmp_path):
    """The capture's scans of the trial's files (a helper thread reading) are no engine's
    reads, while the helper runs and after it ended; the step's own reads count."""
    data = tmp_path / "data"
    data.write_bytes(os.urandom(1 << 20))
    reading, stop = threading.Event(), threading.Event()

    def scan() -> None:
        data.read_bytes()
        reading.set()
        stop.wait()

    helper = threading.Thread(target=process.helper(scan))
    before = process.take()
    helper.start()
    reading.wait()
    assert process.delta(before, process.take())["read_chars"] < 64 << 10  # running
    stop.set()
    helper.join()
    assert process.delta(before, process.take())["read_chars"] < 64 << 10  # ended
    before = process.take()
    data.read_bytes()
    assert process.delta(before, process.take())["read_chars"] >= 1 << 20


def test_this_processes_cpu_leaves_out_tdebenchs_helper_threads():
    """A helper (the sampler, the capture) burning CPU beside an idle engine adds nothing to the
    engine's CPU time, while it runs and after it ended; the step's own work is counted in ns."""
    stop = threading.Event()

    def burn() -> None:
        while not stop.is_set():
            sum(i * i for i in range(1000))

    helper = threading.Thread(target=process.helper(burn))
    before = process.take()
    helper.start()
    time.sleep(0.3)
    stop.set()
    helper.join()
    assert process.delta(before, process.take())["cpu_s"] < 0.05
    before = process.take()
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
        pass
    spent = process.delta(before, process.take())["cpu_s"]
    assert 0.02 <= spent < 0.1 and round(spent * 1e9) % 10_000_000 != 0
