"""Other processes' CPU (measure/load.py) and CPU pinning (measure/affinity.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from types import SimpleNamespace

import psutil
import pytest

from tdebench.measure import affinity
from tdebench.measure.load import OthersCpu, busy_seconds, others_pct, ours_spent, tree_totals


def test_busy_seconds_leave_out_idle_and_io_wait() -> None:
    times = SimpleNamespace(user=3.0, nice=1.0, system=2.0, idle=100.0, iowait=50.0, irq=0.5, softirq=0.25,
                            steal=0.25, guest=1.0)
    assert busy_seconds(times) == 7.0


def test_ours_count_growth_new_processes_in_full_and_ended_ones_no_more() -> None:
    before = {(10, 1.0): 5.0, (11, 1.0): 2.0, (12, 1.0): 9.0}
    after = {(10, 1.0): 5.5, (11, 1.0): 2.0, (13, 7.0): 0.25, (12, 2.0): 0.5}  # 12 ended, its pid reused
    assert ours_spent(before, after) == 0.5 + 0.0 + 0.25 + 0.5


def test_others_are_the_machine_minus_ours_per_core_and_never_negative() -> None:
    assert others_pct(machine_busy_s=1.5, ours_s=1.0, interval_s=2.0) == 25.0
    assert others_pct(machine_busy_s=1.0, ours_s=1.25, interval_s=1.0) == 0.0  # a reaped child counted twice
    assert others_pct(1.0, 0.0, 0.0) == 0.0


def test_tree_totals_include_this_process_and_its_children() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        totals = tree_totals([psutil.Process()])
        pids = {pid for pid, _ in totals}
        assert {os.getpid(), child.pid} <= pids
        assert all(total >= 0 for total in totals.values())
    finally:
        child.kill()
        child.wait()


def test_others_cpu_reads_the_machine_counter_against_our_processes() -> None:
    busy = [100.0]
    now = [0.0]
    machine = lambda: SimpleNamespace(user=busy[0])  # noqa: E731
    others = OthersCpu(lambda: None, machine=machine, clock=lambda: now[0])
    now[0] += 10.0
    assert others.reading() == 0.0  # the machine did nothing, so nobody else did
    busy[0] += 100.0  # 100 CPU seconds in 10 s: ten cores' worth, far more than this test spends
    now[0] += 10.0
    assert 900.0 < others.reading() <= 1000.0


@pytest.fixture
def own_cpus():
    """The CPUs this test process has, given back whatever a test pinned."""
    cpus = sorted(affinity.available_cpus())
    yield cpus
    affinity.release(cpus)


def test_an_embedded_engine_pins_this_process_to_the_engine_cpus(own_cpus) -> None:
    pinning = affinity.CpuPinning(engine=(own_cpus[-1],), driver=(own_cpus[0],))
    affinity.apply(pinning, None)
    assert sorted(os.sched_getaffinity(0)) == [own_cpus[-1]]
    assert affinity.applied(None) == ((own_cpus[-1],), (own_cpus[-1],))
    affinity.release(own_cpus)
    assert sorted(os.sched_getaffinity(0)) == own_cpus


def test_a_server_and_its_children_go_to_the_engine_cpus_and_tdebench_to_the_driver_cpus(own_cpus) -> None:
    pinning = affinity.CpuPinning(engine=(own_cpus[-1],), driver=(own_cpus[0],))
    server = subprocess.Popen(["bash", "-c", "sleep 30 & wait"], start_new_session=True)
    try:
        main = psutil.Process(server.pid)
        deadline = time.monotonic() + 10
        while not main.children() and time.monotonic() < deadline:  # bash starts its child
            time.sleep(0.01)
        processes = affinity.pinned(pinning, lambda: [main])
        assert processes() == [main]
        assert [p.cpu_affinity() for p in (main, *main.children())] == [[own_cpus[-1]]] * 2
        assert sorted(os.sched_getaffinity(0)) == [own_cpus[0]]
        assert affinity.applied([main]) == ((own_cpus[-1],), (own_cpus[0],))
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # bash and its sleep: the group this test started
        server.wait()


def test_nothing_to_pin_leaves_the_processes_callable_alone() -> None:
    def processes():
        return None

    assert affinity.pinned(None, processes) is processes


class _OthersProcess:
    """A process of another user: its affinity can be read by nobody and set by nobody."""

    pid = 1

    def children(self, recursive: bool = False) -> list:
        return []

    def cpu_affinity(self, cpus=None):
        raise psutil.AccessDenied(self.pid)


def test_a_process_that_cannot_be_pinned_fails_with_the_reason(own_cpus) -> None:
    pinning = affinity.CpuPinning(engine=(own_cpus[-1],), driver=(own_cpus[0],))
    with pytest.raises(PermissionError, match="pin_cpus: not allowed to pin the engine's process 1"):
        affinity.apply(pinning, [_OthersProcess()])
