"""No other local user gets into a MariaDB trial's server: on a real server
started through the engine, another user (`nobody`, tests/workspaces.py) can neither log in,
over TCP or the socket, nor read the server's files; root without the database's password is
refused too; the server runs as `mysql`; its password is in no argv, environment or log; and
SQL cannot write files outside the workspace (`secure_file_priv`).

Every server is stopped in a fixture's or test's finally block, also when an assertion fails.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines import server as server_module
from tdebench.engines.mariadb import USER, MariaDBDatabase, MariaDBEngine
from tdebench.engines.server import ServerError, user_ids
from tdebench.keys import Secret
from tdebench.runstate import PARENT_DEATH
from workspaces import as_hostile_user, server_reachable_dir

ENGINE = MariaDBEngine()
MYSQL_UID, MYSQL_GID = user_ids(USER)
CLIENT = shutil.which("mariadb") or "/usr/bin/mariadb"


def provision(root: Path, name: str, encryption: str = "aes-256-cbc") -> MariaDBDatabase:
    db = ENGINE.provision(root / name, ENGINE.encryption(encryption), Secret(os.urandom(32)))
    assert isinstance(db, MariaDBDatabase)
    return db


@pytest.fixture(scope="module")
def server() -> Iterator[MariaDBDatabase]:
    """One encrypted trial database, created, loaded with a row and running."""
    with server_reachable_dir("tdebench-private-mariadb-") as root:
        db = provision(root, "trial")
        try:
            db.create()
            conn = db.connect()
            try:
                conn.execute("CREATE TABLE secrets (id INTEGER PRIMARY KEY, s VARCHAR(40))")
                conn.execute("INSERT INTO secrets VALUES (1, 'TDEBENCH-CANARY-private')")
            finally:
                conn.close()
            yield db
        finally:
            db.close()


def client(*login: str) -> list[str]:
    """The `mariadb` client with no option file of anyone's, asking who it is logged in as."""
    return [CLIENT, "--no-defaults", "--connect-timeout=5", *login, "-N", "-e", "SELECT CURRENT_USER()"]


def assert_refused(done: subprocess.CompletedProcess, why: str) -> None:
    assert done.returncode != 0 and "@localhost" not in done.stdout.split("ERROR")[0], done.stdout
    assert why in done.stdout, done.stdout


def test_the_server_runs_as_mysql_never_root(server: MariaDBDatabase) -> None:
    processes = server.engine_processes()
    assert processes
    for process in processes:
        assert process.username() == USER
        assert set(process.uids()) == {MYSQL_UID} and set(process.gids()) == {MYSQL_GID}
        status = Path(f"/proc/{process.pid}/status").read_text()
        groups = next(line.split()[1:] for line in status.splitlines() if line.startswith("Groups:"))
        assert set(map(int, groups)) <= {MYSQL_GID}, "the server kept a supplementary group of root's"


def test_the_right_password_logs_in_through_the_tools_option_file(server: MariaDBDatabase) -> None:
    """The positive control of the refusals below: the same client, with the database's password
    from the option file tdebench's tools use, is let in; that file is 0600 and tdebench's own."""
    with server._client_options() as options:
        info = options.stat()
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o600, os.geteuid())
        assert_refused(as_hostile_user(["cat", str(options)]), "Permission denied")
        done = subprocess.run([CLIENT, f"--defaults-file={options}", "-N", "-e", "SELECT CURRENT_USER()"],
                              capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout.strip()) == (0, "root@localhost"), done.stderr
    assert not options.exists()


def test_nobody_cannot_log_in_over_tcp_or_the_socket(server: MariaDBDatabase) -> None:
    tcp = ["--protocol=TCP", "-h", "127.0.0.1", "-P", str(server.port)]
    socket = ["--protocol=SOCKET", f"--socket={server.socket}"]
    for login in (["-u", "root"], ["-u", "root", "-proot"], ["-u", "anonymous"]):
        assert_refused(as_hostile_user(client(*tcp, *login)), "is not allowed to connect")
        assert_refused(as_hostile_user(client(*socket, *login)), "Can't connect to local server through socket")


def test_root_without_the_password_is_refused(server: MariaDBDatabase) -> None:
    """OS root may reach the socket: no unix_socket login, no empty or guessed password, no
    anonymous account lets it in; over TCP no account exists at all."""
    socket = ["--protocol=SOCKET", f"--socket={server.socket}"]
    assert_refused(_run(client(*socket, "-u", "root")),
                   "Access denied for user 'root'@'localhost' (using password: NO)")
    assert_refused(_run(client(*socket, "-u", "root", "-pwrong")),
                   "Access denied for user 'root'@'localhost' (using password: YES)")
    assert_refused(_run(client(*socket, "-u", "anonymous")), "Access denied for user 'anonymous'@'localhost'")
    assert_refused(_run(client("--protocol=TCP", "-h", "127.0.0.1", "-P", str(server.port), "-u", "root")),
                   "is not allowed to connect")


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)


def test_root_at_localhost_with_a_password_is_the_only_account(server: MariaDBDatabase) -> None:
    conn = server.connect()
    try:
        accounts = {(user, host): json.loads(priv)
                    for user, host, priv in conn.execute("SELECT User, Host, Priv FROM mysql.global_priv")}
    finally:
        conn.close()
    assert set(accounts) == {("root", "localhost"), ("mariadb.sys", "localhost")}, accounts
    root = accounts[("root", "localhost")]
    assert root["plugin"] == "mysql_native_password" and len(root["authentication_string"]) == 41
    assert "unix_socket" not in json.dumps(root)
    assert accounts[("mariadb.sys", "localhost")]["account_locked"] is True  # owns system views, never logs in


def test_nobody_cannot_read_or_list_the_servers_files(server: MariaDBDatabase) -> None:
    for path in (server.key_file, server.option_file, server.log, server.workspace / "install.log",
                 server.datadir / "ibdata1"):
        assert path.is_file()
        assert_refused(as_hostile_user(["cat", str(path)]), "Permission denied")
    for directory in (server.workspace, server.datadir, server.socket.parent, server.secure_dir, server.tmpdir):
        assert_refused(as_hostile_user(["ls", str(directory)]), "Permission denied")


def assert_private(db: MariaDBDatabase) -> None:
    """Not only the 0700 workspace keeps others out: each directory is 0700 and each file 0600,
    owned by `mysql` (the server's own files through its UMASK, tdebench's through write_private)."""
    paths = [db.workspace, *db.workspace.rglob("*")]
    assert db.socket in paths and db.key_file in paths and db.datadir / "ibdata1" in paths
    for path in paths:
        info = path.lstat()
        assert (info.st_uid, info.st_gid) == (MYSQL_UID, MYSQL_GID), path
        if stat.S_ISDIR(info.st_mode):
            assert stat.S_IMODE(info.st_mode) == 0o700, path
        elif not stat.S_ISSOCK(info.st_mode):  # the socket: in a 0700 directory, password-only
            assert stat.S_IMODE(info.st_mode) == 0o600, path
    assert not (db.workspace / "init.sql").exists(), "the password's init file outlived the start"


def test_every_file_of_the_server_is_mysqls_and_private(server: MariaDBDatabase) -> None:
    assert_private(server)


def test_select_into_outfile_is_refused_outside_the_workspace(server: MariaDBDatabase) -> None:
    target = Path(tempfile.gettempdir()) / f"tdebench-outfile-{os.getpid()}"
    conn = server.connect()
    try:
        with pytest.raises(pymysql.err.MySQLError, match="secure-file-priv") as refused:
            conn.execute(f"SELECT s FROM secrets INTO OUTFILE '{target}'")
        assert refused.value.args[0] == 1290  # ER_OPTION_PREVENTS_STATEMENT
        assert conn.execute(f"SELECT LOAD_FILE('{server.key_file}'), LOAD_FILE('/etc/passwd')") == [(None, None)]
        assert conn.execute("SELECT @@secure_file_priv") == [(f"{server.secure_dir}/",)]
    finally:
        conn.close()
    assert not target.exists()


def test_the_password_is_in_no_argv_environment_or_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every process tdebench starts for MariaDB, from mariadb-install-db to a restore, seen as
    it is started: the password is in none of their argv or environments; each client tool
    reads it from its first option, an option file; the server's init file is 0600 and `mysql`'s."""
    started: list[tuple[list[str], dict[str, str]]] = []
    init_files: list[tuple[int, int, str]] = []
    real = subprocess.Popen

    def spy(given: Any, *args: Any, **kwargs: Any) -> subprocess.Popen:
        argv = [str(a) for a in given]
        if argv[:len(PARENT_DEATH)] == PARENT_DEATH:  # servers and tools start under setpriv
            argv = argv[len(PARENT_DEATH):]
        started.append((argv, dict(kwargs.get("env") or {})))
        if Path(argv[0]).name == "mariadbd":
            init = Path(next(a for a in argv if a.startswith("--init-file=")).split("=", 1)[1])
            info = init.stat()
            init_files.append((stat.S_IMODE(info.st_mode), info.st_uid, as_hostile_user(["cat", str(init)]).stdout))
        return real(given, *args, **kwargs)

    with server_reachable_dir("tdebench-private-mariadb-") as root:
        original, copies = provision(root, "original", "aes-128-ctr"), []
        monkeypatch.setattr(server_module.subprocess, "Popen", spy)
        try:
            original.create()
            conn = original.connect()
            try:
                conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
                conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
            finally:
                conn.close()
            for method in ("full", "full-compressed", "logical"):
                backup = original.backup(original.backup_method(method), root / f"backup-{method}")
                assert stat.S_IMODE(backup.path.stat().st_mode) == 0o700
                copy = provision(root, f"restored-{method}", "aes-128-ctr")
                copy.key = original.key
                copies.append(copy)
                copy.restore(backup)  # a physical copy opens with the copy's own password
                conn = copy.connect()
                try:
                    assert conn.execute("SELECT COUNT(*) FROM t") == [(100,)]
                finally:
                    conn.close()
                assert_private(copy)
        finally:
            for db in (original, *copies):
                db.close()
        passwords = [db._password.hex() for db in (original, *copies)]
        assert len(set(passwords)) == len(passwords), "each database has its own password"
        logs = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".log", ".cnf", ".sql")]
        assert {p.name for p in logs} >= {"mariadb.log", "install.log", "backup.log", "restore.log", "my.cnf"}
        for path in logs:
            assert not any(pw in path.read_text(errors="replace") for pw in passwords), path
        assert not list(root.rglob("client.cnf")) and not list(root.rglob("init.sql"))
    names = {Path(argv[0]).name for argv, _ in started}
    assert {"mariadb-install-db", "mariadbd", "mariadb-dump", "mariadb"} <= names, names
    assert any("mariadb-backup" in argv[-1] for argv, _ in started if Path(argv[0]).name == "bash")
    for argv, env in started:
        text = " ".join(argv) + " ".join(env.values())
        assert not any(pw in text for pw in passwords), argv
        if Path(argv[0]).name in ("mariadb-dump", "mariadb"):
            assert argv[1].startswith("--defaults-file=") and argv[1].endswith("client.cnf"), argv
        if Path(argv[0]).name == "bash" and "mariadb-backup" in argv[-1]:
            assert "mariadb-backup --defaults-file=" in argv[-1] and "client.cnf --backup" in argv[-1], argv
    assert init_files and all(mode == 0o600 and uid == MYSQL_UID and "Permission denied" in out
                              for mode, uid, out in init_files), init_files


def test_a_work_dir_the_mysql_user_cannot_enter_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_text('name = "private"\n\n[[engines]]\nname = "mariadb"\n'
                                        'encryptions = ["none"]\n\n[[workloads]]\nname = "tpch"\nscale = 0.01\n')
    result = CliRunner().invoke(main, ["run", str(tmp_path / "plan.toml"), "--out", str(tmp_path / "out"),
                                       "--work-dir", str(tmp_path)])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "the mysql user cannot enter" in message and "chmod o+x" in message, message
    assert not (tmp_path / "out").exists()


def test_a_workspace_the_mysql_user_cannot_reach_is_refused_before_anything_runs(tmp_path: Path) -> None:
    db = provision(tmp_path, "trial")  # below pytest's own 0700 directories
    try:
        with pytest.raises(ServerError, match="the mysql user cannot enter .*chmod o\\+x"):
            db.create()
        assert db.engine_processes() == [] and not db.datadir.exists()
    finally:
        db.close()
