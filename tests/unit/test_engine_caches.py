"""The cache each engine really has, as a trial records it (Engine.cache_mb) and as the report
reads an older run that did not record it (Engine.default_cache_mb): never "no limit" where the
engine has one."""

from __future__ import annotations

import pytest

from tdebench.engines import REMOTE_ENGINES, get_engine
from tdebench.engines.duckdb import DEFAULT_MEMORY_SHARE

GIB = 1024 ** 3


def test_sqlites_default_is_its_page_cache_of_2000_kib_asked_of_sqlite() -> None:
    sqlite = get_engine("sqlite")
    assert sqlite.cache_mb() == 2000 / 1024  # PRAGMA cache_size = -2000: KiB, per connection
    assert sqlite.default_cache_mb(16 * GIB) == sqlite.default_cache_mb(None) == 2000 / 1024  # not the machine's


def test_duckdbs_default_is_its_memory_limit_of_80_percent_of_memory() -> None:
    import psutil

    duckdb = get_engine("duckdb")
    assert duckdb.cache_mb() == pytest.approx(0.8 * psutil.virtual_memory().total / 1024 ** 2, rel=0.01)
    assert duckdb.default_cache_mb(16 * GIB) == DEFAULT_MEMORY_SHARE * 16 * 1024 == 13107.2
    assert duckdb.default_cache_mb(None) == 0.0  # the machine's memory not known: the cache not known


@pytest.mark.parametrize("name", ["duckdb", "sqlite", "mariadb", "postgres"])
def test_memory_mb_is_the_cache_for_every_engine(name: str) -> None:
    assert get_engine(name, memory_mb=2).cache_mb() == 2


def test_the_servers_get_tdebenchs_256_mb_and_a_server_by_url_is_not_known() -> None:
    assert get_engine("mariadb").cache_mb() == get_engine("postgres").cache_mb() == 256
    assert {name: engine().cache_mb() for name, engine in REMOTE_ENGINES.items()} == dict.fromkeys(REMOTE_ENGINES, 0)
    assert get_engine("mariadb").default_cache_mb(16 * GIB) == 0.0  # recorded by every run: never guessed
