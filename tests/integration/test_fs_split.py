"""End to end on real engines: a lockstep run with none, the fs layer without its cipher
(fs-passthrough: bindfs) and with it (fs-aes-256-gcm: gocryptfs) under PostgreSQL and SQLite
splits each gocryptfs figure into the layer's cost and the cipher's, each with its paired
interval ("Layer and cipher"), and judges the passthrough `plaintext`, as expected of a layer
with no cipher."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebench.cli import main
from tdebench.store import read_run

PLAN = '''name = "fs-split"
repetitions = 2
warmups = 0
order = "lockstep"
seed = 7

[[engines]]
name = "postgres"
encryptions = ["fs-passthrough", "fs-aes-256-gcm"]
memory_mb = 64

[[engines]]
name = "sqlite"
encryptions = ["fs-passthrough", "fs-aes-256-gcm"]

[[workloads]]
name = "tpch"
scale = 0.01
tests = ["power"]
query_timeout_s = 120
'''
ENGINES = ("postgres", "sqlite")
ARMS = ("none", "fs-passthrough", "fs-aes-256-gcm")
CI = r"\\?\[[+-]\d+\.\d%, [+-]\d+\.\d%\\?\]"  # a 95% interval as a table cell, escaped or not


@pytest.fixture(scope="module")
def run_dir(server_tmp_dir: Path) -> Path:
    base = server_tmp_dir  # the postgres user can enter it
    (base / "plan.toml").write_text(PLAN)
    result = CliRunner().invoke(main, ["run", str(base / "plan.toml"), "--out", str(base / "out"), "--quiet",
                                       "--work-dir", str(base)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return base / "out"


def test_every_arm_ran_and_the_passthrough_is_judged_plaintext_as_expected(run_dir: Path) -> None:
    run = read_run(run_dir)
    assert {(t.trial.engine, t.trial.encryption) for t in run.trials} == {(e, a) for e in ENGINES for a in ARMS}
    assert all(t.status == "ok" for t in run.trials), [t.error for t in run.trials if t.status != "ok"]
    assert {t.key_form for t in run.trials if t.trial.encryption == "fs-passthrough"} == {""}  # it takes no key
    rows = list(csv.DictReader((run_dir / "verdicts.csv").open()))
    for row in rows:
        expected = "encrypted" if row["encryption"] == "fs-aes-256-gcm" else "plaintext"
        assert (row["verdict"], row["expected"], row["as_expected"]) == (expected, expected, "true"), row


def test_the_report_splits_gocryptfs_into_layer_and_cipher_with_intervals(run_dir: Path) -> None:
    markdown = (run_dir / "report.md").read_text()
    assert "## Layer and cipher" in markdown
    section = markdown[markdown.index("## Layer and cipher"):]
    section = section[:section.index("\n## ")]
    for engine in ENGINES:
        power = next(line for line in section.splitlines()
                     if line.startswith(f"| {engine} ") and "power geomean" in line)
        cells = [cell.strip() for cell in power.strip("|").split("|")]
        assert cells[3] == "fs-aes-256-gcm"
        assert all(re.fullmatch(CI, cells[i]) for i in (5, 7, 9)), cells  # total, layer, cipher: each with its CI
        assert cells[11] in ("layer", "cipher", "neither (the intervals overlap)") and cells[12] == "2"
    assert re.search(r"the layer alone \(fs-passthrough against none\) is [+-]\d+\.\d% " + r"\\?\[", markdown)
