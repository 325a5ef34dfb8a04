"""Fixtures every test directory may use, and the test tiers.

Every test is marked with its tier, the directory it lives in: `unit` (tests/unit: no root, no
servers, no browser; `scripts/test.sh --fast` runs only these), `contract` (tests/contract: every
engine and encryption for real) and `integration` (tests/integration: the CLI end to end).
`pytest -m unit` selects one tier, `-m "not integration"` leaves one out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workspaces import server_reachable_dir

TIERS = ("unit", "contract", "integration")
"""The test directories below tests/, each the pytest marker of its tests (pyproject.toml)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier, the first directory of its path below tests/."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            tier = item.path.relative_to(here).parts[0]
            if tier in TIERS:
                item.add_marker(tier)


@pytest.fixture(scope="module")
def server_tmp_dir() -> Iterator[Path]:
    """A module's directory that servers running as their own user can reach (workspaces.py),
    e.g. for one server loaded with TPC-H for 22 queries, or a CLI run's --work-dir."""
    with server_reachable_dir() as path:
        yield path
