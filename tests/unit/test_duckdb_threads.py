"""DuckDB runs each query on every core but one (at least one thread): with every core in a
query's pipelines, other work on the machine stalled them and made trials differ
(bench/precision.py). The setting is the engine's, so every database it opens uses it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tdebench.engines import NONE, get_engine
from tdebench.engines import duckdb as duckdb_engine


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (8, 7)])
def test_default_threads_leave_one_core(monkeypatch, cores: int, threads: int) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert duckdb_engine.default_threads() == threads


def test_an_opened_database_uses_the_default_threads(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    database = get_engine("duckdb").provision(tmp_path, NONE, None)
    database.create()
    conn = database.connect()
    try:
        assert conn.execute("SELECT current_setting('threads')") == [(3,)]
    finally:
        conn.close()
        database.close()
