"""Statistics on raw measurements: medians with bootstrap intervals, overhead, significance.

Medians rather than means because a benchmark's timings are skewed (one slow run from a
cache miss or a neighbour's burst must not move the figure); bootstrap intervals because
they need no assumption about that skewed distribution. Outliers are counted, never
dropped. Every random draw uses a fixed seed so a report is byte-for-byte reproducible
from the same raw data.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from scipy.special import stdtr, stdtrit

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
CONFIDENCE = 0.95
SIGNIFICANCE = 0.05
NOISY_CV = 0.05
"""A cell whose coefficient of variation exceeds 5% is too noisy to resolve the few-percent
overheads encryption at rest typically costs."""
MIN_BOOTSTRAP = 3
"""The fewest values per group whose bootstrap interval is read as an interval between runs
(`log_standard_error`, `tdebench compare`): with two values per group the 95% interval of an
A/A ratio of medians excludes 0 about a third of the time, with three about 9%, with five 4%
(docs/method/statistics.md, “Comparing two runs”)."""
def noise_advice(order: str) -> str:
    """What to do about noisy cells, in plain words: lockstep only to a run that did not use it
    ("" where the order is not known)."""
    if order == "lockstep":
        return "raise repetitions or (tpch) passes, or quiet the machine (the run already ran in lockstep)"
    return 'raise repetitions or (tpch) passes, use order = "lockstep", or quiet the machine'


_BATCH_ELEMENTS = 4_000_000
"""Bootstrap batches are cut so one resampled block stays near 32 MB of floats."""


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


NO_RATIO = "no ratio: the baseline's median is 0"
"""`Overhead.reason` where the baseline's median is 0: a percentage of it would be infinite."""
ONE_VALUE = "no interval: one measurement on a side"
"""`Overhead.reason` where a side has one value (a run of one round): the ratio stands, but a
resampled interval of one value would be the point itself, a precision nothing measured."""

UNPAIRED = "unpaired"
PAIRED = "paired"
BETWEEN_RUNS = "between runs"
"""How an overhead was estimated: `paired` from within-round ratios (interleaved rounds as
blocks), `unpaired` from the two groups' medians (sequential order, or no common rounds);
`between runs` is the change of one overhead from one run to another (`overhead_change`)."""


@dataclass(frozen=True)
class Overhead:
    """Treatment relative to baseline, in percent.

    Unpaired (`method` "unpaired"): the ratio of the two medians; `p_value` is the two-sided
    Mann–Whitney U p-value exactly as scipy gives it. With few repetitions it cannot get
    small: with n=3 against n=3 (no ties, exact test) the smallest possible p is 0.1. With ties
    (e.g. identical database sizes) scipy falls back to the normal approximation.

    Paired (`method` "paired", see `paired_overhead`): the geometric mean of the
    within-round ratios; `p_value` is a paired t-test on their logarithms; `n_baseline` and
    `n_treatment` both count the rounds.

    Between runs (`method` "between runs", see `overhead_change`): how one overhead changed
    from a run to another, as the ratio of their ratios; `n_baseline` and `n_treatment` are the
    two overheads' own `n_treatment`.
    """

    pct: float
    ci_low: float
    ci_high: float
    p_value: float
    n_baseline: int
    n_treatment: int
    method: str = UNPAIRED
    # paired only: the standard deviation of the round log ratios, about the CV of the ratio
    # between rounds: the noise the CI is made of (the configurations' own spread between rounds
    # cancels in the pairing); NaN unpaired
    spread: float = math.nan
    # why there is no overhead (NaN figures), when the groups were there but give no ratio
    # (NO_RATIO), or no interval (ONE_VALUE); "" otherwise
    reason: str = ""

    @property
    def measured_once(self) -> bool:
        """One measurement (or one round) on a side: a ratio, but no interval and no test of it."""
        return min(self.n_treatment, self.n_baseline) < 2

    @property
    def half_width(self) -> float:
        """Half the CI's width relative to the ratio, in percent: the precision a plan's
        `target_ci_pct` asks for (NaN when there is no interval). Taken on the log scale, where
        the paired interval is symmetric, so ±2% means the same for a 1% overhead as for a
        threefold slowdown: +219% [+206, +232] is ±4.2% of its ratio 3.19 (13 points). For
        small overheads it is about half the width in points."""
        low, high = 1.0 + self.ci_low / 100.0, 1.0 + self.ci_high / 100.0
        if math.isnan(low) or math.isnan(high):
            return math.nan
        if low <= 0.0:  # a bootstrap bound at or below -100%: no finite ratio
            return math.inf
        return (math.sqrt(high / low) - 1.0) * 100.0

    @property
    def noisy(self) -> bool:
        """A paired comparison whose round ratios spread more than NOISY_CV (unpaired: never;
        there the groups' own CVs say it)."""
        return is_noisy(self.spread)

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


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _draw_counts(indices: np.ndarray, n: int) -> np.ndarray:
    """How often each of n values is drawn in each resample (a row of `indices`): all that a
    resample's median needs (`_bootstrap_medians`), in the smallest integer type that holds n."""
    resamples = indices.shape[0]
    flat = (np.arange(resamples)[:, None] * n + indices).reshape(-1)
    return _frozen(np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(np.min_scalar_type(n)))


@functools.lru_cache(maxsize=128)
def _summary_draws(n: int) -> np.ndarray:
    """The resamples of `summarize` for a group of n values, as `_draw_counts`: the first draw
    of a freshly seeded generator, so they depend on n alone and are drawn once per size."""
    return _draw_counts(_rng().integers(0, n, size=(BOOTSTRAP_RESAMPLES, n)), n)


@functools.lru_cache(maxsize=128)
def _pair_draws(n_baseline: int, n_treatment: int) -> tuple[np.ndarray, np.ndarray]:
    """The resamples of `overhead`: baseline then treatment from one seeded generator."""
    rng = _rng()
    base = rng.integers(0, n_baseline, size=(BOOTSTRAP_RESAMPLES, n_baseline))
    treat = rng.integers(0, n_treatment, size=(BOOTSTRAP_RESAMPLES, n_treatment))
    return _draw_counts(base, n_baseline), _draw_counts(treat, n_treatment)


def _bootstrap_medians(rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row of `rows` (groups of n values), the median of each resample `counts` draws
    (`_draw_counts`), bit for bit numpy's median of the resampled values, shape (rows,
    resamples). No resample is sorted: with a row's values in order, a resample's k-th smallest
    value is the first whose running count of draws exceeds k, so walking the values in order
    once and counting, per resample, the places whose running count is still k or less finds it."""
    size, middle = rows.shape[-1], rows.shape[-1] // 2
    order = np.argsort(rows, axis=-1)  # NaN last
    valid = size - np.count_nonzero(np.isnan(rows), axis=-1)
    has_nan = bool((valid < size).any())
    by_value = np.ascontiguousarray(counts.T)  # a value's draws in every resample
    shape = (rows.shape[0], counts.shape[0])
    running, upper, lower, unfinished = (np.zeros(shape, counts.dtype) for _ in range(4))
    for place in range(size):
        running += by_value[order[:, place]]
        upper += running <= middle
        if size % 2 == 0:
            lower += running <= middle - 1
        if has_nan:
            unfinished += running < size
    ordered = np.take_along_axis(rows, order, axis=-1)

    def at(places: np.ndarray) -> np.ndarray:
        return np.take_along_axis(ordered, places.astype(np.intp), axis=-1)

    # + 0.0: numpy's median is a mean, a sum that starts at +0.0, so it never gives -0.0
    medians = at(upper) + 0.0 if size % 2 else (at(lower) + at(upper)) / 2.0 + 0.0
    medians[unfinished >= valid[:, None]] = math.nan  # numpy: a resample that draws a NaN has a NaN median
    return cast(np.ndarray, medians)


def _percentile_interval(samples: np.ndarray) -> tuple[float, float]:
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def _percentile_intervals(samples: np.ndarray) -> np.ndarray:
    """`_percentile_interval` of every row at once: shape (rows, 2)."""
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    return cast(np.ndarray, np.percentile(samples, [tail, 100.0 - tail], axis=-1).T)  # numpy types it Any


def _chunks(indices: list[int], width: int) -> list[list[int]]:
    """`indices` cut so that a block of resamples of `width` values stays a bounded size."""
    step = max(1, _BATCH_ELEMENTS // (BOOTSTRAP_RESAMPLES * max(width, 1)))
    return [indices[i:i + step] for i in range(0, len(indices), step)]


def _tukey_outliers(rows: np.ndarray) -> np.ndarray:
    """Per row, how many values lie outside the Tukey fences Q1 - 1.5 IQR and Q3 + 1.5 IQR."""
    q1, q3 = np.percentile(rows, [25.0, 75.0], axis=-1, keepdims=True)
    spread = 1.5 * (q3 - q1)
    return cast(np.ndarray, np.count_nonzero((rows < q1 - spread) | (rows > q3 + spread), axis=-1))  # typed Any


def median(values: Sequence[float]) -> float:
    """`np.median` of a few values, bit for bit, without numpy's cost per call (a run's passes
    are thousands of groups of two or three values)."""
    ordered = sorted(float(value) for value in values)
    if not ordered or any(math.isnan(value) for value in ordered):  # numpy's own NaN (and error)
        return float(np.median(values))
    middle = len(ordered) // 2
    # + 0.0: numpy's median is a mean, a sum that starts at +0.0, so it never gives -0.0
    if len(ordered) % 2:
        return ordered[middle] + 0.0
    return (ordered[middle - 1] + ordered[middle]) / 2.0 + 0.0


def summarize(values: Sequence[float]) -> Summary:
    """Median, mean, spread, a 95% bootstrap CI of the median and the outlier count."""
    return summarize_many([values])[0]


def summarize_many(groups: Sequence[Sequence[float]]) -> list[Summary]:
    """`summarize` of every group, the same figures, computed for all groups of one size at once
    (a run has thousands of small cells): numpy's figures of each row of them are bit for bit
    those of each group alone."""
    arrays = [_as_array(values) for values in groups]
    by_size: dict[int, list[int]] = defaultdict(list)
    for index, array in enumerate(arrays):
        by_size[array.size].append(index)
    summaries: dict[int, Summary] = {}
    for size, members in by_size.items():
        for chunk in _chunks(members, size):
            summaries.update(zip(chunk, _summaries(np.stack([arrays[index] for index in chunk]))))
    return [summaries[index] for index in range(len(arrays))]


def _summaries(rows: np.ndarray) -> list[Summary]:
    """The `Summary` of every row of `rows` (groups of one size)."""
    medians, means = np.median(rows, axis=-1).tolist(), np.mean(rows, axis=-1).tolist()
    size = rows.shape[-1]
    if size == 1:  # spread unknown, the interval the value itself
        return [Summary(n=1, median=median, mean=mean, stdev=math.nan, cv=math.nan, ci_low=median, ci_high=median,
                        outliers=0) for median, mean in zip(medians, means)]
    stdevs = np.std(rows, ddof=1, axis=-1).tolist()
    bounds = _percentile_intervals(_bootstrap_medians(rows, _summary_draws(size))).tolist()
    return [Summary(n=size, median=median, mean=mean, stdev=stdev, cv=stdev / mean if mean != 0 else math.nan,
                    ci_low=low, ci_high=high, outliers=outliers)
            for median, mean, stdev, (low, high), outliers
            in zip(medians, means, stdevs, bounds, _tukey_outliers(rows).tolist())]


def _percent_change(baseline: np.ndarray | float, treatment: np.ndarray | float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # numpy types the quotient Any
        return cast(np.ndarray, (np.asarray(treatment) / np.asarray(baseline) - 1.0) * 100.0)


def overhead(baseline: Sequence[float], treatment: Sequence[float]) -> Overhead:
    """Ratio of medians as a percentage, its 95% bootstrap CI and a Mann–Whitney U p-value;
    NaN figures with `reason` NO_RATIO when the baseline's median is 0; with one value on a side
    the ratio and NaN for the interval and p (`reason` ONE_VALUE).

    Both groups are resampled independently (they come from different trials) from one
    seeded generator, so the interval is reproducible.
    """
    return overheads([(baseline, treatment)])[0]


def _has_ties(base: np.ndarray, treat: np.ndarray) -> bool:
    both = np.concatenate([base, treat])
    return np.unique(both).size < both.size


def _mann_whitney(bases: np.ndarray, treats: np.ndarray, ties: bool) -> np.ndarray:
    """Two-sided p-values, row by row, exactly as `mannwhitneyu(treat, base)` chooses its
    method for one pair ("auto": exact for small groups without ties); rows must agree on
    ties so the whole batch takes the method each row would take alone."""
    n_base, n_treat = bases.shape[1], treats.shape[1]
    method: Literal["asymptotic", "exact"] = "asymptotic" if (n_base > 8 and n_treat > 8) or ties else "exact"
    from scipy.stats import mannwhitneyu  # scipy.stats takes a second to import: on first need, unpaired only

    result = mannwhitneyu(treats, bases, alternative="two-sided", axis=-1, method=method)
    return np.atleast_1d(result.pvalue)


def overheads(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[Overhead]:
    """`overhead` of every (baseline, treatment) pair, the same figures, computed in
    vectorized batches of pairs with equal group sizes; a pair without a ratio (NO_RATIO: most of
    a run's unpaired pairs, bytes a test never read or wrote) or with one value on a side
    (ONE_VALUE) is neither resampled nor tested."""
    arrays = [(_as_array(base), _as_array(treat)) for base, treat in pairs]
    batches: dict[tuple[int, int, bool], list[int]] = defaultdict(list)
    results: dict[int, Overhead] = {}
    for index, (base, treat) in enumerate(arrays):
        if np.median(base) == 0.0:  # no ratio: NaN with the reason, never an infinite percentage
            results[index] = Overhead(pct=math.nan, ci_low=math.nan, ci_high=math.nan, p_value=math.nan,
                                      n_baseline=int(base.size), n_treatment=int(treat.size), reason=NO_RATIO)
        elif min(base.size, treat.size) < 2:  # the ratio alone: nothing to resample or test
            results[index] = Overhead(pct=float(_percent_change(np.median(base), np.median(treat))), ci_low=math.nan,
                                      ci_high=math.nan, p_value=math.nan, n_baseline=int(base.size),
                                      n_treatment=int(treat.size), reason=ONE_VALUE)
        else:
            batches[(base.size, treat.size, _has_ties(base, treat))].append(index)
    for (n_base, n_treat, ties), members in batches.items():
        base_draws, treat_draws = _pair_draws(n_base, n_treat)
        for chunk in _chunks(members, max(n_base, n_treat)):
            bases = np.stack([arrays[index][0] for index in chunk])
            treats = np.stack([arrays[index][1] for index in chunk])
            # one baseline is compared with every encryption: resample each distinct one once
            distinct, which = np.unique(bases, axis=0, return_inverse=True)
            base_medians = _bootstrap_medians(distinct, base_draws)[which.reshape(-1)]
            ratios = _percent_change(base_medians, _bootstrap_medians(treats, treat_draws))
            finite_rows = np.all(np.isfinite(ratios), axis=1)
            bounds = np.full((len(chunk), 2), math.nan)
            if finite_rows.any():
                bounds[finite_rows] = _percentile_intervals(ratios[finite_rows])
            for row in np.flatnonzero(~finite_rows).tolist():
                finite = ratios[row][np.isfinite(ratios[row])]
                if finite.size:
                    bounds[row] = _percentile_interval(finite)
            p_values = _mann_whitney(bases, treats, ties)
            for row, index in enumerate(chunk):
                base, treat = arrays[index]
                results[index] = Overhead(
                    pct=float(_percent_change(np.median(base), np.median(treat))),
                    ci_low=float(bounds[row, 0]), ci_high=float(bounds[row, 1]),
                    p_value=float(p_values[row]), n_baseline=int(base.size),
                    n_treatment=int(treat.size))
    return [results[index] for index in range(len(arrays))]


# --- paired rounds --------------------------------------------------------------------
#
# With `order = "interleaved"` a round runs every configuration once, so the baseline and an
# encryption measured in the same round share that round's state of the machine (drift,
# neighbours, thermal state). Their ratio cancels it: the overhead is estimated from these
# within-round ratios, on log scale, with the rounds as the independent units.
#
# A round may hold several paired units: the 22 queries of a power test (a composite), or
# the S streams of a throughput step. They make one log ratio per round; the interval and
# the test then work on the rounds. Resampling units within rounds as well (Kalibera & Jones'
# hierarchical bootstrap) counts the units' noise twice, since it is already part of the
# rounds' spread, and a percentile bootstrap over three to five rounds cannot reach beyond
# their range; bench/paired_intervals.py simulates both failures. What stays calibrated at
# every number of rounds, with or without trial-to-trial effects, is Student's t on the
# round log ratios: a t-interval, and the paired t-test whose verdict always agrees with it.
# (A Wilcoxon signed-rank or a sign-flip permutation test over n rounds cannot go below
# 2/2^n, so with fewer than six rounds they could never call anything significant.)

LOG_MEAN = "log-mean"
SUM_RATIO = "sum-ratio"
"""How a round's units make its log ratio: `log-mean`, the mean of the units' log ratios
(a geometric-mean composite, every query weighing alike); `sum-ratio`, the log of the ratio of
the round's totals (any other cell: streams' times add up, and a zero unit is allowed)."""


def round_logs(base: np.ndarray, treat: np.ndarray, how: str) -> np.ndarray:
    """Per round (rows; columns are units), the log ratio treatment ÷ baseline."""
    base, treat = np.asarray(base, dtype=float), np.asarray(treat, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):  # numpy types both Any
        if how == LOG_MEAN:
            return cast(np.ndarray, np.mean(np.log(treat) - np.log(base), axis=-1))
        return cast(np.ndarray, np.log(np.sum(treat, axis=-1)) - np.log(np.sum(base, axis=-1)))


def pairable(base: np.ndarray, treat: np.ndarray, how: str) -> bool:
    """Whether (rounds, units) arrays of equal shape, two rounds at least, give every round a
    finite log ratio."""
    return paired_overheads([(base, treat, how)])[0] is not None


def paired_overhead(baseline: np.ndarray, treatment: np.ndarray, how: str = SUM_RATIO) -> Overhead:
    """The overhead from paired rounds: the geometric mean of the within-round ratios, its 95%
    t-interval and the two-sided paired t-test's p-value, all on the round log ratios.

    `baseline` and `treatment` are (rounds, units) arrays, row r holding round r's units (the
    queries of a composite, the streams of a step, or one value) with unit u of the treatment
    paired with unit u of the baseline; they must be `pairable`. Without spread (every round
    alike) the interval is the point and p is NaN.
    """
    compared = paired_overheads([(baseline, treatment, how)])[0]
    if compared is None:
        raise ValueError("cannot pair: equal (rounds ≥ 2, units) shapes with finite round ratios are needed")
    return compared


def paired_overheads(pairs: Sequence[tuple[np.ndarray, np.ndarray, str]]) -> list[Overhead | None]:
    """`paired_overhead` of every (baseline, treatment, how), None for one that is not `pairable`:
    the same figures bit for bit, computed for all pairs of one shape and `how` at once (a run
    compares thousands of cells, most of them a value or a few per round)."""
    arrays = [(np.asarray(base, dtype=float), np.asarray(treat, dtype=float), how) for base, treat, how in pairs]
    batches: dict[tuple[tuple[int, ...], str], list[int]] = defaultdict(list)
    for index, (base, treat, how) in enumerate(arrays):
        if base.shape == treat.shape and base.ndim == 2 and base.shape[0] >= 2:
            batches[(base.shape, how)].append(index)
    results: list[Overhead | None] = [None] * len(arrays)
    for ((rounds, _), how), members in batches.items():
        base = np.stack([arrays[index][0] for index in members])
        treat = np.stack([arrays[index][1] for index in members])
        logs = round_logs(base, treat, how)  # (pairs, rounds)
        usable = np.all(np.isfinite(logs), axis=-1)
        if how == LOG_MEAN:
            usable &= np.all(base > 0, axis=(1, 2)) & np.all(treat > 0, axis=(1, 2))
        with np.errstate(invalid="ignore"):  # the rows not usable: their NaN is never read
            means = np.mean(logs, axis=-1).tolist()
            deviations = np.std(logs, ddof=1, axis=-1).tolist()
        critical = _critical(rounds - 1)
        for row, index in enumerate(members):
            if usable[row]:
                results[index] = _paired(means[row], deviations[row], rounds, critical)
    return results


def _paired(mean: float, deviation: float, rounds: int, critical: float) -> Overhead:
    """A paired overhead from its round log ratios' mean and standard deviation."""
    if deviation == 0.0:
        low = high = mean
        p = math.nan
    else:
        standard_error = deviation / math.sqrt(rounds)
        half = critical * standard_error
        low, high = mean - half, mean + half
        p = _two_sided_p(abs(mean) / standard_error, rounds - 1)
    return Overhead(pct=math.expm1(mean) * 100.0, ci_low=math.expm1(low) * 100.0,
                    ci_high=math.expm1(high) * 100.0, p_value=p, n_baseline=rounds,
                    n_treatment=rounds, method=PAIRED, spread=deviation)


def minimum_detectable_effect(compared: Overhead, power: float = 0.8) -> float:
    """The smallest overhead, in percent, that a paired t-test with this comparison's rounds
    and spread would find significant with the given power (for a placebo: the run's noise
    floor). NaN without an interval or with one round."""
    if compared.method != PAIRED:
        return math.nan
    standard_error, df = log_standard_error(compared)
    if math.isnan(standard_error):
        return math.nan
    return math.expm1((_critical(df) + float(stdtrit(df, power))) * standard_error) * 100.0


def _critical(df: float) -> float:
    """The two-sided critical value of Student's t at CONFIDENCE (the normal's at df = ∞).
    Student's t here and in `_two_sided_p` is scipy.special's, which scipy.stats.t's ppf and sf
    call, bit for bit the same, without scipy.stats's import."""
    return float(stdtrit(df, 1.0 - (1.0 - CONFIDENCE) / 2.0))


def _two_sided_p(t_value: float, df: float) -> float:
    """The two-sided p-value of Student's t at |t| = `t_value`."""
    return float(2.0 * stdtr(df, -t_value))


def log_standard_error(compared: Overhead) -> tuple[float, float]:
    """The standard error of an overhead on log scale, of log(1 + pct/100), and its degrees of
    freedom: what two overheads measured independently need to be compared (`overhead_change`).

    Paired: the t-interval's own, the round log ratios' standard deviation ÷ √rounds, with
    rounds − 1 degrees of freedom. Unpaired: read back from the bootstrap interval as if it
    were normal on log scale, its width ÷ (2 × 1.96), with infinite degrees of freedom. NaN when
    there is no interval: fewer than two rounds, a group of fewer than MIN_BOOTSTRAP values
    (one value's bootstrap interval is the point itself, two values' is far too narrow), or a
    bound that is NaN or at −100%."""
    if compared.method == PAIRED:
        rounds = compared.n_treatment
        if rounds < 2 or math.isnan(compared.spread):
            return math.nan, math.nan
        return compared.spread / math.sqrt(rounds), float(rounds - 1)
    if min(compared.n_baseline, compared.n_treatment) < MIN_BOOTSTRAP or not compared.ci_low > -100.0:
        return math.nan, math.nan
    width = math.log1p(compared.ci_high / 100.0) - math.log1p(compared.ci_low / 100.0)
    return width / 2.0 / _critical(math.inf), math.inf


def overhead_change(before: Overhead, after: Overhead) -> Overhead:
    """How an overhead changed between two independent runs: `after`'s ratio to its baseline ÷
    `before`'s, − 1, in percent, with a 95% interval and a two-sided p-value.

    On log scale the change is the difference of the two log ratios, and being independent
    their standard errors add in quadrature: SE = √(SE_before² + SE_after²) (`log_standard_error`).
    The interval is Student's t with the Welch–Satterthwaite degrees of freedom (normal when
    both are unpaired), back-transformed; p is the matching t-test, so the interval and the
    test agree. Without an interval in either run the change has none (NaN bounds and p);
    when both are exact (no spread) the interval is the point and p is NaN."""
    change = math.log1p(after.pct / 100.0) - math.log1p(before.pct / 100.0)
    (se_before, df_before), (se_after, df_after) = log_standard_error(before), log_standard_error(after)
    standard_error = math.hypot(se_before, se_after)
    low = high = p = math.nan
    if standard_error == 0.0:
        low = high = change
    elif not math.isnan(standard_error):
        shares = sum(se ** 4 / df for se, df in ((se_before, df_before), (se_after, df_after)) if se > 0)
        df = standard_error ** 4 / shares if shares > 0 else math.inf
        half = _critical(df) * standard_error
        low, high = change - half, change + half
        p = _two_sided_p(abs(change) / standard_error, df)
    return Overhead(pct=math.expm1(change) * 100.0, ci_low=math.expm1(low) * 100.0,
                    ci_high=math.expm1(high) * 100.0, p_value=p, n_baseline=before.n_treatment,
                    n_treatment=after.n_treatment, method=BETWEEN_RUNS)


def geomean(values: Sequence[float]) -> float:
    """Geometric mean, the composite TPC-H uses so one long query cannot dominate the others.
    Values must be positive."""
    array = _as_array(values)
    if np.any(array <= 0):
        raise ValueError("geometric mean needs positive values")
    return float(np.exp(np.mean(np.log(array))))


def is_noisy(cv: float) -> bool:
    return not math.isnan(cv) and cv > NOISY_CV
