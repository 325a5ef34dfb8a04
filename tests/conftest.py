"""Fixtures every test directory may use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workspaces import server_reachable_dir


@pytest.fixture(scope="module")
def server_tmp_dir() -> Iterator[Path]:
    """A module's directory that servers running as their own user can reach (workspaces.py),
    e.g. for one server loaded with TPC-H for 22 queries, or a CLI run's --work-dir."""
    with server_reachable_dir() as path:
        yield path
