"""stats._bootstrap_medians, the median of every resample of a group (read from the group's values
in order and the resample's counts of draws, no resample sorted), against numpy.median of the
resampled values: bit for bit, as its docstring promises, on random groups of 1 to 50 values, with
ties, signed zeros, infinities and NaN (a resample that draws a NaN has numpy's NaN median); and
stats.median, a step's median over its passes, against numpy.median on a few values."""

from __future__ import annotations

import numpy as np
import pytest

from tdebench.stats import _bootstrap_medians, _draw_counts, median

SIZES = range(1, 51)
RNG_SEED = 20261124
RESAMPLES = 100


def _block(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    if kind == "continuous":
        return rng.lognormal(0.0, 1.0, shape)
    if kind == "ties":  # a few distinct values: most resamples have repeated ones at the middle
        return rng.integers(1, 4, shape).astype(float)
    if kind == "signed zeros":  # ±0.0 and ties around them: numpy's median is never -0.0
        return rng.choice([-1.5, -0.0, 0.0, 0.0, 2.5], shape)
    if kind == "infinite":
        block = rng.normal(0.0, 1.0, shape)
        block[rng.random(shape) < 0.2] = np.inf
        block[rng.random(shape) < 0.1] = -np.inf
        return block
    if kind == "nan":  # about one group in three holds a NaN, a few two or only NaN
        block = rng.normal(0.0, 1.0, shape)
        rows = rng.random(shape[:-1]) < 0.33
        block[rows, rng.integers(0, shape[-1], rows.sum())] = np.nan
        block[rng.random(shape) < 0.02] = np.nan
        return block
    raise ValueError(kind)


def _same_bits(ours: np.ndarray, reference: np.ndarray) -> bool:
    return ours.shape == reference.shape and ours.dtype == reference.dtype and ours.tobytes() == reference.tobytes()


@pytest.mark.parametrize("kind", ["continuous", "ties", "signed zeros", "infinite", "nan"])
def test_bootstrap_medians_equal_numpys_medians_of_the_resamples_bit_for_bit(kind: str) -> None:
    rng = np.random.default_rng([RNG_SEED, len(kind)])
    for size in SIZES:
        rows = _block(rng, kind, (9, size))
        indices = rng.integers(0, size, (RESAMPLES, size))
        with np.errstate(invalid="ignore"):  # inf and -inf in the middle: NaN, in both
            ours = _bootstrap_medians(rows, _draw_counts(indices, size))
            reference = np.median(rows[:, indices], axis=-1)
        assert _same_bits(ours, reference), (kind, size, rows, ours, reference)


def test_a_resample_that_draws_a_nan_has_a_nan_median_and_the_others_their_own() -> None:
    rows = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]])
    indices = np.array([[0, 0, 2], [1, 0, 2], [2, 2, 2]])
    ours = _bootstrap_medians(rows, _draw_counts(indices, 3))
    assert ours[0, 0] == 1.0 and np.isnan(ours[0, 1]) and ours[0, 2] == 3.0
    assert ours[1].tolist() == [1.0, 2.0, 3.0]


def test_draw_counts_count_each_value_of_each_resample() -> None:
    counts = _draw_counts(np.array([[0, 0, 2], [1, 1, 1]]), 3)
    assert counts.tolist() == [[2, 0, 1], [0, 3, 0]]


@pytest.mark.parametrize("kind", ["continuous", "ties", "signed zeros", "infinite", "nan"])
def test_median_of_a_few_values_is_numpys_bit_for_bit(kind: str) -> None:
    rng = np.random.default_rng([RNG_SEED, len(kind), 1])
    for size in range(1, 8):  # a step's passes
        for row in _block(rng, kind, (50, size)):
            with np.errstate(invalid="ignore"):
                reference = np.median(row)
            assert _same_bits(np.array(median(row.tolist())), reference), (kind, row)


def test_median_of_integers_is_numpys() -> None:
    for values in ([3, 1], [2**40 + 1, 2**40 + 4, 7], [5]):
        assert _same_bits(np.array(median(values)), np.median(values)), values
