"""Every TPC-H query, in every dialect, returns the reference answer at SF 0.01.

Each engine is driven through its plain Python driver (no tdebench engine, no encryption),
so a failure here points at the workload's schema, data or SQL, never at an engine adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import duckdb
import pytest

from tdebench.workloads.tpch import answers, data, schema
from tdebench.workloads.tpch.queries import query

SCALE = 0.01

Run = Callable[[str], list[tuple[Any, ...]]]


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return data.generate(SCALE, tmp_path_factory.mktemp("tpch-data"))


@pytest.fixture(scope="module")
def duckdb_run(parquet: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    con = duckdb.connect(str(tmp_path_factory.mktemp("duckdb") / "tpch.duckdb"))
    for statement in schema.create_tables("duckdb"):
        con.execute(statement)
    for table, columns in schema.TABLES.items():
        names = ", ".join(columns)
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM read_parquet(?)", [str(parquet[table])])
    for statement in schema.create_indexes("duckdb"):
        con.execute(statement)
    yield lambda sql: con.execute(sql).fetchall()
    con.close()


@pytest.fixture(scope="module")
def sqlite_run(parquet: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    con = apsw.Connection(str(tmp_path_factory.mktemp("sqlite") / "tpch.sqlite"))
    for statement in schema.create_tables("sqlite"):
        con.execute(statement)
    reader = duckdb.connect(":memory:")
    with con:  # one transaction: SQLite commits per statement otherwise
        for table, columns in schema.TABLES.items():
            cursor = reader.execute(schema.parquet_select(table, "sqlite"), [str(parquet[table])])
            insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            while batch := cursor.fetchmany(10_000):
                con.executemany(insert, batch)
    reader.close()
    for statement in schema.create_indexes("sqlite"):
        con.execute(statement)
    yield lambda sql: con.execute(sql).fetchall()
    con.close()


@pytest.mark.parametrize("number", range(1, 23), ids=lambda n: f"q{n:02d}")
@pytest.mark.parametrize("dialect", schema.DIALECTS)
def test_query_returns_reference_answer(dialect: str, number: int, request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(f"{dialect}_run")
    result = answers.check(number, SCALE, run(query(number, dialect)))
    assert result.status == "ok", result.message


@pytest.mark.parametrize("dialect", schema.DIALECTS)
def test_loaded_row_counts_match_parquet(dialect: str, parquet: dict[str, Path],
                                         request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(f"{dialect}_run")
    reader = duckdb.connect(":memory:")
    for table, path in parquet.items():
        (expected,) = reader.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()
        assert run(f"SELECT count(*) FROM {table}") == [(expected,)], table
    reader.close()
