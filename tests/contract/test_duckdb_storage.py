"""Every DuckDB file tdebench makes is in one storage format, with or without a key: DuckDB
writes encrypted files in v1.5.0 or later only and plaintext ones in v1.0.0 unless told, and the
two compress strings differently (DICT_FSST against FSST and Dictionary), which made AES-256-GCM's
load look faster than none's (engines/duckdb.py, STORAGE_VERSION)."""

from __future__ import annotations

import os
from pathlib import Path

from tdebench.engines.duckdb import DuckDBEngine
from tdebench.keys import Secret

STRINGS = ("SELECT i AS id, 'comment ' || (i % 9973)::VARCHAR || ' of the row' AS note, "
           "['AIR', 'MAIL', 'SHIP', 'RAIL'][1 + i % 4] AS mode FROM range(200000) AS r(i)")


def _storage(name: str, tmp_path: Path) -> tuple[object, ...]:
    engine = DuckDBEngine()
    encryption = engine.encryption(name)
    place = tmp_path / name
    place.mkdir()
    database = engine.provision(place, encryption, None if encryption.is_baseline else Secret(os.urandom(32)))
    database.create()
    conn = database.connect()
    try:
        conn.execute(f"CREATE TABLE strings AS {STRINGS}")
        conn.execute("CHECKPOINT")
        (tags,) = conn.execute("SELECT tags FROM duckdb_databases() WHERE database_name = current_database()")
        compressions = conn.execute("SELECT column_name, compression, count(*) FROM pragma_storage_info('strings') "
                                    "WHERE segment_type <> 'VALIDITY' GROUP BY ALL ORDER BY ALL")
    finally:
        conn.close()
        database.close()
    return tags, tuple(compressions)


def test_none_and_an_encryption_write_the_same_storage_format_and_compress_alike(tmp_path: Path) -> None:
    baseline, encrypted = _storage("none", tmp_path), _storage("aes-256-gcm", tmp_path)
    assert baseline[0] == encrypted[0] == ({"storage_version": "v1.5.0+"},), (baseline[0], encrypted[0])
    assert baseline[1] == encrypted[1], (baseline[1], encrypted[1])  # each column compressed the same way
    assert any(compression == "DICT_FSST" for _, compression, _ in baseline[1]), baseline[1]
