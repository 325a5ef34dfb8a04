"""The engine contract, exercised on every engine and every encryption it offers, for real.

Adding an engine tdebench provisions means its entry in tdebench.engines.REGISTRY (`here`); these
tests then hold it to the same promises as the others.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tdebench import verify
from tdebench.engines import PROVISIONED, get_engine
from tdebench.engines.base import Database
from tdebench.keys import Secret
from tdebench.results import TrialKey
from tdebench.workloads.base import read_canaries, write_canaries

from workspaces import server_reachable_dir

COLUMN_HERE = ("column-aes-256", "column-3des")
"""The column layer's ciphers the contract runs: the others differ from these only in pgcrypto's
cipher option, and tests/contract/test_pgcrypto.py seals and checks every one on one server."""
CASES = [(name, enc.name) for name, cls in PROVISIONED.items() for enc in cls.encryptions
         if enc.layer != "column" or enc.name in COLUMN_HERE]
CANARY = "TDEBENCH-CANARY-contract-0123456789"
MARKER = "TDEBENCH-MARKER-contract-0123456789"


def key_for(encryption: str) -> Secret | None:
    return None if encryption in UNENCRYPTED else Secret(os.urandom(32))


UNENCRYPTED = {enc.name for cls in PROVISIONED.values() for enc in cls.encryptions if not enc.encrypts}
"""none, and a layer with no cipher (fs-passthrough): no key, plaintext at rest."""
ENCRYPTED = [case for case in CASES if case[1] not in UNENCRYPTED]
BASELINES = [(name, "none") for name in PROVISIONED]
ROWS = 1000


def provisioned(case: tuple[str, str], tmp_path: Path):
    engine_name, enc_name = case
    engine = get_engine(engine_name)
    assert engine.availability().usable, engine.availability().reason
    db = engine.provision(tmp_path, engine.encryption(enc_name), key_for(enc_name))
    db.create()
    return db


@pytest.fixture(scope="module")
def written(request: pytest.FixtureRequest) -> Iterator[tuple[str, Database]]:
    """The engine's name and a database of the case (`indirect` parametrization), holding the
    canary table and a table `t` of ROWS rows, closed: one per case for the tests below,
    each of which reopens it and leaves it closed (provisioning a server or a mount is most of a
    case's time; each test adds only tables of names of its own)."""
    with server_reachable_dir() as path:
        db = provisioned(request.param, path)
        try:
            conn = db.connect()
            write_canaries(db, conn, [CANARY], [MARKER])
            conn.execute("CREATE TABLE t (id INTEGER, s VARCHAR(40))")
            conn.executemany("INSERT INTO t (id, s) VALUES (?, ?)", [(i, f"row {i}") for i in range(ROWS)])
            conn.close()
            db.close()
            yield request.param[0], db
        finally:
            db.close()


@pytest.mark.parametrize("written", CASES, ids=[f"{e}-{c}" for e, c in CASES], indirect=True)
def test_round_trip_files_size_and_at_rest_scan(written) -> None:
    _, database = written
    files = database.files()
    assert files and all(p.is_file() for p in files)
    assert database.size_bytes() == sum(p.stat().st_size for p in files) > 0

    reopened = database.connect()
    try:
        assert read_canaries(reopened) == {CANARY}
        assert reopened.execute("SELECT count(*) FROM t") == [(ROWS,)]
    finally:
        reopened.close()
        database.close()

    scans = verify.scan([database.workspace], [CANARY], database.workspace, database.plaintext_signature(),
                        markers=[MARKER])
    trial = TrialKey(database.workspace.name, database.encryption.name, "contract", 0.0, 1)
    column_layer = database.encryption.layer == "column"
    encrypts = database.encryption.encrypts
    verdict = verify.judge(trial, "encrypted" if encrypts else "plaintext", scans, True, column_layer=column_layer)
    assert verdict.as_expected, verdict.detail
    # the marker beside the canary is plaintext exactly where the encryption leaves it so
    assert bool(sum(s.marker_hits for s in scans)) == (not encrypts or column_layer)
    assert bool(verdict.exposed) == column_layer


@pytest.mark.parametrize("written", ENCRYPTED, ids=[f"{e}-{c}" for e, c in ENCRYPTED], indirect=True)
def test_wrong_key_cannot_open_and_error_does_not_leak_the_key(written) -> None:
    _, database = written
    right_key = database.key
    database.key = Secret(os.urandom(32))
    try:
        with pytest.raises(Exception) as info:
            bad = database.connect()
            read_canaries(bad)
        assert right_key.hex() not in str(info.value) and database.key.hex() not in str(info.value)
    finally:
        database.close()
        database.key = right_key
    good = database.connect()
    try:
        assert read_canaries(good) == {CANARY}
    finally:
        good.close()
        database.close()


@pytest.mark.parametrize("engine_name", list(PROVISIONED))
def test_engine_describes_itself(engine_name: str) -> None:
    engine = get_engine(engine_name)
    assert engine.version()
    names = [e.name for e in engine.encryptions]
    assert names[0] == "none" and len(names) == len(set(names)) > 1
    for enc in engine.encryptions[1:]:
        assert enc.layer in ("native", "fs", "column")
        if not enc.encrypts:  # a layer with no cipher (fs-passthrough): nothing covered, no key, no cipher
            assert enc.layer == "fs" and (enc.key_bits, enc.covers, enc.cipher, enc.page_bytes) == (0, (), "", 0)
            continue
        assert enc.key_bits > 0 and enc.covers
        assert enc.cipher and (enc.page_bytes > 0) == (enc.layer != "column")  # the raw cipher's page size
    with pytest.raises(KeyError, match="valid: none"):
        engine.encryption("rot13")


@pytest.mark.parametrize("written", BASELINES, ids=list(PROVISIONED), indirect=True)
def test_statement_timeout_stops_a_long_query(written) -> None:
    from tdebench.engines.base import QueryTimeout

    _, db = written
    conn = db.connect()
    try:
        conn.set_timeout(0.3)
        endless = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
                   "SELECT count(*) FROM r")
        with pytest.raises(QueryTimeout, match="0.3 s timeout"):
            conn.execute(endless)
        assert conn.execute("SELECT 42") == [(42,)]  # the connection still works
        conn.set_timeout(None)
        assert conn.execute("SELECT 7") == [(7,)]
    finally:
        conn.close()
        db.close()


@pytest.mark.parametrize("written", BASELINES, ids=list(PROVISIONED), indirect=True)
def test_a_batch_gives_each_statements_rows_and_a_failure_in_it_is_rolled_back_whole(written) -> None:
    """`Connection.execute_batch` (a server sends the statements together): each statement's
    rows in order, as `execute` gives them, `?` inside quotes left as text; in a transaction, a statement that fails
    raises, and the ROLLBACK that follows leaves nothing of the batch, as oltp's retries need."""
    _, db = written
    conn = db.connect()
    try:
        conn.execute("CREATE TABLE b (id INTEGER PRIMARY KEY, n INTEGER)")
        results = conn.execute_batch([("INSERT INTO b (id, n) VALUES (?, ?)", [1, 10]),
                                      ("UPDATE b SET n = n + ? WHERE id = ?", [5, 1]),
                                      ("SELECT n, '?%' FROM b WHERE id = ?", [1])])
        assert len(results) == 3 and results[2] == [(15, "?%")]  # (DuckDB gives a write's count as its row)
        with pytest.raises(Exception, match="(?i)unique|duplicate|constraint"):
            conn.execute_batch([("BEGIN", ()), ("UPDATE b SET n = 0 WHERE id = ?", [1]),
                                ("INSERT INTO b (id, n) VALUES (?, ?)", [2, 20]),
                                ("INSERT INTO b (id, n) VALUES (?, ?)", [1, 0]),
                                ("INSERT INTO b (id, n) VALUES (?, ?)", [3, 30]), ("COMMIT", ())])
        conn.execute("ROLLBACK")
        assert conn.execute("SELECT id, n FROM b ORDER BY id") == [(1, 15)]
    finally:
        conn.close()
        db.close()


@pytest.mark.parametrize("written", CASES, ids=[f"{e}-{c}" for e, c in CASES], indirect=True)
def test_bulk_load_takes_tpch_parquet_with_decimals_and_dates(written) -> None:
    """Every engine and layer loads the generated data through its own path (a layer below the
    engine must not fall back to a slower or type-blind one)."""
    import duckdb

    from tdebench.workloads.tpch import data, schema

    files = data.generate(0.01, Path.home() / ".cache" / "tdebench" / "data")
    engine_name, database = written
    engine = get_engine(engine_name)
    conn = database.connect()
    try:
        for statement in schema.create_tables(engine.dialect):
            conn.execute(statement)
        for table in ("nation", "supplier", "orders"):  # decimals, dates
            database.bulk_load(conn, table, schema.TABLES[table], files[table])
            expected = duckdb.sql(f"SELECT count(*) FROM read_parquet('{files[table]}')").fetchone()[0]
            assert conn.execute(f"SELECT count(*) FROM {table}") == [(expected,)]
        total = conn.execute("SELECT sum(o_totalprice) FROM orders")[0][0]
        expected_total = duckdb.sql(f"SELECT sum(o_totalprice) FROM read_parquet('{files['orders']}')").fetchone()[0]
        assert abs(float(total) - float(expected_total)) < 1.0
    finally:
        conn.close()
        database.close()
