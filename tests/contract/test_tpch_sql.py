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

from tdebench.engines import Engine, get_engine
from tdebench.workloads.tpch import answers, data, schema
from tdebench.engines.duckdb_extensions import duckdb_with_tpch
from tdebench.workloads.tpch.queries import query

SCALE = 0.01
LIVE = ("duckdb", "sqlite", "mysql", "postgres")
"""The dialects with an engine here; tsql and oracle (the script kit's) are checked by parsing
only, in tests/unit/test_kit_scripts.py."""

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
            select = _bindable_select(reader, columns, parquet[table])
            cursor = reader.execute(select, [str(parquet[table])])
            insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            while batch := cursor.fetchmany(10_000):
                con.executemany(insert, batch)
    reader.close()
    for statement in schema.create_indexes("sqlite"):
        con.execute(statement)
    yield lambda sql: con.execute(sql).fetchall()
    con.close()


def _engine_run(engine: Engine, workspace: Path, parquet: dict[str, Path]) -> Iterator[Run]:
    """A server of `engine` (no encryption), started and loaded through the engine module
    (LOAD DATA LOCAL INFILE, COPY), as the runner does; stopped when the module is done."""
    assert engine.availability().usable, engine.availability()  # scripts/test.sh installs the servers
    db = engine.provision(workspace, engine.encryption("none"), None)
    try:
        db.create()
        conn = db.connect()
        for statement in schema.create_tables(engine.dialect):
            conn.execute(statement)
        for table, columns in schema.TABLES.items():
            db.bulk_load(conn, table, columns, parquet[table])
        for statement in schema.create_indexes(engine.dialect):
            conn.execute(statement)
        yield conn.execute
        conn.close()
    finally:
        db.close()


@pytest.fixture(scope="module")
def mysql_run(parquet: dict[str, Path], server_tmp_dir: Path) -> Iterator[Run]:
    yield from _engine_run(get_engine("mariadb"), server_tmp_dir / "mariadb", parquet)


@pytest.fixture(scope="module")
def postgres_run(parquet: dict[str, Path], server_tmp_dir: Path) -> Iterator[Run]:
    """In a directory the `postgres` user can reach (conftest.py)."""
    yield from _engine_run(get_engine("postgres"), server_tmp_dir / "postgres", parquet)


def _bindable_select(reader: duckdb.DuckDBPyConnection, columns: tuple[str, ...], path: Path) -> str:
    """SELECT from Parquet with DECIMAL as DOUBLE and DATE as ISO text: apsw binds neither
    Decimal nor datetime.date (the same casts the SQLite engine's loader makes)."""
    types = dict(reader.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
                                [str(path)]).fetchall())
    casts = {"DECIMAL": "DOUBLE", "DATE": "VARCHAR"}
    select = [next((f"CAST({c} AS {to})" for prefix, to in casts.items() if types[c].startswith(prefix)), c)
              for c in columns]
    return f"SELECT {', '.join(select)} FROM read_parquet(?)"


@pytest.mark.parametrize("number", range(1, 23), ids=lambda n: f"q{n:02d}")
@pytest.mark.parametrize("dialect", LIVE)
def test_query_returns_reference_answer(dialect: str, number: int, request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(f"{dialect}_run")
    result = answers.check(number, SCALE, run(query(number, dialect)))
    assert result.status == "ok", result.message


@pytest.mark.parametrize("dialect", LIVE)
def test_loaded_row_counts_match_parquet(dialect: str, parquet: dict[str, Path],
                                         request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(f"{dialect}_run")
    reader = duckdb.connect(":memory:")
    for table, path in parquet.items():
        (expected,) = reader.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()
        assert run(f"SELECT count(*) FROM {table}") == [(expected,)], table
    reader.close()


def test_duckdb_query_files_match_the_extension() -> None:
    """The packaged DuckDB text is the extension's, so it can be reviewed and diffed."""
    con = duckdb_with_tpch()
    source = dict(con.execute("SELECT query_nr, query FROM tpch_queries()").fetchall())
    con.close()
    assert {n: query(n, "duckdb") for n in range(1, 23)} == {n: q.strip() + "\n" for n, q in source.items()}


def test_generate_reuses_complete_files_and_leaves_no_scratch(parquet: dict[str, Path]) -> None:
    directory = parquet["region"].parent
    assert directory.name == "sf0.01"
    assert sorted(p.name for p in directory.iterdir()) == sorted(f"{t}.parquet" for t in schema.TABLES)
    stamps = {t: p.stat().st_mtime_ns for t, p in parquet.items()}
    assert data.generate(SCALE, directory.parent) == parquet
    assert {t: p.stat().st_mtime_ns for t, p in parquet.items()} == stamps


def test_generate_remakes_a_missing_file(tmp_path: Path, parquet: dict[str, Path]) -> None:
    target = tmp_path / "sf0.01"
    target.mkdir()
    for table, path in parquet.items():
        if table != "nation":
            (target / path.name).write_bytes(path.read_bytes())
    files = data.generate(SCALE, tmp_path)
    assert files["nation"].read_bytes() == parquet["nation"].read_bytes()  # dbgen is deterministic


@pytest.mark.parametrize("scale", [0.001, 11])
def test_generate_refuses_scales_out_of_range(scale: float, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside 0.01..10"):
        data.generate(scale, tmp_path)
    assert not any(tmp_path.iterdir())


def test_every_dialect_has_an_engine_here_or_the_kit() -> None:
    assert set(schema.DIALECTS) == {*LIVE, "tsql", "oracle"}


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="dialect 'db2'; known: duckdb"):
        query(1, "db2")
    with pytest.raises(ValueError, match="dialect 'db2'; known: duckdb"):
        schema.create_tables("db2")
