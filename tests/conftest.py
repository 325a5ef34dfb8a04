"""Fixtures every test directory may use, and the test tiers.

Every test is marked with its tier, the directory it lives in: `unit` (tests/unit: no root, no
servers, no browser; `scripts/test.sh --fast` runs only these), `contract` (tests/contract: every
engine and encryption for real) and `integration` (tests/integration: the CLI end to end).
`pytest -m unit` selects one tier, `-m "not integration"` leaves one out."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspaces import server_reachable_dir

TIERS = ("unit", "contract", "integration")
"""The test directories below tests/, each the pytest marker of its tests (pyproject.toml)."""


LONGEST_FIRST = ("integration/test_oltp_engines.py", "contract/test_engine_contract.py", "integration/test_cli.py",
                 "integration/test_cluster.py", "contract/test_backup_restore.py",
                 "integration/test_bench_scripts.py", "integration/test_backup_workload.py",
                 "integration/test_crud_engines.py", "integration/test_transient_capture.py",
                 "integration/test_servers.py", "integration/test_bench_servers.py",
                 "integration/test_strength_engines.py", "integration/test_embedded.py",
                 "integration/test_killed_runs.py", "contract/test_maintenance_engines.py",
                 "integration/test_remote_targets.py", "integration/test_maintenance_cli.py",
                 "integration/test_resume_cli.py")
"""The test files that take longest, longest first (the "slowest files" scripts/test.sh lists;
here the twelve of a run of the contract and integration pass as scripts/test.sh runs it, on
2026-11-27 on a 2-core machine shared with other test runs, then the rest as before).
scripts/test.sh hands the contract and integration tiers to two workers a file at a time, in
collection order (`--no-loadscope-reorder`): these go first, then the others, most tests
first, so the pass ends on short files and both workers finish close together. pytest-xdist's
own order (most tests first) left a 2-test file of 2½ minutes, test_servers.py, to the end."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tier, the first directory of its path below tests/; order the
    files LONGEST_FIRST, then by how many tests they hold (a stable sort: a file's own order stays)."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            tier = item.path.relative_to(here).parts[0]
            if tier in TIERS:
                item.add_marker(tier)
    tests_in = Counter(item.path for item in items)

    def rank(item: pytest.Item) -> tuple[int, int]:
        name = item.path.relative_to(here).as_posix() if item.path.is_relative_to(here) else ""
        return (LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST), -tests_in[item.path])

    items.sort(key=rank)


SLOWEST_FILES = 12
_seconds_of_file: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds_of_file[report.nodeid.split("::")[0]] += report.duration


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """With --durations, the files that took longest too (setup, call and teardown of all their
    tests): what LONGEST_FIRST is ordered by."""
    if config.option.durations and _seconds_of_file:
        terminalreporter.write_sep("=", f"slowest {SLOWEST_FILES} files")
        for name, seconds in sorted(_seconds_of_file.items(), key=lambda pair: -pair[1])[:SLOWEST_FILES]:
            terminalreporter.write_line(f"{seconds:8.2f}s {name}")


NO_PLOTS = "TDEBENCH_NO_PLOTS"


@pytest.fixture(scope="session", autouse=True)
def _reports_without_plots(request: pytest.FixtureRequest) -> Iterator[None]:
    """Where the session runs integration tests, their `tdebench run` and `report` (in this process
    or one it starts, a module's shared run too) write their reports without plots (`--no-plots`, by
    its environment variable): drawing them is most of a report's time, and most tests read the
    report's tables and files, not its pictures. A test that reads them is marked `plots`
    (`_plots_where_read`). scripts/test.sh runs the unit tier in a session of its own."""
    with pytest.MonkeyPatch.context() as patch:  # what monkeypatch does for a test, for the session
        if any(item.get_closest_marker("integration") for item in request.session.items):
            patch.setenv(NO_PLOTS, "1")
        yield


@pytest.fixture(autouse=True)
def _plots_where_read(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked `plots` reads the report's plots: its runs draw them."""
    if request.node.get_closest_marker("plots"):
        monkeypatch.delenv(NO_PLOTS, raising=False)


@pytest.fixture(scope="module")
def server_tmp_dir() -> Iterator[Path]:
    """A module's directory that servers running as their own user can reach (workspaces.py),
    e.g. for one server loaded with TPC-H for 22 queries, or a CLI run's --work-dir."""
    with server_reachable_dir() as path:
        yield path
