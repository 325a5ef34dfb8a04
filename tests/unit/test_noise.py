"""Noise flags for headline figures only, and busy trials (report/summaries/noise.py), from hand-made records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tdebench.report.sections.headline import headline
from tdebench.report.summaries.noise import (BUSY_OTHERS_PCT, busy_headline, busy_sentence, findings, is_headline,
                                             noise_sentence, noisy, noisy_figures, quiet_sentence, trial_loads)
from tdebench.report.data.records import CellKey, SummaryRecord, summary_records, unit_of
from tdebench.report.summaries.tables import machine_load_table, noisy_table, summary_table
from tdebench.stats import summarize
from tdebench.results import Sample, TrialKey, TrialOutcome
from tdebench.store import RESULTS, ResultStore, read_run

NOISY_VALUES = [1.0, 1.3, 0.8, 1.1]  # CV about 20%
QUIET_VALUES = [1.0, 1.01, 0.99, 1.02]


def cell(workload: str, test: str, step: str, metric: str = "elapsed_s") -> CellKey:
    return CellKey("duckdb", "none", workload, 0.01, test, step, metric)


@pytest.mark.parametrize("headline", [
    cell("tpch", "power", "geomean"),
    cell("tpch", "throughput", "total"),
    cell("tpch", "load", "total"),
    cell("tpch", "load", "database", "size_bytes"),
    cell("oltp", "load", "total"),
    cell("crud", "insert", "total"),
    cell("crud", "lookup", "total"),
    cell("backup", "full-compressed", "backup"),
    cell("backup", "logical", "restore"),
    cell("maintenance", "encrypt", "copy-database"),
    cell("maintenance", "reindex", "rebuild-table"),
    cell("oltp", "stress", "mix", "tpm"),
    cell("oltp", "load", "mix", "nopm"),
])
def test_headline_figures(headline: CellKey) -> None:
    assert is_headline(headline)


@pytest.mark.parametrize("counter", [
    cell("tpch", "power", "q9"),
    cell("tpch", "power", "geomean", "cpu_s"),
    cell("tpch", "power", "total"),
    cell("tpch", "load", "total", "read_bytes"),
    cell("tpch", "load", "total", "write_chars"),
    cell("tpch", "load", "tables"),
    cell("tpch", "open", "connect"),
    cell("crud", "insert", "total", "write_bytes"),
    cell("crud", "lookup", "point", "p99_elapsed_s"),
    cell("oltp", "load", "mix", "committed"),
    cell("oltp", "load", "interval", "tpm"),
    cell("backup", "full", "scan"),
    cell("backup", "full", "backup", "cpu_s"),
])
def test_counters_and_steps_are_not_headline_figures(counter: CellKey) -> None:
    assert not is_headline(counter)


def record(key: CellKey, values: list[float]) -> SummaryRecord:
    return SummaryRecord(cell=key, unit=unit_of(key.metric), summary=summarize(values), overhead=None)


def test_only_noisy_headline_figures_are_flagged_each_once() -> None:
    records = [record(cell("tpch", "power", "geomean"), NOISY_VALUES),
               record(cell("tpch", "power", "q9"), NOISY_VALUES),
               record(cell("tpch", "load", "total", "read_bytes"), NOISY_VALUES),
               record(cell("tpch", "throughput", "total"), QUIET_VALUES)]
    assert [noisy(r) for r in records] == [True, False, False, False]
    assert [row["noisy"] for row in summary_table(records).rows] == [True, False, False, False]
    oltp = [record(CellKey("postgres", "none", "oltp", 2.0, "stress", "mix", "tpm"), [6000, 7800, 4800, 6600]),
            record(CellKey("postgres", "none", "oltp", 2.0, "stress", "mix", "nopm"), [2600, 2601, 2600, 2601, 2680])]
    figures = noisy_figures(records + oltp)
    assert [(f.label, f.noisy, f.unit) for f in figures] == [
        ("duckdb none tpch sf0.01 · power geomean elapsed_s", True, "s"),
        ("postgres none oltp W=2 · stress mix tpm", True, "/min"),
        ("postgres none oltp W=2 · stress mix nopm", False, "/min"),  # listed for its outlier only
    ]
    table = noisy_table(figures, "interleaved")
    assert len(table.rows) == 3 and 'raise repetitions or (tpch) passes, use order = "lockstep"' in table.intro
    assert 'use order = "lockstep"' not in noisy_table(figures, "lockstep").intro  # not to a run that did
    assert not any("advice" in row for row in table.rows)  # said once, above the table
    sentence = noise_sentence(figures, "interleaved")
    assert sentence is not None and sentence.startswith("2 headline figure(s) are noisy (CV > 5%): raise")
    assert "worst: duckdb none tpch sf0.01 · power geomean elapsed_s (CV 20%)" in sentence
    assert noise_sentence(noisy_figures([records[1], records[3]]), "interleaved") is None
    lockstep = noise_sentence(figures, "lockstep")
    assert lockstep is not None and 'use order = "lockstep"' not in lockstep and "already ran in lockstep" in lockstep


def trial(repetition: int) -> TrialKey:
    return TrialKey("duckdb", "none", "tpch", 0.01, repetition)


def samples(key: TrialKey, others: list[float | None]) -> list[Sample]:
    return [Sample(key, float(i), 50.0, 1e8, 1.0, 0.0, 0.0, 0.0, others_cpu_pct=value, load_1m=0.5)
            for i, value in enumerate(others, start=1)]


def outcome(key: TrialKey, **extra) -> TrialOutcome:
    return TrialOutcome(key, "ok", "warm", False, 3.0, **extra)


def run_with(tmp_path: Path, records: list) -> object:
    store = ResultStore(tmp_path)
    store.start("name = 'x'\n", {})
    for item in records:
        store.append(item)
    return read_run(tmp_path)


def test_a_trial_is_busy_when_others_average_above_the_threshold(tmp_path: Path) -> None:
    quiet, busy, short, pinned = trial(1), trial(2), trial(3), trial(4)
    run = run_with(tmp_path, [
        *samples(quiet, [2.0, 30.0, 1.0]),  # one burst, mean 11%: just over
        outcome(quiet, load_start=0.2, load_end=0.3),
        *samples(busy, [80.0, 95.0]), outcome(busy, load_start=1.8, load_end=2.1),
        outcome(short),  # shorter than one interval: no reading, never busy
        *samples(pinned, [1.0, 2.0]), outcome(pinned, engine_cpus=(1,), driver_cpus=(0,)),
    ])
    loads = trial_loads(run)
    assert [(load.trial.repetition, load.busy) for load in loads] == [(1, True), (2, True), (3, False), (4, False)]
    assert loads[0].others_mean == pytest.approx(11.0) and loads[0].others_max == 30.0
    assert loads[2].others_mean is None and loads[3].engine_cpus == (1,)
    sentence = busy_sentence(loads)
    assert sentence is not None
    assert sentence.startswith(f"2 of 4 trial(s) ran while other processes used more than {BUSY_OTHERS_PCT:g}% "
                               "of one core on average: duckdb/none/tpch/sf0.01/r2 (88%), "
                               "duckdb/none/tpch/sf0.01/r1 (11%).")
    assert "pin_cpus" in sentence and findings([], loads, "interleaved") == [sentence]
    table = machine_load_table(loads)
    assert [row["busy"] for row in table.rows] == ["BUSY", "BUSY", "", ""]
    assert [c.key for c in table.columns][-3:] == ["engine_cpus", "driver_cpus", "busy"]
    assert [row["engine_cpus"] for row in table.rows][-1] == (1,)


def test_the_first_lines_say_how_busy_the_machine_was_only_when_it_was(tmp_path: Path) -> None:
    quiet, busy, busier = trial(1), trial(2), trial(3)
    run = run_with(tmp_path, [*samples(quiet, [1.0, 2.0]), outcome(quiet), *samples(busy, [60.0, 80.0]),
                              outcome(busy), *samples(busier, [150.0, 170.0]), outcome(busier)])
    assert busy_headline(trial_loads(run)) == (
        "The machine was busy: 2 of 3 trials ran while other processes used 115% of one core (median), so "
        "these intervals may be wider than a quiet machine's (“Machine load”).")
    assert busy_headline(trial_loads(run)[:1]) is None
    assert busy_headline(trial_loads(run)) in headline(run, summary_records(run))


def test_runs_from_before_are_still_read_and_show_no_load(tmp_path: Path) -> None:
    """results.jsonl written before these fields existed: samples and trials without them."""
    run = run_with(tmp_path, [])
    old_sample = {"kind": "sample", "trial": vars(trial(1)), "t_s": 1.0, "cpu_pct": 5.0, "mem_bytes": 1.0,
                  "mem_pct": 1.0, "disk_read_bytes": 0.0, "disk_write_bytes": 0.0, "disk_busy_pct": 0.0}
    old_trial = {"kind": "trial", "trial": vars(trial(1)), "status": "ok", "cache": "warm",
                 "cache_dropped": False, "elapsed_s": 1.0, "error": "", "key_derived": False}
    (tmp_path / RESULTS).write_text("".join(json.dumps(line) + "\n" for line in (old_sample, old_trial)))
    run = read_run(tmp_path)
    assert run.samples[0].others_cpu_pct is None and run.trials[0].engine_cpus is None
    loads = trial_loads(run)
    assert not loads[0].busy and busy_sentence(loads) is None
    table = machine_load_table(loads)
    assert table.rows == [] and "not recorded" in table.empty
    assert "engine_cpus" not in [c.key for c in table.columns]


def test_the_report_says_how_long_the_run_waited_for_quiet_and_which_trials_started_busy(tmp_path: Path) -> None:
    calm, waited, gave_up = trial(1), trial(2), trial(3)
    run = run_with(tmp_path, [
        *samples(calm, [1.0, 2.0]), outcome(calm, quiet_waited_s=0.0, quiet_others_pct=3.0),
        *samples(waited, [2.0, 3.0]), outcome(waited, quiet_waited_s=40.0, quiet_others_pct=4.0),
        *samples(gave_up, [90.0, 110.0]), outcome(gave_up, quiet_waited_s=300.0, quiet_others_pct=140.0),
    ])
    loads = trial_loads(run)
    assert [load.started_busy for load in loads] == [False, False, True]
    sentence = quiet_sentence(loads)
    assert sentence == ("2 of 3 trial(s) waited for other processes to quiet down before they started "
                        "(quiet_wait_s; median 170 s, longest 300 s); 1 started while others still used more "
                        f"than {BUSY_OTHERS_PCT:g}% of one core when the wait ran out: duckdb/none/tpch/sf0.01/r3 "
                        "(140%). See “Machine load”.")
    assert findings([], loads, "interleaved") == [busy_sentence(loads), sentence]
    assert quiet_sentence(loads[:2]) == ("1 of 2 trial(s) waited for other processes to quiet down before they "
                                         "started (quiet_wait_s; median 40 s, longest 40 s), and every one then "
                                         "started on a quiet machine.")
    assert quiet_sentence(loads[:1]) is None  # no wait was needed: nothing to say
    table = machine_load_table(loads)
    assert [c.key for c in table.columns][-3:] == ["waited_s", "others_at_start", "busy"]
    assert [row["waited_s"] for row in table.rows] == [0.0, 40.0, 300.0] and "quiet_wait_s" in table.note
