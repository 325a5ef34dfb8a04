"""The answer table (report/sections/answer.py): one row per engine and encryption with its cost, coverage per
file kind, integrity, leaks, keys and recommendation, from a fake run's records; what the run did
not measure says so and names the plan that does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fakes import DEMO, DEMO_PLAN, write_fake_run
from tdebench.report.sections import answer
from tdebench.report import build
from tdebench.report.data.records import summary_records
from tdebench.results import Measurement, TrialKey, TrialOutcome
from tdebench.store import ResultStore, read_run

KINDS = replace(DEMO, kinds=True)
STRENGTH = {  # encryption → (repeated block share, flipped byte, forgery in the file)
    "none": (0.41, "silently altered", "forgeable"),
    "aes-256-cbc": (0.0, "silently altered", "forgeable"),
    "chacha20-poly1305": (0.0, "tag detects", "tag detects"),
    "sqlcipher": (0.0, "tag detects", "tag detects"),
    "rc4": (0.41, "silently altered", "forgeable"),
}


def _add_strength(directory: Path) -> None:
    """A strength trial per SQLite encryption of STRENGTH, as the workload records one."""
    store = ResultStore(directory)
    for encryption, (share, flipped, forged) in STRENGTH.items():
        trial = TrialKey("sqlite", encryption, "strength", 20000.0, 1)
        store.append(Measurement(trial, "repeats", "database", {"repeated_block_share": share}))
        store.append(Measurement(trial, "repeats", "random", {"repeated_block_share": 0.0}))
        store.append(Measurement(trial, "tamper", "flip", {"tries": 1.0}, answer=flipped))
        store.append(Measurement(trial, "forgery", "database", {}, answer=forged))
        store.append(Measurement(trial, "old-key", "database", {}, answer="refused"))
        store.append(TrialOutcome(trial, "ok", cache="warm", cache_dropped=False, elapsed_s=3.0))
    store.sync()


def _rows(directory: Path) -> dict[tuple[str, str], dict]:
    run = read_run(directory)
    return {(row["engine"], row["encryption"]): row for row in answer.rows(run, summary_records(run))}


def test_without_strength_tests_no_row_shows_encrypted_without_saying_what_is_missing(tmp_path: Path) -> None:
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=KINDS)
    rows = _rows(tmp_path)
    assert ("duckdb", "placebo") not in rows and ("duckdb", "none") in rows
    for (engine, encryption), row in rows.items():
        if encryption == "none":
            assert row["advice"] == answer.advice.BASELINE
            continue
        assert row["data"] == answer.ENCRYPTED
        assert row["integrity"] == row["leaks"] == f"not measured — run plan assess-{engine}"
        assert row["advice"].startswith(answer.advice.UNASSESSED) and row["weak"]
        assert row["cost"].startswith("power test ") and "[" in row["cost"]  # the figure with its interval
        assert row["log"] == answer.UNEXERCISED and row["temp"] == f"not measured — run plan assess-{engine}"
        assert row["backup"] == f"not measured — run plan assess-{engine}"


def test_strength_tests_fill_integrity_leaks_and_the_recommendation(tmp_path: Path) -> None:
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=KINDS)
    _add_strength(tmp_path)
    rows = _rows(tmp_path)
    rc4, cbc, chacha = rows[("sqlite", "rc4")], rows[("sqlite", "aes-256-cbc")], rows[("sqlite", "chacha20-poly1305")]
    assert rc4["advice"].startswith(answer.advice.BROKEN) and "41.0%" in rc4["leaks"]
    assert cbc["advice"].startswith(answer.advice.FORGEABLE) and cbc["integrity"].startswith("forgeable (file)")
    assert chacha["advice"].startswith(answer.advice.RECOMMENDED) and "tag detects" in chacha["integrity"]
    assert "temp/spill not exercised" in chacha["advice"]  # the fake run spilled nothing
    assert "old key after rekey: refused" in chacha["keys"]
    # an encryption the strength run did not reach still says what is missing
    assert rows[("sqlite", "aegis-256")]["integrity"] == "not measured — run plan assess-sqlite"
    marks = answer.integrity_marks(read_run(tmp_path))
    assert marks[("sqlite", "rc4")] == "broken" and marks[("sqlite", "sqlcipher")] == "tag"
    assert marks[("sqlite", "aes-256-cbc")] == "no tag"


def test_the_report_carries_the_table_before_in_full(tmp_path: Path) -> None:
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=KINDS)
    _add_strength(tmp_path)
    build(tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert text.index("**The answer:**") < text.index("**In full:**") < text.index("## Findings")
    table = text[text.index("**The answer:**"):text.index("**In full:**")]
    rc4 = next(line for line in table.splitlines() if line.startswith("| sqlite | rc4 |"))
    assert "broken" in rc4
    html = (tmp_path / "report.html").read_text()
    assert html.index("The answer:") < html.index("In full: every encryption")


def test_the_backup_column_is_the_scanned_backups_scan_against_the_baselines(tmp_path: Path) -> None:
    """The strength workload's `backup` test scans a physical backup: encrypted only where the
    baseline's backup showed the canary; a plaintext backup named; a run without it says what is missing."""
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=KINDS)
    _add_strength(tmp_path)
    store = ResultStore(tmp_path)
    scans = (("none", "plaintext"), ("aes-256-cbc", "encrypted"), ("chacha20-poly1305", "plaintext"))
    for encryption, verdict in scans:
        store.append(Measurement(TrialKey("sqlite", encryption, "strength", 20000.0, 1), "backup", "scan",
                                 {"canary_hits": float(verdict == "plaintext")}, answer=verdict))
    store.sync()
    rows = _rows(tmp_path)
    assert rows[("sqlite", "none")]["backup"] == answer.CONTROL
    assert rows[("sqlite", "aes-256-cbc")]["backup"] == answer.ENCRYPTED
    chacha = rows[("sqlite", "chacha20-poly1305")]
    assert chacha["backup"] == "plaintext (its physical backup)"  # a tag, but its backup in plaintext: not recommended
    assert chacha["advice"] == answer.advice.LEAKS.format(kinds="backup")
    assert rows[("sqlite", "rc4")]["backup"] == "not measured — run plan assess-sqlite"


def test_without_the_baselines_canary_in_its_backup_an_encrypted_backup_proves_nothing(tmp_path: Path) -> None:
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=KINDS)
    store = ResultStore(tmp_path)
    for encryption, verdict in (("none", "inconclusive"), ("aes-256-cbc", "encrypted")):
        store.append(Measurement(TrialKey("sqlite", encryption, "strength", 20000.0, 1), "backup", "scan", {},
                                 answer=verdict))
    store.sync()
    rows = _rows(tmp_path)
    assert rows[("sqlite", "none")]["backup"] == answer.NO_CANARY
    assert rows[("sqlite", "aes-256-cbc")]["backup"] == answer.UNEXERCISED


def test_a_run_without_file_kinds_says_so(tmp_path: Path) -> None:
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=DEMO)
    row = _rows(tmp_path)[("sqlite", "rc4")]
    assert row["data"] == row["log"] == answer.UNRECORDED


def test_plan_for_names_a_built_in_plan_that_measures_the_cell() -> None:
    """The engine's own assess plan first: it fills every column but backup's."""
    for engine in ("duckdb", "sqlite", "mariadb", "postgres"):
        for workload, test in (("tpch", "power"), ("strength", "tamper"), ("strength", "spill")):
            assert answer.plan_for(engine, workload, test) == f"assess-{engine}"
        assert answer.plan_for(engine, "backup") == "backup"
    assert answer.plan_for("nosuch", "tpch") is None


def test_the_cost_names_the_planner_statistics_the_load_left(tmp_path: Path) -> None:
    """A DBA whose database has statistics sees which case the figure is: the load's `indexes`
    record says whether ANALYZE ran, and the cost cell repeats it; a run that did not record it
    says nothing of it."""
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=KINDS)
    store = ResultStore(tmp_path)
    for outcome in read_run(tmp_path).trials:
        if outcome.trial.engine == "sqlite":
            store.append(Measurement(outcome.trial, "load", "indexes", {"elapsed_s": 0.1},
                                     note="no ANALYZE after the load"))
    store.sync()
    rows = _rows(tmp_path)
    assert "no ANALYZE after the load)" in rows[("sqlite", "aes-256-cbc")]["cost"]
    assert "ANALYZE" not in rows[("duckdb", "aes-256-gcm")]["cost"]
