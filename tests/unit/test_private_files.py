"""The helpers that keep a server's files and password to its own user (engines/server.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tdebench.engines.server import new_password, private_dir, user_ids, workspace_problem, write_private
from workspaces import server_reachable_dir

SERVER_USER = "nobody"  # a server's stand-in: a system user on every machine, servers installed or not
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


@needs_root
def test_write_private_makes_a_0600_file_of_the_given_user(tmp_path: Path) -> None:
    path = write_private(tmp_path / "my.cnf", "[mariadbd]\n", SERVER_USER)
    info = path.stat()
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o600, *user_ids(SERVER_USER))
    assert path.read_text() == "[mariadbd]\n"
    path.chmod(0o644)
    write_private(path, "new\n")  # a rewrite takes the mode back, and the owner to ours
    assert (stat.S_IMODE(path.stat().st_mode), path.stat().st_uid, path.read_text()) == (0o600, os.geteuid(), "new\n")


@needs_root
def test_write_private_without_text_keeps_a_log_and_refuses_a_symlink(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("earlier lines\n")
    write_private(log, user=SERVER_USER)
    assert log.read_text() == "earlier lines\n" and stat.S_IMODE(log.stat().st_mode) == 0o600
    target = tmp_path / "elsewhere"
    target.write_text("not to be touched\n")
    (tmp_path / "planted").symlink_to(target)
    with pytest.raises(OSError):
        write_private(tmp_path / "planted", "overwritten\n")
    assert target.read_text() == "not to be touched\n"


@needs_root
def test_private_dir_is_0700_and_the_users(tmp_path: Path) -> None:
    inside = tmp_path / "a" / "b"
    private_dir(inside, SERVER_USER)
    assert (stat.S_IMODE(inside.stat().st_mode), inside.stat().st_uid) == (0o700, user_ids(SERVER_USER)[0])


def test_a_new_password_is_random_and_never_printed() -> None:
    first, second = new_password(), new_password()
    assert first.hex() != second.hex() and len(first.hex()) == 48
    assert first.hex() not in repr(first) and first.hex() not in f"{first}"
    assert first.scrub(f"denied: {first.hex()}") == "denied: ***"


def test_workspace_problem_names_the_directory_and_the_fix() -> None:
    with server_reachable_dir() as reachable:
        closed = reachable / "closed"
        closed.mkdir(mode=0o700)
        problem = workspace_problem(closed / "work", SERVER_USER, "MariaDB")
        assert problem is not None and f"the {SERVER_USER} user cannot enter {closed}," in problem
        assert f"chmod o+x {closed}" in problem and "MariaDB server" in problem
        closed.chmod(0o711)
        assert workspace_problem(closed / "work", SERVER_USER, "MariaDB") is None
