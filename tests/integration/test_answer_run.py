"""The answer table from real runs (report/sections/answer.py). The built-in plans `assess-sqlite` and
`assess-duckdb`, run through `tdebench run PLAN --engine NAME` and cut to one round (no warm-up,
placebo or adaptive rounds, one pass, SF 0.01, one encryption of each kind the plan holds: what
fills a column is the plan's shape — both caches, TPC-H's power test and the strength tests with
the forced spill and the scanned backup — not its precision or every key length), fill every column
of every row from measurements: RC4 broken, AES-256-CTR
forgeable, AES-256-GCM refusing changes by its tag, the spill's temp files encrypted against the
baseline's plaintext (the positive control), and DuckDB's -plaintemp arms named plaintext.
`tdebench run --engine` runs one engine's rows of a plan."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from click.testing import CliRunner

from tdebench.cli import main
from tdebench.cli.plans import builtin_plans
from tdebench.report.sections.answer import rows
from tdebench.report.data.records import summary_records
from tdebench.store import read_run

PLAN = '''name = "answer"
repetitions = 2
warmups = 0
placebo = false
seed = 5

[[engines]]
name = "duckdb"
encryptions = ["none", "aes-256-gcm", "aes-256-ctr"]

[[engines]]
name = "sqlite"
encryptions = ["none", "aes-256-cbc", "rc4"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]

[[workloads]]
name = "strength"
scale = 2000
repetitions = 1
tests = ["spill", "repeats", "tamper", "forgery", "old-key", "backup"]
'''


KINDS = {  # one encryption of each kind the plan holds: tag, forgeable, broken, fs layer, plaintext spills
    "assess-sqlite": ["none", "aes-256-cbc", "chacha20-poly1305", "rc4", "fs-aes-256-gcm"],
    "assess-duckdb": ["none", "aes-256-gcm", "aes-256-ctr", "aes-256-gcm-plaintemp", "fs-aes-256-gcm"],
}


def _one_round(name: str) -> str:
    """The built-in plan `name` cut to one round and one encryption of each kind (KINDS, each
    checked to be the plan's): what each row's columns need, not its precision (the suite's time)."""
    text = builtin_plans()[name].read_text()
    listed = re.search(r"(?ms)^encryptions = \[(.*?)\]", text)
    assert listed is not None and set(KINDS[name]) <= set(re.findall(r'"([^"]+)"', listed.group(1)))
    text = text[:listed.start()] + f"encryptions = {KINDS[name]!r}".replace("'", '"') + text[listed.end():]
    for pattern, replacement in ((r"(?m)^repetitions = \d+", "repetitions = 1"), (r"(?m)^warmups = \d+", "warmups = 0"),
                                 (r"(?m)^placebo = true", "placebo = false"), (r"(?m)^passes = \d+", "passes = 1"),
                                 (r"(?m)^(target_ci_pct|target_tests|max_minutes) = .*$", ""),
                                 (r"(?m)^scale = (0\.1|1)$", "scale = 0.01")):
        text = re.sub(pattern, replacement, text)
    return text


@pytest.mark.parametrize(("engine", "exit_code"), [
    ("sqlite", 0),
    ("duckdb", 1),  # by design: its -plaintemp arms spill plaintext, and a run with a leak exits 1
])
def test_the_assess_plan_fills_every_column_of_every_row(tmp_path: Path, engine: str, exit_code: int) -> None:
    plan = tmp_path / f"assess-{engine}.toml"
    plan.write_text(_one_round(f"assess-{engine}"))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(out), "--quiet", "--engine", engine],
                                catch_exceptions=False)
    assert result.exit_code == exit_code, result.output
    assert "The answer" in result.output
    run = read_run(out)
    encryptions = {t.trial.encryption for t in run.trials}
    assert {t.trial.workload for t in run.trials} == {"tpch", "strength"}
    found = {r["encryption"]: r for r in rows(run, summary_records(run)) if r["engine"] == engine}
    assert set(found) == encryptions  # a row per encryption the run measured
    assert found["none"]["temp"] == found["none"]["backup"] == "plaintext (control)"  # the positive controls
    for encryption, row in found.items():
        if encryption == "none":
            continue
        for column in ("cost", "data", "log", "temp", "backup", "integrity", "leaks", "keys", "advice"):
            assert "not measured" not in row[column], (encryption, column, row[column])
            assert "not exercised" not in row[column], (encryption, column, row[column])
        assert row["data"] == "encrypted", (encryption, row)
        assert row["temp"] == "encrypted" or encryption.endswith("-plaintemp"), (encryption, row)
        # the engine's backup carries its encryption; a file-system layer's, written outside its mount, does not
        assert row["backup"] == ("plaintext (its physical backup)" if encryption.startswith("fs-") else "encrypted")
        assert row["cost"].count(" MB: ") == 2, row["cost"]  # the cost at each cache size
    if engine == "sqlite":
        assert found["rc4"]["advice"].startswith("broken")
        assert found["aes-256-cbc"]["advice"].startswith("confidentiality only")
        assert "no ANALYZE after the load" in found["aes-256-cbc"]["cost"]
    else:
        assert found["aes-256-ctr"]["advice"].startswith("confidentiality only")
        assert "forgeable" in found["aes-256-ctr"]["integrity"]
        assert found["aes-256-gcm"]["advice"].startswith("recommended")
        assert "tag detects" in found["aes-256-gcm"]["integrity"]
        assert found["aes-256-gcm-plaintemp"]["temp"].startswith("plaintext (")
        assert "no primary keys" in found["aes-256-gcm"]["cost"]  # the plan's keys = "none", named beside the cost
    report = (out / "report.md").read_text()
    table = report[report.index("**The answer:**"):report.index("**In full:**")]
    assert f"| {engine} | aes-256-" in table


def test_run_engine_runs_one_engines_rows_of_a_plan(tmp_path: Path) -> None:
    plan = tmp_path / "answer.toml"
    plan.write_text(PLAN.split("[[workloads]]")[0].replace("repetitions = 2", "repetitions = 1")
                    + '[[workloads]]\nname = "tpch"\nscale = 0.01\ntests = ["power"]\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(plan), "--out", str(out), "--quiet", "--engine", "duckdb"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run = read_run(out)
    assert {t.trial.engine for t in run.trials} == {"duckdb"}
    assert 'only = ["duckdb"]  # tdebench run --engine: the engines of this plan that ran' in (
        out / "plan.toml").read_text().splitlines()  # stored: a resume and the report read the plan as it ran
    wrong = CliRunner().invoke(main, ["run", str(plan), "--out", str(tmp_path / "other"), "--engine", "mysql"])
    assert wrong.exit_code == 2 and "has no such engine; its engines: duckdb, sqlite" in wrong.output
