"""Every derived file of the fake run, checked for content rather than just existence."""

from __future__ import annotations

import csv
import gc
import json
import multiprocessing
import os
import re
import shutil
import signal
from pathlib import Path

import pytest


from fakes import (BASELINE_CPU_MAX, BASELINE_MEM_MAX_MIB, FAILED, LAYERED, MIB, PLAN,  # noqa: E402
                   QUERY_TIMEOUT_S, REPETITIONS, SAMPLES, TIMED_OUT, TIMED_OUT_AT, VIEW_HITS,
                   write_fake_run)

from plots import drawn
from tdebench.report import DERIVED, build  # noqa: E402
from tdebench.report.summaries.findings import (DEFAULT_QUERY_TIMEOUT_S, alerts, at_rest_ok, figure_text,  # noqa: E402
                                                findings, floor_sentence, overhead_sentence, query_timeouts,
                                                timeout_alerts, verdict_summary)
from tdebench.report.summaries.noise import noisy_figures, widest_headlines  # noqa: E402
from tdebench.report.summaries import plots  # noqa: E402
from tdebench.report.summaries.plots import needs_log_scale, resource_plots  # noqa: E402
from tdebench.report.data.records import CellKey, SummaryRecord, summary_records  # noqa: E402
from tdebench.report.summaries.cipher_cost import NO_BYTES, cipher_cost_table  # noqa: E402
from tdebench.report.summaries.tables import overhead_table, query_answer, resources_table, size_table  # noqa: E402
from tdebench.stats import PAIRED, Overhead, overhead, summarize  # noqa: E402
from tdebench.results import Measurement, RunData, Sample, TrialKey, TrialOutcome, Verdict  # noqa: E402
from tdebench.store import read_run  # noqa: E402

SUMMARY_COLUMNS = ["engine", "encryption", "workload", "scale", "test", "step", "metric", "unit", "n",
                   "median", "mean", "stdev", "ci_low", "ci_high", "cv", "outliers", "noisy",
                   "overhead_pct", "overhead_ci_low", "overhead_ci_high", "overhead_method", "p_value",
                   "overhead_note"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """One build shared by the tests: building takes seconds (bootstrap, plots)."""
    directory = tmp_path_factory.mktemp("run")
    write_fake_run(directory)
    return directory, build(directory)


@pytest.fixture(scope="module")
def run_dir(built: tuple[Path, list[Path]]) -> Path:
    return built[0]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def find(rows: list[dict[str, str]], **match: str) -> list[dict[str, str]]:
    return [row for row in rows if all(row[key] == value for key, value in match.items())]


def test_build_writes_every_file_and_rebuilds_identically(built: tuple[Path, list[Path]]) -> None:
    directory, written = built
    names = {path.name for path in written}
    assert {"summary.csv", "queries.csv", "verdicts.csv", "resources.csv", "report.md",
            "report.html"} <= names
    # headline + … + a resource plot and a resource view per engine
    assert sum(path.suffix == ".png" for path in written) == 1 + 6 + 2 + 2
    first = {path: path.read_bytes() for path in written}
    assert build(directory) == written
    assert {path: path.read_bytes() for path in written} == first  # a pure function of the raw data


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_report_without_plots_is_the_same_report_but_its_pictures_and_says_so(
        built: tuple[Path, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """`tdebench report --no-plots` (or TDEBENCH_NO_PLOTS=1, which the integration tests set): every
    CSV byte for byte, report.md line for line but its images and one line under the title that
    says they were left out, no image in report.html, no plots/ written; a plot of an earlier build
    is removed (report.md no longer shows it)."""
    from click.testing import CliRunner

    from tdebench.cli import main
    from tdebench.report.sections.document import PLOTS_LEFT_OUT

    directory, written = built
    copy = tmp_path / "run"
    shutil.copytree(directory, copy)
    args = ["report", str(copy)] + (["--no-plots"] if how == "flag" else [])
    if how == "environment":
        monkeypatch.setenv("TDEBENCH_NO_PLOTS", "1")
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert not (copy / "plots").exists()
    for path in written:
        if path.suffix == ".csv":
            assert (copy / path.name).read_bytes() == path.read_bytes(), path.name
    with_plots = (directory / "report.md").read_text().splitlines()
    without = (copy / "report.md").read_text().splitlines()
    assert without[:4] == with_plots[:2] + [PLOTS_LEFT_OUT, ""]
    pictures = [line for line in with_plots if line.startswith("![")]
    assert len(pictures) == sum(path.suffix == ".png" for path in written)
    assert without[:2] + without[4:] == [
        line for index, line in enumerate(with_plots)
        if not line.startswith("![") and not (index and with_plots[index - 1].startswith("!["))]
    html = (copy / "report.html").read_text()
    assert "data:image/png" not in html and PLOTS_LEFT_OUT in html
    assert "data:image/png" in (directory / "report.html").read_text()


def test_plots_drawn_by_worker_processes_are_those_drawn_here(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """draw_all forks a worker per core (here none while a test runner's threads run, so the test
    says there are none): each figure's PNG comes back byte for byte as drawn in this process."""
    run = read_run(run_dir)
    here, there = (plots.overhead_plots(summary_records(run)) for _ in range(2))
    assert len(here) >= 2
    monkeypatch.setattr(plots.threading, "active_count", lambda: 1)
    monkeypatch.setattr(plots.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(plots, "_draw", _drawn_in_child)
    plots.draw_all(there)
    assert all("png" in figure.__dict__ for figure in there)  # drawn by draw_all, not when asked below
    assert [figure.png for figure in there] == [figure.png for figure in here]
    assert multiprocessing.active_children() == []  # every worker ended


def test_a_build_leaves_nothing_frozen_and_draw_all_keeps_a_callers_freeze(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report build freezes what exists out of the collector's sight while it runs (the run's
    records live as long as it) and unfreezes it after, also after a failed build; draw_all's own
    freeze around its fork does not end the caller's."""
    write_fake_run(tmp_path)
    assert gc.get_freeze_count() == 0
    build(tmp_path)
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr("tdebench.report.draw_all", _fails)
    with pytest.raises(RuntimeError, match="a figure failed"):
        build(tmp_path)
    assert gc.get_freeze_count() == 0
    monkeypatch.undo()
    monkeypatch.setattr(plots.threading, "active_count", lambda: 1)
    monkeypatch.setattr(plots.os, "sched_getaffinity", lambda pid: {0, 1})
    figures = plots.overhead_plots(summary_records(read_run(tmp_path)))
    gc.freeze()
    try:
        plots.draw_all(figures)
        assert gc.get_freeze_count() > 0 and all("png" in figure.__dict__ for figure in figures)
    finally:
        gc.unfreeze()


def _fails(figures: list) -> None:
    raise RuntimeError("a figure failed")


def test_a_worker_ends_on_sigterm_though_the_process_that_forked_it_catches_it(
        run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tdebench run` catches SIGINT and SIGTERM, and a forked worker inherits the handlers: the
    pool ends its workers by SIGTERM after Ctrl-C or a failed figure, holding the lock their next
    task waits on, so a worker that caught it would wait for ever and draw_all with it. Each worker
    sets both back to the default before its first figure."""
    figures = plots.overhead_plots(summary_records(read_run(run_dir)))
    monkeypatch.setattr(plots.threading, "active_count", lambda: 1)
    monkeypatch.setattr(plots.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(plots, "_draw", _signals_as_a_worker_has_them)
    caught = [signal.signal(number, lambda *_: None) for number in (signal.SIGINT, signal.SIGTERM)]
    try:
        plots.draw_all(figures)
    finally:
        for number, handler in zip((signal.SIGINT, signal.SIGTERM), caught):
            signal.signal(number, handler)
    assert {figure.png for figure in figures} == {b"SIGINT default, SIGTERM default"}
    assert multiprocessing.active_children() == []


def _signals_as_a_worker_has_them(index: int) -> bytes:
    return ", ".join(f"{number.name} {'default' if signal.getsignal(number) == signal.SIG_DFL else 'caught'}"
                     for number in (signal.SIGINT, signal.SIGTERM)).encode()


def _drawn_in_child(index: int) -> bytes:
    """plots._draw, failing where it runs in the parent: the PNG must come from a worker."""
    assert os.getpid() != _PARENT, "drawn in the parent"
    return plots._DRAWING[index].draw()


_PARENT = os.getpid()


def test_derived_names_every_file_build_writes_at_the_top(built: tuple[Path, list[Path]]) -> None:
    directory, written = built
    top = {path.relative_to(directory).parts[0] for path in written}
    # a TPC-H run: no lone header of the other workloads' files
    assert top == set(DERIVED) - {"crud.csv", "oltp.csv", "backups.csv", "maintenance.csv", "strength.csv"}
    assert {"summary.csv", "resources.csv", "report.html", "plots"} <= set(DERIVED)
    assert not {"results.jsonl", "plan.toml", "environment.json"} & set(DERIVED)  # raw data stays


def test_summary_csv_columns_and_database_size_overhead(run_dir: Path) -> None:
    columns, rows = read_csv(run_dir / "summary.csv")
    assert columns == SUMMARY_COLUMNS
    size = find(rows, engine="duckdb", encryption="aes-256-gcm", test="load", step="database",
                metric="size_bytes")
    assert len(size) == 1
    assert size[0]["unit"] == "bytes"
    assert float(size[0]["median"]) == pytest.approx(10.5 * MIB)
    assert float(size[0]["overhead_pct"]) == pytest.approx(5.0)
    assert float(size[0]["overhead_ci_low"]) == pytest.approx(5.0)
    baseline = find(rows, engine="duckdb", encryption="none", test="load", step="database")[0]
    assert baseline["overhead_pct"] == baseline["p_value"] == ""


def test_summary_csv_geomean_units_and_exclusions(run_dir: Path) -> None:
    _, rows = read_csv(run_dir / "summary.csv")
    geomeans = find(rows, engine="duckdb", encryption="aes-256-gcm", test="power", step="geomean")
    assert len(geomeans) == 1 and geomeans[0]["unit"] == "s" and geomeans[0]["n"] == "3"
    assert float(geomeans[0]["overhead_pct"]) == pytest.approx(3.0, abs=1.0)
    assert geomeans[0]["overhead_method"] == "paired"  # the plan's order is interleaved
    # the baseline's slow third round widens the paired interval: not significant over 3 rounds
    assert float(geomeans[0]["overhead_ci_low"]) < 0 < float(geomeans[0]["p_value"]) - 0.05
    # the warm-up run (100x slower) never enters statistics
    q1 = find(rows, engine="duckdb", encryption="none", test="power", step="q1", metric="elapsed_s")[0]
    assert q1["n"] == "3" and float(q1["median"]) < 0.1
    # the failed trial is left out: two repetitions remain
    failed = find(rows, engine=FAILED.engine, encryption=FAILED.encryption, test="power", step="q1",
                  metric="elapsed_s")[0]
    assert failed["n"] == "2"
    # throughput queries pool both streams over the repetitions
    assert find(rows, engine="duckdb", encryption="none", test="throughput", step="q1",
                metric="elapsed_s")[0]["n"] == "6"
    # one query of the test is no headline figure: its CV is kept but it is not called noisy
    q9 = find(rows, engine="duckdb", encryption="none", test="power", step="q9", metric="elapsed_s")[0]
    assert q9["noisy"] == "false" and float(q9["cv"]) > 0.05
    assert {row["noisy"] for row in rows} == {"false"}


def test_queries_csv_has_one_column_per_execution(run_dir: Path) -> None:
    columns, rows = read_csv(run_dir / "queries.csv")
    executions = [f"exec_{i}" for i in range(1, REPETITIONS + 1)]
    assert columns == ["engine", "encryption", "workload", "scale", "test", "stream", "query",
                       *executions, "average_ms", "stdev_ms", "answer"]
    q3 = find(rows, engine="duckdb", encryption="none", test="power", query="q3")
    assert len(q3) == 1
    times = [float(q3[0][key]) for key in executions]
    assert float(q3[0]["average_ms"]) == pytest.approx(sum(times) / len(times), abs=1e-3)
    assert 10.0 < times[0] < 100.0  # milliseconds
    assert q3[0]["answer"] == "ok"
    stream = find(rows, engine="duckdb", encryption="none", test="throughput", stream="2", query="q3")
    assert stream[0]["answer"] == "unchecked"
    wrong = find(rows, engine=FAILED.engine, encryption=FAILED.encryption, test="power", query="q5")
    assert wrong[0]["answer"] == "failed"
    assert wrong[0]["exec_3"] != ""  # a failed trial's executions are still shown


def test_verdicts_csv(run_dir: Path) -> None:
    columns, rows = read_csv(run_dir / "verdicts.csv")
    assert columns == ["engine", "encryption", "workload", "scale", "repetition", "verdict", "expected",
                       "as_expected", "files_scanned", "bytes_scanned", "first_hit", "detail",
                       "engine_state", "view_hits", "exposed", "transient", "capture_cpu_s",
                       *(f"{kind}_{what}" for kind in ("data", "log", "temp", "backup", "other")
                         for what in ("files", "transient_files", "bytes", "hits"))]
    baseline = find(rows, engine="duckdb", encryption="none", repetition="1")[0]
    assert (baseline["verdict"], baseline["expected"], baseline["as_expected"]) == ("plaintext", "plaintext", "true")
    assert baseline["first_hit"].startswith("duckdb.db@")
    assert baseline["engine_state"] == baseline["view_hits"] == baseline["exposed"] == ""  # None and "" are blank
    layered = find(rows, engine="duckdb", encryption=LAYERED, repetition="2")[0]
    assert layered["engine_state"] == "2 of 2 tablespaces encrypted, 0 rotating"
    assert layered["view_hits"] == str(VIEW_HITS)
    assert all(row["as_expected"] == "true" for row in rows)
    assert len(rows) == 2 * 3 * REPETITIONS - 1  # the failed trial has no verdict


def test_report_md_sections_in_order_and_failure_on_top(run_dir: Path) -> None:
    text = (run_dir / "report.md").read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings == ["Findings", "Failures", "Overhead", "Against the raw cipher", "Per-query",
                        "Resources", "Database size", "Verdicts", "Raw cipher throughput", "Environment",
                        "Noisy figures", "Machine load"]
    findings = text.split("## Failures")[0]
    assert "FAILED: database disk image is malformed" in findings
    assert "Wrong query answers in trial sqlite/aes-256-cbc" in findings
    assert "Plan “fake”" in text and "3 repetitions" in text and "cache warm" in text
    for image in re.findall(r"\]\((plots/[^)]+\.png)\)", text):
        assert (run_dir / image).is_file()
    assert "CV 28." not in text  # the noisy q9 cell is one query, not a headline figure
    assert "No headline figure is noisy (CV above 5%) or has outliers." in text
    assert "The machine's load was not recorded in this run" in text  # the fake run predates it


def test_findings_read_like_a_summary(run_dir: Path) -> None:
    text = (run_dir / "report.md").read_text()
    findings = text.split("## Findings")[1].split("## Failures")[0]
    bullets = [line[2:] for line in findings.splitlines() if line.startswith("- ")]
    # per engine: a ranking by power-test overhead, then one bullet per encryption
    assert bullets[0].startswith("duckdb, by power-test overhead, cheapest first: "
                                 "aes-256-ctr +1.4%, aes-256-gcm +2.3%")
    gcm = [b for b in bullets if b.startswith("duckdb aes-256-gcm")]
    assert len(gcm) == 1
    # paired: the slow q9 of the baseline's third round (1.6x, in 1 of 22 queries) lowers that
    # round's ratio, where a ratio of medians hid it
    assert gcm[0].startswith("duckdb aes-256-gcm (3 rounds): power test +2.3% \\[")
    assert "throughput +3.3% \\[+1.2, +5.4\\] (p=0.021, significant)" in gcm[0] and "data load +3.0%" in gcm[0]
    # a deterministic size: just the change, no interval, no p, no suspicion
    assert gcm[0].endswith("database size +5.0% (10.00 → 10.50 MiB).")
    assert "(2 rounds)" in next(b for b in bullets if b.startswith("sqlite aes-256-cbc"))
    assert sum(b.startswith(("duckdb", "sqlite")) for b in bullets) == 2 + 4
    # no headline figure is noisy, so no noise advice (the noisy q9 cell is one query of the test)
    assert 'use order = "lockstep"' not in text.split("## Failures")[0]
    # paired rounds have no floor on p: the exact test's warning is for unpaired runs only
    assert not any("smallest possible p" in bullet for bullet in bullets)
    assert ("Every encrypted trial clean; every baseline showed its canaries (positive control); "
            "the decrypted views of the fs layers showed their canaries (positive control).") in text


def test_sequential_runs_are_compared_unpaired(tmp_path: Path) -> None:
    """Without interleaved rounds the repetitions of two configurations ran at different times,
    so they are not paired: medians, a bootstrap CI and Mann–Whitney U, and the warning that
    three against three can never reach p < 0.05."""
    write_fake_run(tmp_path, plan=PLAN.replace('order = "interleaved"', 'order = "sequential"'))
    run = read_run(tmp_path)
    records = summary_records(run)
    geomean = next(r for r in records if (r.cell.engine, r.cell.encryption, r.cell.test, r.cell.step)
                   == ("duckdb", "aes-256-gcm", "power", "geomean"))
    assert geomean.overhead is not None and geomean.overhead.method == "unpaired"
    assert geomean.overhead.pct == pytest.approx(3.0, abs=1.0)
    assert geomean.overhead.p_value == pytest.approx(0.1)
    bullets = findings(run, records)
    assert "With n=3 repetitions the smallest possible p of the exact test is 0.10" in bullets[-1]


def test_raw_cipher_beside_the_overheads_says_where_the_bytes_were_not_recorded(run_dir: Path) -> None:
    """The fake run records no bytes read and written: each row says so rather than setting a size
    against the cipher; it recorded its encryptions, so the note says nothing of where they come from."""
    text = (run_dir / "report.md").read_text()
    section = text.split("## Against the raw cipher")[1].split("## ")[0]
    gcm = next(line for line in section.splitlines() if line.startswith("| duckdb | aes-256-gcm | load"))
    cells = [cell.strip() for cell in gcm.strip("|").split("|")]
    # DuckDB's 256 KiB blocks: of the 4 KiB and 1 MiB figures, 1 MiB is the nearer page size
    assert cells[3:9] == ["aes-256-gcm", "1,048,576", "4,100", "–", "–", cells[8]] and cells[8].startswith("+")
    assert cells[-2:] == ["–", NO_BYTES]
    chacha = next(line for line in section.splitlines() if "chacha20-poly1305" in line)
    assert "1,048,576" in chacha  # no 4 KiB figure: the page size it was measured at is shown
    assert "no size stands in for them" in section and "did not record its encryptions" not in section
    assert "Cipher time = those bytes ÷ the raw throughput" in section


def test_log_scale_only_for_a_wide_span() -> None:
    assert needs_log_scale([1.0, 5.0, 21.0])
    assert not needs_log_scale([1.0, 5.0, 19.0])
    assert not needs_log_scale([float("nan"), 0.0, 3.0])


def test_report_html_is_self_contained_and_escaped(run_dir: Path) -> None:
    html = (run_dir / "report.html").read_text()
    # headline, 2 overhead, 4 per-query, 2 resource views, 2 resources
    assert html.count('<img src="data:image/png;base64,') == 11
    assert "http://" not in html and "https://" not in html
    assert html.count("<script") == 1 and "<script>\n(() => {" in html  # only the inline sorter: no src
    assert "<link" not in html
    assert "&lt;script&gt;" in html  # the environment's HTML shown as text
    assert "database disk image is malformed" in html
    assert html.index("FAILED") < html.index("<h2>Overhead</h2>")
    for heading in ("Findings", "Overhead", "Per-query", "Resources", "Database size", "Verdicts",
                    "Raw cipher throughput", "Environment", "Noisy figures", "Machine load"):
        assert f"<h2>{heading}</h2>" in html
    assert "Fake CPU 9000" in html and "aes, avx2, sha_ni, vaes" in html
    assert "+5.0%" in html and "10.50" in html  # database size in MiB with its overhead
    assert "physical limit" in html and "4,100" in html  # cipher table in MiB/s


def test_a_significant_speed_up_is_called_suspect_not_a_gain() -> None:
    cell = CellKey("duckdb", "aes-256-gcm", "tpch", 1.0, "power", "geomean", "elapsed_s")
    baseline = [1.0 + i * 0.001 for i in range(10)]
    faster = [0.9 + i * 0.001 for i in range(10)]
    record = SummaryRecord(cell, "s", summarize(faster), overhead(baseline, faster))
    sentence = overhead_sentence("power test", record,
                                 SummaryRecord(cell, "s", summarize(baseline), None))
    assert sentence.startswith("duckdb aes-256-gcm power test -10.0% [")
    assert "significant" in sentence and "suspect the baseline" in sentence and "n=10" in sentence


def test_a_deterministic_figure_states_the_difference_only() -> None:
    cell = CellKey("duckdb", "aes-256-gcm", "tpch", 1.0, "load", "database", "size_bytes")
    baseline, smaller = [10.0 * MIB] * 3, [9.8 * MIB] * 3
    record = SummaryRecord(cell, "bytes", summarize(smaller), overhead(baseline, smaller))
    text = figure_text("database size", record, SummaryRecord(cell, "bytes", summarize(baseline), None))
    assert text == "database size -2.0% (10.00 → 9.80 MiB)"
    # zero spread on a timing is deterministic too: no interval, no p, no suspicion
    timing = CellKey("duckdb", "aes-256-gcm", "tpch", 1.0, "power", "geomean", "elapsed_s")
    record = SummaryRecord(timing, "s", summarize([0.9] * 3), overhead([1.0] * 3, [0.9] * 3))
    text = figure_text("power test", record, SummaryRecord(timing, "s", summarize([1.0] * 3), None))
    assert text == "power test -10.0% (1,000 → 900 ms)"


RESOURCE_COLUMNS = ["engine", "encryption", "workload", "scale", "trials", "cpu_pct_mean", "cpu_pct_max",
                    "mem_bytes_max", "mem_pct_max", "disk_busy_pct_mean", "disk_read_bytes",
                    "disk_write_bytes", "samples"]


def test_resources_csv_summarizes_every_sampled_configuration(run_dir: Path) -> None:
    columns, rows = read_csv(run_dir / "resources.csv")
    assert columns == RESOURCE_COLUMNS
    assert len(rows) == 6  # every configuration has sampled trials
    assert [row["encryption"] for row in rows[:3]] == ["none", "aes-256-ctr", "aes-256-gcm"]  # baseline first
    baseline = find(rows, engine="duckdb", encryption="none")[0]
    assert baseline["trials"] == "2" and baseline["samples"] == str(2 * SAMPLES)
    assert float(baseline["cpu_pct_max"]) == pytest.approx(BASELINE_CPU_MAX)
    assert float(baseline["mem_bytes_max"]) == pytest.approx(BASELINE_MEM_MAX_MIB * MIB)  # raw bytes
    assert float(baseline["mem_pct_max"]) == pytest.approx(BASELINE_MEM_MAX_MIB / (16 * 1024) * 100)
    # 3 loading seconds at 4 MiB read, 8 MiB written, 60% busy; then 0.5, 0.25 MiB and 3%
    per_trial_read = (3 * 4.0 + (SAMPLES - 3) * 0.5) * MIB
    assert float(baseline["disk_read_bytes"]) == pytest.approx(2 * per_trial_read)  # totals over trials
    assert float(baseline["disk_write_bytes"]) == pytest.approx(2 * (3 * 8.0 + (SAMPLES - 3) * 0.25) * MIB)
    assert float(baseline["disk_busy_pct_mean"]) == pytest.approx((3 * 60.0 + (SAMPLES - 3) * 3.0) / SAMPLES)
    assert find(rows, engine="sqlite", encryption="none")[0]["samples"] == str(SAMPLES)


def test_resources_section_has_its_table_and_one_plot_per_engine(run_dir: Path) -> None:
    text = (run_dir / "report.md").read_text()
    section = text.split("## Resources")[1].split("## ")[0]
    assert "about every 1 s" in section
    sampled = section.split("The resource sampler's readings")[1]  # after each configuration's own CPU and I/O
    duckdb = next(line for line in sampled.splitlines() if line.startswith("| duckdb | none"))
    cells = [cell.strip() for cell in duckdb.strip("|").split("|")]
    assert cells[4:] == ["2", "72.5", "90.0", "261", "1.6", "17.2", "33.00", "52.50", "24"]  # MiB shown
    plots = re.findall(r"\]\((plots/resources-[^)]+\.png)\)", section)
    assert plots == ["plots/resources-duckdb-tpch-sf0.01.png", "plots/resources-sqlite-tpch-sf0.01.png"]
    for plot in plots:
        assert drawn(run_dir / plot)
    html = (run_dir / "report.html").read_text()
    assert html.index("<h2>Resources</h2>") < html.index("<h2>Database size</h2>")
    assert "memory max (MiB)" in html


def test_a_run_without_samples_says_so_in_one_line(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    write_fake_run(directory)
    results = directory / "results.jsonl"
    results.write_text("".join(line for line in results.read_text().splitlines(keepends=True)
                               if '"kind": "sample"' not in line))
    written = build(directory)
    assert not any(path.name.startswith("resources-") for path in written)
    text = (directory / "report.md").read_text()
    section = text.split("## Resources")[1].split("## ")[0]
    # each configuration's CPU time is measured per step, without the sampler
    assert "\n\nNo resource samples were recorded in this run.\n\n" in section
    assert "| duckdb | none | tpch | 0.01 | power |" in section
    html = (directory / "report.html").read_text()
    assert '<p class="note">No resource samples were recorded in this run.</p>' in html
    columns, rows = read_csv(directory / "resources.csv")
    assert columns == RESOURCE_COLUMNS and rows == []


def test_a_timeout_is_its_own_answer_and_alert(run_dir: Path) -> None:
    _, rows = read_csv(run_dir / "queries.csv")
    timed_out = find(rows, engine=TIMED_OUT.engine, encryption=TIMED_OUT.encryption, test="power",
                     query=TIMED_OUT_AT)[0]
    assert timed_out["answer"] == "timeout"
    assert float(timed_out[f"exec_{TIMED_OUT.repetition}"]) >= QUERY_TIMEOUT_S * 1000  # a lower bound, shown
    findings = (run_dir / "report.md").read_text().split("## Failures")[0]
    assert (f"{TIMED_OUT_AT} hit the {QUERY_TIMEOUT_S:g} s timeout on sqlite chacha20-poly1305 "
            "(power test, 1 of 3 executions)") in findings
    # listed apart from wrong answers: the timed-out trial has no "wrong query answers" alert
    assert f"Wrong query answers in trial {TIMED_OUT.id}" not in findings
    failures = (run_dir / "report.md").read_text().split("## Failures")[1].split("## ")[0]
    assert f"| {TIMED_OUT.id} | query timeout | power {TIMED_OUT_AT} stopped after 60.01 s |" in failures


def test_a_trial_with_a_timeout_stays_out_of_the_statistics(run_dir: Path) -> None:
    _, rows = read_csv(run_dir / "summary.csv")
    for step in ("q1", TIMED_OUT_AT, "geomean"):
        cell = find(rows, engine=TIMED_OUT.engine, encryption=TIMED_OUT.encryption, test="power",
                    step=step, metric="elapsed_s")[0]
        assert cell["n"] == "2", step  # repetitions 1 and 2 only
        assert float(cell["median"]) < 1.0  # the 60 s lower bound never enters


def test_answer_precedence_failed_timeout_unchecked_ok() -> None:
    assert query_answer(["ok", "timeout", "failed", "unchecked"]) == "failed"
    assert query_answer(["ok", "unchecked", "timeout"]) == "timeout"
    assert query_answer(["ok", "unchecked"]) == "unchecked"
    assert query_answer(["ok", None]) == "unchecked"
    assert query_answer([]) == "unchecked"
    assert query_answer(["ok", "ok"]) == "ok"


def test_timeout_comes_from_the_plan_or_its_default(tmp_path: Path) -> None:
    from tdebench.plan import WorkloadSpec

    assert WorkloadSpec("tpch", (1.0,), ("power",), 1).query_timeout_s == DEFAULT_QUERY_TIMEOUT_S
    plan = 'name = "x"\n[[workloads]]\nname = "tpch"\nquery_timeout_s = 90\n[[workloads]]\nname = "other"\n'
    run = RunData(tmp_path, plan, {})
    assert query_timeouts(run)["tpch"] == 90.0
    assert query_timeouts(run)["other"] == query_timeouts(run)["unknown"] == DEFAULT_QUERY_TIMEOUT_S
    assert query_timeouts(RunData(tmp_path, "not toml [", {}))["tpch"] == DEFAULT_QUERY_TIMEOUT_S
    # two scales: the alert names which one; warm-ups are not counted
    def timing(scale: float, repetition: int, answer: str, warmup: bool = False) -> Measurement:
        trial = TrialKey("postgres", "fs-aes-256-gcm", "tpch", scale, repetition)
        return Measurement(trial, "power", "q21", {"elapsed_s": 90.0}, stream=0, warmup=warmup, answer=answer)

    run.measurements = [timing(1.0, 1, "timeout"), timing(1.0, 2, "timeout"), timing(1.0, 3, "ok"),
                        timing(1.0, 1, "timeout", warmup=True), timing(0.1, 1, "ok")]
    assert timeout_alerts(run) == ["q21 hit the 90 s timeout on postgres fs-aes-256-gcm tpch sf1 "
                                   "(power test, 2 of 3 executions); a trial with a timeout failed and "
                                   "is left out of the statistics."]


def test_resource_plot_falls_back_to_the_lowest_sampled_repetition() -> None:
    trial = TrialKey("mariadb", "aes-256-cbc", "tpch", 1.0, 2)
    samples = [Sample(trial, t, 50.0, 100 * MIB, 1.0, 0.0, 0.0, 5.0) for t in (1.0, 2.0)]
    figures = resource_plots(samples)
    assert [figure.name for figure in figures] == ["resources-mariadb-tpch-sf1.png"]
    assert figures[0].png.startswith(b"\x89PNG")


def test_scales_read_in_their_workloads_words() -> None:
    from tdebench.report.data.records import scale_label, scale_text

    assert [scale_text(s) for s in (0.01, 1.0, 10.0, 1_000_000.0)] == ["0.01", "1", "10", "1,000,000"]
    assert scale_label("tpch", 0.1) == "sf0.1" and scale_label("crud", 1e6) == "1,000,000 rows"
    assert scale_label("oltp", 2.0) == "W=2" and scale_label("gone", 1.0) == "sf1"  # unknown: as TPC-H


def test_a_placebo_states_the_noise_floor_and_what_lies_below_it(tmp_path: Path) -> None:
    write_fake_run(tmp_path, plan=PLAN.replace('cache = "warm"', 'cache = "warm"\nplacebo = true'), placebo=True)
    build(tmp_path)
    bullets = [line[2:] for line in (tmp_path / "report.md").read_text().splitlines() if line.startswith("- ")]
    floor = next(b for b in bullets if b.startswith("duckdb noise floor"))
    assert floor.startswith("duckdb noise floor (placebo: none against none, 3 rounds): power test ")
    assert "resolution ±" in floor and "80% power for effects of" in floor
    gcm = next(b for b in bullets if b.startswith("duckdb aes-256-gcm"))
    # +3.0% [+2.6, +3.4] on the load is significant against none, but the placebo reached 3.3%
    assert "data load +3.0% \\[+2.6, +3.4\\] (below this run's resolution (±3.3%))" in gcm
    assert not any(b.startswith("duckdb placebo") for b in bullets)  # not an encryption to rank
    assert "placebo" not in next(b for b in bullets if b.startswith("duckdb, by power-test overhead"))
    _, rows = read_csv(tmp_path / "summary.csv")
    placebo = find(rows, engine="sqlite", encryption="placebo", test="power", step="geomean")[0]
    assert abs(float(placebo["overhead_pct"])) < 0.5 and placebo["overhead_method"] == "paired"
    run = read_run(tmp_path)
    table = overhead_table(summary_records(run))
    readings = {(row["engine"], row["encryption"], row["figure"]): row["reading"] for row in table.rows}
    assert readings[("sqlite", "placebo", "power geomean")] == "noise floor"
    assert readings[("duckdb", "aes-256-gcm", "data load elapsed")] == "below resolution (±3.3%)"
    assert readings[("sqlite", "aes-256-cbc", "power geomean")] == "cost"
    assert readings[("duckdb", "aes-256-gcm", "power geomean")] == "no significant difference"
    assert readings[("duckdb", "aes-256-gcm", "database size")] == "exact"
    assert not any(row["encryption"] == "placebo" for row in cipher_cost_table(run, summary_records(run)).rows)


def test_a_size_that_varies_between_trials_is_measured_with_its_interval_not_called_exact(tmp_path: Path) -> None:
    """As MariaDB's database after a load in parts: 64 MiB more in some trials of every arm (a
    tablespace's extension), never in the same round for two arms. The medians' difference is
    not a cost; the size gets a paired interval, stays out of the noise advice (more rounds or a
    quiet machine would not change it) and of what adaptive rounds wait on."""
    write_fake_run(tmp_path, plan=PLAN.replace('cache = "warm"', 'cache = "warm"\nplacebo = true'), placebo=True)
    extended = {"none": 1, "aes-256-cbc": 2, "placebo": 3}  # the round in which each arm's file grew
    results = tmp_path / "results.jsonl"
    lines = []
    for line in results.read_text().splitlines():
        record = json.loads(line)
        trial = record.get("trial", {})
        if (record.get("kind") == "measurement" and record.get("step") == "database" and trial["engine"] == "sqlite"
                and extended.get(trial["encryption"]) == trial["repetition"]):
            record["metrics"]["size_bytes"] += 64 * MIB
        lines.append(json.dumps(record))
    results.write_text("\n".join(lines) + "\n")
    run = read_run(tmp_path)
    records = summary_records(run)
    rows = {(row["engine"], row["encryption"], row["figure"]): row for row in overhead_table(records).rows}
    cbc = rows[("sqlite", "aes-256-cbc", "database size")]
    assert cbc["ci"] != "exact" and cbc["ci"].startswith("[") and cbc["p"] is not None
    assert cbc["reading"] not in ("cost", "exact")
    assert rows[("duckdb", "aes-256-gcm", "database size")]["ci"] == "exact"  # the same in every trial
    sizes = {(row["engine"], row["encryption"]): row for row in size_table(records).rows}
    assert sizes[("sqlite", "none")]["cv"] > 0.5 and sizes[("duckdb", "none")]["cv"] == 0
    assert sizes[("sqlite", "aes-256-cbc")]["ci"].startswith("[") and sizes[("duckdb", "aes-256-gcm")]["ci"] == "exact"
    # sqlite aes-256-cbc's +6.3% is no longer a change it can tell: the largest is duckdb's exact one
    assert size_table(records).summary.endswith("; the largest change: duckdb aes-256-gcm +5.0%")
    assert not any("database size" in figure.label for figure in noisy_figures(records))
    assert all("database size" not in label for label, _ in widest_headlines(run, records).values())
    build(tmp_path)
    bullets = [line[2:] for line in (tmp_path / "report.md").read_text().splitlines() if line.startswith("- ")]
    assert "database size" not in next(b for b in bullets if b.startswith("sqlite noise floor"))  # no resolution
    assert re.search(r"database size [+-]\d+\.\d% \\\[", next(b for b in bullets if b.startswith("sqlite aes-256-cbc")))


def _verdict(trial: TrialKey, verdict: str, expected: str = "encrypted") -> Verdict:
    return Verdict(trial, verdict, expected, 3, 3000, "db@0 (utf-8)" if verdict == "plaintext" else None)


def test_a_failed_trials_inconclusive_scan_is_its_failure_not_a_second_alert() -> None:
    """Its failure explains the scan; a leak found in a failed trial's files still counts."""
    ok, broken, leaked = (TrialKey("sqlite", "aes-256-cbc", "tpch", 0.01, r) for r in (1, 2, 3))
    run = RunData(Path("."), PLAN, {},
                  verdicts=[_verdict(ok, "encrypted"), _verdict(broken, "inconclusive")],
                  trials=[TrialOutcome(ok, "ok", "warm", False, 1.0),
                          TrialOutcome(broken, "failed", "warm", False, 1.0, error="disk image is malformed")])
    messages = alerts(run)
    assert messages == [f"Trial {broken.id} FAILED: disk image is malformed"]
    assert at_rest_ok(run)
    assert verdict_summary(run).endswith("(1 failed trial not judged).")
    run.verdicts.append(_verdict(leaked, "plaintext"))
    run.trials.append(TrialOutcome(leaked, "failed", "warm", False, 1.0, error="lost"))
    assert f"Trial {leaked.id}: at-rest verdict 'plaintext', expected 'encrypted' (first canary at db@0 (utf-8))" \
        in alerts(run)
    assert not at_rest_ok(run) and "1 of 2 encrypted trials NOT clean" in verdict_summary(run)


def test_a_cold_trial_whose_cache_was_not_emptied_is_an_alert_saying_why() -> None:
    files, whole = (TrialKey("sqlite", "none", "tpch", 0.01, r) for r in (1, 2))
    run = RunData(Path("."), PLAN, {}, trials=[TrialOutcome(files, "ok", "cold", False, 1.0, evicted="files")])
    assert alerts(run) == ["1 cold-cache trial(s) could not empty the OS page cache: a process still held the "
                           "database's pages, or a file could not be opened. Their timings are warmer than asked."]
    run.trials.append(TrialOutcome(whole, "ok", "cold", False, 1.0, evicted="os"))
    assert alerts(run) == ["2 cold-cache trial(s) could not empty the OS page cache; 1 of them were to drop the "
                           "whole cache (evict = \"os\"), which needs root. Their timings are warmer than asked."]
    run.trials[:] = [TrialOutcome(files, "ok", "cold", True, 1.0, evicted="files")]
    assert alerts(run) == []


def test_a_lockstep_runs_resources_say_they_are_the_groups(tmp_path: Path) -> None:
    """Side by side, the machine's CPU and an embedded engine's memory are one group's: the
    resources table and plots say so in lockstep runs only."""
    write_fake_run(tmp_path, plan=PLAN.replace('order = "interleaved"', 'order = "lockstep"'))
    run = read_run(tmp_path)
    assert "ran side by side, step by step" in (resources_table(run).note or "")
    titles = [figure.title for figure in resource_plots(run.samples, side_by_side=True)]
    assert titles and all("(lockstep: the encryptions ran side by side" in title for title in titles)
    interleaved = tmp_path / "interleaved"
    interleaved.mkdir()
    write_fake_run(interleaved)
    assert "side by side" not in (resources_table(read_run(interleaved)).note or "")
    built = build(tmp_path)
    assert "ran side by side, step by step" in (tmp_path / "report.md").read_text() and built


def test_a_build_cut_short_by_a_full_disk_leaves_no_file_the_manifest_does_not_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each derived file is in the manifest before it is written, so `run --force` can remove
    a half-written one; nothing else of the directory is touched."""
    import errno

    from tdebench.report.writers import csvfiles
    from tdebench.store import OutputError, manifest

    write_fake_run(tmp_path)
    real, calls = csvfiles.write, []

    def full_disk(table, path):
        calls.append(path)
        if len(calls) == 2:
            path.write_bytes(b"engine,encr")  # torn, as a full disk leaves it
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(table, path)

    monkeypatch.setattr(csvfiles, "write", full_disk)
    with pytest.raises(OutputError, match="no space left"):
        build(tmp_path)
    listed = set(manifest(tmp_path) or ())
    present = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert "queries.csv" in present and present <= listed, present - listed


def test_a_figure_measured_once_has_no_p_value() -> None:
    """One measurement a side: no interval, so no test of it either (not "(p=–)")."""
    timing = CellKey("sqlite", "aes-256-cbc", "backup", 0.01, "backup", "full", "elapsed_s")
    record = SummaryRecord(timing, "s", summarize([1.233]), overhead([1.0], [1.233]))
    baseline = SummaryRecord(timing, "s", summarize([1.0]), None)
    assert figure_text("full backup", record, baseline) == (
        "full backup +23.3% (no interval: one measurement) (n=1)")
    assert figure_text("full backup", record, baseline, with_n=False) == (
        "full backup +23.3% (no interval: one measurement)")


def test_a_placebo_measured_once_has_no_resolution() -> None:
    """One round (the backup plan's): the floor's sentence says so, not "resolution ±nan%", "1 rounds"."""
    load = CellKey("duckdb", "placebo", "backup", 0.01, "load", "total", "elapsed_s")
    nan = float("nan")
    record = SummaryRecord(load, "s", summarize([0.868]), Overhead(-13.2, nan, nan, nan, 1, 1, PAIRED))
    baseline = SummaryRecord(load, "s", summarize([1.0]), None)
    assert floor_sentence("duckdb", [("data load", record, baseline)]) == (
        "duckdb noise floor (placebo: none against none, 1 round): data load -13.2% (no interval: one "
        "measurement), no resolution: measured once. An encryption whose interval overlaps it is below this "
        "run's resolution.")
