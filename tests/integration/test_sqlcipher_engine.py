"""Zetetic's SQLCipher (engine `sqlcipher`) for real: every workload the engine `sqlite` runs, run
through the CLI on its 4.x defaults (and the baseline the runner adds, the positive control) at the
smallest scales, their answers checked by the workloads; and a database written by either
implementation in SQLCipher 4's settings opened with the same key by the other (SQLite3 Multiple
Ciphers' `sqlcipher` scheme, legacy = 4)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.engines import get_engine
from tdebench.keys import Secret
from tdebench.store import read_run

ENCRYPTED = "aes-256-cbc-hmac-sha512"
PLAN = f'''name = "sqlcipher-workloads"
repetitions = 1
warmups = 0
seed = 1

[[engines]]
name = "sqlcipher"
encryptions = ["{ENCRYPTED}"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
passes = 1

[[workloads]]
name = "crud"
scale = 1000
lookups = 20

[[workloads]]
name = "oltp"
scale = 1
tests = ["load"]
rampup_s = 0.3
duration_s = 1.5
interval_s = 0.5

[[workloads]]
name = "backup"
scale = 0.01
tests = ["full", "full-compressed", "logical"]

[[workloads]]
name = "maintenance"
scale = 0.01
tests = ["encrypt", "rekey"]
'''


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sqlcipher-workloads")
    (base / "plan.toml").write_text(PLAN)
    result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"), "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return base / "out"


def test_every_workload_runs_on_sqlcipher_with_its_answers_checked(run_dir: Path) -> None:
    run = read_run(run_dir)
    assert {t.trial.workload for t in run.trials} == {"tpch", "crud", "oltp", "backup", "maintenance"}
    # a wrong answer (a TPC-H result, a crud row count, an oltp consistency check) fails its trial
    assert all(t.status == "ok" for t in run.trials), [t.error for t in run.trials if t.status != "ok"]
    assert all(v.as_expected for v in run.verdicts) and len(run.verdicts) == 10
    assert {v.verdict for v in run.verdicts if v.trial.encryption == ENCRYPTED} == {"encrypted"}
    tests = {(m.trial.workload, m.test) for m in run.measurements if not m.warmup and m.metrics.get("elapsed_s")}
    assert {("tpch", "power"), ("crud", "lookup"), ("oltp", "load"), ("backup", "full"),
            ("maintenance", "rekey")} <= tests


def test_sqlcipher_encrypts_with_sqlcipher_export_and_rekeys(run_dir: Path) -> None:
    with (run_dir / "maintenance.csv").open(newline="") as fh:
        rows = {r["test"]: r for r in csv.DictReader(fh) if r["encryption"] == ENCRYPTED}
    assert (rows["encrypt"]["method"], rows["encrypt"]["verified"]) == ("sqlcipher-export", "yes")
    assert rows["rekey"]["method"] == "pragma-rekey"


def test_sqlcipher_backups_are_encrypted_at_rest_where_physical(run_dir: Path) -> None:
    with (run_dir / "backups.csv").open(newline="") as fh:
        rows = {r["method"]: (r["artifact"], r["restore"], r["without_key"]) for r in csv.DictReader(fh)}
    assert rows == {"full": ("encrypted", "ok", "refused"), "full-compressed": ("encrypted", "ok", "refused"),
                    "logical": ("plaintext", "ok", "accepted")}  # a dump is SQL text, by design


# --- one key, two implementations of SQLCipher 4's format

CANARY = "TDEBENCH-CANARY-sqlcipher-compat-0123"


def _sqlite3mc(path: Path, key: Secret):
    """An apsw (SQLite3MC) connection to `path` in its sqlcipher scheme with SQLCipher 4's settings."""
    import apsw

    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA cipher = 'sqlcipher'")
    conn.execute("PRAGMA legacy = 4")
    conn.execute(f"PRAGMA hexkey = '{key.hex()}'")
    return conn


def test_a_database_written_by_sqlcipher_opens_in_sqlite3mc_with_the_same_key(tmp_path: Path) -> None:
    engine = get_engine("sqlcipher")
    key = Secret(os.urandom(32))
    database = engine.provision(tmp_path, engine.encryption(ENCRYPTED), key)
    database.create()
    conn = database.connect()
    conn.execute("CREATE TABLE t (s TEXT)")
    conn.execute("INSERT INTO t VALUES (?)", (CANARY,))
    conn.close()
    database.close()
    assert CANARY.encode() not in database.path.read_bytes()  # written encrypted
    other = _sqlite3mc(database.path, key)
    try:
        assert other.execute("SELECT s FROM t").fetchall() == [(CANARY,)]
    finally:
        other.close()
    wrong = _sqlite3mc(database.path, Secret(os.urandom(32)))
    try:
        with pytest.raises(Exception, match="not a database"):
            wrong.execute("SELECT s FROM t").fetchall()
    finally:
        wrong.close()


def test_a_database_written_by_sqlite3mc_opens_in_sqlcipher_with_the_same_key(tmp_path: Path) -> None:
    key = Secret(os.urandom(32))
    path = tmp_path / "database.sqlite"
    writer = _sqlite3mc(path, key)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("CREATE TABLE t (s TEXT)")
    writer.execute("INSERT INTO t VALUES (?)", (CANARY,))
    writer.close()
    assert CANARY.encode() not in path.read_bytes()
    engine = get_engine("sqlcipher")
    database = engine.provision(tmp_path, engine.encryption(ENCRYPTED), key)
    assert database.opens_with(key) and not database.opens_with(Secret(os.urandom(32)))
    conn = database.connect()
    try:
        assert conn.execute("SELECT s FROM t") == [(CANARY,)]
    finally:
        conn.close()
        database.close()


@pytest.mark.parametrize(("key_form", "encryption", "raw"), [
    ("passphrase", "aes-256-cbc-hmac-sha512", False), ("passphrase", "aes-256-cbc-hmac-sha512-raw", True),
    ("raw", "aes-256-cbc-hmac-sha512", True), ("raw", "aes-256-cbc", True)])
def test_a_raw_key_is_taken_where_asked_and_the_other_form_opens_nothing(tmp_path: Path, key_form: str, encryption: str,
                                                                            raw: bool) -> None:
    """The raw-key encryption always takes a raw key (x'…', derived from the trial's), the others under
    key_form = "raw"; the same trial key given the other way does not open the file."""
    key = Secret(os.urandom(32))
    engine = get_engine("sqlcipher", key_form=key_form)
    database = engine.provision(tmp_path / "a", engine.encryption(encryption), key)
    (tmp_path / "a").mkdir()
    database.create()
    assert database.key_form == ("raw" if raw else "passphrase")
    assert database.opens_with(key)
    other_form = get_engine("sqlcipher", key_form="raw" if key_form == "passphrase" else "passphrase")
    if other_form.raw_key_bytes(engine.encryption(encryption)) != engine.raw_key_bytes(engine.encryption(encryption)):
        assert not other_form.provision(tmp_path / "a", engine.encryption(encryption), key).opens_with(key)
