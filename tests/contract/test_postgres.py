"""The PostgreSQL engine's server management, against real servers on loopback: a server that
cannot start says why (its log's tail), a taken port is survived or reported, a workspace the
`postgres` user cannot reach is refused clearly, and no server outlives its database."""

from __future__ import annotations

import socket
from pathlib import Path

import psutil
import pytest

from tdebench.engines import server  # its start_on_free_port picks the ports
from tdebench.engines.base import NONE
from tdebench.engines.postgres import PostgresDatabase, PostgresEngine
from tdebench.engines.server import ServerError, free_port



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


def test_a_taken_port_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        offered = iter([busy])
        monkeypatch.setattr(server, "free_port", lambda: next(offered, None) or free_port())
        db = database(tmp_path)
        try:
            db.create()
            conn = db.connect()
            assert conn.execute("SELECT current_setting('port')::int") != [(busy,)]
            conn.close()
            assert "Address already in use" in db.log.read_text()
        finally:
            db.close()
    assert not servers_of(db)


def test_a_port_that_stays_taken_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(server, "free_port", lambda: busy)
        db = database(tmp_path)
        try:
            with pytest.raises(ServerError, match=f"port {busy}(.|\n)*Address already in use"):
                db.create()
        finally:
            db.close()
    assert not servers_of(db)


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

