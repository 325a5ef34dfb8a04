"""Temporary directories that servers running as their own system user (postgres, mysql) can
reach. pytest makes its temporary directories 0700 and root-owned, so a server running as
another user could not enter its own workspace; these are below the system temp directory,
0711 (others may search, not list) and removed afterwards, as the runner's workspace root is.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def server_reachable_dir(prefix: str = "tdebench-test-") -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        path.chmod(0o711)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


HOSTILE_USER = "nobody"  # another local user: may run programs, owns nothing of a trial


def as_hostile_user(argv: list[str], timeout: float = 30, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run `argv` as another local user (`nobody`), as an attacker sharing the machine would:
    no password, no key, only what file permissions and server authentication allow. Returns
    the finished process (output in .stdout, both streams); the test asserts it was refused."""
    return subprocess.run(argv, user=HOSTILE_USER, group="nogroup", extra_groups=[], input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          cwd="/", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent"})
