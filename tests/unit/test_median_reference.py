"""stats._medians, the bootstrap's median of every short row (a sorting network up to
_NETWORK_MAX values, a full sort above), against numpy.median: bit for bit, as its docstring
promises, on random rows of 1 to 50 values, with ties, signed zeros, infinities and NaN (a block
holding a NaN is numpy's own median: NaN in the rows that hold one)."""

from __future__ import annotations

import numpy as np
import pytest

from tdebench.stats import _NETWORK_MAX, _bootstrap_medians, _medians, _sorting_network

SIZES = range(1, 51)
RNG_SEED = 20261124


def _block(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    if kind == "continuous":
        return rng.lognormal(0.0, 1.0, shape)
    if kind == "ties":  # a few distinct values: most rows have repeated ones at the middle
        return rng.integers(1, 4, shape).astype(float)
    if kind == "signed zeros":  # ±0.0 and ties around them: numpy's median is never -0.0
        return rng.choice([-1.5, -0.0, 0.0, 0.0, 2.5], shape)
    if kind == "infinite":
        block = rng.normal(0.0, 1.0, shape)
        block[rng.random(shape) < 0.2] = np.inf
        block[rng.random(shape) < 0.1] = -np.inf
        return block
    if kind == "nan":  # about one row in three holds a NaN
        block = rng.normal(0.0, 1.0, shape)
        rows = rng.random(shape[:-1]) < 0.33
        block[rows, rng.integers(0, shape[-1], rows.sum())] = np.nan
        return block
    raise ValueError(kind)


def _same_bits(ours: np.ndarray, reference: np.ndarray) -> bool:
    return ours.shape == reference.shape and ours.dtype == reference.dtype and ours.tobytes() == reference.tobytes()


@pytest.mark.parametrize("kind", ["continuous", "ties", "signed zeros", "infinite", "nan"])
def test_medians_equal_numpys_bit_for_bit(kind: str) -> None:
    rng = np.random.default_rng([RNG_SEED, len(kind)])
    for size in SIZES:
        for shape in ((9, size), (3, 5, size)):  # rows of a group, and resamples of several groups
            block = _block(rng, kind, shape)
            with np.errstate(invalid="ignore"):  # inf and -inf in the middle: NaN, in both
                ours, reference = _medians(block), np.median(block, axis=-1)
            assert _same_bits(ours, reference), (kind, shape, block, ours, reference)


def test_a_nan_makes_its_row_nan_and_leaves_the_others_as_numpy_has_them() -> None:
    block = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0], [4.0, 4.0, np.nan]])
    ours = _medians(block)
    assert np.isnan(ours[0]) and ours[1] == 2.0 and np.isnan(ours[2])
    assert _same_bits(ours, np.median(block, axis=-1))


def test_the_sorting_network_sorts_every_short_row() -> None:
    """The network itself, on every size it is used for, against np.sort (its output has the
    sorted axis first)."""
    rng = np.random.default_rng(RNG_SEED)
    for size in range(1, _NETWORK_MAX + 1):
        for kind in ("continuous", "ties", "infinite"):
            block = _block(rng, kind, (200, size))
            assert np.array_equal(np.moveaxis(_sorting_network(block), 0, -1), np.sort(block, axis=-1))


def test_bootstrap_medians_are_the_medians_of_the_resamples() -> None:
    rng = np.random.default_rng(RNG_SEED)
    for size in SIZES:
        rows = rng.integers(1, 20, (4, size)).astype(float)  # ties, as timings rounded to a tick have
        indices = rng.integers(0, size, (100, size))
        ours = _bootstrap_medians(rows, indices)
        assert ours.shape == (4, 100)
        assert _same_bits(ours, np.median(rows[:, indices], axis=-1)), size
