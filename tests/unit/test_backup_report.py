"""The backup/restore table and its findings, from a hand-made run: medians from the summary,
verdicts and restore checks from every run with the worst one shown, the plaintext backups of
encrypted databases named first in the findings, and nothing at all for a run without backups."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from fakes import write_fake_run
from tdebench.report import build
from tdebench.store import Measurement, ResultStore, TrialKey, TrialOutcome

PLAN = 'name = "fake-backup"\nrepetitions = 2\n\n[[workloads]]\nname = "backup"\nscale = 0.01\n'
MIB = 1024 * 1024
# (engine, encryption, method) -> (backup seconds, size MiB, compression ratio, artifact verdict, wrong-key answer)
CELLS = {
    ("duckdb", "none", "full"): (0.40, 10.0, 1.0, "plaintext", None),
    ("duckdb", "none", "full-compressed"): (0.70, 2.2, 4.5, "plaintext", None),
    ("duckdb", "none", "logical"): (0.10, 10.2, 1.0, "plaintext", None),
    ("duckdb", "aes-256-gcm", "full"): (0.44, 10.0, 1.0, "encrypted", "refused"),
    ("duckdb", "aes-256-gcm", "full-compressed"): (0.77, 10.0, 1.0, "encrypted", "refused"),
    ("duckdb", "aes-256-gcm", "logical"): (0.11, 10.2, 1.0, "plaintext", "accepted"),
    ("sqlite", "none", "full"): (0.03, 13.0, 1.0, "plaintext", None),
    ("sqlite", "placebo", "full"): (0.03, 13.0, 1.0, "plaintext", None),  # A/A: plaintext, as expected
    ("sqlite", "chacha20-poly1305", "full"): (0.15, 13.1, 1.0, "encrypted", "refused"),
}
LOST = TrialKey("sqlite", "chacha20-poly1305", "backup", 0.01, 2)  # its restore lost a row


def write_backup_run(directory: Path) -> None:
    store = ResultStore(directory)
    store.start(PLAN, {"cpu": {"model": "fake"}})
    for repetition in (1, 2):
        for engine, encryption in sorted({(e, c) for e, c, _ in CELLS}):
            trial = TrialKey(engine, encryption, "backup", 0.01, repetition)
            store.append(Measurement(trial, "load", "total", {"elapsed_s": 1.0}))
            for (e, c, method), (seconds, size, ratio, verdict, without_key) in CELLS.items():
                if (e, c) != (engine, encryption):
                    continue
                store.append(Measurement(trial, method, "backup", {
                    "elapsed_s": seconds * (1 + repetition / 100), "cpu_s": seconds / 2, "size_bytes": size * MIB,
                    "unpacked_bytes": size * ratio * MIB, "ratio": ratio, "database_bytes": 10 * MIB,
                    "compressed": float(method == "full-compressed")}))
                store.append(Measurement(trial, method, "scan", {"canary_hits": float(verdict == "plaintext")},
                                         answer=verdict))
                lost = trial == LOST
                store.append(Measurement(trial, method, "restore", {"elapsed_s": 2 * seconds,
                                                                    "restore_ok": float(not lost)},
                                         answer="failed" if lost else "ok"))
                if without_key:
                    store.append(Measurement(trial, method, "restore-without-key", {
                        "restore_without_key_failed": float(without_key == "refused")}, answer=without_key))
            error = "WrongAnswer: backup full: the restored database differs" if trial == LOST else ""
            store.append(TrialOutcome(trial, "failed" if error else "ok", "warm", False, 9.0, error=error))


@pytest.fixture(scope="module")
def backup_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("backup-run")
    write_backup_run(directory)
    build(directory)
    return directory


def rows_of(path: Path) -> dict[tuple[str, str, str], dict[str, str]]:
    with path.open(newline="") as fh:
        return {(r["engine"], r["encryption"], r["method"]): r for r in csv.DictReader(fh)}


def test_backups_csv_has_one_row_per_method_with_medians_and_verdicts(backup_run: Path) -> None:
    rows = rows_of(backup_run / "backups.csv")
    assert set(rows) == set(CELLS)
    gcm = rows[("duckdb", "aes-256-gcm", "full-compressed")]
    assert float(gcm["backup_s"]) == pytest.approx(0.77 * 1.015)  # the median of 1.01x and 1.02x
    assert float(gcm["backup_overhead_pct"]) == pytest.approx(10.0)
    assert (gcm["kind"], gcm["compressed"], gcm["n"]) == ("physical", "true", "2")
    assert (gcm["artifact"], gcm["restore"], gcm["without_key"]) == ("encrypted", "ok", "refused")
    assert float(rows[("duckdb", "none", "full-compressed")]["ratio"]) == 4.5
    logical = rows[("duckdb", "aes-256-gcm", "logical")]
    assert (logical["kind"], logical["artifact"], logical["without_key"]) == ("logical", "plaintext", "accepted")
    assert rows[("duckdb", "none", "full")]["without_key"] == ""  # no key, nothing to refuse


def test_a_lost_restore_shows_even_though_its_trial_failed(backup_run: Path) -> None:
    lost = rows_of(backup_run / "backups.csv")[("sqlite", "chacha20-poly1305", "full")]
    assert lost["restore"] == "failed" and lost["n"] == "1"  # the failed trial's timings are left out
    report = (backup_run / "report.md").read_text()
    assert "Restores that LOST or changed data: sqlite (full: chacha20-poly1305)." in report


def test_plaintext_backups_of_encrypted_databases_lead_the_findings(backup_run: Path) -> None:
    report = (backup_run / "report.md").read_text()
    findings = report.split("## Findings", 1)[1].split("\n- ")
    # the placebo's plaintext backup is not one of an encrypted database
    assert findings[1].startswith("Backups in PLAINTEXT although the database is encrypted (1 of 4): "
                                  "duckdb (logical: aes-256-gcm).")
    assert ("Restored with a wrong key, which Aydın (2022) requires to fail (1 of 4): "
            "duckdb (logical: aes-256-gcm).") in report
    assert ("duckdb full-compressed: compression shrank the backup 4.50× without encryption, "
            "1.00× with aes-256-gcm.") in report
    assert "## Backup and restore" in report
    html = (backup_run / "report.html").read_text()
    assert "<h2>Backup and restore</h2>" in html and "accepted" in html


def test_a_run_without_backups_has_no_section_and_no_backups_csv(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    build(tmp_path)
    assert not (tmp_path / "backups.csv").exists()  # not a lone header
    assert "Backup and restore" not in (tmp_path / "report.md").read_text()
    assert "Backup and restore" not in (tmp_path / "report.html").read_text()
