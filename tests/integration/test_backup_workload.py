"""The backup workload end to end through the CLI on real DuckDB: every method backs up,
restores and checks, the artifacts' verdicts and the wrong-key restores are recorded, the
report shows them, nothing a test wrote reaches the trial's own verdict, and a restore that
loses a row fails its trial after its measurements are stored. The shipped backup-encryption
plan's matrix (TDE × compression × the backup's own encryption) runs end to end on DuckDB:
every sealed backup is encrypted at rest, restores with its key and refuses a wrong one."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.cli.plans import plan_path
from tdebench.engines.duckdb import DuckDBDatabase
from tdebench.store import read_run

PLAN = '''name = "tiny-backup"
repetitions = 1
warmups = 0
seed = 3

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm"]

[[workloads]]
name = "backup"
scale = 0.01
tests = ["full", "full-compressed", "logical"]
'''


def run(base: Path, plan: str) -> tuple[int, str, Path]:
    (base / "plan.toml").write_text(plan)
    work = base / "work"
    work.mkdir()
    result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"), "--quiet",
                                       "--work-dir", str(work)], catch_exceptions=False)
    assert not list(work.iterdir()), "the run left a workspace behind"
    return result.exit_code, result.output, base / "out"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    code, output, out = run(tmp_path_factory.mktemp("backup"), PLAN)
    assert code == 0, output
    return out


def test_every_method_backs_up_restores_and_is_checked(run_dir: Path) -> None:
    run_data = read_run(run_dir)
    assert all(t.status == "ok" for t in run_data.trials) and len(run_data.trials) == 2
    steps = {(m.trial.encryption, m.test, m.step): m for m in run_data.measurements
             if m.trial.workload == "backup"}
    for encryption in ("none", "aes-256-gcm"):
        for method in ("full", "full-compressed", "logical"):
            backup = steps[(encryption, method, "backup")].metrics
            assert backup["elapsed_s"] > 0 and backup["size_bytes"] > 0 and backup["cpu_s"] >= backup["tool_cpu_s"]
            restore = steps[(encryption, method, "restore")]
            assert restore.answer == "ok" and restore.metrics["restore_ok"] == 1.0
            assert restore.metrics["rows"] > 86_000  # every TPC-H table at SF 0.01 and the canaries
    verdicts = {(e, m): steps[(e, m, "scan")].answer for e in ("none", "aes-256-gcm")
                for m in ("full", "full-compressed", "logical")}
    assert verdicts == {("none", "full"): "plaintext", ("none", "full-compressed"): "plaintext",
                        ("none", "logical"): "plaintext", ("aes-256-gcm", "full"): "encrypted",
                        ("aes-256-gcm", "full-compressed"): "encrypted", ("aes-256-gcm", "logical"): "plaintext"}
    wrong_key = {m: steps[("aes-256-gcm", m, "restore-without-key")].answer
                 for m in ("full", "full-compressed", "logical")}
    assert wrong_key == {"full": "refused", "full-compressed": "refused", "logical": "accepted"}
    assert ("none", "full", "restore-without-key") not in steps
    # gzip ran as a child process: its CPU time is counted with the backup's
    assert steps[("none", "full-compressed", "backup")].metrics["tool_cpu_s"] > 0
    # gzip shrinks the plaintext backup; the encrypted one does not compress at all
    assert steps[("none", "full-compressed", "backup")].metrics["ratio"] > 2
    assert steps[("aes-256-gcm", "full-compressed", "backup")].metrics["ratio"] < 1.01
    # nor has it blocks of zeros, which compress whether encrypted or not; a text dump has none either
    shares = {(e, m): steps[(e, m, "backup")].metrics["zero_share"] for e in ("none", "aes-256-gcm")
              for m in ("full", "full-compressed", "logical")}
    assert all(0.0 <= share <= 1.0 for share in shares.values()), shares
    assert shares[("aes-256-gcm", "full")] < 0.01 and shares[("none", "logical")] == 0.0, shares


def test_the_plaintext_export_never_reaches_the_trials_verdict(run_dir: Path) -> None:
    verdicts = {v.trial.encryption: v for v in read_run(run_dir).verdicts}
    assert verdicts["aes-256-gcm"].verdict == "encrypted" and verdicts["none"].verdict == "plaintext"
    assert not any("backup-" in scan.path for v in verdicts.values() for scan in v.files)


def test_the_report_names_the_plaintext_backup(run_dir: Path) -> None:
    with (run_dir / "backups.csv").open(newline="") as fh:
        rows = {(r["encryption"], r["method"]): r for r in csv.DictReader(fh)}
    assert len(rows) == 6 and rows[("aes-256-gcm", "logical")]["artifact"] == "plaintext"
    assert rows[("aes-256-gcm", "full-compressed")]["compressed"] == "true"
    report = (run_dir / "report.md").read_text()
    assert ("Backups in PLAINTEXT although the database is encrypted (1 of 3): "
            "duckdb (logical: aes-256-gcm).") in report


def test_a_restore_that_loses_a_row_fails_its_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    restore = DuckDBDatabase.restore

    def lossy(self: DuckDBDatabase, backup) -> None:
        restore(self, backup)
        conn = self.connect()
        conn.execute("DELETE FROM region WHERE r_regionkey = 0")
        conn.close()

    monkeypatch.setattr(DuckDBDatabase, "restore", lossy)
    code, _, out = run(tmp_path, PLAN.replace('["none", "aes-256-gcm"]', '["none"]').replace(
        '["full", "full-compressed", "logical"]', '["full"]'))
    assert code == 1
    run_data = read_run(out)
    (outcome,) = run_data.trials
    assert outcome.status == "failed" and "region: 4 rows, expected 5" in outcome.error
    restore_step = next(m for m in run_data.measurements if m.step == "restore")
    assert restore_step.answer == "failed" and restore_step.metrics["restore_ok"] == 0.0


def test_the_backup_encryption_plan_runs_its_matrix_end_to_end(tmp_path: Path) -> None:
    """The shipped plan's backup workload as written, on DuckDB alone (the servers' sealed
    backups are checked in the contract tests), one repetition."""
    shipped = tomllib.loads(plan_path(Path("backup-encryption")).read_text())
    (workload,) = shipped["workloads"]
    (duckdb,) = [engine for engine in shipped["engines"] if engine["name"] == "duckdb"]
    sealings = workload["backup_encryptions"]
    assert set(sealings) == {"none", "aes-128", "aes-192", "aes-256", "3des"}
    plan = (f'name = "sealed"\nrepetitions = 1\nwarmups = 0\n\n[[engines]]\nname = "duckdb"\n'
            f'encryptions = {duckdb["encryptions"]!r}\n\n[[workloads]]\nname = "backup"\nscale = 0.01\n'
            f'tests = {workload["tests"]!r}\nbackup_encryptions = {sealings!r}\n').replace("'", '"')
    code, output, out = run(tmp_path, plan)
    assert code == 0, output
    run_data = read_run(out)
    steps = {(m.trial.encryption, m.test, m.step): m for m in run_data.measurements}
    for encryption in duckdb["encryptions"]:
        for method in workload["tests"]:
            for sealing in sealings[1:]:
                test = f"{method}+{sealing}"
                encrypt = steps[(encryption, test, "encrypt")]
                assert encrypt.metrics["elapsed_s"] > 0 and 0 < encrypt.metrics["time_share"] < 1
                assert encrypt.metrics["size_bytes"] >= steps[(encryption, test, "backup")].metrics["size_bytes"]
                assert steps[(encryption, test, "scan")].answer == "encrypted"
                assert steps[(encryption, test, "restore")].answer == "ok"
                assert steps[(encryption, test, "restore-without-key")].answer == "refused"
            assert (encryption, method, "scan") in steps and (encryption, f"{method}+none", "scan") not in steps
    with (out / "backups.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(duckdb["encryptions"]) * len(workload["tests"]) * len(sealings)
    report = (out / "report.md").read_text()
    assert "## Backup encryption" in report
    sealed = len(duckdb["encryptions"]) * len(workload["tests"]) * (len(sealings) - 1)
    assert f"Every sealed backup was encrypted at rest ({sealed})" in report
