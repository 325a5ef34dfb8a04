"""A trial's PostgreSQL server is tdebench's alone: during a trial another
local user (`nobody`, tests/workspaces.py) can neither connect to it — it opens no TCP port,
and its socket is in a directory closed to others, behind scram-sha-256 with a password of the
cluster's own — nor list or read its socket directory, initdb's password file, its data
directory or its log; and the column layer's key never reaches a log, not even with every
statement logged. Real servers, started through the engine as a trial starts them."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tdebench.engines import postgres
from tdebench.engines.base import NONE
from tdebench.engines.pgcrypto import COLUMN_AES_256
from tdebench.engines.postgres import USER, PostgresDatabase, PostgresEngine, bin_dir
from tdebench.engines.server import user_ids
from tdebench.keys import Secret
from processes import connections
from workspaces import as_hostile_user, server_reachable_dir

PSQL = str((bin_dir() or Path("/usr/lib/postgresql/bin")) / "psql")
PORT = 5432  # what the server names its socket file after (it opens no TCP port)


@pytest.fixture
def workspace() -> Iterator[Path]:
    with server_reachable_dir("tdebench-private-") as parent:
        yield parent / "ws"


@pytest.fixture
def running(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[PostgresDatabase, list[dict]]]:
    """A started, unencrypted PostgreSQL database, and what initdb's password file looked like
    (and whether `nobody` could read it) while initdb ran."""
    seen: list[dict] = []
    run_tool = postgres.run_tool

    def watching_initdb(argv, log, **kwargs) -> None:  # the real tool runs; this only looks on
        pwfile = next((Path(a.removeprefix("--pwfile=")) for a in argv if a.startswith("--pwfile=")), None)
        if pwfile is not None:
            info = pwfile.stat()
            seen.append({"path": pwfile, "argv": list(argv), "uid": info.st_uid, "mode": stat.S_IMODE(info.st_mode),
                         "password": pwfile.read_text().strip(), "nobody": as_hostile_user(["cat", str(pwfile)])})
        run_tool(argv, log, **kwargs)

    monkeypatch.setattr(postgres, "run_tool", watching_initdb)
    db = PostgresEngine().provision(workspace, NONE, None)
    assert isinstance(db, PostgresDatabase)
    try:
        db.create()
        db.connect().close()
        yield db, seen
    finally:
        db.close()


def psql(conninfo: str, user: str, password: str | None = None) -> subprocess.CompletedProcess:
    """`SELECT 1` through psql as the local `user`, never prompting; `password` in its environment."""
    argv = [PSQL, "-w", "-X", "-d", f"{conninfo} port={PORT} user={USER} dbname=postgres connect_timeout=5",
            "-c", "SELECT 1"]
    if user == "nobody":
        return as_hostile_user(argv)
    env = {"PATH": "/usr/bin:/bin", **({"PGPASSWORD": password} if password else {})}
    uid, gid = user_ids(user)
    return subprocess.run(argv, user=uid, group=gid, extra_groups=[], env=env, cwd="/", text=True, timeout=30,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_another_user_cannot_connect_over_tcp_or_the_socket(running) -> None:
    db, _ = running
    socket = f"host={db.socket_dir}"
    password = db._password.hex()  # what tdebench holds in memory: for the positive control only

    # positive control: the same command reaches the server, as the postgres user, with the password
    allowed = psql(socket, user=USER, password=password)
    assert allowed.returncode == 0 and "(1 row)" in allowed.stdout, allowed.stdout

    # TCP: nothing listens; the server has no inet socket at all
    assert not connections(db.engine_processes(), "inet")
    for password_given in ("", " password=wrong"):
        over_tcp = psql(f"host=127.0.0.1{password_given}", user="nobody")
        assert over_tcp.returncode != 0 and "(1 row)" not in over_tcp.stdout, over_tcp.stdout
        # another user: the socket's directory is closed to them, with or without a password
        over_socket = psql(f"{socket}{password_given}", user="nobody")
        assert over_socket.returncode != 0 and "Permission denied" in over_socket.stdout, over_socket.stdout

    # a user who may reach the socket (the postgres user itself) still needs the password
    no_password = psql(socket, user=USER)
    assert no_password.returncode != 0 and "no password supplied" in no_password.stdout, no_password.stdout
    wrong = psql(socket, user=USER, password="wrong")
    assert wrong.returncode != 0 and f'password authentication failed for user "{USER}"' in wrong.stdout, wrong.stdout
    hba = (db.data_dir / "pg_hba.conf").read_text()
    rules = [line.split() for line in hba.splitlines() if line.strip() and not line.startswith("#")]
    assert rules and all(rule[0] == "local" and rule[-1] == "scram-sha-256" for rule in rules), hba


def test_another_user_cannot_list_or_read_the_servers_files(running) -> None:
    db, seen = running
    uid, _ = user_ids(USER)
    for argv in (["ls", str(db.workspace)], ["ls", str(db.socket_dir)], ["ls", str(db.data_dir)],
                 ["cat", str(db.data_dir / "PG_VERSION")], ["cat", str(db.log)],
                 ["cat", str(db.workspace / "initdb.log")]):
        refused = as_hostile_user(argv)
        assert refused.returncode != 0 and "Permission denied" in refused.stdout, (argv, refused.stdout)
    # and not only because the workspace is closed: everything in it is the postgres user's alone
    assert stat.S_IMODE(db.workspace.stat().st_mode) == 0o700
    for path in [db.workspace, *db.workspace.rglob("*")]:
        info = path.lstat()
        assert info.st_uid == uid and not info.st_mode & 0o077, (path, oct(info.st_mode))
    assert {db.socket_dir, db.data_dir, db.log} <= set(db.workspace.iterdir())
    assert (db.socket_dir / f".s.PGSQL.{PORT}").is_socket()

    # initdb's password file: the postgres user's, 0600, unreadable by nobody, gone after initdb
    (pwfile,) = seen
    assert (pwfile["uid"], pwfile["mode"]) == (uid, 0o600)
    assert pwfile["nobody"].returncode != 0 and "Permission denied" in pwfile["nobody"].stdout
    assert pwfile["path"].parent == db.workspace and not pwfile["path"].exists()
    password = pwfile["password"]
    assert password == db._password.hex() and not any(password in arg for arg in pwfile["argv"])
    assert not any(password in " ".join(p.info["cmdline"] or ()) for p in psutil.process_iter(["cmdline"]))
    assert not any(password.encode() in p.read_bytes() for p in db.workspace.rglob("*") if p.is_file())


LOG_EVERYTHING = {"log_statement": "all", "log_min_error_statement": "debug5", "log_min_duration_statement": "0"}
# what the server's own settings turn off: without them, logged statements show their parameters
SHOW_PARAMETERS = {"log_parameter_max_length": "-1", "log_parameter_max_length_on_error": "-1"}


@pytest.mark.parametrize("forced", [LOG_EVERYTHING, LOG_EVERYTHING | SHOW_PARAMETERS],
                         ids=["statement-logging-on", "parameters-shown-too"])
def test_the_key_never_reaches_the_log_even_with_every_statement_logged(
        forced: dict[str, str], workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = PostgresDatabase._argv
    monkeypatch.setattr(PostgresDatabase, "_argv",  # later -c settings win over the server's own
                        lambda self: [*argv(self), *(a for k, v in forced.items() for a in ("-c", f"{k}={v}"))])
    key, new_key = Secret(os.urandom(32)), Secret(os.urandom(32))
    db = PostgresEngine().provision(workspace, COLUMN_AES_256, key)
    try:
        db.create()
        conn = db.connect()  # the key is set here, as a bound parameter
        try:
            conn.execute("CREATE TABLE person (id INT NOT NULL, name TEXT NOT NULL)")
            db.seal_columns(conn, "person", ("name",), ("id",))
            conn.execute("INSERT INTO person (id, name) VALUES (?, ?)", [1, "someone"])
            assert conn.execute("SELECT name FROM person") == [("someone",)]
            with pytest.raises(Exception, match="division by zero"):  # a failing statement carrying the key
                conn.execute("SELECT length(?) / 0", [key.hex()])
        finally:
            conn.close()
        db.rekey(new_key)  # both keys bound in one UPDATE
        assert db.opens_with(new_key)
        password = db._password.hex()
    finally:
        db.close()
    log = db.log.read_text()
    assert "set_config('tdebench.key', $1, false)" in log and "division by zero" in log  # it was all logged
    leaked = {path.name for path in workspace.rglob("*") if path.is_file()
              for secret in (key.hex(), new_key.hex(), password) if secret.encode() in path.read_bytes().lower()}
    if forced == LOG_EVERYTHING:
        assert leaked == set(), "a key or the password reached a file of the workspace"
    else:  # the control: the search finds what the server's settings keep out of the log
        assert leaked == {db.log.name}
