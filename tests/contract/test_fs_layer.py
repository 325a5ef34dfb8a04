"""The gocryptfs layer, for real: what is on disk is ciphertext, the mount shows plaintext, no
mount or gocryptfs process outlives the database, and the key never leaves this process
except through a short-lived 0600 pass file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import psutil
import pytest

from tdebench import verify
from tdebench.engines import get_engine
from tdebench.engines.base import PlaintextViewGone
from tdebench.engines.fs import FS_ENCRYPTIONS, GocryptfsDatabase, mounted
from tdebench.engines.server import user_ids
from tdebench.keys import Secret
from tdebench.workloads.base import write_canaries

CANARY = "TDEBENCH-CANARY-fslayer-0123456789"
MARKER = "TDEBENCH-MARKER-fslayer-0123456789"


def by_name(processes: list[psutil.Process]) -> dict[str, psutil.Process]:
    """The processes by name, skipping any that ended since they were listed (PostgreSQL's
    autovacuum workers and closed connections' backends come and go)."""
    named = {}
    for process in processes:
        try:
            named[process.name()] = process
        except psutil.NoSuchProcess:
            continue
    return named


def fs_database(engine: str, tmp_path: Path, encryption: str = "fs-aes-256-gcm") -> GocryptfsDatabase:
    database = get_engine(engine).provision(tmp_path, get_engine(engine).encryption(encryption),
                                            Secret(os.urandom(32)))
    assert isinstance(database, GocryptfsDatabase)
    return database


def hits(path: Path) -> int:
    return sum(scan.hits for scan in verify.scan([path], [CANARY], path))


@pytest.mark.parametrize("encryption", [e.name for e in FS_ENCRYPTIONS])
def test_cipher_dir_hides_what_the_mounted_view_shows(encryption: str, tmp_path: Path) -> None:
    database = fs_database("sqlite", tmp_path, encryption)
    try:
        database.create()
        conn = database.connect()
        write_canaries(database, conn, [CANARY], [MARKER])
        conn.close()
        view = database.plaintext_view()
        assert view == database.mount_point and mounted(view)
        assert hits(view) > 0  # the positive control: the engine really wrote the canary
        assert hits(database.cipher_dir) == 0
    finally:
        database.close()
    assert not mounted(database.mount_point)
    with pytest.raises(PlaintextViewGone, match="was gone before verification"):
        database.plaintext_view()  # closed: there is no view to take the positive control from
    assert database.files() and all(database.cipher_dir in p.parents for p in database.files())
    assert hits(tmp_path) == 0  # nothing in the whole workspace at rest


def test_close_unmounts_and_ends_gocryptfs(tmp_path: Path) -> None:
    database = fs_database("duckdb", tmp_path)
    database.create()
    processes = database.engine_processes()
    gocryptfs = [p for p in processes if p.name() == "gocryptfs"]  # the two never end on their own
    assert psutil.Process() in processes and len(gocryptfs) == 1  # embedded: this process + gocryptfs
    database.connect()  # left open on purpose: close() must still unmount
    database.close()
    assert not mounted(database.mount_point)
    assert not gocryptfs[0].is_running()
    database.close()  # idempotent


def test_an_exception_inside_create_leaves_no_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = fs_database("sqlite", tmp_path)

    def broken_create() -> None:
        assert mounted(database.mount_point)
        raise RuntimeError("engine failed to create")

    monkeypatch.setattr(database.inner, "create", broken_create)
    with pytest.raises(RuntimeError, match="engine failed to create"):
        database.create()
    assert not mounted(database.mount_point)
    assert not any(str(database.cipher_dir) in " ".join(p.info["cmdline"] or ())
                   for p in psutil.process_iter(["cmdline"]))


def test_pass_file_is_private_and_short_lived(tmp_path: Path) -> None:
    database = fs_database("sqlite", tmp_path)
    tmp_path.mkdir(exist_ok=True)
    with database.passfile() as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text().strip() == database.key.hex()
    assert not path.exists()


@pytest.mark.parametrize("encryption", [e.name for e in FS_ENCRYPTIONS])
def test_postgres_on_the_mount_owns_its_files_and_no_argv_holds_the_key(encryption: str, tmp_path: Path) -> None:
    database = fs_database("postgres", tmp_path, encryption)
    try:
        database.create()
        conn = database.connect()
        write_canaries(database, conn, [CANARY], [MARKER])
        conn.execute("CHECKPOINT")  # the canary reaches the data files, not only the WAL
        conn.close()
        uid, _ = user_ids("postgres")
        inner = database.inner.workspace
        assert (inner / "pgdata").stat().st_uid == uid
        assert all(p.stat().st_uid == uid for p in (inner / "pgdata").rglob("*") if p.is_file())
        processes = database.engine_processes()
        assert {"postgres", "gocryptfs"} <= by_name(processes).keys()
        key = database.key.hex()
        assert not any(key in " ".join(p.info["cmdline"] or ()).lower() for p in psutil.process_iter(["cmdline"]))
        assert not (tmp_path / "fs.pass").exists()  # read by gocryptfs, then removed
        assert hits(database.plaintext_view()) > 0 and hits(database.cipher_dir) == 0
    finally:
        database.close()
    assert not mounted(database.mount_point)
    assert not any(str(database.workspace) in " ".join(p.info["cmdline"] or ())
                   for p in psutil.process_iter(["cmdline"]))
    assert hits(tmp_path) == 0
    # each cipher file has the kind of PostgreSQL's file behind it, learnt before the unmount
    kinds = {p: database.file_kind(str(p.relative_to(tmp_path))) for p in database.files()}
    assert kinds[database.cipher_dir / "gocryptfs.conf"] == "other"
    assert {"data", "log"} <= set(kinds.values())
    assert sum(kind == "log" for kind in kinds.values()) >= 1  # pg_wal's segment and pg_xact
    assert database.file_kind("gocryptfs.log") == "other"  # the layer's log, not the engine's


def test_a_cipher_files_kind_is_its_engine_files_even_once_deleted_or_unmounted(tmp_path: Path) -> None:
    """The names gocryptfs encrypts say nothing; its control socket decrypts them (reached
    through a descriptor: this workspace's path is longer than a socket's may be)."""
    workspace = tmp_path / ("w" * 120)
    database = fs_database("sqlite", workspace)
    try:
        database.create()
        conn = database.connect()
        write_canaries(database, conn, [CANARY], [MARKER])  # into the WAL, kept at rest
        conn.close()
        temp = database.inner.workspace / "tmp"
        temp.mkdir(exist_ok=True)
        spill = temp / "etilqs_0123456789"
        spill.write_bytes(b"x" * 8192)
        behind = {p.stat().st_ino: p for p in database.files()}[spill.stat().st_ino]
        name = str(behind.relative_to(workspace))
        assert len(str(database.control_dir / "gocryptfs.sock")) > 108
        spill.unlink()  # the name decrypts from itself and its directory's IV
        assert database.file_kind(name) == "temp"
        assert database.file_kind(name) == "temp"  # kept
        inner = database.inner
        (inner.workspace / "database.sqlite-journal").write_bytes(b"j" * 4096)  # a log the engine would name
        view = {p.stat().st_ino: inner.file_kind(str(p.relative_to(inner.workspace)))
                for p in inner.workspace.rglob("*") if p.is_file()}
        expected = {str(p.relative_to(workspace)): view[p.stat().st_ino] for p in database.files()
                    if p.stat().st_ino in view}
    finally:
        database.close()
    assert {"data", "log"} <= set(expected.values())  # the database and its journal
    assert {name: database.file_kind(name) for name in expected} == expected  # learnt before the unmount
    assert not list(database.control_dir.iterdir())  # gocryptfs removed its socket


CONCURRENT_CREATES = '''
import os, sys, threading
base, errors = sys.argv[1], []
def work(t):
    for i in range(100):
        d = os.path.join(base, f"t{t}_{i}.fileset")
        try:
            os.mkdir(d, 0o700)
            fd = os.open(os.path.join(d, "0.0"), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
            os.write(fd, b"x" * 8192)
            os.close(fd)
            os.unlink(os.path.join(d, "0.0"))
            os.rmdir(d)
        except OSError as exc:
            errors.append(exc.strerror)
threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(errors), sorted(set(errors)))
'''


def test_a_servers_concurrent_file_creation_never_fails(tmp_path: Path) -> None:
    """PostgreSQL's temp files, MariaDB's tablespaces: a server creates directories and files
    from many threads or processes at once. Mounted by gocryptfs 2.3 itself as root with
    -allow_other, 345 of these 800 creations failed in a few seconds ("Permission denied",
    "Operation not permitted": gocryptfs issues #892/#893); served as the server's user, none
    may. gocryptfs runs as that user, the cipher directory is that user's, and no other user
    gets in."""
    import subprocess

    database = fs_database("postgres", tmp_path)
    try:
        database.create()
        uid, gid = user_ids("postgres")
        scratch = database.inner.workspace / "pgdata" / "base"
        done = subprocess.run(["python3", "-c", CONCURRENT_CREATES, str(scratch)], capture_output=True, text=True,
                              user=uid, group=gid, extra_groups=[], timeout=120, check=True)
        assert done.stdout.split()[0] == "0", done.stdout
        gocryptfs = by_name(database.engine_processes() or [])["gocryptfs"]
        assert gocryptfs.uids().effective == uid
        info = database.cipher_dir.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (uid, 0o700)
        stranger = subprocess.run(["ls", str(database.mount_point)], capture_output=True, text=True,
                                  user="nobody", group="nogroup", extra_groups=[], check=False)
        assert stranger.returncode != 0 and "Permission denied" in stranger.stderr
    finally:
        database.close()
    assert not mounted(database.mount_point)


def test_a_restore_copies_a_root_owned_backup_into_a_mount_served_as_the_servers_user(tmp_path: Path) -> None:
    """MariaDB's physical restore copies the backup (root's: mariadb-backup runs as root) into
    its workspace as root, then gives the tree to `mysql`. In a mount gocryptfs serves as
    `mysql`, keeping the copy's owner (`cp -a`) failed: "failed to preserve ownership …
    Operation not permitted", so every MariaDB restore under the layer failed (the backup
    workload's and the strength workload's old-key). The copy keeps modes, not owners."""
    from tdebench.engines.backup_tools import copy_tree

    backup = tmp_path / "backup"
    (backup / "tdebench").mkdir(parents=True, mode=0o700)
    (backup / "tdebench" / "t.ibd").write_bytes(b"page" * 1024)
    (backup / "tdebench" / "t.ibd").chmod(0o640)
    database = fs_database("mariadb", tmp_path / "db")
    copied = database.inner.workspace / "restore"
    try:
        database._set_up(lambda inner: copy_tree(backup, copied, tmp_path / "copy.log"))
        assert (copied / "tdebench" / "t.ibd").read_bytes() == b"page" * 1024
        assert stat.S_IMODE((copied / "tdebench" / "t.ibd").stat().st_mode) == 0o640
        assert (copied / "tdebench").stat().st_uid == user_ids("mysql")[0]  # gocryptfs's user owns what it serves
    finally:
        database.close()
    assert not mounted(database.mount_point)
