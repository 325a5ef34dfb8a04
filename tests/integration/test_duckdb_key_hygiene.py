"""No key of a DuckDB trial reaches what tdebench records, even where DuckDB itself shows it.

DuckDB has listed an attached database's `encryption_key` in `duckdb_databases().options`
(DuckDB issue #20761); the pinned 1.5.5 leaves it out, so the run below puts it back: each
encrypted database gets a `duckdb_databases()` macro of its own that adds the key to `options`
(as the issue shows it), which every unqualified query of that name in the trial reads. And
one encryption's ATTACH is made to fail with a parser error, whose message echoes the
statement, key included, cut to a line's width (a piece of the key that a replacement of the
whole key misses). A real run with a key file, then: its results, environment snapshot,
verdicts, report and console output hold no key, whole or in part, in hex or raw."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines import duckdb as duckdb_engine
from tdebench.engines.duckdb import DuckDBDatabase
from tdebench.keys import KeySource, Secret
from tdebench.store import read_run

PLAN = '''name = "duckdb-key-hygiene"
repetitions = 1
warmups = 0
seed = 5

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm", "aes-256-ctr"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
'''
PIECE = 16  # hex digits of a key: any run of this many found in an output fails the test


def _listing_the_key(original):
    """DuckDBDatabase._open_instance, then a duckdb_databases() in the attached database that
    shows the key in `options`, as DuckDB issue #20761 reports; checked to be what a query reads."""

    def open_instance(self: DuckDBDatabase):
        instance = original(self)
        if self.key is not None:
            instance.execute(
                "CREATE OR REPLACE MACRO db.main.duckdb_databases() AS TABLE SELECT * REPLACE ("
                f"map_concat(options, MAP {{'encryption_key': '{self.key.hex()}'}}) AS options) "
                "FROM system.main.duckdb_databases()")
            cursor = instance.cursor()
            cursor.execute("USE db")
            assert self.key.hex() in str(cursor.execute("SELECT options FROM duckdb_databases()").fetchall())
            cursor.close()
        return instance

    return open_instance


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory) -> tuple[Path, Path, str]:
    base = tmp_path_factory.mktemp("keys")
    key_file = base / "secret.key"
    key_file.write_text("a key file for the duckdb key hygiene test 0123456789\n")
    key_file.chmod(0o600)
    (base / "plan.toml").write_text(PLAN)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DuckDBDatabase, "_open_instance", _listing_the_key(DuckDBDatabase._open_instance))
        patch.setitem(duckdb_engine._CIPHERS, "aes-256-ctr", "CTR' broken")  # an ATTACH that cannot parse
        result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"),
                                           "--key-file", str(key_file)], catch_exceptions=False)
    return base / "out", key_file, result.output


def _spellings(key: Secret) -> list[bytes]:
    text = key.hex()
    pieces = {text[i:i + PIECE] for i in range(len(text) - PIECE + 1)}
    return [key.raw()] + [p.encode() for p in pieces] + [p.upper().encode() for p in pieces]


def test_the_trials_ran_as_the_test_needs(leaky_run) -> None:
    out, _, _ = leaky_run
    trials = {t.trial.encryption: t for t in read_run(out).trials}
    assert trials["none"].status == trials["aes-256-gcm"].status == "ok"
    assert trials["aes-256-ctr"].status == "failed" and "Parser Error" in (trials["aes-256-ctr"].error or "")
    verdicts = {v.trial.encryption: v for v in read_run(out).verdicts}
    assert verdicts["aes-256-gcm"].engine_state == "database encrypted with GCM; temp_file_encryption = true"


def test_no_key_whole_or_in_part_reaches_any_output(leaky_run) -> None:
    out, key_file, console = leaky_run
    keys = KeySource(key_file)
    encrypted = [t for t in read_run(out).trials if t.trial.encryption != "none"]
    assert len(encrypted) == 2
    spellings = [s for t in encrypted for s in _spellings(keys.key_for(t.trial.id))]
    spellings.append(key_file.read_text().strip().encode())
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"results.jsonl", "environment.json", "verdicts.csv", "report.md", "report.html"} <= {p.name for p in files}
    for name, data in [(p.name, p.read_bytes()) for p in files] + [("console", console.encode())]:
        for spelling in spellings:
            assert spelling not in data, f"{name} holds a key's bytes"
