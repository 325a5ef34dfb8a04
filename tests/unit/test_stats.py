"""Statistics against distributions whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tdebench.report.data.units import change
from tdebench.stats import (BETWEEN_RUNS, NOISY_CV, ONE_VALUE, Overhead, geomean, log_standard_error, noise_advice,
                            overhead, overhead_change, overheads, paired_overhead, summarize, summarize_many)


def normal(n: int, mean: float = 100.0, sd: float = 2.0, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def test_ci_of_median_of_large_normal_sample_contains_true_median() -> None:
    summary = summarize(normal(2000, seed=11))
    assert summary.ci_low < 100.0 < summary.ci_high
    assert summary.ci_high - summary.ci_low < 0.5
    assert summary.n == 2000
    assert summary.median == pytest.approx(100.0, abs=0.2)
    assert summary.cv == pytest.approx(0.02, rel=0.1)


def test_ci_of_median_covers_the_true_median_about_95_percent_of_the_time() -> None:
    """A single sample's interval misses 5% of the time by design; coverage is the real test."""
    covered = 0
    for seed in range(200):
        summary = summarize(normal(40, seed=seed))
        covered += summary.ci_low <= 100.0 <= summary.ci_high
    assert 0.88 <= covered / 200 <= 0.99


def test_summary_is_reproducible() -> None:
    values = normal(30)
    assert summarize(values) == summarize(values)


def test_single_value_has_its_value_as_ci_and_unknown_spread() -> None:
    summary = summarize([4.2])
    assert (summary.n, summary.median, summary.ci_low, summary.ci_high) == (1, 4.2, 4.2, 4.2)
    assert math.isnan(summary.stdev) and math.isnan(summary.cv)
    assert not summary.noisy


def test_empty_group_is_refused() -> None:
    with pytest.raises(ValueError):
        summarize([])


def test_outliers_are_flagged_not_dropped() -> None:
    values = [10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 30.0]
    summary = summarize(values)
    assert summary.outliers == 1
    assert summary.n == 7
    assert summary.mean == pytest.approx(sum(values) / 7)


def test_no_outliers_in_a_tight_group() -> None:
    assert summarize([10.0, 10.1, 9.9, 10.0]).outliers == 0


def test_overhead_of_identical_groups_is_zero_and_not_significant() -> None:
    values = normal(20)
    compared = overhead(values, values.copy())
    assert compared.pct == pytest.approx(0.0)
    assert compared.ci_low < 0.0 < compared.ci_high
    assert compared.p_value > 0.5
    assert not compared.significant


def test_overhead_of_groups_from_one_distribution_spans_zero() -> None:
    compared = overhead(normal(20, seed=1), normal(20, seed=2))
    assert compared.ci_low < 0.0 < compared.ci_high
    assert not compared.significant


def test_ten_percent_shift_is_found_and_significant() -> None:
    baseline = normal(20, seed=3)
    compared = overhead(baseline, normal(20, mean=110.0, sd=2.2, seed=4))
    assert compared.pct == pytest.approx(10.0, abs=1.5)
    assert compared.ci_low < compared.pct < compared.ci_high
    assert 7.0 < compared.ci_low and compared.ci_high < 13.0
    assert compared.p_value < 0.001
    assert compared.significant
    assert (compared.n_baseline, compared.n_treatment) == (20, 20)


def test_three_against_three_cannot_reach_p_below_a_tenth() -> None:
    """Documented limit of the exact Mann–Whitney U test: 2 / C(6, 3) = 0.1."""
    compared = overhead([1.0, 1.1, 1.2], [2.0, 2.1, 2.2])
    assert compared.p_value == pytest.approx(0.1)
    assert not compared.significant


def test_geomean() -> None:
    assert geomean([1.0, 100.0]) == pytest.approx(10.0)
    assert geomean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])


def test_noise_flag_and_advice() -> None:
    assert not summarize([100.0, 101.0, 99.0]).noisy
    noisy = summarize([80.0, 100.0, 120.0])
    assert noisy.cv > NOISY_CV and noisy.noisy
    assert noise_advice("interleaved") == ('raise repetitions or (tpch) passes, use order = "lockstep", '
                                           'or quiet the machine')
    assert "lockstep\"" not in noise_advice("lockstep") and "already ran in lockstep" in noise_advice("lockstep")


def test_batched_statistics_equal_one_at_a_time() -> None:
    """The vectorized batches a report uses give exactly what single calls give."""
    rng = np.random.default_rng(5)
    groups = [rng.normal(100, 5, size).round(digits) for size, digits in
              ((1, 2), (3, 2), (3, 0), (6, 2), (3, 2), (12, 1), (2, 2))]
    groups.append(np.array([5.0, 5.0, 5.0]))
    assert summarize_many(groups) == [summarize(group) for group in groups]
    pairs = [(groups[1], groups[2]), (groups[1], groups[4]), (groups[3], groups[5]),
             (groups[7], groups[7] * 1.02), (groups[0], groups[6]), ([0.0, 0.0, 1.0], [1.0, 2.0, 3.0])]
    batched = overheads(pairs)
    for (baseline, treatment), compared in zip(pairs, batched):
        single = overhead(baseline, treatment)
        assert (compared.pct, compared.p_value, compared.n_baseline) == (single.pct, single.p_value, single.n_baseline)
        assert np.allclose([compared.ci_low, compared.ci_high], [single.ci_low, single.ci_high],
                           rtol=0, atol=0, equal_nan=True)


# --- between runs (tdebench compare): an overhead's log-scale standard error and its change ---


def test_log_standard_error_is_the_paired_intervals_own() -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(1.0, 2.0, size=(5, 4))
    compared = paired_overhead(base, base * rng.normal(1.05, 0.02, size=(5, 4)))
    se, df = log_standard_error(compared)
    assert df == 4
    assert se == pytest.approx(compared.spread / math.sqrt(5))
    # mean ± t(0.975, 4) × se on log scale is the interval the overhead states
    centre = math.log1p(compared.pct / 100)
    assert math.log1p(compared.ci_high / 100) - centre == pytest.approx(2.7764451 * se, rel=1e-6)


def test_log_standard_error_unpaired_reads_the_bootstrap_interval_and_needs_two_values() -> None:
    compared = overhead([1.0, 1.1, 0.9, 1.05, 0.95], [1.2, 1.3, 1.1, 1.25, 1.15])
    se, df = log_standard_error(compared)
    assert df == math.inf
    width = math.log1p(compared.ci_high / 100) - math.log1p(compared.ci_low / 100)
    assert se == pytest.approx(width / (2 * 1.959964), rel=1e-5)
    # one value in a group: its bootstrap interval is the point, which is no interval at all;
    # two: far too narrow (an A/A comparison would exclude 0 about a third of the time)
    assert all(math.isnan(x) for x in log_standard_error(overhead([1.0], [1.2, 1.3, 1.25])))
    assert all(math.isnan(x) for x in log_standard_error(overhead([1.0, 1.1], [1.2, 1.3, 1.25])))


def test_overhead_change_of_an_overhead_with_itself_is_zero_within_noise() -> None:
    rng = np.random.default_rng(2)
    base = rng.uniform(1.0, 2.0, size=(5, 3))
    compared = paired_overhead(base, base * rng.normal(1.05, 0.02, size=(5, 3)))
    change = overhead_change(compared, compared)
    assert change.method == BETWEEN_RUNS
    assert change.pct == pytest.approx(0.0, abs=1e-12)
    assert change.ci_low < 0 < change.ci_high and change.p_value == pytest.approx(1.0)
    assert not change.significant
    # SE = √2 × each one's; Welch–Satterthwaite df of two equal SEs with 4 df each is 8
    se = math.sqrt(2) * compared.spread / math.sqrt(5)
    assert math.log1p(change.ci_high / 100) == pytest.approx(2.3060041 * se, rel=1e-6)


def test_overhead_change_is_the_ratio_of_the_ratios_and_exact_without_spread() -> None:
    base = np.ones((2, 1))  # two rounds alike: no spread at all
    before, after = paired_overhead(base, base * 1.10), paired_overhead(base, base * 1.21)
    assert before.spread == after.spread == 0.0
    change = overhead_change(before, after)
    assert change.pct == pytest.approx(10.0)
    assert change.ci_low == change.ci_high == pytest.approx(10.0) and math.isnan(change.p_value)
    one = overhead([1.0], [1.1])  # no interval in one run: none for the change
    assert math.isnan(overhead_change(one, after).ci_low)


def test_overhead_change_keeps_its_false_alarms_near_five_percent() -> None:
    """Two independent runs of 5 rounds with the same true overhead (+5%), each round with 3%
    noise and a drift of its own: the change's interval excludes 0 in about 5% of pairs."""
    rng = np.random.default_rng(3)

    def run() -> object:
        drift = rng.normal(1.0, 0.05, size=(5, 1))
        base = drift * rng.normal(1.0, 0.03, size=(5, 22))
        return paired_overhead(base, drift * 1.05 * rng.normal(1.0, 0.03, size=(5, 22)), "log-mean")

    alarms = sum(overhead_change(run(), run()).significant for _ in range(400))
    assert alarms / 400 < 0.09


def test_half_width_is_relative_to_the_ratio_so_a_target_means_the_same_at_any_overhead() -> None:
    """target_ci_pct = 2 asks for ±2% of the ratio: a threefold slowdown known to ±13 points
    is known to ±4.2%, a 1% overhead known to ±2 points to about ±2%."""
    assert Overhead(219.0, 206.0, 232.0, 0.0, 5, 5).half_width == pytest.approx(4.16, abs=0.01)
    assert Overhead(1.0, -1.0, 3.0, 0.5, 5, 5).half_width == pytest.approx(2.00, abs=0.01)
    assert math.isnan(Overhead(1.0, math.nan, math.nan, 1.0, 1, 1).half_width)
    assert Overhead(-50.0, -100.0, 10.0, 0.5, 3, 3).half_width == math.inf


def test_one_value_on_a_side_gives_the_ratio_and_no_interval() -> None:
    """A run of one round: a resampled interval of one value would be the point itself ([+30, +30]),
    a precision nothing measured; the ratio stands, the interval and p are NaN, and a sentence
    says why."""
    compared = overhead([1.0], [1.3])
    assert compared.pct == pytest.approx(30.0) and compared.reason == ONE_VALUE
    assert math.isnan(compared.ci_low) and math.isnan(compared.ci_high) and math.isnan(compared.p_value)
    assert change(compared.pct, compared.ci_low, compared.ci_high) == "+30.0% (no interval: one measurement)"
    two = overhead([1.0, 1.1], [1.3, 1.4])
    assert two.reason == "" and two.ci_low < two.pct < two.ci_high
