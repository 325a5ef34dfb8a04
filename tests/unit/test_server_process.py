"""ServerProcess with a stand-in server (`sleep`, `bash`): the process tree the sampler reads is
there while it runs and empty, never an error, before it starts and after it stops; once the run
is interrupted, a shutdown that would take 30 s is cut to `HURRY_S`, then SIGKILL."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil
import pytest

from tdebench.engines import server as server_module
from tdebench.engines.server import ServerProcess, log_tail


def test_processes_are_empty_not_an_error_around_a_stop(tmp_path: Path) -> None:
    server = ServerProcess("sleeper", ["sleep", "60"], tmp_path / "log", ready=lambda: True)
    assert server.processes() == []  # not started
    server.start()
    try:
        assert [p.pid for p in server.processes()] == [server.pid]
        pid = server.pid
        seen: list[object] = []
        failed: list[BaseException] = []

        def read() -> None:
            try:
                for _ in range(2000):
                    seen.append(server.processes())
            except BaseException as exc:  # a thread's exception would otherwise only be printed
                failed.append(exc)

        reader = threading.Thread(target=read)
        reader.start()  # reads while the main thread stops the server
        server.stop()
        reader.join()
        assert failed == [] and len(seen) == 2000  # every read returned
        assert all(isinstance(found, list) and [p.pid for p in found] in ([], [pid]) for found in seen)
    finally:
        server.stop()
    assert server.processes() == [] and not server.running


def test_a_failed_tools_log_shows_its_errors_and_a_full_disk(tmp_path: Path) -> None:
    """mariadb-install-db ends with a page of advice that hid its errors; a full disk is named,
    since the log goes with the workspace."""
    log = tmp_path / "install.log"
    advice = [f"boilerplate advice line {n}" for n in range(30)]
    log.write_text("\n".join(["starting", "2026-11-23 0 [ERROR] InnoDB: preallocating 12582912 bytes for file "
                              "./ibdata1 failed with error 28", *advice]) + "\n")
    shown = log_tail(log)
    assert shown.splitlines()[0].startswith("no space left on ") and "MiB free)" in shown.splitlines()[0]
    assert "failed with error 28" in shown and "boilerplate" not in shown
    log.write_text("\n".join(["starting", *advice]) + "\n")  # no error line: the tail, as before
    assert log_tail(log, lines=3).splitlines() == advice[-3:]


def test_a_failed_start_reports_its_own_errors_not_an_earlier_starts(tmp_path: Path) -> None:
    """A server's log is appended to across its starts (MariaDB's mariadb.log): the error a failed
    start reports is the one this start logged, not the first one the log ever held; so is a
    setup tool's."""
    log = tmp_path / "server.log"

    def failing(error: str) -> ServerProcess:
        return ServerProcess("stand-in", ["bash", "-c", f"echo '[ERROR] {error}'; exit 1"], log, ready=lambda: False)

    with pytest.raises(server_module.ServerError, match="corrupted page identifier") as first:
        failing("corrupted page identifier").start()
    assert "exited with 1" in str(first.value)
    with pytest.raises(server_module.ServerError) as second:
        failing("cannot lock ./ibdata1").start()
    assert "cannot lock ./ibdata1" in str(second.value) and "corrupted page identifier" not in str(second.value)
    assert log.read_text().count("[ERROR]") == 2  # the log itself keeps both starts
    with pytest.raises(server_module.ServerError) as tool:
        server_module.run_tool(["bash", "-c", "echo '[ERROR] tool failed'; exit 3"], log)
    assert "tool failed" in str(tool.value) and "ibdata1" not in str(tool.value)


SLOW_SHUTDOWN = ["bash", "-c", "trap 'sleep 30; exit 0' TERM; while true; do sleep 0.1; done"]
"""A stand-in server whose clean shutdown takes 30 s (MariaDB flushing its buffer pool on
gocryptfs took 24-30 s after a Ctrl-C in the load)."""


@pytest.fixture
def fresh_hurry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "_hurry", threading.Event())  # hurry() is for the whole process


def test_once_the_run_is_interrupted_a_slow_shutdown_is_cut_to_hurry_s(tmp_path: Path, fresh_hurry: None) -> None:
    server = ServerProcess("slow", SLOW_SHUTDOWN, tmp_path / "log", ready=lambda: True, stop_timeout=60)
    server.start()
    pid = server.pid
    time.sleep(0.3)  # the trap is set
    server_module.hurry()
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 15, "the stop waited for the clean shutdown"  # 30 s without hurry()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_an_interrupt_during_a_stop_under_way_cuts_it_short(tmp_path: Path, fresh_hurry: None) -> None:
    """The signal handler calls hurry() while the main thread already waits for a clean shutdown."""
    server = ServerProcess("slow", SLOW_SHUTDOWN, tmp_path / "log", ready=lambda: True, stop_timeout=60)
    server.start()
    time.sleep(0.3)
    threading.Timer(1.0, server_module.hurry).start()
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 15, "the stop waited for the clean shutdown"
    assert not server.running


def test_a_new_run_is_not_hurried_by_one_interrupted_before_it_in_the_process(fresh_hurry: None) -> None:
    """hurry() holds for the whole process, and tests run several runs in one: the next run's
    interrupt handler ends it, so that run's servers get a clean shutdown again."""
    import signal

    from tdebench.run import setup as runsetup

    server_module.hurry()
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        runsetup.handle_interrupts(threading.Event())
        assert not server_module.hurried()
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
