"""Statistics on raw measurements: medians with bootstrap intervals, overhead, significance.

Medians rather than means because a benchmark's timings are skewed (one slow run from a
cache miss or a neighbour's burst must not move the figure); bootstrap intervals because
they need no assumption about that skewed distribution. Outliers are counted, never
dropped. Every random draw uses a fixed seed so a report is byte-for-byte reproducible
from the same raw data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
CONFIDENCE = 0.95
SIGNIFICANCE = 0.05
NOISY_CV = 0.05
"""A cell whose coefficient of variation exceeds 5% is too noisy to resolve the few-percent
overheads encryption at rest typically costs."""


@dataclass(frozen=True)
class Summary:
    """The repetitions of one cell, reduced to robust figures. `stdev` and `cv` are NaN for
    a single value, where spread is unknown rather than zero."""

    n: int
    median: float
    mean: float
    stdev: float
    cv: float
    ci_low: float
    ci_high: float
    outliers: int

    @property
    def noisy(self) -> bool:
        return is_noisy(self.cv)


@dataclass(frozen=True)
class Overhead:
    """Treatment relative to baseline as a percentage of the baseline median.

    `p_value` is the two-sided Mann–Whitney U p-value exactly as scipy gives it. With few
    repetitions it cannot get small: with n=3 against n=3 (no ties, exact test) the smallest
    possible p is 0.1, so three repetitions can never show a significant difference on their
    own. With ties (e.g. identical database sizes) scipy falls back to the normal
    approximation, which can go lower.
    """

    pct: float
    ci_low: float
    ci_high: float
    p_value: float
    n_baseline: int
    n_treatment: int

    @property
    def significant(self) -> bool:
        """Both the test and the interval must agree: p below 0.05 and a CI excluding 0."""
        spans_zero = self.ci_low <= 0.0 <= self.ci_high
        return self.p_value < SIGNIFICANCE and not spans_zero


def _as_array(values: Sequence[float]) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        raise ValueError("cannot summarize an empty group of values")
    return array


def _rng() -> np.random.Generator:
    return np.random.default_rng(BOOTSTRAP_SEED)


def _bootstrap_medians(array: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Medians of BOOTSTRAP_RESAMPLES resamples (with replacement) of `array`."""
    indices = rng.integers(0, array.size, size=(BOOTSTRAP_RESAMPLES, array.size))
    return np.median(array[indices], axis=1)


def _percentile_interval(samples: np.ndarray) -> tuple[float, float]:
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def tukey_outliers(array: np.ndarray) -> int:
    """How many values lie outside the Tukey fences Q1 - 1.5 IQR and Q3 + 1.5 IQR."""
    q1, q3 = np.percentile(array, [25.0, 75.0])
    spread = 1.5 * (q3 - q1)
    return int(np.count_nonzero((array < q1 - spread) | (array > q3 + spread)))


def summarize(values: Sequence[float]) -> Summary:
    """Median, mean, spread, a 95% bootstrap CI of the median and the outlier count."""
    array = _as_array(values)
    median = float(np.median(array))
    mean = float(np.mean(array))
    if array.size == 1:
        return Summary(n=1, median=median, mean=mean, stdev=math.nan, cv=math.nan,
                       ci_low=median, ci_high=median, outliers=0)
    stdev = float(np.std(array, ddof=1))
    cv = stdev / mean if mean != 0 else math.nan
    ci_low, ci_high = _percentile_interval(_bootstrap_medians(array, _rng()))
    return Summary(n=int(array.size), median=median, mean=mean, stdev=stdev, cv=cv,
                   ci_low=ci_low, ci_high=ci_high, outliers=tukey_outliers(array))


def _percent_change(baseline: np.ndarray | float, treatment: np.ndarray | float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.asarray(treatment) / np.asarray(baseline) - 1.0) * 100.0


def overhead(baseline: Sequence[float], treatment: Sequence[float]) -> Overhead:
    """Ratio of medians as a percentage, its 95% bootstrap CI and a Mann–Whitney U p-value.

    Both groups are resampled independently (they come from different trials) from one
    seeded generator, so the interval is reproducible.
    """
    base = _as_array(baseline)
    treat = _as_array(treatment)
    pct = float(_percent_change(np.median(base), np.median(treat)))
    rng = _rng()
    ratios = _percent_change(_bootstrap_medians(base, rng), _bootstrap_medians(treat, rng))
    finite = ratios[np.isfinite(ratios)]
    ci_low, ci_high = _percentile_interval(finite) if finite.size else (math.nan, math.nan)
    p_value = float(mannwhitneyu(treat, base, alternative="two-sided").pvalue)
    return Overhead(pct=pct, ci_low=ci_low, ci_high=ci_high, p_value=p_value,
                    n_baseline=int(base.size), n_treatment=int(treat.size))


def geomean(values: Sequence[float]) -> float:
    """Geometric mean, the composite TPC-H uses so one long query cannot dominate the others.
    Values must be positive."""
    array = _as_array(values)
    if np.any(array <= 0):
        raise ValueError("geometric mean needs positive values")
    return float(np.exp(np.mean(np.log(array))))


def is_noisy(cv: float) -> bool:
    return not math.isnan(cv) and cv > NOISY_CV


def noise_advice(cv: float) -> str:
    """What to do about a noisy cell, in plain words."""
    return (f"CV {cv * 100:.1f}% > {NOISY_CV * 100:g}%: raise repetitions, "
            'use cache = "cold" or quiet the machine')
