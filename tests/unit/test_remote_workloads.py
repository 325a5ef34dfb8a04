"""crud and oltp on the SQL Server and Oracle adapters, which cannot run against a server here:
their drivers are replaced by a fake DB-API module whose "server" is one in-memory DuckDB.
Every statement the adapter sends, in its dialect and with its driver's placeholders, is read
by sqlglot as T-SQL or Oracle (so each must parse in that dialect) and run as DuckDB's SQL; the
catalog statements around the workload (namespaces, sizes, counters) get fixed answers. The
workloads' own checks then judge the answers: crud's row counts and sums, oltp's TPC-C
consistency conditions. What DuckDB does not have (table hints, row locks, INSERT ALL) is
dropped or spelled out by the fake, never by tdebench's code."""

from __future__ import annotations

import dataclasses
import re
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from tdebench.engines import get_engine
from tdebench.engines.base import Database
from tdebench.engines.remote import RemoteTarget, parse_url
from tdebench.measure.clock import MonotonicClock
from tdebench.measure.recorder import Recorder
from tdebench.results import TrialKey
from tdebench.store import ResultStore, read_run
from tdebench.workloads.base import RunContext
from tdebench.workloads.crud import CrudWorkload
from tdebench.workloads.oltp import transactions
from tdebench.workloads.oltp.inputs import KINDS, Constants, Terminal
from tdebench.workloads.oltp.workload import OPTIONS, OltpWorkload

pytestmark = pytest.mark.unit

ENGINES = {"sqlserver": ("pymssql", "tsql", "mssql://bench@db:1433/bench"),
           "oracle": ("oracledb", "oracle", "oracle://bench@db:1521/FREEPDB1")}
CATALOG: dict[str, list[tuple[Any, ...]]] = {
    # SQL Server: the trial's database, its size and the server's counters
    "CREATE DATABASE": [], "DROP DATABASE": [], "sys.database_files": [(8192,)],
    "dm_io_virtual_file_stats": [(0, 0, 0)], "dm_exec_query_stats": [(0, 0)],
    # Oracle: the trial's tablespace and user, its size and the server's counters
    "CREATE TABLESPACE": [], "CREATE USER": [], "GRANT ": [], "DROP USER": [], "DROP TABLESPACE": [],
    "dba_segments": [(65536,)], "v$sysstat": [("CPU used by this session", 0)], "ALTER SESSION": [],
}
"""Statements that are the server's business, not the workload's, by a part of their text."""


class DuckServer:
    """A DB-API module (pymssql's or oracledb's place) whose server is one in-memory DuckDB."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.db = duckdb.connect(":memory:")
        self.sent: list[str] = []  # the workload's statements as the adapter sent them, placeholders as `?`
        self.translated: dict[str, list[tuple[str, int | None]]] = {}  # translate's answer per statement

    def connect(self, **kwargs: Any) -> "_Connection":
        return _Connection(self)

    def unmarked(self, sql: str) -> str:
        """The statement with the driver's placeholders (`%s`, `:1`) as `?` again."""
        if self.dialect == "tsql":
            return sql.replace("%s", "?").replace("%%", "%")
        return re.sub(r":\d+\b", "?", sql)

    def run(self, duck: Any, sql: str, rows: Sequence[Sequence[Any]]) -> tuple[list[tuple[Any, ...]], bool]:
        """(rows, whether the statement returns rows) of one statement, run once per parameter row
        of `rows` (an executemany: one DuckDB executemany; its rows are none). sqlglot reads each
        distinct statement once: a bulk load sends one INSERT a thousand times."""
        for part, found in CATALOG.items():
            if part in sql:
                return found, bool(found)
        self.sent.append(sql)
        if sql not in self.translated:
            self.translated[sql] = self.translate(sql)
        parts = self.translated[sql]
        if len(rows) > 1 and len(parts) == 1 and parts[0][1] is None:
            duck.executemany(parts[0][0], [list(row) for row in rows])
            return [], False
        result: tuple[list[tuple[Any, ...]], bool] = ([], False)
        for row in rows:
            params = list(row)
            for duck_sql, count in parts:
                mine, params = (params, []) if count is None else (params[:count], params[count:])
                cursor = duck.execute(duck_sql, mine)
                result = (cursor.fetchall(), True) if cursor.description else ([], False)
        return result

    def translate(self, sql: str) -> list[tuple[str, int | None]]:
        """What DuckDB runs for one statement: (its SQL, how many of the parameters it takes, None:
        all), in turn; none for a statement DuckDB has nothing to do for."""
        if re.fullmatch(r"BEGIN .*; END;", sql, re.DOTALL):  # PL/SQL (statistics): sqlglot reads no PL/SQL
            return []
        tree = sqlglot.parse_one(sql, read=self.dialect)
        if isinstance(tree, exp.Command | exp.Execute):  # UPDATE STATISTICS, EXEC sp_updatestats
            return []
        if isinstance(tree, exp.Transaction) or (isinstance(tree, exp.Set) and "TRANSACTION" in sql):
            return [("BEGIN TRANSACTION", 0)]
        if isinstance(tree, exp.MultitableInserts):  # Oracle's INSERT ALL: one INSERT per INTO
            return [(self._duck(insert), len(list(insert.find_all(exp.Placeholder))))
                    for insert in tree.find_all(exp.Insert)]
        return [(self._duck(tree), None)]

    @staticmethod
    def _duck(tree: exp.Expr) -> str:
        for column in tree.find_all(exp.Column):  # OUTPUT inserted.c / deleted.c: RETURNING c
            if column.table.lower() in ("inserted", "deleted"):
                column.set("table", None)
        for table in tree.find_all(exp.Table):  # WITH (UPDLOCK, ROWLOCK): DuckDB has no locks to take
            table.set("hints", None)
        if isinstance(tree, exp.Select):
            tree.set("locks", None)
        if isinstance(tree, exp.Delete) and not tree.this and tree.args.get("tables"):
            (target,) = tree.args["tables"]  # T-SQL's DELETE t OUTPUT …, read as DuckDB's DELETE FROM t
            tree.set("tables", None)
            tree.set("this", target)
        if isinstance(tree, exp.Create):  # a key's columns: no sort order for sqlglot to carry over
            for ordered in list(tree.find_all(exp.Ordered)):
                ordered.replace(ordered.this)
        return tree.sql(dialect="duckdb")


class _Connection:
    autocommit = True
    call_timeout = 0

    def __init__(self, server: DuckServer) -> None:
        self.server = server
        self.duck = server.db.cursor()  # a connection of its own to the same database

    def cursor(self) -> "_Cursor":
        return _Cursor(self)

    def commit(self) -> None:
        pass  # DuckDB commits each statement outside BEGIN … COMMIT itself

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        self.duck.close()


class _Cursor:
    def __init__(self, conn: _Connection) -> None:
        self.conn, self.rows, self.description = conn, [], None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self.executemany(sql, [params or ()])

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        server = self.conn.server
        self.rows, returns = server.run(self.conn.duck, server.unmarked(sql), rows)
        self.description = [("c",)] if returns else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def close(self) -> None:
        pass


def _adapter(engine: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Database, DuckServer]:
    """The engine's database of a `none` trial, created, with its driver the DuckDB server."""
    module_name, dialect, url = ENGINES[engine]
    server = DuckServer(dialect)
    module = types.ModuleType(module_name)
    module.connect = server.connect  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module_name, module)
    monkeypatch.setenv("TDEBENCH_PW", "s3cret-Pa55word")
    target = RemoteTarget(engine, url, *parse_url(engine, url), password_env="TDEBENCH_PW")
    remote = get_engine(engine, remote=target)
    database = remote.provision(tmp_path / "ws", remote.encryption("none"), None)
    database.create()
    return database, server


def _context(database: Database, dialect: str, workload: str, scale: float, tmp_path: Path,
             options: dict[str, Any]) -> RunContext:
    store = ResultStore(tmp_path / "out")
    store.start("", {})
    recorder = Recorder(store, TrialKey(dialect, "none", workload, scale, 1), MonotonicClock())
    return RunContext(database=database, dialect=dialect, recorder=recorder, scale=scale, streams=1,
                      data_dir=tmp_path.parent / "data", seed=5, query_timeout_s=60.0, options=options)


def _parse_all(server: DuckServer) -> None:
    """Every statement sent parses in the dialect (but the PL/SQL blocks, which sqlglot cannot read)."""
    for sql in set(server.sent):
        if not re.fullmatch(r"BEGIN .*; END;", sql, re.DOTALL):
            assert sqlglot.parse_one(sql, read=server.dialect) is not None, sql


@pytest.fixture(scope="module")
def oltp_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("data")
    OltpWorkload().prepare(1, directory, 5)
    yield directory


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crud_trial_runs_every_test_with_right_answers(engine: str, monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    database, server = _adapter(engine, monkeypatch, tmp_path)
    dialect = ENGINES[engine][1]
    workload = CrudWorkload()
    ctx = _context(database, dialect, "crud", 1000, tmp_path, {"operation_fraction": 0.1, "lookups": 20})
    workload.prepare(1000, ctx.data_dir, 5)
    conn = database.connect()
    workload.load(ctx, conn)  # through the adapter's executemany: 1,000 + 100 rows
    for test in workload.tests:
        workload.run(test, ctx, conn, warmup=False)  # a wrong count or sum raises WrongAnswer
    conn.close()
    database.drop()
    measured = [m for m in read_run(ctx.recorder.store.directory).measurements if m.step == "total"
                and m.test != "load"]
    assert {m.test for m in measured} == set(workload.tests) and {m.answer for m in measured} == {"ok"}
    _parse_all(server)
    scan = "SELECT COUNT_BIG(*), SUM(age), SUM(LEN(address)) FROM persons" if dialect == "tsql" else \
        "SELECT COUNT(*), SUM(age), SUM(LENGTH(address)) FROM persons"
    assert scan in server.sent


@pytest.mark.parametrize("engine", ENGINES)
def test_an_oltp_trial_runs_the_mix_client_side_and_stays_consistent(engine: str, oltp_data: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    database, server = _adapter(engine, monkeypatch, tmp_path)
    dialect = ENGINES[engine][1]

    def bulk_load(conn: Any, table: str, columns: Sequence[str], parquet: Path) -> None:
        """The fake server reads the Parquet file itself: 300,000 rows through executemany take minutes
        (crud's test runs the adapter's own bulk load)."""
        listed = ", ".join(columns)
        server.db.execute(f"INSERT INTO {table} ({listed}) SELECT {listed} FROM read_parquet(?)", [str(parquet)])

    monkeypatch.setattr(database, "bulk_load", bulk_load)
    options = {name: option.default for name, option in OPTIONS.items()} | {
        "virtual_users": 1, "rampup_s": 0.0, "transactions": 15, "virtual_users_as": "threads"}
    ctx = dataclasses.replace(_context(database, dialect, "oltp", 1, tmp_path, options), data_dir=oltp_data)
    workload = OltpWorkload()
    conn = database.connect()
    workload.load(ctx, conn)
    user = database.connect()  # every kind of transaction, whatever the short run's mix draws
    run = transactions.client_side(user, transactions.dialect(dialect))
    terminal = Terminal.for_user(1, 1, Constants.from_seed(5), 5, "load")
    for kind in KINDS:
        for _ in range(3):
            assert run(kind, terminal.next(kind)) in (transactions.COMMITTED, transactions.ROLLBACK)
    user.close()
    workload.run("load", ctx, conn, warmup=False)  # an error or a broken condition raises WrongAnswer
    conn.close()
    database.drop()
    stored = read_run(ctx.recorder.store.directory).measurements
    mix = next(m for m in stored if m.step == "mix")
    assert mix.metrics["committed"] == 15 and mix.metrics["errors"] == 0 and mix.metrics["procedures"] == 0
    assert next(m for m in stored if m.step == "consistency").answer == "ok"
    _parse_all(server)
    begin = "BEGIN TRANSACTION" if dialect == "tsql" else "SET TRANSACTION READ WRITE"
    assert begin in server.sent and "COMMIT" in server.sent
    assert any("(DISTINCT s_i_id) FROM order_line JOIN stock" in sql for sql in server.sent)  # Stock-Level
    if dialect == "tsql":
        assert "SELECT TOP 1 no_o_id FROM new_order WITH (UPDLOCK, ROWLOCK) WHERE no_w_id = ? AND no_d_id = ? " \
               "ORDER BY no_o_id" in server.sent
        assert "DELETE new_order OUTPUT deleted.no_o_id WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?" \
               in server.sent
        assert any(sql.startswith("UPDATE district SET d_next_o_id = d_next_o_id + 1 OUTPUT inserted.d_next_o_id")
                   for sql in server.sent)
    else:
        assert any(sql.startswith("INSERT ALL INTO order_line") for sql in server.sent)
        assert any(sql.endswith("FOR UPDATE") for sql in server.sent)
        delete = "DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"
        read = "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ? FOR UPDATE"
        assert server.sent[server.sent.index(delete) - 1] == read  # the DELETE's RETURNING, by a locking read first
