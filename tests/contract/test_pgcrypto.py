"""PostgreSQL's column layer (pgcrypto), against a real server: the sealed columns never reach
the disk in plaintext while every other column does, the workload's SQL runs unchanged
(COPY, UPDATE, DELETE, keys and indexes included), and the key stays out of SQL text, the
catalog and the server's log."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from cryptography.hazmat.decrepit.ciphers.modes import CFB
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from tdebench import verify
from tdebench.engines.base import EncryptionNotActive
from tdebench.engines.pgcrypto import (COLUMN_AES_256, COLUMN_CIPHERS, SCHEMA, really_encrypts, seal, state,
                                       stored_table_statement)
from tdebench.engines.postgres import PostgresEngine
from tdebench.keys import Secret
from tdebench.workloads.strength import data as strength_data
from tdebench.workloads.strength import forgery

SECRET_NAME = "TDEBENCH-CANARY-pgcrypto-name-0123"
PUBLIC_NOTE = "TDEBENCH-MARKER-pgcrypto-note-0123"


@pytest.fixture
def sealed(tmp_path: Path):
    key = Secret(os.urandom(32))
    db = PostgresEngine().provision(tmp_path / "ws", COLUMN_AES_256, key)
    db.create()
    conn = db.connect()
    conn.execute("CREATE TABLE person (id BIGINT NOT NULL, name VARCHAR(40) NOT NULL, "
                 "balance NUMERIC(15,2) NOT NULL, note CHAR(40) NOT NULL)")
    db.seal_columns(conn, "person", ("name", "balance"), ("id",))
    yield db, conn, key
    conn.close()
    db.close()


def test_sealed_columns_round_trip_through_insert_update_delete_keys_and_indexes(sealed) -> None:
    db, conn, _ = sealed
    conn.executemany("INSERT INTO person (id, name, balance, note) VALUES (?, ?, ?, ?)",
                     [(i, f"name {i}", i * 1.5, f"note {i}") for i in range(1, 101)])
    conn.execute("ALTER TABLE person ADD PRIMARY KEY (id)")  # reaches the stored table
    conn.execute("CREATE INDEX person_note ON person (note)")
    conn.execute("ANALYZE person")
    conn.execute("UPDATE person SET balance = balance + 1, name = 'renamed' WHERE id <= 10")
    conn.execute("DELETE FROM person WHERE id > 90")
    assert conn.execute("SELECT count(*), sum(balance) FROM person") == [(90, sum(i * 1.5 for i in range(1, 91)) + 10)]
    assert conn.execute("SELECT name, note FROM person WHERE id = 3") == [("renamed", "note 3".ljust(40))]
    assert conn.execute("SELECT name FROM person WHERE id = 11") == [("name 11",)]
    stored = conn.execute(f"SELECT pg_typeof(name)::text, pg_typeof(note)::text FROM {SCHEMA}.person LIMIT 1")
    assert stored == [("bytea", "character")]
    assert conn.execute(f"SELECT count(*) FROM pg_indexes WHERE schemaname = '{SCHEMA}'") == [(2,)]
    assert "9 " not in db.encryption_state() and "2 columns of 1 tables sealed, 180 values" in db.encryption_state()


def test_only_the_unsealed_columns_reach_the_disk_in_plaintext(sealed) -> None:
    db, conn, key = sealed
    conn.execute("INSERT INTO person (id, name, balance, note) VALUES (?, ?, ?, ?)", [1, SECRET_NAME, 1, PUBLIC_NOTE])
    conn.close()
    db.close()  # a shutdown checkpoint: every page and the WAL are on disk
    scans = verify.scan([db.workspace], [SECRET_NAME, key.hex()], db.workspace, markers=[PUBLIC_NOTE])
    assert not any(s.hits for s in scans)  # neither the sealed value nor the key, anywhere (log included)
    exposed = [s.path for s in scans if s.marker_hits]
    assert any("/base/" in p for p in exposed) and any("/pg_wal/" in p for p in exposed)


def test_a_wrong_key_cannot_read_sealed_columns_and_no_key_is_said(sealed) -> None:
    db, conn, key = sealed
    conn.execute("INSERT INTO person (id, name, balance, note) VALUES (1, 'x', 1, 'y')")
    db.key = Secret(os.urandom(32))
    wrong = db.connect()
    try:
        assert wrong.execute("SELECT note FROM person") == [("y".ljust(40),)]  # unsealed: readable
        with pytest.raises(Exception, match="Wrong key or corrupt data") as info:
            wrong.execute("SELECT name FROM person")
        assert key.hex() not in str(info.value) and db.key.hex() not in str(info.value)
    finally:
        wrong.close()
        db.key = key


def test_plaintext_stored_behind_the_views_back_is_reported(sealed) -> None:
    db, conn, _ = sealed
    conn.execute(f"INSERT INTO {SCHEMA}.person (id, name, balance, note) VALUES (1, 'plain', 'plain', 'n')")
    with pytest.raises(EncryptionNotActive, match="values of person.balance are not AES-256 OpenPGP messages"):
        db.encryption_state()


def test_every_cipher_seals_with_its_own_algorithm_or_says_it_cannot(sealed) -> None:
    """AES-128/192/256, Triple DES, Blowfish and CAST5 on one server, a table each: every value
    is an OpenPGP message whose session key packet names that cipher (the octet `state` checks),
    reads back through the view, and is in no heap file in plaintext, and a wrong key reads
    none, unless the server's pgcrypto cannot encrypt with the cipher (Blowfish and CAST5 under
    OpenSSL 3 without its legacy provider, as on Debian 12: a well-formed message with the
    plaintext inside). Then `really_encrypts` says so, and the heap holds the canary: the state
    and the scan always agree. A table sealed with another cipher than the one asked about
    fails `state`."""
    db, conn, key = sealed
    files, works = {}, {}
    for name, cipher in COLUMN_CIPHERS.items():
        table, canary = _table(name), f"TDEBENCH-CANARY-{name}-0123"
        conn.execute(f"CREATE TABLE {table} (id INT NOT NULL, v TEXT NOT NULL)")
        seal(conn, cipher, table, ("v",), ("id",))
        conn.execute(f"INSERT INTO {table} (id, v) VALUES (1, ?)", [canary])
        assert conn.execute(f"SELECT v FROM {table}") == [(canary,)]
        ((start,),) = conn.execute(f"SELECT encode(substring(v for 6), 'hex') FROM {SCHEMA}.{table}")
        assert start == f"c30c04{cipher.openpgp_id:02x}0108", name
        ((path,),) = conn.execute(f"SELECT pg_relation_filepath('{SCHEMA}.{table}')")
        files[name], works[name] = db.data_dir / path, really_encrypts(conn, cipher)
    with pytest.raises(EncryptionNotActive, match="values of t_3des.v are not AES-256 OpenPGP messages"):
        state(conn, COLUMN_CIPHERS["column-aes-256"])
    conn.close()
    db.close()  # a shutdown checkpoint: every page on disk
    for name, path in files.items():
        leaked = f"TDEBENCH-CANARY-{name}-0123".encode() in path.read_bytes()
        assert leaked == (not works[name]), (name, works[name])
    assert {name for name, ok in works.items() if ok} >= {"column-aes-128", "column-aes-192", "column-aes-256",
                                                          "column-3des"}
    db.key = Secret(os.urandom(32))
    wrong = db.connect()
    try:
        for name in (name for name, ok in works.items() if ok):
            with pytest.raises(Exception, match="Wrong key or corrupt data"):
                wrong.execute(f"SELECT v FROM {_table(name)}")
    finally:
        wrong.close()
        db.key = key
    broken = next((name for name, ok in works.items() if not ok), None)
    if broken is not None:  # the engine's own state refuses it, whatever the header says
        conn = db.connect()
        try:
            with pytest.raises(EncryptionNotActive, match="writes .* values unencrypted on this server"):
                state(conn, COLUMN_CIPHERS[broken])
        finally:
            conn.close()


def _opened(message: bytes, at: int, passphrase: str) -> tuple[bytes, bool]:
    """The CFB stream of a pgp_sym_encrypt message (AES-256, salted S2K over SHA-256) from `at`,
    decrypted here with the passphrase, and whether its MDC holds: what the test checks the
    forgery's offsets against, with the key the workload never uses."""
    salt = message[6:14]  # after the key packet's header, version, cipher, S2K mode and hash
    key = hashlib.sha256(salt + passphrase.encode()).digest()
    decryptor = Cipher(algorithms.AES(key), CFB(bytes(16))).decryptor()
    plain = decryptor.update(message[at:]) + decryptor.finalize()
    return plain, hashlib.sha1(plain[:-20]).digest() == plain[-20:]


def test_a_known_plaintext_forgery_lands_in_the_value_and_only_the_mdc_refuses_it(sealed) -> None:
    """The strength workload's forgery of a sealed value, with the key as the check: the offsets
    `sealed_layout` gives put the value where decrypting finds it; the difference XORed into the
    value's last CFB block changes exactly those characters and garbles only the MDC after them,
    which pgcrypto then refuses ("Wrong key or corrupt data", its debug notice naming the MDC)."""
    db, conn, key = sealed
    conn.execute("CREATE TABLE forged (id INT NOT NULL, v TEXT NOT NULL)")
    db.seal_columns(conn, "forged", ("v",), ("id",))
    old = strength_data.value(1, 7)
    conn.execute("INSERT INTO forged (id, v) VALUES (1, ?)", [old])
    sealed_value = db.sealed_value("forged", "v", "id", 1)
    assert sealed_value is not None and sealed_value.value_bytes == len(old)
    at = sealed_value.value_at
    plain, holds = _opened(sealed_value.stored, sealed_value.stream_at, key.hex())
    assert holds and plain[at - sealed_value.stream_at:][:len(old)] == old.encode()
    new = forgery.forged_tail(old, forgery.cfb_tail(sealed_value))
    assert new.endswith("FORGED::") and new[:-8] == old[:-8]
    forged = bytearray(sealed_value.stored)
    for i, byte in enumerate(forgery.difference(old, new)):
        forged[at + i] ^= byte
    plain, holds = _opened(bytes(forged), sealed_value.stream_at, key.hex())
    assert plain[at - sealed_value.stream_at:][:len(old)] == new.encode() and not holds
    notices: list[str] = []
    conn.raw.add_notice_handler(lambda notice: notices.append(notice.message_primary or ""))
    with pytest.raises(Exception, match="Wrong key or corrupt data"):
        conn.execute("SELECT pgp_sym_decrypt(?::bytea, current_setting('tdebench.key'), 'debug=1')", [bytes(forged)])
    assert any("MDC" in notice.upper() for notice in notices), notices


def _table(name: str) -> str:
    return "t_" + name.removeprefix("column-").replace("-", "")


def test_sealing_refuses_unknown_and_key_columns(sealed) -> None:
    db, conn, _ = sealed
    conn.execute("CREATE TABLE other (id INT NOT NULL, v TEXT NOT NULL)")
    with pytest.raises(ValueError, match="no column nope; it has id, v"):
        db.seal_columns(conn, "other", ("nope",), ("id",))
    with pytest.raises(ValueError, match="a key column cannot be sealed: id"):
        db.seal_columns(conn, "other", ("id",), ("id",))


@pytest.mark.parametrize("sql, stored", [
    ("ALTER TABLE t ADD PRIMARY KEY (a)", True), ("  create unique index i on t (a)", True),
    ("CREATE INDEX i ON t (a)", True), ("ANALYZE", True), ("VACUUM t", True), ("REINDEX TABLE t", True),
    ("SELECT * FROM t", False), ("CREATE TABLE analyze_me (a int)", False), ("INSERT INTO t VALUES (1)", False)])
def test_statements_about_storage_reach_the_stored_table(sql: str, stored: bool) -> None:
    assert stored_table_statement(sql) is stored
