"""The PostgreSQL engine's server management, against real servers: a server that cannot
start says why (its log's tail), servers listen on their own sockets only (no TCP port to
clash on), a workspace the `postgres` user cannot reach is refused clearly, and no server
outlives its database."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tdebench.engines.base import NONE
from tdebench.engines.postgres import PostgresDatabase, PostgresEngine
from tdebench.engines.server import ServerError

from processes import connections



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
