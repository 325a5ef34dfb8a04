"""DuckDB's temp files, read while they exist: a query that spills past a small memory_limit
writes the canary rows it sorts into `duckdb_temp_storage_*.tmp` in plaintext unless
temp_file_encryption is on, and DuckDB deletes them before the query returns, so no at-rest
scan sees them. A thread (bench/temp_coverage.py's TempWatch) scans each temp file with
verify.scan_file while the query runs: the baseline's and the `-plaintemp` variants' show the
canary, the encryptions' none. This measures the coverage apart from the runner's capture."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tdebench.engines.base import EncryptionNotActive
from tdebench.engines.duckdb import DuckDBEngine
from tdebench.keys import Secret

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from temp_coverage import TempWatch  # noqa: E402

ROWS = 300_000  # about 30 MB of canary rows: several times the memory_limit below
CANARY = "TDEBENCH-CANARY-duckdb-temp-0123456789"
SPILL = ("SELECT count(*) FROM (SELECT secret, row_number() OVER (ORDER BY secret DESC) AS n FROM spill) AS s "
         "WHERE n % 1000 = 0")  # sorts every row, returns one


@pytest.mark.parametrize("encryption, plaintext", [
    ("none", True), ("aes-256-gcm", False), ("aes-256-ctr", False),
    ("aes-256-gcm-plaintemp", True), ("aes-256-ctr-plaintemp", True),
])
def test_spilled_rows_are_plaintext_exactly_where_temp_files_are_not_encrypted(
        encryption: str, plaintext: bool, tmp_path: Path) -> None:
    engine = DuckDBEngine()
    chosen = engine.encryption(encryption)
    database = engine.provision(tmp_path, chosen, None if chosen.is_baseline else Secret(os.urandom(32)))
    assert ("temp files" in chosen.covers) == (not plaintext and not chosen.is_baseline)
    database.create()
    conn = database.connect()
    try:
        conn.execute(f"CREATE TABLE spill AS SELECT i AS id, '{CANARY}-' || lpad(((i * 7919) % {ROWS})::VARCHAR, 9, "
                     f"'0') || repeat('x', 60) AS secret FROM range({ROWS}) AS r(i)")
        conn.execute("SET threads = 1")  # one thread's buffers: the sort fits in 32 MiB only by spilling
        conn.execute("SET memory_limit = '32MiB'")
        with TempWatch([database.temp_directory], list, [CANARY]) as watch:
            assert conn.execute(SPILL) == [(ROWS // 1000,)]
    finally:
        conn.close()
    spilled = [seen for seen in watch.seen.values() if seen.new]
    assert spilled and sum(seen.bytes for seen in spilled) > 8 << 20, spilled  # the query did spill
    assert all(seen.name.startswith("duckdb_temp_storage_") for seen in spilled), spilled
    hits = sum(seen.hits for seen in spilled)
    assert (hits > 1000) if plaintext else hits == 0, (encryption, spilled)
    assert not list(database.temp_directory.iterdir())  # gone again: an at-rest scan could not see them
    if not chosen.is_baseline:
        state = database.encryption_state()
        assert state == f"database encrypted with {chosen.mode}; temp_file_encryption = {str(not plaintext).lower()}"
    database.close()


def test_encryption_state_fails_where_duckdb_would_leave_the_temp_files_plaintext(tmp_path: Path) -> None:
    """A DuckDB that encrypts the database but not its temp files, where the encryption claims
    them, is not what tdebench measures: its engine state says so and fails the trial."""
    engine = DuckDBEngine()
    database = engine.provision(tmp_path, engine.encryption("aes-256-gcm"), Secret(os.urandom(32)))
    database.create()
    config = database._config

    def default_temp_files():
        return {**config(), "temp_file_encryption": False}

    database._config = default_temp_files  # as DuckDB leaves it by default
    with pytest.raises(EncryptionNotActive, match="temp_file_encryption = false, where aes-256-gcm should have "
                                                  "GCM and temp_file_encryption = true"):
        database.encryption_state()
    database.close()
