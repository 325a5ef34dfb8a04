"""The cache each engine really has, as a trial records it (Engine.cache_mb) and as a run records
the engine's default (Engine.facts), which the report reads an older run's 0 as: never "no limit"
where the engine has one."""

from __future__ import annotations

import pytest

from tdebench.engines import BY_URL, get_engine
from tdebench.engines.duckdb import DEFAULT_MEMORY_SHARE


def test_sqlites_default_is_its_page_cache_of_2000_kib_asked_of_sqlite() -> None:
    sqlite = get_engine("sqlite")
    assert sqlite.cache_mb() == 2000 / 1024  # PRAGMA cache_size = -2000: KiB, per connection
    facts = sqlite.facts()
    assert facts.default_cache_mb == 2000 / 1024 and facts.default_cache_share == 0  # not the machine's


def test_duckdbs_default_is_its_memory_limit_of_80_percent_of_memory() -> None:
    import psutil

    duckdb = get_engine("duckdb")
    assert duckdb.cache_mb() == pytest.approx(0.8 * psutil.virtual_memory().total / 1024 ** 2, rel=0.01)
    assert duckdb.facts().default_cache_share == DEFAULT_MEMORY_SHARE == 0.8  # of the run's machine's memory
    assert duckdb.facts().default_cache_mb == 0.0


@pytest.mark.parametrize("name", ["duckdb", "sqlite", "mariadb", "postgres"])
def test_memory_mb_is_the_cache_for_every_engine(name: str) -> None:
    assert get_engine(name, memory_mb=2).cache_mb() == 2


def test_the_servers_get_tdebenchs_256_mb_and_a_server_by_url_is_not_known() -> None:
    assert get_engine("mariadb").cache_mb() == get_engine("postgres").cache_mb() == 256
    assert {name: engine().cache_mb() for name, engine in BY_URL.items()} == dict.fromkeys(BY_URL, 0)
    facts = get_engine("mariadb").facts()
    assert facts.default_cache_mb == facts.default_cache_share == 0.0  # recorded by every trial: never guessed
