"""The backup/restore table and its findings, from a hand-made run: medians from the summary,
verdicts and restore checks from every run with the worst one shown, the plaintext backups of
encrypted databases named first in the findings, and nothing at all for a run without backups."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from fakes import write_fake_run
from tdebench.report import build
from tdebench.results import Measurement, TrialKey, TrialOutcome
from tdebench.store import ResultStore
from tdebench.workloads.backup import sealing

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


def write_backup_run(directory: Path, memories: tuple[int | None, ...] = (None,),
                     zeros: dict[tuple[str, str, str], float] | None = None) -> None:
    """CELLS in two rounds; with `memories`, at each of those memory_mb values, where a backup
    takes memory_mb times longer (none's and every encryption's alike); with `zeros`, each cell's
    zero_share (a run before it was measured has none)."""
    store = ResultStore(directory)
    store.start(PLAN, {"cpu": {"model": "fake"}})
    for repetition, memory in itertools.product((1, 2), memories):
        for engine, encryption in sorted({(e, c) for e, c, _ in CELLS}):
            trial = TrialKey(engine, encryption, "backup", 0.01, repetition, memory)
            store.append(Measurement(trial, "load", "total", {"elapsed_s": 1.0}))
            for (e, c, method), (seconds, size, ratio, verdict, without_key) in CELLS.items():
                if (e, c) != (engine, encryption):
                    continue
                store.append(Measurement(trial, method, "backup", {
                    "elapsed_s": seconds * (1 + repetition / 100) * (memory or 1), "cpu_s": seconds / 2,
                    "size_bytes": size * MIB,
                    "unpacked_bytes": size * ratio * MIB, "ratio": ratio, "database_bytes": 10 * MIB,
                    "compressed": float(method == "full-compressed"),
                    **({"zero_share": zeros[(e, c, method)]} if zeros else {})}))
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


def test_two_memory_sizes_are_kept_apart_in_the_backup_table_and_findings(tmp_path: Path) -> None:
    """Backups at memory_mb 2 and 64: a row per size in backups.csv and the report, each backup
    compared with `none` at its own size (pooled, the sizes' times would mix and n double), and
    the findings name each engine with its memory."""
    write_backup_run(tmp_path, memories=(2, 64))
    build(tmp_path)
    with (tmp_path / "backups.csv").open(newline="") as fh:
        rows = {(r["engine"], r["memory_mb"], r["encryption"], r["method"]): r for r in csv.DictReader(fh)}
    assert set(rows) == {(e, str(m), c, method) for e, c, method in CELLS for m in (2, 64)}
    for memory in (2, 64):
        gcm = rows[("duckdb", str(memory), "aes-256-gcm", "full-compressed")]
        assert gcm["n"] == "2" and float(gcm["backup_s"]) == pytest.approx(0.77 * 1.015 * memory)
        assert float(gcm["backup_overhead_pct"]) == pytest.approx(10.0)
    report = (tmp_path / "report.md").read_text()
    assert "| duckdb | 2 | aes-256-gcm | 0.01 | full-compressed |" in report
    assert "| duckdb | 64 | aes-256-gcm | 0.01 | full-compressed |" in report
    assert ("Backups in PLAINTEXT although the database is encrypted (2 of 8): duckdb 2 MB (logical: aes-256-gcm), "
            "duckdb 64 MB (logical: aes-256-gcm).") in report


SEALED = {  # (encryption, backup encryption) -> (encrypt seconds, sealed artifact verdict, wrong-key answer)
    ("none", "aes-128"): (0.02, "encrypted", "refused"),
    ("none", "3des"): (0.40, "encrypted", "refused"),
    ("aes-256-gcm", "aes-128"): (0.02, "encrypted", "refused"),
    ("aes-256-gcm", "3des"): (0.40, "plaintext", "accepted"),  # a broken sealing the report must name
}


def write_sealed_run(directory: Path) -> None:
    """Backups of method full, stored plain and sealed with aes-128 and 3des, on DuckDB without
    and with TDE: the backup workload's records for backup_encryptions = ["none", "aes-128", "3des"]."""
    store = ResultStore(directory)
    store.start(PLAN, {"cpu": {"model": "fake"}})
    for repetition in (1, 2, 3):
        for encryption in ("none", "aes-256-gcm"):
            trial = TrialKey("duckdb", encryption, "backup", 0.01, repetition)
            for test in ("full", "full+aes-128", "full+3des"):
                backup_s = 0.40 * (1 + repetition / 100)
                store.append(Measurement(trial, test, "backup", {"elapsed_s": backup_s, "cpu_s": 0.2,
                                                                 "size_bytes": 10 * MIB, "compressed": 0.0}))
                if test == "full":
                    store.append(Measurement(trial, test, "scan", {}, answer="plaintext" if encryption == "none"
                                             else "encrypted"))
                    store.append(Measurement(trial, test, "restore", {"elapsed_s": 0.5, "restore_ok": 1.0},
                                             answer="ok"))
                    continue
                seconds, verdict, without_key = SEALED[(encryption, test.split("+")[1])]
                construction = sealing.CIPHERS[test.split("+")[1]].construction
                store.append(Measurement(trial, test, "encrypt", {
                    "elapsed_s": seconds, "cpu_s": seconds, "size_bytes": 10 * MIB + 64,
                    "time_share": seconds / (seconds + backup_s), "cpu_share": seconds / (seconds + 0.2)},
                    answer=construction))
                store.append(Measurement(trial, test, "scan", {"canary_hits": 0.0}, answer=verdict))
                store.append(Measurement(trial, test, "decrypt", {"elapsed_s": seconds}))
                store.append(Measurement(trial, test, "restore", {"elapsed_s": 0.5, "restore_ok": 1.0}, answer="ok"))
                store.append(Measurement(trial, test, "restore-without-key", {
                    "restore_without_key_failed": float(without_key == "refused")}, answer=without_key))
            store.append(TrialOutcome(trial, "ok", "warm", False, 9.0))


def test_sealed_backups_get_their_own_table_rows_and_findings(tmp_path: Path) -> None:
    write_sealed_run(tmp_path)
    build(tmp_path)
    with (tmp_path / "backups.csv").open(newline="") as fh:
        rows = {(r["encryption"], r["backup_encryption"]): r for r in csv.DictReader(fh)}
    assert set(rows) == {(e, b) for e in ("none", "aes-256-gcm") for b in ("none", "aes-128", "3des")}
    des = rows[("none", "3des")]
    assert des["method"] == "full" and des["construction"] == "3DES-CBC + HMAC-SHA256 (encrypt-then-MAC)"
    assert float(des["time_share"]) == pytest.approx(0.40 / (0.40 + 0.40 * 1.02))  # the median run's share
    assert des["time_share_ci"].startswith("[") and float(des["encrypt_s"]) == pytest.approx(0.40)
    assert rows[("none", "none")]["encrypt_s"] == "" and rows[("none", "none")]["artifact"] == "plaintext"
    report = (tmp_path / "report.md").read_text()
    assert report.count("## Backup and restore") == 1 and "## Backup encryption" in report
    plain_table = report.split("## Backup and restore", 1)[1].split("## Backup encryption", 1)[0]
    assert "aes-128" not in plain_table  # the sealed rows stand only in their own table
    assert ("Sealed backups NOT shown encrypted at rest (1 of 4): duckdb (full+3des: aes-256-gcm).") in report
    assert ("Restored with a wrong key, which Aydın (2022) requires to fail (1 of 5): "
            "duckdb (full+3des: aes-256-gcm).") in report
    assert ("duckdb full (database none): encrypting the backup took this share of backup + encryption time "
            "(median \\[95% CI\\] in %): "
            "aes-128 4.7% \\[") in report  # Markdown escapes the interval's brackets
    assert "3DES-CBC + HMAC-SHA256 (encrypt-then-MAC); aes-128: AES-128-GCM." in report
    assert "<h2>Backup encryption</h2>" in (tmp_path / "report.html").read_text()


def test_a_run_without_sealed_backups_has_no_backup_encryption_table(backup_run: Path) -> None:
    assert "Backup encryption" not in (backup_run / "report.md").read_text()


def test_the_compressors_share_is_its_excess_over_the_same_trials_uncompressed_backup() -> None:
    from tdebench.engines.base import BackupMethod
    from tdebench.workloads.backup.workload import BackupWorkload

    workload = BackupWorkload()
    full = BackupMethod("full", "physical", False, "copy")
    compressed = BackupMethod("full-compressed", "physical", True, "copy | gzip")
    logical = BackupMethod("logical", "logical", True, "dump")
    assert workload._compression_shares(compressed, "full-compressed", False, {"elapsed_s": 2.0}) == {}  # no full yet
    assert workload._compression_shares(full, "full", False, {"elapsed_s": 0.5, "cpu_s": 0.2}) == {}
    assert workload._compression_shares(full, "full+3des", False, {"elapsed_s": 1.0, "cpu_s": 0.4}) == {}
    assert workload._compression_shares(compressed, "full-compressed", False, {"elapsed_s": 2.0, "cpu_s": 1.0}) == {
        "compression_elapsed_share": 0.75, "compression_cpu_share": 0.8}
    assert workload._compression_shares(compressed, "full-compressed+3des", False, {"elapsed_s": 2.0, "cpu_s": 1.0}) \
        == {"compression_elapsed_share": 0.5, "compression_cpu_share": 0.6}  # against full+3des's backup
    assert workload._compression_shares(compressed, "full-compressed", True, {"elapsed_s": 2.0}) == {}  # warm-ups apart
    assert workload._compression_shares(logical, "logical", False, {"elapsed_s": 2.0}) == {}


def test_the_compressors_share_reaches_the_findings_with_its_interval(tmp_path: Path) -> None:
    write_backup_run(tmp_path)
    store = ResultStore(tmp_path)
    for repetition, share in ((1, 0.40), (2, 0.44)):  # what the workload adds to full-compressed's backup step
        trial = TrialKey("duckdb", "none", "backup", 0.01, repetition)
        store.append(Measurement(trial, "full-compressed", "backup", {"compression_elapsed_share": share}))
    build(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert ("duckdb full-compressed: compression shrank the backup 4.50× without encryption, 1.00× with "
            "aes-256-gcm. Compressing took 42.0% \\[") in report


def test_the_zero_blocks_of_each_compressed_backup_stand_beside_its_compression(tmp_path: Path) -> None:
    """An encrypted backup that still compresses owes it to its blocks of zeros (unwritten space):
    the findings give their share and how far they alone would shrink each backup."""
    write_backup_run(tmp_path, zeros={cell: 0.77 if cell[1] == "aes-256-gcm" else 0.95 for cell in CELLS})
    build(tmp_path)
    assert float(rows_of(tmp_path / "backups.csv")[("duckdb", "aes-256-gcm", "full-compressed")]["zero_share"]) == 0.77
    assert ("duckdb full-compressed: compression shrank the backup 4.50× (95.0% zeros, alone 20.00×) without "
            "encryption, 1.00× (77.0% zeros, alone 4.35×) with aes-256-gcm; zeros: the share of a backup's bytes "
            "in 4 KiB blocks of zeros, unwritten space that compresses whatever the encryption; alone: how far "
            "those alone would shrink it.") in (tmp_path / "report.md").read_text()
    assert "| zeros |" in (tmp_path / "report.md").read_text()


def test_a_run_without_zero_shares_says_nothing_of_them(backup_run: Path) -> None:
    report = (backup_run / "report.md").read_text()
    assert "blocks of zeros" not in report.split("## Findings", 1)[1].split("\n## ", 1)[0]
