"""Servers started the way a user's own would be, outside tdebench: a MariaDB with
file_key_management and a key file, and a PostgreSQL, each run as its system user on 127.0.0.1
with an account of its own (`bench`) and a password, in a temporary directory, stopped by the
test. tdebench's server helpers start the processes; tdebench itself reaches them only by URL.

Each has a target database `bench` (empty) and `crowded` (one table of someone else's)."""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pymysql

from tdebench.engines.postgres import bin_dir
from tdebench.engines.server import ServerProcess, free_port, private_dir, run_tool, write_private


@dataclass(frozen=True)
class OwnServer:
    scheme: str
    port: int
    password: str
    data_dir: Path
    log: Path | None = None  # the server's own log (PostgreSQL's)

    def url(self, database: str = "bench") -> str:
        return f"{self.scheme}://bench@127.0.0.1:{self.port}/{database}"

    def password_file(self, path: Path) -> Path:
        """`path` holding the password, 0600, as a plan's `password_file` wants it."""
        path.write_text(self.password + "\n")
        path.chmod(0o600)
        return path


@contextmanager
def own_mariadb(directory: Path) -> Iterator[OwnServer]:
    """A MariaDB with InnoDB encryption available (key ids 1 and 2, AES-CTR) and its redo log
    encrypted, as the DBA configured it."""
    home = private_dir(directory / "own-mariadb", "mysql")
    data, password, port = home / "data", secrets.token_urlsafe(18), free_port()
    keys = write_private(home / "keys.txt", f"1;{secrets.token_hex(32)}\n2;{secrets.token_hex(16)}\n", "mysql")
    options = write_private(home / "my.cnf", f"""[mariadbd]
datadir={data}
socket={home}/mysqld.sock
port={port}
bind-address=127.0.0.1
skip-name-resolve
plugin_load_add=file_key_management
file_key_management_filename={keys}
file_key_management_encryption_algorithm=AES_CTR
innodb_encrypt_log=ON
innodb_buffer_pool_size=64M
innodb_log_file_size=32M
local_infile=ON
""", "mysql")
    run_tool([_which("mariadb-install-db"), f"--defaults-file={options}", "--auth-root-authentication-method=socket",
              "--skip-test-db"], write_private(home / "install.log", user="mysql"), run_as="mysql")
    init = write_private(home / "init.sql", f"""CREATE USER bench@'127.0.0.1' IDENTIFIED BY '{password}';
CREATE DATABASE bench;
CREATE DATABASE crowded;
CREATE TABLE crowded.customers (id INT PRIMARY KEY, name VARCHAR(40));
GRANT SELECT ON bench.* TO bench@'127.0.0.1';
GRANT SELECT ON crowded.* TO bench@'127.0.0.1';
GRANT ALL ON `tdebench\\_%`.* TO bench@'127.0.0.1';
GRANT PROCESS, RELOAD ON *.* TO bench@'127.0.0.1';
""", "mysql")

    def ready() -> bool:
        pymysql.connect(host="127.0.0.1", port=port, user="bench", password=password, connect_timeout=2).close()
        return True

    server = ServerProcess("own-mariadbd", [_which("mariadbd"), f"--defaults-file={options}", f"--init-file={init}"],
                           write_private(home / "error.log", user="mysql"), ready, run_as="mysql",
                           start_timeout=120)
    server.start()
    try:
        yield OwnServer("mariadb", port, password, data)
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def own_postgres(directory: Path) -> Iterator[OwnServer]:
    """A PostgreSQL on 127.0.0.1 only (no socket), with scram-sha-256 for every login and TLS on
    (a self-signed certificate), as a server across a network has it: libpq's default
    (sslmode=prefer) encrypts every session."""
    binaries = bin_dir()
    assert binaries is not None, "PostgreSQL is not installed"
    home = private_dir(directory / "own-postgres", "postgres")
    data, password, port = home / "data", secrets.token_urlsafe(18), free_port()
    superuser = secrets.token_urlsafe(18)
    pwfile = write_private(home / "pw", superuser + "\n", "postgres")
    run_tool([str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=scram-sha-256",
              f"--pwfile={pwfile}", "--encoding=UTF8", "--locale=C"],
             write_private(home / "initdb.log", user="postgres"), run_as="postgres",
             env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    pwfile.unlink()

    def admin(database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=port, user="postgres", password=superuser, dbname=database,
                               autocommit=True, connect_timeout=2)

    def ready() -> bool:
        admin().close()
        return True

    key, certificate = home / "server.key", home / "server.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-keyout", str(key), "-out", str(certificate)], check=True, capture_output=True)
    for path in (key, certificate):
        shutil.chown(path, "postgres", "postgres")
        path.chmod(0o600)
    log = write_private(home / "postgres.log", user="postgres")
    server = ServerProcess("own-postgres", [str(binaries / "postgres"), "-D", str(data), "-p", str(port),
                                            "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                                            "-c", "shared_buffers=32MB", "-c", "ssl=on",
                                            "-c", f"ssl_cert_file={certificate}", "-c", f"ssl_key_file={key}"],
                           log, ready, run_as="postgres", env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    server.start()
    try:
        with admin() as conn:
            conn.execute(f"CREATE ROLE bench LOGIN CREATEDB PASSWORD '{password}'")
            conn.execute("GRANT pg_checkpoint TO bench")  # for data_path: tdebench checkpoints before its scan
            conn.execute("CREATE DATABASE bench OWNER bench")
            conn.execute("CREATE DATABASE crowded OWNER bench")
        with admin("crowded") as conn:
            conn.execute("CREATE TABLE public.customers (id int PRIMARY KEY, name text)")
        yield OwnServer("postgres", port, password, data, log)
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _which(name: str) -> str:
    path = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    assert path is not None, f"{name} is not installed"
    return path
