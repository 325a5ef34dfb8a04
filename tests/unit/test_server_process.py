"""ServerProcess with a stand-in server (`sleep`): the process tree the sampler reads is there
while it runs and empty, never an error, before it starts and after it stops."""

from __future__ import annotations

import threading
from pathlib import Path

from tdebench.engines.server import ServerProcess


def test_processes_are_empty_not_an_error_around_a_stop(tmp_path: Path) -> None:
    server = ServerProcess("sleeper", ["sleep", "60"], tmp_path / "log", ready=lambda: True)
    assert server.processes() == []  # not started
    server.start()
    try:
        assert [p.pid for p in server.processes()] == [server.pid]
        seen: list[object] = []
        reader = threading.Thread(target=lambda: [seen.append(server.processes()) for _ in range(2000)])
        reader.start()  # reads while the main thread stops the server
        server.stop()
        reader.join()
        assert all(isinstance(found, list) for found in seen)
    finally:
        server.stop()
    assert server.processes() == [] and not server.running
