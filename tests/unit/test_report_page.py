"""Plots only where they show more than the tables: a resource line needs two readings, an
overhead plot two encryptions, a scaling panel two table sizes."""

from __future__ import annotations

from pathlib import Path


from fakes import MIB, Shape, write_fake_run  # noqa: E402

from tdebench.report.plots import overhead_plots, resource_plots, scaling_plots  # noqa: E402
from tdebench.report.records import CellKey, SummaryRecord, summary_records  # noqa: E402
from tdebench.stats import summarize  # noqa: E402
from tdebench.store import Sample, TrialKey, read_run  # noqa: E402


def test_a_resource_series_with_fewer_than_two_samples_draws_no_plot() -> None:
    def samples(encryption: str, count: int, repetition: int = 1) -> list[Sample]:
        trial = TrialKey("duckdb", encryption, "tpch", 0.01, repetition)
        return [Sample(trial, float(t), 50.0, 100 * MIB, 1.0, 0.0, 0.0, 5.0) for t in range(1, count + 1)]

    assert resource_plots(samples("none", 1) + samples("aes-256-gcm", 1)) == []
    # a repetition with a single reading gives way to the next one that has a line to draw
    assert len(resource_plots(samples("none", 1) + samples("none", 3, repetition=2))) == 1
    assert len(resource_plots(samples("none", 1) + samples("aes-256-gcm", 2))) == 1


def test_an_overhead_plot_compares_two_encryptions_or_is_not_drawn(tmp_path: Path) -> None:
    one = Shape(settings={"duckdb": {"none": (1.0, 10.0), "aes-256-gcm": (1.03, 10.5)}}, placed=False)
    write_fake_run(tmp_path / "one", shape=one)
    assert overhead_plots(summary_records(read_run(tmp_path / "one"))) == []
    write_fake_run(tmp_path / "placebo", shape=one, placebo=True)  # against the noise floor: a comparison
    assert len(overhead_plots(summary_records(read_run(tmp_path / "placebo")))) == 1


def test_a_scaling_panel_needs_two_table_sizes() -> None:
    def record(encryption: str, test: str, scale: float) -> SummaryRecord:
        cell = CellKey("duckdb", encryption, "crud", scale, test, "ops", "elapsed_s")
        return SummaryRecord(cell, "s", summarize([0.1, 0.11, 0.12]), None)

    single = [record(encryption, "insert", 1000.0) for encryption in ("none", "aes-256-gcm")]
    assert scaling_plots(single, "crud", ("insert",), "ops", "rows") == []
    assert len(scaling_plots(single + [record("none", "insert", 10000.0)], "crud", ("insert",), "ops", "rows")) == 1
