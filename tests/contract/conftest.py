"""Contract tests start servers that run as their own system user (postgres, mysql), so here
`tmp_path` is a directory such a server can reach (tests/workspaces.py), removed afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workspaces import server_reachable_dir


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    with server_reachable_dir() as path:
        yield path
