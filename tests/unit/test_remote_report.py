"""How a report reads a run whose servers were reached by url: trials with nothing to scan
(`not verified (remote)`) are neither failures nor clean verdicts, and the overview says how
such figures were taken."""

from __future__ import annotations

from pathlib import Path

from tdebench.report.summaries.findings import alerts, judged, overview, verdict_summary
from tdebench.report.summaries.tables import failures_table, verdict_summary_table
from tdebench.results import NOT_VERIFIED, RunData, TrialKey, TrialOutcome, Verdict

PLAN = '''name = "remote"
[[engines]]
name = "mariadb"
url = "mariadb://bench@127.0.0.1:3306/target"
password_env = "TDEBENCH_PASSWORD"
encryptions = ["none", "tde"]
[[engines]]
name = "duckdb"
encryptions = ["none"]
'''


def _run(tmp_path: Path) -> RunData:
    run = RunData(directory=tmp_path, plan_text=PLAN, environment={})
    for encryption in ("none", "tde"):
        key = TrialKey("mariadb", encryption, "tpch", 0.01, 1)
        run.trials.append(TrialOutcome(key, "ok", "warm", False, 1.0))
        run.verdicts.append(Verdict(key, NOT_VERIFIED, "plaintext" if encryption == "none" else "encrypted", 0, 0,
                                    None))
    local = TrialKey("duckdb", "none", "tpch", 0.01, 1)
    run.trials.append(TrialOutcome(local, "ok", "warm", False, 1.0))
    run.verdicts.append(Verdict(local, "plaintext", "plaintext", 1, 4096, "database.duckdb@0 (utf-8)"))
    return run


def test_unverified_trials_are_not_judged_and_raise_no_alarm(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert [v.trial.engine for v in judged(run)] == ["duckdb"]
    assert not [message for message in alerts(run) if "verdict" in message]
    assert not [row for row in failures_table(run).rows if row["what"].startswith("verdict")]
    summary = verdict_summary(run)
    assert "2 trials on servers reached by url were not verified (remote): no data_path to scan" in summary
    assert "not judged" not in summary  # they are not failed trials
    rows = {row["engine"] + "/" + row["encryption"]: row["as_expected"] for row in verdict_summary_table(run).rows}
    assert rows == {"mariadb/none": "not verified", "mariadb/tde": "not verified", "duckdb/none": "yes"}


def test_the_overview_says_which_engines_were_reached_by_url_and_how_they_were_timed(tmp_path: Path) -> None:
    paragraph = overview(_run(tmp_path)).paragraph
    assert "mariadb was reached by url (a server tdebench did not start): timings are client-side" in paragraph
    assert "server_* metrics" in paragraph and "duckdb was" not in paragraph
