"""The maintenance methods of every engine, for real: an unencrypted database encrypted where
it lies (proved by the at-rest verdict, the engine's own state and the data read back), its
key changed where the engine can (the old key refused, the new one opening the same data),
"not supported" where it cannot, and the workload's index rebuild on every dialect."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from tdebench import verify
from tdebench.engines import get_engine
from tdebench.engines import pgcrypto
from tdebench.engines.base import NONE, Database, NotSupported, SensitiveColumns
from tdebench.keys import Secret
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.results import TrialKey
from tdebench.store import ResultStore
from tdebench.workloads.base import CANARY_TABLE, RunContext, read_canaries, write_canaries
from tdebench.workloads.maintenance import reindex
from tdebench.workloads.tpch.workload import TpchWorkload

CANARIES = ["TDEBENCH-CANARY-maintenance-0123456789ab", "TDEBENCH-CANARY-maintenance-ba9876543210"]
MARKERS = ["TDEBENCH-MARKER-maintenance-0123456789ab", "TDEBENCH-MARKER-maintenance-ba9876543210"]
ROWS = 500
CANARY_ONLY = (SensitiveColumns(CANARY_TABLE, ("canary",), ("id",)),)

# (engine, encryption): every native kind and both layers, each engine at least once
ENCRYPT = [("sqlite", "aes-128-cbc"), ("sqlite", "aegis-256"), ("sqlite", "sqlcipher"),
           ("duckdb", "aes-256-gcm"), ("duckdb", "aes-256-ctr"), ("mariadb", "aes-192-ctr"),
           ("postgres", "column-aes-256"), ("sqlite", "fs-aes-256-gcm"), ("postgres", "fs-xchacha20-poly1305"),
           ("mariadb", "fs-aes-256-gcm"), ("sqlcipher", "aes-256-cbc-hmac-sha512"), ("sqlcipher", "aes-256-cbc"),
           ("sqlcipher", "aes-256-cbc-hmac-sha512-raw")]
REKEY = [("sqlite", "chacha20-poly1305"), ("sqlcipher", "aes-256-cbc-hmac-sha512"),
         ("sqlcipher", "aes-256-cbc-hmac-sha1"), ("duckdb", "aes-256-gcm"), ("postgres", "column-aes-256"),
         ("duckdb", "fs-aes-256-gcm")]


def key() -> Secret:
    return Secret(os.urandom(32))


def plaintext_source(engine: str, workspace: Path) -> tuple[Database, int]:
    """An unencrypted database with a filler table and the canaries, closed; its row count."""
    source = get_engine(engine).provision(workspace, NONE, None)
    source.create()
    conn = source.connect()
    try:
        conn.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, note VARCHAR(64) NOT NULL)")
        conn.executemany("INSERT INTO filler (id, note) VALUES (?, ?)", [(i, f"row {i}") for i in range(ROWS)])
        write_canaries(source, conn, CANARIES, MARKERS)
    finally:
        conn.close()
        source.close()
    return source, ROWS


def at_rest(database: Database, workspace: Path, view_hits: int | None, state: str):
    database.close()
    scans = verify.scan([workspace], CANARIES, workspace, database.plaintext_signature(), markers=MARKERS)
    return verify.judge(TrialKey("contract", database.encryption.name, "maintenance", 0.01, 1), "encrypted",
                        scans, True, view_hits=view_hits, engine_state=state,
                        column_layer=database.encryption.layer == "column")


def contents(database: Database) -> tuple[int, set[str]]:
    conn = database.connect()
    try:
        return conn.execute("SELECT count(*) FROM filler")[0][0], read_canaries(conn)
    finally:
        conn.close()


@pytest.mark.parametrize(("engine", "encryption"), ENCRYPT)
def test_an_unencrypted_database_is_encrypted_in_place(engine: str, encryption: str, tmp_path: Path) -> None:
    source, rows = plaintext_source(engine, tmp_path)
    plain = verify.scan([tmp_path], CANARIES, tmp_path)
    assert sum(s.hits for s in plain) > 0  # positive control: the canaries are on disk in plaintext
    database = get_engine(engine).provision(tmp_path, get_engine(engine).encryption(encryption), key())
    try:
        method = database.encrypt_existing(source, CANARY_ONLY)
        assert method
        state = database.encryption_state()  # raises if the engine says something is not encrypted
        assert contents(database) == (rows, set(CANARIES))
        view_hits = verify.view_hits(database.plaintext_view(), CANARIES)
    finally:
        database.close()
    verdict = at_rest(database, tmp_path, view_hits, state)
    assert verdict.verdict == "encrypted", verdict.detail
    if engine == "mariadb":
        assert "tablespaces encrypted, 0 rotating" in state
    if encryption.startswith("fs-") and database.server_user:  # copied in as the server writes its own files
        uid = pwd.getpwnam(database.server_user).pw_uid
        copied = [p for p in database.files() if not p.name.startswith("gocryptfs.")]
        assert copied and {p.stat().st_uid for p in copied} == {uid}
    if encryption == "column-aes-256":
        assert "columns of 1 tables sealed" in state and verdict.exposed  # markers stay readable, by design
    try:
        assert contents(database) == (rows, set(CANARIES))  # opens again, from rest, with the key
    finally:
        database.close()


def test_sealing_in_place_without_retiring_the_wal_leaves_the_plaintext_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Why `seal-columns` retires the WAL: the rows as loaded are still in it."""
    monkeypatch.setattr(pgcrypto, "retire", lambda conn, rewrite: None)
    source, _ = plaintext_source("postgres", tmp_path)
    database = get_engine("postgres").provision(tmp_path, get_engine("postgres").encryption("column-aes-256"), key())
    try:
        database.encrypt_existing(source, CANARY_ONLY)
        state = database.encryption_state()  # every sealed value is sealed: the engine cannot tell
    finally:
        database.close()
    verdict = at_rest(database, tmp_path, None, state)
    assert verdict.verdict == "plaintext" and "pg_wal/" in (verdict.first_hit or "")


@pytest.mark.parametrize(("engine", "encryption"), REKEY)
def test_rekey_refuses_the_old_key_and_keeps_the_data(engine: str, encryption: str, tmp_path: Path) -> None:
    old, new = key(), key()
    database = get_engine(engine).provision(tmp_path, get_engine(engine).encryption(encryption), old)
    source, rows = plaintext_source(engine, tmp_path)
    try:
        database.encrypt_existing(source, CANARY_ONLY)
        assert database.rekey(new)
        assert database.key is new
        assert not database.opens_with(old)
        assert database.opens_with(new)
        assert contents(database) == (rows, set(CANARIES))
    finally:
        database.close()
    assert at_rest(database, tmp_path, None, "").verdict == "encrypted"


def test_gocryptfs_rekey_rewraps_the_master_key_only(tmp_path: Path) -> None:
    """-passwd changes gocryptfs.conf alone: every data file keeps its bytes, which is why the
    report calls it what it is (a new wrapping of the same master key), not re-encryption."""
    old, new = key(), key()
    database = get_engine("sqlite").provision(tmp_path, get_engine("sqlite").encryption("fs-aes-256-gcm"), old)
    source, _ = plaintext_source("sqlite", tmp_path)
    try:
        database.encrypt_existing(source, ())
        database.close()
        before = {p: p.read_bytes() for p in database.files()}
        assert database.rekey(new) == "rewrap-master-key"
        after = {p: p.read_bytes() for p in database.files()}
    finally:
        database.close()
    changed = sorted(p.name for p in before if before[p] != after.get(p))
    assert changed == ["gocryptfs.conf"]
    assert not (database.cipher_dir / "gocryptfs.conf.bak").exists()


def test_mariadb_cannot_change_its_key_and_says_why(tmp_path: Path) -> None:
    database = get_engine("mariadb").provision(tmp_path, get_engine("mariadb").encryption("aes-256-cbc"), key())
    with pytest.raises(NotSupported, match="file_key_management") as raised:
        database.rekey(key())
    assert raised.value.method == "key-rotation"


def test_a_failed_rekey_names_neither_key(tmp_path: Path) -> None:
    wrong, new = key(), key()
    database = get_engine("sqlite").provision(tmp_path, get_engine("sqlite").encryption("aes-256-cbc"), key())
    database.create()
    database.key = wrong  # the database was made with another key
    with pytest.raises(RuntimeError) as raised:
        database.rekey(new)
    for secret in (wrong, new):
        assert secret.hex() not in str(raised.value) and secret.hex().upper() not in str(raised.value)


def test_encrypt_existing_refuses_what_it_cannot_convert(tmp_path: Path) -> None:
    engine = get_engine("sqlite")
    source = engine.provision(tmp_path / "elsewhere", NONE, None)
    with pytest.raises(ValueError, match="needs a SQLiteDatabase in"):
        engine.provision(tmp_path, engine.encryption("rc4"), key()).encrypt_existing(source)
    with pytest.raises(ValueError, match="unencrypted database into an encrypted one"):
        engine.provision(tmp_path, NONE, None).encrypt_existing(engine.provision(tmp_path, NONE, None))


@pytest.fixture(scope="module")
def tpch_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tpch-data")
    TpchWorkload().prepare(0.01, directory, 1)
    return directory


@pytest.mark.parametrize("engine", ["duckdb", "sqlite", "mariadb", "postgres"])
def test_reindex_rebuilds_lineitem_and_keeps_its_indexes_and_rows(engine: str, tmp_path: Path,
                                                                  tpch_data: Path) -> None:
    chosen = get_engine(engine)
    (tmp_path / "db").mkdir()
    database = chosen.provision(tmp_path / "db", NONE, None)
    store = ResultStore(tmp_path / "results")
    store.start("", {})
    recorder = Recorder(store, TrialKey(engine, "none", "maintenance", 0.01, 1), MonotonicClock())
    ctx = RunContext(database=database, dialect=chosen.dialect, recorder=recorder, scale=0.01, streams=1,
                     data_dir=tpch_data)
    try:
        database.create()
        conn = database.connect()
        try:
            TpchWorkload().load(ctx, conn)
            rebuild = reindex.rebuild(chosen.dialect)
            before = reindex.state(conn, chosen.dialect)
            for statement in rebuild.statements:
                conn.execute(statement)
            after = reindex.state(conn, chosen.dialect)
        finally:
            conn.close()
    finally:
        database.close()
    assert before.indexes and before.rows == 60_175  # lineitem at SF 0.01
    assert reindex.problems(before, after) == []
