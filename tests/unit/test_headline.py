"""The report's opening lines (report/sections/headline.py): each encryption's cost in plain words,
grouped as a DBA decides, first under the title of report.md and report.html."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from fakes import write_fake_run
from tdebench.report import build
from tdebench.report.sections.headline import _floor_text, _grouped, _short, headline
from tdebench.report.data.records import CellKey, summary_records
from tdebench.stats import PAIRED, Overhead
from tdebench.store import read_run


def record(encryption: str, pct: float, low: float, high: float, p: float, rounds: int = 5) -> SimpleNamespace:
    """What the grouping reads of a summary record: its cell (the encryption, and the key of its split
    into layer and cipher, if any) and overhead."""
    return SimpleNamespace(cell=CellKey("sqlite", encryption, "tpch", 0.01, "power", "geomean", "elapsed_s"),
                           overhead=Overhead(pct, low, high, p, rounds, rounds, PAIRED))


def test_encryptions_are_grouped_by_what_they_cost() -> None:
    floor = record("placebo", 0.2, -2.0, 2.0, 0.8)
    groups = _grouped([record("slowest", 150.0, 140.0, 160.0, 1e-6), record("cheap", 1.0, -1.5, 3.5, 0.4),
                       record("paid", 5.0, 3.0, 7.0, 0.001), record("in-floor", 3.0, 1.0, 5.0, 0.01),
                       record("quicker", -8.0, -10.0, -6.0, 0.001)], floor)
    assert groups == [
        "no measurable cost for cheap +1.0% [-1.5, +3.5]",
        "inside the noise floor, so not resolved as a cost: in-floor +3.0% [+1.0, +5.0]",  # overlaps the floor
        "costs +5.0%: paid +5.0% [+3.0, +7.0]",
        "more than doubles the time (avoid where speed matters): slowest +150.0% [+140.0, +160.0]",
        "faster than no encryption, resolved beyond the noise floor (where it arises: the findings): quicker -8.0% "
        "[-10.0, -6.0]",
    ]
    # without a placebo nothing measures the noise floor: a lower figure is not called resolved
    assert _grouped([record("quicker", -8.0, -10.0, -6.0, 0.001)], None) == [
        "faster than no encryption, with no placebo arm to tell it from noise: quicker -8.0% [-10.0, -6.0]"]
    # where the data does not fit the engine's cache, the advice says so
    assert _grouped([record("slowest", 150.0, 140.0, 160.0, 1e-6)], floor, spills=True) == [
        "more than doubles the time (avoid where the data does not fit the engine's cache, as here): slowest "
        "+150.0% [+140.0, +160.0]"]
    assert _grouped([record("a", 4.0, 2.0, 6.0, 0.01), record("b", 9.0, 7.0, 11.0, 0.01)], None) == [
        "costs +4.0% to +9.0%: a +4.0% [+2.0, +6.0], b +9.0% [+7.0, +11.0]"]
    # one round has no interval: its figure is neither a cost nor "no measurable cost"
    assert _grouped([record("single", 23.3, 23.3, 23.3, float("nan"), rounds=1)], None) == [
        "measured once, so no interval and no conclusion: single +23.3%"]


def test_a_placebo_measured_once_is_no_floor_and_a_single_figure_says_so() -> None:
    """One repetition (the backup plan's): neither "±nan%" nor "(noise)", which no figure measured."""
    nan = float("nan")
    once = record("placebo", 0.4, nan, nan, nan, rounds=1)
    assert _floor_text(once, "no placebo") == "no noise floor (the placebo measured once)"
    assert _floor_text(None, "no placebo") == "no placebo"
    assert _floor_text(record("placebo", 0.2, -2.0, 1.5, 0.8), "no placebo") == "noise floor ±2.0%"
    assert _short(record("single", 23.3, nan, nan, nan, rounds=1), once, {}) == "single +23.3% (measured once)"
    assert _short(record("cheap", 1.0, -1.5, 3.5, 0.4), None, {}) == "cheap +1.0% (noise)"


def test_one_sentence_per_engine_with_its_noise_floor_and_the_at_rest_line(tmp_path: Path) -> None:
    write_fake_run(tmp_path, placebo=True)
    run = read_run(tmp_path)
    sentences = headline(run, summary_records(run))
    duckdb, sqlite, at_rest = sentences[:3]
    assert duckdb.startswith("duckdb · tpch sf0.01 · ") and "noise floor ±" in duckdb
    assert sqlite.startswith("sqlite · tpch sf0.01 · ") and "noise floor ±" in sqlite
    for sentence, encryptions in ((duckdb, ("aes-256-gcm", "aes-256-ctr")),
                                  (sqlite, ("aes-256-cbc", "chacha20-poly1305"))):
        for encryption in encryptions:  # every encryption once, none and the placebo never
            assert len(re.findall(rf"\b{encryption} [+-]\d", sentence)) == 1, sentence
        assert "placebo" not in sentence and " none " not in sentence
    expected = sum(v.as_expected for v in run.verdicts)
    assert at_rest.startswith(f"At rest: {expected}/{len(run.verdicts)} verdicts as expected.")


def test_without_a_placebo_the_sentence_says_there_is_no_noise_floor(tmp_path: Path) -> None:
    write_fake_run(tmp_path)
    run = read_run(tmp_path)
    assert all("no placebo arm, so no measured noise floor" in s for s in headline(run, summary_records(run))[:2])


def test_the_headline_comes_first_under_the_title(tmp_path: Path) -> None:
    """Under the title: the headline picture, then "In one minute", then everything else."""
    write_fake_run(tmp_path, placebo=True)
    build(tmp_path)
    markdown = (tmp_path / "report.md").read_text().splitlines()
    assert markdown[0].startswith("# ") and markdown[2].startswith("![What each encryption costs")
    assert markdown[4] == "**In one minute:**" and markdown[6].startswith("- duckdb")
    html = (tmp_path / "report.html").read_text()
    body = html[html.index("<body>"):]
    assert body.index("</h1>") < body.index('class="headline-picture"') < body.index('class="headline"') \
        < body.index("<h2")


def test_a_workload_with_timed_figures_of_its_own_leads_with_them_not_its_load(tmp_path: Path) -> None:
    """A backup plan is read for its backups: its sentence names the best-resolved backup or
    restore figure, even where the TPC-H load under it is better resolved."""
    from tdebench.results import Measurement, TrialKey, TrialOutcome
    from tdebench.store import ResultStore

    store = ResultStore(tmp_path)
    store.start('name = "b"\nrepetitions = 3\n\n[[workloads]]\nname = "backup"\nscale = 0.01\n', {})
    for repetition in (1, 2, 3):
        for encryption in ("none", "aes-256-gcm"):
            trial = TrialKey("duckdb", encryption, "backup", 0.01, repetition)
            encrypted = encryption != "none"
            slower = 1.3 * (1 + repetition / 100) if encrypted else 1.0  # +31% to +34%, a tight interval
            noisy = 1 + (4 - repetition if encrypted else repetition) / 5  # ratios 2.0, 1.0, 0.5: wide
            store.append(Measurement(trial, "load", "total", {"elapsed_s": 2.0}))  # ratio exactly 1: the tightest
            store.append(Measurement(trial, "full", "backup", {"elapsed_s": 0.4 * slower}))
            store.append(Measurement(trial, "full", "restore", {"elapsed_s": 0.5 * noisy}))
            store.append(TrialOutcome(trial, "ok", "warm", False, 9.0))
    run = read_run(tmp_path)
    (sentence, *_) = headline(run, summary_records(run))
    assert sentence.startswith("duckdb · backup sf0.01 · full backup (3 rounds"), sentence
    assert re.search(r"costs \+3[1-4]\.\d%: aes-256-gcm \+3[1-4]\.\d% \[\+\d", sentence), sentence


def test_every_engine_of_a_run_leads_with_the_same_figure_of_its_workload(tmp_path: Path) -> None:
    """Like with like: DuckDB's and SQLite's backups both resolve, only SQLite's restore does (and
    more narrowly than its backup); both engines' lines read the backup, not SQLite its restore."""
    from tdebench.report.sections.headline import chosen_figures
    from tdebench.results import Measurement, TrialKey, TrialOutcome
    from tdebench.store import ResultStore

    store = ResultStore(tmp_path)
    store.start('name = "b"\nrepetitions = 3\n\n[[workloads]]\nname = "backup"\nscale = 0.01\n', {})
    for repetition in (1, 2, 3):
        for engine in ("duckdb", "sqlite"):
            for encryption in ("none", "aes-256-cbc" if engine == "sqlite" else "aes-256-gcm"):
                trial = TrialKey(engine, encryption, "backup", 0.01, repetition)
                encrypted = encryption != "none"
                spread = 1 / 100 if engine == "duckdb" else 4 / 100  # sqlite's backup: resolved, wider
                backup = 1.3 * (1 + repetition * spread) if encrypted else 1.0
                tight = 1.2 * (1 + repetition / 1000) if encrypted else 1.0  # sqlite's restore: the narrowest
                noisy = 1 + (4 - repetition if encrypted else repetition) / 5  # duckdb's: ratios 2.0, 1.0, 0.5
                store.append(Measurement(trial, "load", "total", {"elapsed_s": 2.0}))
                store.append(Measurement(trial, "full", "backup", {"elapsed_s": 0.4 * backup}))
                store.append(Measurement(trial, "full", "restore",
                                         {"elapsed_s": 0.5 * (tight if engine == "sqlite" else noisy)}))
                store.append(TrialOutcome(trial, "ok", "warm", False, 9.0))
    run = read_run(tmp_path)
    records = summary_records(run)
    read = {config[0]: (figure.test, figure.steps) for config, figure, _, _ in chosen_figures(records)}
    assert read == {"duckdb": ("full", ("backup",)), "sqlite": ("full", ("backup",))}, read
    sentences = headline(run, records)
    assert [s.split(" (")[0] for s in sentences[:2]] == ["duckdb · backup sf0.01 · full backup",
                                                         "sqlite · backup sf0.01 · full backup"], sentences


def test_a_figure_with_a_resolved_cost_leads_over_a_narrower_one_with_none(tmp_path: Path) -> None:
    """As in the io-bound example: SQLite's load within a few percent of none (the narrowest
    interval, no cost) and its power test +20% beyond the placebo's floor: the sentence, the
    line in one minute and the picture read the power test."""
    from tdebench.report.sections.headline import chosen_figures, summary_lines
    from tdebench.results import Measurement, TrialKey, TrialOutcome
    from tdebench.store import ResultStore

    store = ResultStore(tmp_path)
    store.start('name = "io"\nrepetitions = 4\nplacebo = true\n\n[[workloads]]\nname = "tpch"\nscale = 0.1\n', {})
    for repetition in (1, 2, 3, 4):
        wobble = 1 + (-1) ** repetition * 0.02  # the load: +-2% round to round, the same for every arm
        for encryption in ("none", "placebo", "aes-256-cbc"):
            trial = TrialKey("sqlite", encryption, "tpch", 0.1, repetition)
            slower = 1.2 * (1 + repetition / 200) if encryption == "aes-256-cbc" else 1.0
            noisy = 1 + (repetition % 2 * 0.08 if encryption == "none" else 0.0)  # none's power test: +-4%
            load = 10.0 * (wobble if encryption == "none" else 1.0)
            store.append(Measurement(trial, "load", "total", {"elapsed_s": load}))
            for query in range(1, 23):
                store.append(Measurement(trial, "power", f"q{query}", {"elapsed_s": 0.1 * query * slower * noisy}))
            store.append(TrialOutcome(trial, "ok", "warm", False, 9.0))
    run = read_run(tmp_path)
    records = summary_records(run)
    ((_, figure, chosen, floor),) = chosen_figures(records)
    assert figure.label == "power geomean" and [r.cell.encryption for r in chosen] == ["aes-256-cbc"]
    (line, *_) = summary_lines(run, records)
    assert "power test: aes-256-cbc +" in line and "(noise)" not in line, line


def test_a_resolved_power_test_leads_over_a_narrower_resolved_load(tmp_path: Path) -> None:
    """As in the io-bound example of 2026-12-02: SQLite's load +9.5% with a narrow interval and
    its power test +33%, both resolved: the headline reads the power test, what the queries cost,
    not the load a DBA pays once."""
    from tdebench.report.sections.headline import chosen_figures
    from tdebench.results import Measurement, TrialKey, TrialOutcome
    from tdebench.store import ResultStore

    store = ResultStore(tmp_path)
    store.start('name = "io"\nrepetitions = 4\nplacebo = true\n\n[[workloads]]\nname = "tpch"\nscale = 0.1\n', {})
    for repetition in (1, 2, 3, 4):
        for encryption in ("none", "placebo", "aes-256-cbc"):
            trial = TrialKey("sqlite", encryption, "tpch", 0.1, repetition)
            cipher = encryption == "aes-256-cbc"
            wobble = 1 + (-1) ** repetition * 0.01 if encryption == "none" else 1.0
            store.append(Measurement(trial, "load", "total", {"elapsed_s": 10.0 * (1.09 if cipher else 1.0) * wobble}))
            slower = 1.33 * (1 + (-1) ** repetition * 0.03) if cipher else 1.0
            for query in range(1, 23):
                store.append(Measurement(trial, "power", f"q{query}", {"elapsed_s": 0.1 * query * slower * wobble}))
            store.append(TrialOutcome(trial, "ok", "warm", False, 9.0))
    run = read_run(tmp_path)
    ((_, figure, chosen, _),) = chosen_figures(summary_records(run))
    load = next(r for r in summary_records(run) if (r.cell.encryption, r.cell.test) == ("aes-256-cbc", "load"))
    power = chosen[0]
    assert load.overhead is not None and power.overhead is not None and load.overhead.significant
    assert (load.overhead.ci_high - load.overhead.ci_low) < (power.overhead.ci_high - power.overhead.ci_low)
    assert figure.label == "power geomean" and power.cell.encryption == "aes-256-cbc"


def test_the_headline_picture_has_a_panel_per_sentence_with_verdicts_and_floor(tmp_path: Path) -> None:
    """headline.panels: one panel per engine the sentences name, on the same figure, every
    encryption but none and the placebo, the placebo's floor, and a leak marked as one; the
    picture is drawn first in report.md and report.html."""
    from dataclasses import replace

    from tdebench.report.sections.headline import panels
    from tdebench.report.summaries.plots import headline_plot
    from tdebench.results import RunData

    write_fake_run(tmp_path, placebo=True)
    run = read_run(tmp_path)
    records = summary_records(run)
    drawn = panels(run, records)
    sentences = headline(run, records)
    costs = [s for s in sentences if " · " in s.split(" (")[0]]
    assert [p.title for p in drawn[:len(costs)]] == [s.split(" (")[0] for s in costs]
    # then the load of each config in a panel of its own, never in place of the power test
    loads = drawn[len(costs):]
    assert loads and all(p.title.endswith("· data load") for p in loads)
    assert {p.kind for p in drawn[:len(costs)]} == {"power geomean"}
    assert {p.kind for p in loads} == {"data load elapsed"}
    for panel in drawn:
        assert panel.floor is not None and panel.floor > 0
        assert {row.verdict for row in panel.rows} == {"encrypted"}
        assert not {"none", "placebo"} & {row.encryption for row in panel.rows}
    leaked = next(v for v in run.verdicts if v.trial.encryption == "aes-256-gcm")
    leaky = RunData(**{**run.__dict__, "verdicts": [replace(v, verdict="plaintext") if v is leaked else v
                                                    for v in run.verdicts]})
    marks = {row.encryption: row.verdict for p in panels(leaky, records) for row in p.rows}
    assert marks["aes-256-gcm"] == "plaintext" and marks["aes-256-ctr"] == "encrypted"
    picture = headline_plot(drawn)
    assert picture is not None and picture.png.startswith(b"\x89PNG")
    assert headline_plot([]) is None


def test_a_run_ends_with_its_cost_lines_cut_but_never_the_at_rest_line() -> None:
    """The lines `tdebench run` prints: the io-bound run's four engines had printed three cost
    lines and neither the busy machine nor the at-rest verdicts; now at most `most` cost lines,
    a line counting the rest, then always the machine and at-rest lines."""
    from tdebench.report.sections.headline import Glance

    costs = [f"engine {n}: +{n}%; noise floor ±1.0%." for n in range(1, 5)]
    tail = ["The machine was busy: 6 of 222 trials …", "At rest: 222/222 verdicts as expected. …"]
    glance = Glance(costs, tail)
    assert glance.lines == costs + tail
    assert glance.shortened(4) == glance.lines  # nothing cut, nothing counted
    assert glance.shortened(2) == [*costs[:2], "… and 2 more in the report's “In one minute”", *tail]
    assert Glance(costs, []).shortened(3)[-1] == "… and 1 more in the report's “In one minute”"


def test_in_one_minute_is_a_short_line_per_engine_and_the_findings_have_the_rest(tmp_path: Path) -> None:
    """summary_lines: per engine its cheapest and dearest encryption, the floor and the regime
    in at most 30 words; the full sentences (every encryption with its interval) follow, "In
    full" (folded in the HTML)."""
    from tdebench.report.sections.headline import config_sentences, summary_lines

    write_fake_run(tmp_path, placebo=True)
    run = read_run(tmp_path)
    records = summary_records(run)
    lines = summary_lines(run, records)
    full = config_sentences(run, records)
    assert len(full) >= 2
    for line, sentence in zip(lines, full):
        assert line.split(":")[0] == sentence.split(" (")[0]  # the same engine, workload and figure
        assert len(line.split()) <= 30 and "cheapest " in line and ", dearest " in line and "noise floor ±" in line
        assert len(sentence) > len(line)
    assert lines[len(full)].startswith("At rest:") or lines[len(full)].startswith("The machine was busy")
    build(tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    in_full = markdown.split("**In full:**")[1].split("**Contents:**")[0]
    assert markdown.index("**In one minute:**") < markdown.index("**In full:**")
    assert in_full.count("\n- ") == len(full) and full[0].split(" (")[0] in in_full
    page = (tmp_path / "report.html").read_text()
    assert "<details><summary>In full: every encryption with its 95% CI</summary>" in page


def test_a_forest_panel_never_reaches_below_a_full_drop() -> None:
    """A two-round placebo of ±1786.9% draws its band and sets the x-range from -100% (nothing
    falls by more than all of it), not from -1786.9%, beside intervals that reach +327.9%."""
    from tdebench.report.summaries import plots

    row = plots.PanelRow("column-aes-128", -52.4, -94.7, 327.9, "plain")
    wide = plots.Panel("postgres · oltp · stress NOPM", (row,), floor=1786.9, rate=True)
    low, high = plots._x_limits([wide])
    assert low == pytest.approx(-100 - 0.05 * (1786.9 + 100)) and high > 1786.9
