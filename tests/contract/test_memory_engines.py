"""A plan's memory_mb reaches every engine for real: read back from the running engine, with
its native encryption and under the gocryptfs layer (the engine inside the mount)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tdebench.engines import get_engine
from tdebench.keys import Secret

MEMORY_MB = 48
READ_BACK = {
    "duckdb": ("SELECT current_setting('memory_limit')", [(f"{MEMORY_MB}.0 MiB",)]),
    "sqlite": ("PRAGMA cache_size", [(-MEMORY_MB * 1024,)]),  # negative: KiB
    "sqlcipher": ("PRAGMA cache_size", [(-MEMORY_MB * 1024,)]),
    "mariadb": ("SELECT @@innodb_buffer_pool_size", [(MEMORY_MB * 1024 * 1024,)]),
    "postgres": ("SHOW shared_buffers", [(f"{MEMORY_MB}MB",)]),
}
CASES = [("duckdb", "aes-256-gcm"), ("duckdb", "fs-aes-256-gcm"), ("sqlite", "aes-256-cbc"),
         ("sqlite", "fs-aes-256-gcm"), ("sqlcipher", "aes-256-cbc-hmac-sha512"),
         ("mariadb", "aes-256-ctr"), ("postgres", "fs-aes-256-gcm")]


@pytest.mark.parametrize("engine_name, encryption", CASES, ids=[f"{e}-{c}" for e, c in CASES])
def test_memory_mb_is_applied(engine_name: str, encryption: str, tmp_path: Path) -> None:
    engine = get_engine(engine_name, memory_mb=MEMORY_MB)
    assert engine.availability().usable, engine.availability().reason
    assert engine.cache_mb() == MEMORY_MB
    db = engine.provision(tmp_path, engine.encryption(encryption), Secret(os.urandom(32)))
    try:
        db.create()
        query, expected = READ_BACK[engine_name]
        first, second = db.connect(), db.connect()  # SQLite sets it per connection: every one has it
        try:
            assert first.execute(query) == expected and second.execute(query) == expected
        finally:
            first.close()
            second.close()
    finally:
        db.close()


def _ask(engine_name: str, encryption: str, query: str, workspace: Path) -> list:
    """`query`'s answer on a new database of the engine without memory_mb."""
    engine = get_engine(engine_name)
    workspace.mkdir()
    db = engine.provision(workspace, engine.encryption(encryption), Secret(os.urandom(32)))
    db.create()
    conn = db.connect()
    try:
        return conn.execute(query)
    finally:
        conn.close()
        db.close()


def test_without_memory_mb_each_engine_records_the_cache_it_really_has(tmp_path: Path) -> None:
    """Servers: tdebench's 256 MB; embedded engines: their own default as a database of theirs
    reports it (SQLite's 2000 KiB page cache per connection, DuckDB's memory_limit), never 0."""
    assert {name: get_engine(name).cache_mb() for name in ("mariadb", "postgres")} == {"mariadb": 256, "postgres": 256}
    assert _ask("sqlite", "sqlcipher", "PRAGMA cache_size", tmp_path / "sqlite") == [(-2000,)]
    assert get_engine("sqlite").cache_mb() == 2000 / 1024
    ((limit,),) = _ask("duckdb", "aes-256-gcm", "SELECT current_setting('memory_limit')", tmp_path / "duckdb")
    assert limit == f"{get_engine('duckdb').cache_mb() / 1024:.1f} GiB"


def test_mariadb_reads_past_the_os_page_cache(tmp_path: Path) -> None:
    """What the report's cache-fit note says: InnoDB opens its files with O_DIRECT, so a
    buffer-pool miss is a disk read even when the OS page cache is warm."""
    db = get_engine("mariadb").provision(tmp_path, get_engine("mariadb").encryption("none"), None)
    try:
        db.create()
        conn = db.connect()
        try:
            assert conn.execute("SELECT @@innodb_flush_method") == [("O_DIRECT",)]
        finally:
            conn.close()
    finally:
        db.close()
