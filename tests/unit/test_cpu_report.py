"""The CPU and I/O each configuration used, as summary.csv and the Resources section give them."""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

from fakes import DEMO, DEMO_PLAN, write_fake_run
from tdebench.report import build
from tdebench.report.data.units import number, percent
from tdebench.stats import NO_RATIO

OVERHEAD_COLUMNS = ("overhead_pct", "overhead_ci_low", "overhead_ci_high")


def test_no_overhead_in_summary_is_infinite_when_the_baseline_is_zero(tmp_path: Path) -> None:
    """CPU time read in 10 ms ticks made the baseline's short queries 0.0 s and their overheads
    infinite; a zero baseline gives no overhead, with the reason, and every other overhead stays."""
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=dataclasses.replace(DEMO, cpu_tick=0.01))
    build(tmp_path)
    with (tmp_path / "summary.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    compared = [row for row in rows if row["encryption"] != "none"]
    assert not [row for row in compared for key in OVERHEAD_COLUMNS if row[key] and math.isinf(float(row[key]))]
    zero = [row for row in compared if row["metric"] == "cpu_s" and row["overhead_note"]]
    assert zero, "the fake run has CPU cells whose baseline read 0.0 s"
    assert all(row["overhead_note"] == NO_RATIO and row["overhead_pct"] == "" for row in zero)
    baselines = {(row["engine"], row["test"], row["step"]): float(row["median"]) for row in rows
                 if row["encryption"] == "none" and row["metric"] == "cpu_s"}
    assert all(baselines[(row["engine"], row["test"], row["step"])] == 0.0 for row in zero)
    assert all(row["overhead_pct"] and not row["overhead_note"] for row in compared if row["metric"] == "elapsed_s")


def test_resources_give_each_configuration_its_own_cpu_and_its_overhead(tmp_path: Path) -> None:
    """The 1 Hz sampler's CPU % is the whole machine's; each configuration's own CPU time, its
    overhead against none (the very figure summary.csv holds) and a view per engine come first."""
    write_fake_run(tmp_path, DEMO_PLAN, placebo=True, shape=DEMO)
    written = build(tmp_path)
    with (tmp_path / "summary.csv").open(newline="") as fh:
        summary = {(row["engine"], row["encryption"]): row for row in csv.DictReader(fh)
                   if (row["test"], row["step"], row["metric"]) == ("power", "total", "cpu_s")}
    section = (tmp_path / "report.md").read_text().split("## Resources")[1].split("\n## ")[0]
    own = section.split("The resource sampler's readings")[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in own.splitlines()
            if line.startswith(("| duckdb |", "| sqlite |"))]
    assert len(rows) == len(summary) == 13  # 3 + 8 arms (none included) and two placebos, the power test
    for engine, encryption, _, _, test, cpu, _, overhead, *_ in rows:
        row = summary[(engine, encryption)]
        assert test == "power" and cpu == number(float(row["median"]))
        assert overhead == ("–" if encryption == "none" else percent(float(row["overhead_pct"])))
    assert len({cpu for _, encryption, _, _, _, cpu, *_ in rows if encryption != "placebo"}) == 11  # all differ
    assert sorted(path.name for path in written if path.name.startswith("resource-view-")) == [
        "resource-view-duckdb-tpch-sf0.01.png", "resource-view-sqlite-tpch-sf0.01.png"]
