"""Backup and restore on every engine, without encryption and with one real encryption each
(and the file-system layer once), for real: every backup method restores every row (equal
checksums), its artifact is encrypted at rest exactly where this table says, and a restore
with a wrong key fails exactly where the artifact is encrypted.

The table is the measured truth that docs/manual.md reports: physical backups keep the engine's
own encryption; logical dumps are plaintext (except what column-level encryption sealed);
the file-system layer protects no backup, because the engine's tool reads the decrypted view.

Each unencrypted database's backups (canaries, gzip, xbstream and pg_dump magic all in them)
are also sealed by the backup workload's own encryption, one cipher per method: the sealed file
must show none of it, restore with its key and refuse a wrong one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tdebench.engines import get_engine
from tdebench.engines.base import Backup, Database
from tdebench import verify
from tdebench.keys import Secret
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.results import BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL, TrialKey
from tdebench.workloads.backup import artifact, sealing
from tdebench.workloads.backup.checksum import TableChecksum, checksums
from tdebench.workloads.base import CANARY_TABLE, RunContext, write_canaries

CANARY = "TDEBENCH-CANARY-backup-0123456789ab"
MARKER = "TDEBENCH-MARKER-backup-0123456789ab"
METHODS = (BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL)
PHYSICAL = {BACKUP_FULL, BACKUP_FULL_COMPRESSED}
SEALED_WITH = {BACKUP_FULL: "aes-256", BACKUP_FULL_COMPRESSED: "3des", BACKUP_LOGICAL: "aes-128"}
# (engine, encryption) -> the backup methods whose artifact is encrypted at rest
ENCRYPTED_AT_REST: dict[tuple[str, str], set[str]] = {
    ("duckdb", "none"): set(),
    ("duckdb", "aes-256-gcm"): PHYSICAL,
    ("sqlite", "none"): set(),
    ("sqlite", "chacha20-poly1305"): PHYSICAL,
    ("sqlite", "fs-aes-256-gcm"): set(),  # the engine's tool reads through the mount
    ("sqlcipher", "none"): set(),
    ("sqlcipher", "aes-256-cbc-hmac-sha512"): PHYSICAL,
    ("sqlcipher", "aes-256-cbc-hmac-sha1"): PHYSICAL,  # 1 KiB pages: the backup API copies them as they are
    ("mariadb", "none"): set(),
    ("mariadb", "aes-256-cbc"): PHYSICAL,
    ("postgres", "none"): set(),
    ("postgres", "column-aes-256"): set(METHODS),  # the sealed columns, in every form
}
CASES = list(ENCRYPTED_AT_REST)
TABLES = {"items": ("id", "name", "price", "day"), CANARY_TABLE: ("id", "canary", "marker")}


class _Nowhere:
    """A result store that keeps nothing: these tests record no measurement."""

    def append(self, record: object) -> None:
        pass


def judging(db: Database, trial: TrialKey) -> RunContext:
    """The trial's context as the runner makes it, as far as the artifact checks use it: the
    at-rest rules for this module's canary and marker."""
    return RunContext(database=db, dialect="", recorder=Recorder(_Nowhere(), trial, MonotonicClock()), scale=0.0,
                      streams=1, data_dir=db.workspace, at_rest=verify.TrialScan(trial, (CANARY,), (MARKER,)))


@pytest.fixture(scope="module", params=CASES, ids=[f"{e}-{c}" for e, c in CASES])
def loaded(request, server_tmp_dir: Path):
    """A database of each case with a small table (its `name` sealed by a column layer) and the canary."""
    engine_name, encryption_name = request.param
    engine = get_engine(engine_name)
    encryption = engine.encryption(encryption_name)
    availability = engine.encryption_availability(encryption)
    assert availability.usable, f"{availability.reason}; fix: {availability.fix}"  # fail, never skip
    workspace = server_tmp_dir / f"{engine_name}-{encryption_name}"
    workspace.mkdir()
    key = None if encryption.is_baseline else Secret(os.urandom(32))
    db = engine.provision(workspace, encryption, key)
    db.create()
    conn = db.connect()
    try:
        conn.execute("CREATE TABLE items (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, "
                     "price DECIMAL(15,2) NOT NULL, day DATE NOT NULL)")
        db.seal_columns(conn, "items", ("name",), ("id",))
        conn.executemany("INSERT INTO items (id, name, price, day) VALUES (?, ?, ?, ?)",
                         [(i, f"item {i}", f"{i * 1.25:.2f}", f"2024-01-{i % 28 + 1:02d}") for i in range(1, 501)])
        write_canaries(db, conn, [CANARY], [MARKER])
        yield engine, db, conn, checksums(conn, engine.dialect, TABLES)
    finally:
        conn.close()
        db.close()


def restored_checksums(engine, db: Database, backup: Backup, workspace: Path, key: Secret | None
                       ) -> dict[str, TableChecksum]:
    """Restore `backup` into a fresh instance with `key` and read back every table's checksum."""
    fresh = engine.provision(workspace, db.encryption, key)
    try:
        fresh.restore(backup)
        conn = fresh.connect()
        try:
            return checksums(conn, engine.dialect, TABLES)
        finally:
            conn.close()
    finally:
        fresh.close()


@pytest.mark.parametrize("method_name", METHODS)
def test_backup_restores_everything_and_is_encrypted_at_rest_as_measured(loaded, method_name: str) -> None:
    engine, db, _, original = loaded
    area = db.workspace / f"backup-{method_name}"
    try:
        method = db.backup_method(method_name)
        backup = db.backup(method, area / "artifact")
        assert backup.size_bytes() > 0 and all(p.is_relative_to(area / "artifact") for p in backup.files())

        contents = db.backup_contents(backup, area / "unpacked")
        trial = TrialKey(engine.name, db.encryption.name, "backup", 0.0, 1)
        checked = artifact.check(judging(db, trial), db, contents, canaries_readable=True)
        encrypted = method_name in ENCRYPTED_AT_REST[(engine.name, db.encryption.name)]
        assert checked.verdict == ("encrypted" if encrypted else "plaintext"), checked.scans
        if db.encryption.layer == "column":  # the other columns are plaintext by design: the marker shows them
            assert checked.metrics["marker_hits"] > 0

        assert restored_checksums(engine, db, backup, area / "restored", db.key) == original

        if not db.encryption.is_baseline:
            try:
                stranger = restored_checksums(engine, db, backup, area / "wrong-key", Secret(os.urandom(32)))
            except Exception as exc:  # refused: the key must not be in what it says
                assert db.key is not None and db.key.hex() not in str(exc)
                stranger = None
            assert (stranger != original) == encrypted, "a wrong key restores exactly the plaintext backups"
        logs = [p for p in db.workspace.rglob("*.log") if p.is_file()]
        assert db.key is None or not any(db.key.hex().encode() in p.read_bytes() for p in logs)
        if db.encryption.is_baseline:  # its artifact holds every canary and magic in plaintext
            plain_magic = {name for path in backup.files() for name in artifact.magic_found(path, 0)}
            assert_sealed_backup_is_opaque_and_restores(engine, db, backup, area, original, trial, plain_magic)
    finally:
        shutil.rmtree(area, ignore_errors=True)


def assert_sealed_backup_is_opaque_and_restores(engine, db: Database, backup: Backup, area: Path,
                                                original: dict[str, TableChecksum], trial: TrialKey,
                                                plain_magic: set[str]) -> None:
    cipher = sealing.CIPHERS[SEALED_WITH[backup.method.name]]
    key = Secret(os.urandom(32))
    sealed = sealing.seal(backup.path, cipher, key, area / "sealed")
    if backup.method.compressed or backup.method.kind == "logical":  # the control: the same check
        assert plain_magic, "finds gzip, pg_dump's or SQL's magic in the plain artifact's files"
    checked = artifact.check_sealed(judging(db, trial), sealed, sealing.payload_offset(sealed), True)
    assert checked.verdict == "encrypted" and checked.metrics["marker_hits"] == 0, checked.scans
    assert artifact.magic_found(sealed, sealing.payload_offset(sealed)) == []
    body = sealed.read_bytes()
    assert not any(magic in body for magic in (b"XBSTCK01", b"PGDMP", b"ustar", CANARY.encode()))
    with pytest.raises(sealing.SealBroken):
        sealing.open_sealed(sealed, Secret(os.urandom(32)), area / "wrong-backup-key")
    assert not (area / "wrong-backup-key").exists()
    opened = Backup(backup.method, sealing.open_sealed(sealed, key, area / "opened"))
    assert restored_checksums(engine, db, opened, area / "restored-sealed", db.key) == original


def test_checksums_ignore_row_order_but_not_a_changed_row(loaded) -> None:
    engine, db, conn, _ = loaded
    rows = [(i, f"row {i}", f"{i / 4:.2f}", "2024-02-29") for i in range(1, 301)]
    columns = {"ordered": TABLES["items"], "shuffled": TABLES["items"]}
    try:
        for table, order in (("ordered", rows), ("shuffled", rows[::-1][150:] + rows[::-1][:150])):
            conn.execute(f"CREATE TABLE {table} (id INTEGER NOT NULL, name VARCHAR(40) NOT NULL, "
                         "price DECIMAL(15,2) NOT NULL, day DATE NOT NULL)")
            conn.executemany(f"INSERT INTO {table} (id, name, price, day) VALUES (?, ?, ?, ?)", order)
        sums = checksums(conn, engine.dialect, columns)
        assert sums["ordered"] == sums["shuffled"] and sums["ordered"].rows == 300
        conn.execute("UPDATE shuffled SET name = 'row 0' WHERE id = 7")
        changed = checksums(conn, engine.dialect, columns)["shuffled"]
        assert changed.rows == 300 and changed.hash_sum != sums["ordered"].hash_sum
    finally:
        for table in columns:
            conn.execute(f"DROP TABLE IF EXISTS {table}")


def test_sqlite_refuses_a_plaintext_backup_of_an_encrypted_database(tmp_path: Path) -> None:
    """Why the physical SQLite backup is encrypted: SQLite3MC will not copy encrypted pages into
    a target without the cipher (the online backup API would otherwise write plaintext)."""
    import apsw

    engine = get_engine("sqlite")
    db = engine.provision(tmp_path, engine.encryption("chacha20-poly1305"), Secret(os.urandom(32)))
    db.create()
    source = db._keyed(db.path, db.key)
    target = apsw.Connection(str(tmp_path / "plain.sqlite"))
    try:
        with pytest.raises(apsw.Error, match="incompatible source and target"):
            with target.backup("main", source, "main") as backup:
                backup.step()
    finally:
        target.close()
        source.close()
        db.close()
