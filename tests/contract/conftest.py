"""Workspaces that servers running as their own system user (postgres, mysql) can reach.

pytest makes every temporary directory 0700 and root-owned, so a server running as another
user could not enter its own workspace. Here `tmp_path` is a fresh directory below the
system temp directory that others may enter (0711: search, not list) and that is removed
afterwards, as the runner's workspace root is.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _server_reachable_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o711)
    return path


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    path = _server_reachable_dir("tdebench-test-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server_tmp_dir() -> Iterator[Path]:
    """The same for module-scoped fixtures (e.g. one server loaded with TPC-H for 22 queries)."""
    path = _server_reachable_dir("tdebench-test-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
