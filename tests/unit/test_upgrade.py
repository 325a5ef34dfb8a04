"""A run from before tdebench recorded its engines' facts (results.ENGINE_FACTS, ENCRYPTIONS): its
report says they are missing rather than looking them up in the engine registry, and `tdebench
upgrade` fills them in as this tdebench defines them, which the report then names
(report/data/encryptions.py, cli/upgrade.py)."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from click.testing import CliRunner

from fakes import as_before_defaults_were_recorded, write_fake_run
from tdebench.cli import main
from tdebench.engines import get_engine
from tdebench.report.summaries import cache
from tdebench.report.summaries.cipher_cost import NOT_RECORDED, cipher_cost_table
from tdebench.report.data.encryptions import FILLED, MISSING, known
from tdebench.report.data.records import summary_records
from tdebench.results import ENCRYPTIONS, ENGINE_FACTS, FILLED_IN, recorded_encryptions, recorded_engines
from tdebench.store import ENVIRONMENT, read_run


def _older_run(directory: Path) -> None:
    """A fake run of DuckDB and SQLite that recorded no facts of its engines, and whose trials
    stored 0 for their engine's default cache, as runs before either was recorded did."""
    write_fake_run(directory, memories=(None,), facts={})
    as_before_defaults_were_recorded(directory)


def _upgrade(directory: Path) -> str:
    printed = CliRunner().invoke(main, ["upgrade", str(directory)], catch_exceptions=False, terminal_width=200)
    assert printed.exit_code == 0, printed.output
    return printed.output


def _sqlite_caches(directory: Path) -> set[str]:
    table = cache.cache_fit_table(read_run(directory))
    assert table is not None
    return {row["cache"] for row in table.rows if row["engine"] == "sqlite"}


def test_a_run_without_its_engines_facts_says_so_and_looks_nothing_up(tmp_path: Path) -> None:
    _older_run(tmp_path)
    run = read_run(tmp_path)
    assert known(run).caveat == MISSING
    table = cipher_cost_table(run, summary_records(run))
    assert table.rows and {row["cipher"] for row in table.rows} == {NOT_RECORDED}
    assert all({"chunk", "cipher_s", "share"}.isdisjoint(row) for row in table.rows)
    assert table.note.endswith(MISSING)
    assert _sqlite_caches(tmp_path) == {"not known"}  # its engine's default not recorded: not guessed


def test_upgrade_fills_in_this_tdebenchs_facts_names_its_version_and_keeps_what_the_run_recorded(
        tmp_path: Path) -> None:
    _older_run(tmp_path)
    assert "encryptions, engine_facts filled in as tdebench" in _upgrade(tmp_path)
    environment = json.loads((tmp_path / ENVIRONMENT).read_text())
    version = metadata.version("tdebench")
    assert environment[FILLED_IN] == {ENCRYPTIONS: version, ENGINE_FACTS: version}
    engines = {name: get_engine(name) for name in ("duckdb", "sqlite")}
    assert recorded_engines(environment) == {name: engine.facts() for name, engine in engines.items()}
    assert recorded_encryptions(environment) == {(name, encryption): facts for name, engine in engines.items()
                                                 for encryption, facts in engine.encryption_facts().items()}
    run = read_run(tmp_path)
    caveat = FILLED.format(version=version)
    assert known(run).caveat == caveat and cipher_cost_table(run, summary_records(run)).note.endswith(caveat)
    assert _sqlite_caches(tmp_path) == {"1.95 MB (default, not recorded)"}  # the filled-in default, said so
    assert "nothing to fill in" in _upgrade(tmp_path)
    assert json.loads((tmp_path / ENVIRONMENT).read_text()) == environment


def test_a_run_that_recorded_its_facts_is_left_as_it_was(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    before = (tmp_path / ENVIRONMENT).read_text()
    assert "nothing to fill in" in _upgrade(tmp_path)
    assert (tmp_path / ENVIRONMENT).read_text() == before
    assert known(read_run(tmp_path)).caveat == ""
