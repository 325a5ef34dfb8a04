"""Where a cost sets in (report/sections/knee.py), and a cost curve that draws no line across a gap."""

from __future__ import annotations

from pathlib import Path

from fakes import write_fake_run
from tdebench.report.sections import knee
from tdebench.report.summaries.plots import GAP, _runs
from tdebench.report.data.records import summary_records
from tdebench.store import read_published, read_run


def test_the_knee_names_the_caches_either_side_of_where_the_cost_is_resolved(tmp_path: Path) -> None:
    """The fake run at 4 MB (data 2.1-2.6x the cache: the cost SQUEEZE times) and 64 MB (fits):
    every encryption's cost is resolved at both, so each sentence says it costs at every cache."""
    write_fake_run(tmp_path, placebo=True, memories=(4, 64))
    run = read_run(tmp_path)
    said = knee.sentences(run, summary_records(run))
    gcm = next(s for s in said if s.startswith("duckdb aes-256-gcm · tpch sf0.01 · power test"))
    assert "a cost at every cache measured, already at data 0.16× (64 MB: +3." in gcm


def test_the_knee_lies_between_an_unresolved_and_a_resolved_cache() -> None:
    """The published cost-curve example: SQLite's AES-256-CBC costs nothing resolved at data 0.88x
    the cache (15 MB: -0.6%, inside the placebo's floor) and +3.1% at 1.1x (12 MB); the sentence
    names both, nothing between."""
    run = read_published(Path(__file__).parents[2] / "docs" / "examples" / "cost-curve")
    said = knee.sentences(run, summary_records(run))
    cbc = next(s for s in said if s.startswith("sqlite aes-256-cbc · tpch sf0.01 · power test"))
    assert "the cost sets in between data 0.88× (15 MB: -0.6%" in cbc
    assert ", not resolved) and 1.1× (12 MB: +3.1%" in cbc
    assert any(s.startswith("duckdb aes-256-gcm · tpch sf0.01 · power test: no cost resolved") for s in said)


def test_a_curve_is_cut_where_two_points_lie_more_than_the_gap_apart() -> None:
    points = [(0.2, 0.0, -1.0, 1.0), (0.3, 0.0, -1.0, 1.0), (0.8, 1.0, 0.0, 2.0), (3.3, 30.0, 28.0, 32.0),
              (6.6, 31.0, 29.0, 33.0)]
    assert GAP == 2.0
    assert [[p[0] for p in run] for run in _runs(points)] == [[0.2, 0.3], [0.8], [3.3, 6.6]]
