"""The paired analysis against simulated plans whose true overhead is known.

The model of one simulated plan: 22 queries with typical times from 2 ms to 200 ms; in every
round all configurations share that round's drift (5% log-normal: the machine warming up,
a neighbour's burst, which interleaving makes common to the round); every measured query
time has its own 5% log-normal noise. The encryption costs a true 3% (or nothing: A/A).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tdebench.plan import DEFAULT_REPETITIONS
from tdebench.stats import (LOG_MEAN, PAIRED, SUM_RATIO, _critical, _paired, minimum_detectable_effect, overhead,
                            paired_overhead, paired_overheads, pairable, round_logs)

QUERIES = 22
PLANS = 200


def simulated_plan(rng: np.random.Generator, rounds: int, effect: float, drift: float = 0.05,
                   noise: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    typical = np.exp(rng.uniform(math.log(0.002), math.log(0.2), QUERIES))
    shared = rng.normal(0.0, drift, (rounds, 1))
    baseline = typical * np.exp(shared + rng.normal(0.0, noise, (rounds, QUERIES)))
    treatment = typical * (1.0 + effect) * np.exp(shared + rng.normal(0.0, noise, (rounds, QUERIES)))
    return baseline, treatment


def detected(effect: float, seed: int) -> list[bool]:
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(PLANS):
        result = paired_overhead(*simulated_plan(rng, DEFAULT_REPETITIONS, effect), LOG_MEAN)
        results.append(result.significant)
    return results


def test_a_3_percent_overhead_is_detected_in_80_percent_of_plans_at_the_default_repetitions() -> None:
    assert DEFAULT_REPETITIONS == 5
    assert np.mean(detected(0.03, seed=1)) >= 0.80


def test_an_a_a_comparison_is_called_significant_in_at_most_7_percent_of_plans() -> None:
    assert np.mean(detected(0.0, seed=2)) <= 0.07


def test_the_interval_covers_the_true_overhead_at_about_95_percent() -> None:
    rng = np.random.default_rng(3)
    covered = [(lambda o: o.ci_low <= 3.0 <= o.ci_high)(paired_overhead(*simulated_plan(rng, 5, 0.03), LOG_MEAN))
               for _ in range(PLANS)]
    assert 0.90 <= np.mean(covered) <= 0.99


def test_pairing_removes_the_drift_that_the_unpaired_estimate_cannot() -> None:
    rng = np.random.default_rng(4)
    baseline, treatment = simulated_plan(rng, 5, 0.03, drift=0.20, noise=0.02)
    paired = paired_overhead(baseline, treatment, LOG_MEAN)
    per_trial = [np.exp(np.mean(np.log(row))) for row in baseline], [np.exp(np.mean(np.log(row))) for row in treatment]
    unpaired = overhead(*per_trial)
    assert paired.method == PAIRED and unpaired.method == "unpaired"
    assert paired.half_width < unpaired.half_width / 5
    assert paired.ci_low <= 3.0 <= paired.ci_high and paired.significant


def test_the_estimate_is_the_geometric_mean_of_the_round_ratios_with_a_t_interval() -> None:
    baseline = np.array([[1.0], [2.0], [4.0]])
    ratios = np.array([1.02, 1.05, 1.03])
    result = paired_overhead(baseline, baseline * ratios[:, None], SUM_RATIO)
    logs = np.log(ratios)
    assert result.pct == pytest.approx((math.exp(logs.mean()) - 1) * 100)
    half = 4.302653 * logs.std(ddof=1) / math.sqrt(3)  # t(0.975, 2 df)
    assert result.ci_low == pytest.approx((math.exp(logs.mean() - half) - 1) * 100, rel=1e-5)
    assert result.ci_high == pytest.approx((math.exp(logs.mean() + half) - 1) * 100, rel=1e-5)
    assert (result.n_baseline, result.n_treatment) == (3, 3)


def test_units_within_a_round_are_paired_by_position() -> None:
    # two streams per round: sum-ratio of the round totals; log-mean weighs every unit alike
    baseline = np.array([[1.0, 3.0], [1.0, 3.0]])
    treatment = np.array([[2.0, 3.0], [2.0, 3.0]])
    assert paired_overhead(baseline, treatment, SUM_RATIO).pct == pytest.approx(25.0)
    assert paired_overhead(baseline, treatment, LOG_MEAN).pct == pytest.approx((math.sqrt(2) - 1) * 100)
    assert math.isnan(paired_overhead(baseline, treatment, SUM_RATIO).p_value)  # no spread, no test


def test_what_cannot_be_paired() -> None:
    assert not pairable(np.ones((1, 3)), np.ones((1, 3)), SUM_RATIO)  # one round
    assert not pairable(np.ones((3, 2)), np.ones((3, 3)), SUM_RATIO)  # units differ
    assert not pairable(np.zeros((3, 1)), np.ones((3, 1)), SUM_RATIO)  # no ratio to zero
    assert not pairable(np.array([[0.0, 1.0]] * 2), np.ones((2, 2)), LOG_MEAN)  # a zero time has no log
    assert pairable(np.array([[0.0, 1.0]] * 2), np.ones((2, 2)), SUM_RATIO)  # but its sum has a ratio
    with pytest.raises(ValueError):
        paired_overhead(np.ones((1, 3)), np.ones((1, 3)))


def test_a_batch_of_pairs_gives_each_pair_s_figures_bit_for_bit() -> None:
    """paired_overheads computes every pair of one shape at once; each result is what the round
    log ratios of that pair alone give (1-D means and deviations), exactly, and a pair that
    cannot be paired is None in its place."""
    rng = np.random.default_rng(7)
    pairs = []
    for rounds, units, how in [(2, 1, SUM_RATIO), (3, 22, LOG_MEAN), (5, 4, SUM_RATIO), (3, 22, LOG_MEAN)] * 3:
        base = np.exp(rng.normal(0.0, 1.0, (rounds, units)))
        pairs.append((base, base * np.exp(rng.normal(0.03, 0.05, (rounds, units))), how))
    pairs.insert(4, (np.zeros((3, 1)), np.ones((3, 1)), SUM_RATIO))
    pairs.insert(7, (np.ones((3, 2)), np.ones((3, 2)), SUM_RATIO))  # every round alike: no spread
    batch = paired_overheads(pairs)
    assert batch[4] is None
    for (base, treat, how), compared in zip(pairs, batch):
        if compared is None:
            continue
        logs = round_logs(base, treat, how)
        expected = _paired(float(np.mean(logs)), float(np.std(logs, ddof=1)), logs.size, _critical(logs.size - 1))
        assert compared == expected or (math.isnan(compared.p_value) and math.isnan(expected.p_value)
                                        and replace(compared, p_value=0.0) == replace(expected, p_value=0.0))


def test_the_minimum_detectable_effect_of_a_placebo_is_its_noise_floor() -> None:
    rng = np.random.default_rng(5)
    placebo = paired_overhead(*simulated_plan(rng, 10, 0.0), LOG_MEAN)
    floor = minimum_detectable_effect(placebo)
    # 5% noise on each of 22 queries in both arms: a round's log ratio has sd 0.05·√2/√22 ≈ 1.5%,
    # so over 10 rounds (t: 2.26 + 0.88) the 80%-power effect is near 3.14 · 1.5% / √10 ≈ 1.5%
    assert 0.8 < floor < 2.5
    assert math.isnan(minimum_detectable_effect(overhead([1.0, 1.1, 1.2], [1.0, 1.1, 1.3])))
