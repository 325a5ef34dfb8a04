"""CPU time per measured step, at nanoseconds, on real engines (measure/process.py): an embedded
engine's own work in a lockstep round, and a server's processes rather than tdebench's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines.base import NONE
from tdebench.engines.postgres import PostgresEngine
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.results import Measurement, TrialKey
from tdebench.store import read_run

from workspaces import server_reachable_dir

TICK_NS = 10_000_000  # psutil's cpu_times counted clock ticks of 10 ms

PLAN = '''name = "cpu-time"
repetitions = 1
warmups = 1
cache = "warm"
order = "lockstep"
seed = 3

[[engines]]
name = "sqlite"
encryptions = ["none", "sqlcipher", "fs-aes-256-gcm"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
'''


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def test_a_lockstep_sqlite_round_records_more_cpu_for_sqlcipher_than_for_none(tmp_path: Path) -> None:
    """At SQLite's default page cache (2,000 KiB, below the data of SF 0.01) every query reads pages
    through the cipher: in the same round each query records more CPU time under sqlcipher than
    under none, and none's short queries are not 0 s (as 10 ms ticks had read them)."""
    (tmp_path / "plan.toml").write_text(PLAN)
    result = CliRunner().invoke(main, ["run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                                       "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    measured = [m for m in read_run(tmp_path / "out").measurements if m.test == "power" and not m.warmup]
    cpu: dict[str, dict[str, float]] = {"none": {}, "sqlcipher": {}, "fs-aes-256-gcm": {}}
    for m in measured:
        cpu[m.trial.encryption][m.step] = m.metrics["cpu_s"]
    queries = [f"q{n}" for n in range(1, 23)]
    assert all(cpu["none"][q] > 0 and _ns(cpu["none"][q]) % TICK_NS for q in queries), cpu["none"]
    # the configuration decrypts more: its total, and nearly every query (one round: a query of
    # tens of ms may take less CPU once, q1 did in a clean-clone suite at 0.059 s against 0.066 s)
    dearer = [q for q in queries if cpu["sqlcipher"][q] > cpu["none"][q]]
    assert len(dearer) >= 19, {q: (cpu["none"][q], cpu["sqlcipher"][q]) for q in queries}
    assert cpu["sqlcipher"]["total"] > 1.5 * cpu["none"]["total"]
    # the bytes the cipher handled: the pages SQLite read, which the warm OS cache served (read_chars,
    # not read_bytes), 13 MiB of data through a 2 MB cache; under gocryptfs, its daemon's own apart
    totals = {m.trial.encryption: m.metrics for m in measured if m.step == "total"}
    assert totals["sqlcipher"]["read_chars"] > max(8 << 20, 10 * totals["sqlcipher"]["read_bytes"]), totals
    assert "layer_read_chars" not in totals["sqlcipher"]
    layer = totals["fs-aes-256-gcm"]
    # part of the configuration's; it may be none at all: the kernel keeps the pages it read
    # through FUSE while SQLite holds the file open, and then serves them without the daemon
    assert 0 <= layer["layer_read_chars"] <= layer["read_chars"], layer
    # what the daemon did is measured: the load's commits wrote through it (SQLite syncs each)
    loads = {m.trial.encryption: m.metrics for m in read_run(tmp_path / "out").measurements
             if m.test == "load" and m.step == "total" and not m.warmup}
    assert loads["fs-aes-256-gcm"]["layer_write_chars"] > 1 << 20, loads["fs-aes-256-gcm"]
    assert loads["fs-aes-256-gcm"]["layer_cpu_s"] > 0, loads["fs-aes-256-gcm"]


@pytest.fixture
def postgres_dir() -> Iterator[Path]:
    with server_reachable_dir() as path:
        yield path


def _burn(seconds: float) -> None:
    """Keep this thread on the CPU for `seconds` of its own CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(i * i for i in range(1000))


def test_a_server_step_records_the_servers_cpu_at_nanoseconds_not_tdebenchs(postgres_dir: Path) -> None:
    """A step that makes PostgreSQL compute while tdebench itself burns more CPU than that records
    the server's CPU time: non-zero, at nanoseconds (not a multiple of 10 ms), below what tdebench
    burned and at most the step's elapsed time (the backend runs one query on one core)."""
    database = PostgresEngine().provision(postgres_dir / "ws", NONE, None)
    stored: list[Measurement] = []

    class Keep:
        def append(self, record: Measurement) -> None:
            stored.append(record)

    try:
        database.create()
        conn = database.connect()
        recorder = Recorder(Keep(), TrialKey("postgres", "none", "cpu", 1.0, 1), MonotonicClock(),
                            processes=database.engine_processes)
        burned = 0.6
        with recorder.measure("cpu", "query"):
            conn.execute("SELECT sum(sqrt(g::float8)) FROM generate_series(1, 1000000) g")
            _burn(burned)
        conn.close()
    finally:
        database.close()
    (step,) = stored
    server, elapsed = step.metrics["cpu_s"], step.metrics["elapsed_s"]
    assert 0 < server < burned / 2 and server <= elapsed, step.metrics
    assert _ns(server) % TICK_NS != 0, f"{server} s is a whole number of 10 ms ticks"
