"""An encryption resolved as faster than none (its interval off zero and off the
placebo's) is reported as a real effect, located in the steps where it arises, with what the engine
documents as different in an encrypted database; only an unresolved one is left to noise."""

from __future__ import annotations

from pathlib import Path

from fakes import PLAN, Shape, write_fake_run
from tdebench.engines.duckdb import DuckDBEngine
from tdebench.report.summaries import findings
from tdebench.report.sections import headline
from tdebench.report.data.records import summary_records
from tdebench.store import read_run

FASTER = Shape(settings={"duckdb": {"none": (1.0, 10.0), "aes-256-gcm": (0.85, 10.4)}}, placed=False)


def _records(directory: Path, placebo: bool):
    write_fake_run(directory, plan=PLAN, placebo=placebo, shape=FASTER)
    run = read_run(directory)
    return run, summary_records(run)


def test_a_resolved_faster_than_none_is_located_not_dismissed(tmp_path: Path) -> None:
    run, records = _records(tmp_path, placebo=True)
    located = findings.faster_sentences(run, records)
    power = next(s for s in located if "on the power test" in s)
    assert power.startswith("duckdb aes-256-gcm (tpch sf0.01) is faster than none on the power test, -15.")
    assert "beyond its noise floor" in power and "a real effect of this configuration, not noise" in power
    assert " It arises in q" in power and power.count(" less)") == findings.LOCATED_STEPS
    assert DuckDBEngine.encrypted_differences in power
    first = " ".join(headline.headline(run, records))
    assert "resolved beyond the noise floor (where it arises: the findings)" in first
    assert "only noise" not in first
    text = " ".join(findings.findings(run, records))
    assert "beyond the noise floor, so a real effect" in text and "suspect the baseline" not in text


def test_without_a_placebo_a_faster_than_none_is_not_called_resolved(tmp_path: Path) -> None:
    run, records = _records(tmp_path, placebo=False)
    assert findings.faster_sentences(run, records) == []
    first = " ".join(headline.headline(run, records))
    assert "with no placebo arm to tell it from noise" in first and "resolved" not in first
    assert "suspect the baseline" in " ".join(findings.findings(run, records))
