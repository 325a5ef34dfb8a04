"""MariaDB's own promises, on real servers started here (127.0.0.1 and a socket in tmp_path).

Every server is stopped in a fixture's or test's finally block, also when an assertion fails.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tdebench import verify
from tdebench.engines.base import EncryptionNotActive
from tdebench.engines.mariadb import MariaDBDatabase, MariaDBEngine
from tdebench.engines.server import ServerError
from tdebench.keys import Secret
from tdebench.results import TrialKey
from tdebench.workloads.base import read_canaries, write_canaries

from processes import connections

ENGINE = MariaDBEngine()
ENCRYPTED = [e.name for e in ENGINE.encryptions if e.layer == "native"]  # fs: engines/fs.py's tests
CANARY = "TDEBENCH-CANARY-mariadb-0123456789"
MARKER = "TDEBENCH-MARKER-mariadb-0123456789"



def provision(tmp_path: Path, name: str) -> MariaDBDatabase:
    key = None if name == "none" else Secret(os.urandom(32))
    db = ENGINE.provision(tmp_path, ENGINE.encryption(name), key)
    assert isinstance(db, MariaDBDatabase)
    return db


@pytest.fixture
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MariaDBDatabase]:
    db = provision(tmp_path, request.param)
    try:
        db.create()
        yield db
    finally:
        db.close()


def with_canary_table(db: MariaDBDatabase) -> None:
    conn = db.connect()
    try:
        write_canaries(db, conn, [CANARY], [MARKER])
        conn.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, s VARCHAR(60))")
        rows = [(i, f"{CANARY} {i}") for i in range(2000)]
        conn.executemany("INSERT INTO filler (id, s) VALUES (?, ?)", rows)
        assert read_canaries(conn) == {CANARY}
        # every configuration alike: InnoDB's own I/O threads, not io_uring (engines/mariadb.py: an
        # io_uring write into a gocryptfs mount live-locks the shutdown for about a minute)
        assert conn.execute("SELECT @@innodb_use_native_aio") == [(0,)]
    finally:
        conn.close()


@pytest.mark.parametrize("server", ENCRYPTED, indirect=True)
def test_server_reports_every_tablespace_encrypted(server: MariaDBDatabase) -> None:
    with_canary_table(server)
    state = server.encryption_state()
    total = int(state.split(" of ")[1].split()[0])
    assert state.startswith(f"{total} of {total} tablespaces encrypted, 0 rotating"), state
    assert total >= 7  # system tablespace, 4 system tables, the canary and filler tables
    mode = server.encryption.mode
    assert f"AES_{mode}" in state and "redo log" in state and "temporary tables" in state


@pytest.mark.parametrize("server", ["none"], indirect=True)
def test_state_check_catches_a_server_that_does_not_encrypt(server: MariaDBDatabase) -> None:
    """The check asks the server, not the configuration: a plaintext server under an
    encrypted label is refused."""
    with_canary_table(server)
    assert "(baseline)" in server.encryption_state()
    server.encryption = ENGINE.encryption("aes-256-cbc")  # the running server has no encryption
    with pytest.raises(EncryptionNotActive, match="not encrypted: innodb_system"):
        server.encryption_state(wait_s=0)


@pytest.mark.parametrize("server", ["none", "aes-256-ctr"], indirect=True)
def test_canaries_on_disk_only_without_encryption(server: MariaDBDatabase) -> None:
    with_canary_table(server)
    server.close()
    scans = verify.scan(server.files(), [CANARY], server.workspace)
    hits = {scan.path: scan.hits for scan in scans if scan.hits}
    trial = TrialKey("mariadb", server.encryption.name, "contract", 0.0, 1)
    if server.encryption.is_baseline:
        # the positive control: the table's file and the redo log both hold the plaintext
        assert any(p.endswith("filler.ibd") for p in hits) and "data/ib_logfile0" in hits, hits
        verdict = verify.judge(trial, "plaintext", scans, True)
    else:
        assert not hits, hits
        verdict = verify.judge(trial, "encrypted", scans, True)
    assert verdict.as_expected, verdict.detail


@pytest.mark.parametrize("name", ["aes-128-cbc", "aes-192-ctr", "aes-256-cbc"])
def test_key_stays_in_its_0600_file(name: str, tmp_path: Path) -> None:
    db = provision(tmp_path, name)
    try:
        db.create()
        key = db.key.raw()
        used = key[: db.encryption.key_bits // 8]
        assert stat.S_IMODE(db.key_file.stat().st_mode) == 0o600
        assert db.key_file.read_text() == f"1;{used.hex()}\n"
        spellings = {spelling for k in (key, used, key[:16]) for spelling in (k.hex(), k.hex().upper())}
        processes = db.engine_processes()
        assert processes
        for process in processes:
            cmdline = " ".join(process.cmdline())
            assert not any(s in cmdline for s in spellings), "key on the server's command line"
            assert not any(s in " ".join(f"{k}={v}" for k, v in process.environ().items()) for s in spellings)
    finally:
        db.close()
    for text_file in (db.log, db.workspace / "install.log", db.option_file):
        text = text_file.read_text(errors="replace")
        assert not any(s in text for s in spellings), f"key in {text_file.name}"


def test_server_that_cannot_start_reports_its_log_and_leaves_no_process(tmp_path: Path) -> None:
    db = provision(tmp_path, "aes-256-cbc")
    try:
        db.create()
        pid = db.engine_processes()[0].pid
        db.close()
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        options = db._options
        bad = {"innodb_no_such_option": "1"}
        db._options = lambda port: {**options(port), **bad}  # type: ignore[method-assign]
        with pytest.raises(ServerError, match=r"(?s)exited with.*unknown variable 'innodb_no_such_option=1'"):
            db.connect()
        assert db.engine_processes() == []
    finally:
        db.close()


def test_wrong_key_stops_the_server_with_its_log(tmp_path: Path) -> None:
    db = provision(tmp_path, "aes-128-ctr")
    try:
        db.create()
        db.close()
        right = db.key
        db.key = Secret(os.urandom(32))
        with pytest.raises(ServerError, match="InnoDB") as info:
            db.connect()
        assert right.hex()[:32] not in str(info.value) and db.key.hex()[:32] not in str(info.value)
        db.key = right
        db.connect().close()
    finally:
        db.close()


def test_a_taken_port_is_replaced_by_a_free_one(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        db = provision(tmp_path, "none")
        db.port = port
        try:
            db.create()
            assert db.port != port
            assert "Address already in use" in db.log.read_text()
            listening = {c.laddr.port for c in connections(db.engine_processes(), "tcp")
                         if c.status == psutil.CONN_LISTEN}
            assert listening == {db.port}
            conn = db.connect()
            assert conn.execute("SELECT 1") == [(1,)]
            conn.close()
        finally:
            db.close()


def test_files_are_the_data_and_tmp_directories(tmp_path: Path) -> None:
    db = provision(tmp_path, "aes-192-cbc")
    try:
        db.create()
        with_canary_table(db)
    finally:
        db.close()
    files = db.files()
    assert files and all(db.datadir in p.parents or db.tmpdir in p.parents for p in files)
    names = {p.name for p in files}
    assert {"ibdata1", "ib_logfile0", "filler.ibd"} <= names
    assert db.key_file not in files and db.option_file not in files and db.log not in files
    assert db.size_bytes() == sum(p.stat().st_size for p in files)


def test_a_long_workspace_path_gets_a_short_socket_directory(tmp_path: Path) -> None:
    workspace = tmp_path / ("w" * 90)  # a socket path must fit in sun_path (108 bytes)
    workspace.mkdir()
    db = provision(workspace, "none")
    try:
        db.create()
        short = db.socket.parent
        assert short != workspace and len(str(db.socket)) < 100
        conn = db.connect()
        assert conn.execute("SELECT 1") == [(1,)]
        conn.close()
    finally:
        db.close()
    assert not short.exists()


@pytest.mark.parametrize("server", ["none"], indirect=True)
def test_analyze_reads_every_leaf_page_so_two_loads_get_the_same_plans(server: MariaDBDatabase) -> None:
    """InnoDB samples 20 leaf pages per index at random by default, so two loads of the same rows got
    different statistics and, for TPC-H Q18, different join orders (bench/plan_stability.py): the
    server reads every leaf page (an exact count of distinct keys) and leaves the statistics to ANALYZE."""
    conn = server.connect()
    try:
        conn.execute("CREATE TABLE wide (id INTEGER PRIMARY KEY, s VARCHAR(200))")
        conn.executemany("INSERT INTO wide (id, s) VALUES (?, ?)", [(i, "x" * 200) for i in range(20000)])
        conn.execute("ANALYZE TABLE wide")
        stats = conn.execute("SELECT stat_name, stat_value, sample_size FROM mysql.innodb_index_stats "
                             "WHERE table_name = 'wide' AND index_name = 'PRIMARY'")
        # the distinct ids counted exactly, from more pages than the default's 20 (sampled, MariaDB
        # 10.11 estimated 19,800 from 20 of the 300 leaf pages here)
        assert [(value, size > 20) for name, value, size in stats if name == "n_diff_pfx01"] == [(20000, True)]
        assert conn.execute("SELECT @@innodb_stats_auto_recalc") == [(0,)]
    finally:
        conn.close()
