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
    "mariadb": ("SELECT @@innodb_buffer_pool_size", [(MEMORY_MB * 1024 * 1024,)]),
    "postgres": ("SHOW shared_buffers", [(f"{MEMORY_MB}MB",)]),
}
CASES = [("duckdb", "aes-256-gcm"), ("duckdb", "fs-aes-256-gcm"), ("sqlite", "aes-256-cbc"),
         ("sqlite", "fs-aes-256-gcm"), ("mariadb", "aes-256-ctr"), ("postgres", "fs-aes-256-gcm")]


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


def test_without_memory_mb_servers_get_their_default_and_embedded_engines_no_limit() -> None:
    assert {name: get_engine(name).cache_mb() for name in READ_BACK} == {
        "duckdb": 0, "sqlite": 0, "mariadb": 256, "postgres": 256}


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
