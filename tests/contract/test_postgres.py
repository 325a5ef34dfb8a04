"""The PostgreSQL engine's server management, against real servers: a server that cannot
start says why (its log's tail), servers listen on their own sockets only (no TCP port to
clash on), a workspace the `postgres` user cannot reach is refused clearly, and no server
outlives its database; a batch of statements (pg_pipeline.py) prepares what it runs again,
raises the server's error and leaves its session ready after an error, a timeout or Ctrl-C."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tdebench.engines import pg_pipeline
from tdebench.engines.base import NONE, Connection, QueryTimeout, Statement
from tdebench.engines.postgres import PostgresConnection, PostgresDatabase, PostgresEngine
from tdebench.engines.server import ServerError

from processes import connections
from workspaces import server_reachable_dir



def database(tmp_path: Path) -> PostgresDatabase:
    db = PostgresEngine().provision(tmp_path / "ws", NONE, None)
    assert isinstance(db, PostgresDatabase)
    return db


def servers_of(db: PostgresDatabase) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if str(db.data_dir) in " ".join(p.info["cmdline"] or ())]


def test_a_server_that_cannot_start_reports_its_log_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = database(tmp_path)
    argv = PostgresDatabase._argv
    monkeypatch.setattr(PostgresDatabase, "_argv", lambda self: [*argv(self), "-c", "no_such_setting=1"])
    try:
        with pytest.raises(ServerError, match='unrecognized configuration parameter "no_such_setting"'):
            db.create()
    finally:
        db.close()
    assert not servers_of(db)


def test_servers_open_no_tcp_port_so_two_run_side_by_side(tmp_path: Path) -> None:
    """Each server's only way in is the socket in its own workspace: no port to clash on."""
    first, second = database(tmp_path), PostgresEngine().provision(tmp_path / "ws2", NONE, None)
    try:
        for db in (first, second):
            db.create()
        for db in (first, second):
            conn = db.connect()
            assert conn.execute("SELECT current_setting('listen_addresses')") == [("",)]
            conn.close()
            assert servers_of(db)
            assert not connections(servers_of(db), "inet")
    finally:
        first.close()
        second.close()
    assert not servers_of(first) and not servers_of(second)


def test_a_workspace_postgres_cannot_enter_is_refused(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    db = PostgresEngine().provision(private / "ws", NONE, None)
    with pytest.raises(ServerError, match=f"cannot enter {private}(.|\n)*chmod o\\+x"):
        db.create()


def test_close_stops_the_server_even_with_a_session_open(tmp_path: Path) -> None:
    db = database(tmp_path)
    try:
        db.create()
        conn = db.connect()
        assert conn.execute("SELECT 1") == [(1,)]
        assert servers_of(db)
    finally:
        db.close()  # fast shutdown: does not wait for the open session
    assert not servers_of(db)
    reopened = db.connect()  # starts again on the same data directory
    try:
        assert reopened.execute("SELECT 2") == [(2,)]
    finally:
        reopened.close()
        db.close()



def test_a_workspace_path_too_long_for_a_socket_still_works(tmp_path: Path) -> None:
    """A socket's path may have 107 bytes; the socket lives in the workspace, whose path may be
    longer (a trial's fs mount, the maintenance and backup workloads' nested workspaces)."""
    workspace = tmp_path / ("long-" * 20) / "ws"
    assert len(str(workspace / "sock/.s.PGSQL.5432")) > 107
    db = PostgresEngine().provision(workspace, NONE, None)
    try:
        db.create()
        conn = db.connect()
        assert conn.execute("SELECT 1") == [(1,)]
        conn.close()
        # the client tools reach it too (pg_basebackup, pg_dump)
        backup = db.backup(db.backup_method("full"), tmp_path / "backup")
        assert (backup.path / "data" / "PG_VERSION").is_file()
        assert (db.socket_dir / ".s.PGSQL.5432").is_socket()
    finally:
        db.close()
    assert not db.socket_dir.exists() and not servers_of(db)


def test_the_oltp_array_texts_read_back_as_the_values_they_were_made_of(tmp_path: Path) -> None:
    """oltp's New-Order binds its lists as array texts (transactions.py: `_array`, `_text_array`),
    cast by the statement: PostgreSQL reads them back as the values, quotes and backslashes too."""
    from decimal import Decimal

    from tdebench.workloads.oltp.transactions import _array, _text_array

    texts = ["plain", 'a "quoted" one', "back\\slash", "comma, {brace}", "", "NULL"]
    db = database(tmp_path)
    try:
        db.create()
        conn = db.connect()
        [(ints, amounts, strings)] = conn.execute("SELECT CAST(? AS int[]), CAST(? AS numeric[]), CAST(? AS text[])",
                                                  [_array([3, -1, 70000]), _array([12.5, 0.01, 9999.99]),
                                                   _text_array(texts)])
        assert (ints, amounts, strings) == ([3, -1, 70000], [Decimal("12.5"), Decimal("0.01"), Decimal("9999.99")],
                                            texts)
        assert conn.execute("SELECT cardinality(CAST(? AS text[]))", [_text_array([])]) == [(0,)]
    finally:
        db.close()


@pytest.fixture(scope="module")
def running() -> Iterator[PostgresDatabase]:
    """One server for the batch tests below (each test opens its own session)."""
    with server_reachable_dir() as path:
        db = database(path)
        try:
            db.create()
            yield db
        finally:
            db.close()


def _prepared(conn: Connection) -> list[str]:
    """The session's statements prepared by tdebench's pipeline (psycopg's own are `_pg3_…`)."""
    return [name for (name,) in conn.execute("SELECT name FROM pg_prepared_statements ORDER BY name")
            if name.startswith("_tdebench_")]


def test_a_batch_prepares_a_statement_at_its_second_run_and_no_more_than_its_limit(
        running: PostgresDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """pg_pipeline.py: with psycopg's `prepare_threshold` 1, a statement sent once runs unnamed, a
    second time (with the same parameter types) it is prepared, and run by its name after that;
    past PREPARED_MAX, unnamed again; with None, never prepared. The answers are the same every
    time, each statement's rows as `execute` gives them."""
    monkeypatch.setattr(pg_pipeline, "PREPARED_MAX", 2)
    conn = running.connect()
    try:
        conn.raw.prepare_threshold = 1
        batch: list[Statement] = [("SELECT ? + 1", [1]), ("SELECT ? || 'x', NULL", ["a"]), ("SELECT 3 WHERE false", ()),
                                  ("SELECT generate_series(1, ?)", [3])]
        expected = [[(2,)], [("ax", None)], [], [(1,), (2,), (3,)]]
        assert conn.execute_batch(batch) == expected
        assert _prepared(conn) == []
        for _ in range(3):
            assert conn.execute_batch(batch) == expected
            assert len(_prepared(conn)) == 2
        assert conn.execute_batch([("SELECT ? + 1", [70000])]) == [[(70001,)]]  # int4, not int2: its own statement
        never = running.connect()
        never.raw.prepare_threshold = None
        for _ in range(3):
            assert never.execute_batch(batch) == expected
        assert _prepared(never) == []
        never.close()
        again = PostgresConnection(conn.raw)  # a second wrapper of the same session: names of its own
        for _ in range(2):
            assert again.execute_batch([("SELECT ? * 3", [5])]) == [[(15,)]]
        assert len(_prepared(conn)) == 3  # the two above, and this one's
    finally:
        conn.close()


def test_a_failed_batch_raises_the_servers_error_and_leaves_the_session_ready(running: PostgresDatabase) -> None:
    """The first statement that fails raises psycopg's class for its SQLSTATE and the rest of the
    batch does not run; a statement whose preparing was skipped is prepared when next sent, and
    the session leaves pipeline mode for the statements after (ROLLBACK, the next batch)."""
    import psycopg

    conn = running.connect()
    try:
        conn.raw.prepare_threshold = 1
        conn.execute("CREATE TEMPORARY TABLE t (id int PRIMARY KEY)")
        batch: list[Statement] = [("BEGIN", ()), ("INSERT INTO t VALUES (?)", [1]), ("SELECT count(*) FROM t", ()),
                                  ("COMMIT", ())]
        conn.execute_batch(batch)  # sent once each
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute_batch(batch)  # prepared now, but the INSERT fails: the count's preparing is skipped
        assert conn.raw.pgconn.pipeline_status == 0
        conn.execute("ROLLBACK")
        batch[1] = ("INSERT INTO t VALUES (?)", [2])
        assert conn.execute_batch(batch) == [[], [], [(2,)], []]
        assert conn.execute_batch([("SELECT count(*) FROM t", ())]) == [[(2,)]]
        assert len(_prepared(conn)) == 4
    finally:
        conn.close()


def test_a_batch_past_its_timeout_or_interrupted_leaves_the_session_ready(running: PostgresDatabase) -> None:
    """A statement of a batch that outlives the timeout raises QueryTimeout; Ctrl-C while the
    server runs one has the server cancel it (not wait out its 10 minutes) and raises
    KeyboardInterrupt; the session works on after either."""
    conn = running.connect()
    try:
        conn.set_timeout(0.3)
        with pytest.raises(QueryTimeout, match="0.3 s timeout"):
            conn.execute_batch([("SELECT 1", ()), ("SELECT pg_sleep(?)", [30]), ("SELECT 2", ())])
        conn.set_timeout(None)
        assert conn.execute_batch([("SELECT 3", ())]) == [[(3,)]]

        def interrupt(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGALRM, interrupt)
        started = time.monotonic()
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            with pytest.raises(KeyboardInterrupt):
                conn.execute_batch([("SELECT pg_sleep(?)", [600]), ("SELECT 4", ())])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert time.monotonic() - started < 60, "the server was not asked to cancel the statement"
        assert conn.raw.pgconn.pipeline_status == 0
        assert conn.execute("SELECT 42") == [(42,)]
        assert conn.execute_batch([("SELECT 5", ()), ("SELECT 6", ())]) == [[(5,)], [(6,)]]
    finally:
        conn.close()
