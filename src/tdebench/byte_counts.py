"""The entropy of many blocks at once, compiled by numba: every block that `tdebench verify`
measures (see verify._Entropy).

numpy has no histogram per row: one np.bincount per 4 KiB block ran at 100 to 200 MiB/s, most of
it the call and bincount's cast of every byte to a 64-bit index, and every whole-array trick
tried (one bincount of block-tagged keys, np.add.at, a stable sort per row, scipy's sparse
sum of duplicates) stayed under 400 MiB/s. This loop reads a 32-bit word at a time and counts
its four bytes into four histograms, so that neighbouring equal bytes do not wait on one
counter: 1.5 to 1.7 times the speed of four interleaved byte loads, and well over 1 GB/s
(`bench/verify_scan.py`, "entropy, every").

A module of its own, imported only when a read has many blocks to measure: importing numba takes
about half a second, and the first call compiles the loop (a few seconds, once: `cache=True`
keeps the machine code on disk, beside this file or in numba's cache directory).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)  # type: ignore[untyped-decorator]  # numba ships no types
def _bits(words: np.ndarray, picked: np.ndarray, c_log_c: np.ndarray, block_size: int,
          log2_size: float) -> np.ndarray:  # pragma: no cover - compiled, not traced
    whole, size = words.shape
    out = np.zeros(np.count_nonzero(picked), np.float64)
    first = np.zeros(256, np.uint32)
    second = np.zeros(256, np.uint32)
    third = np.zeros(256, np.uint32)
    fourth = np.zeros(256, np.uint32)
    counts = np.zeros(256, np.uint32)
    done = 0
    for i in range(whole):
        if not picked[i]:
            continue
        row = words[i]
        any_set = np.uint32(0)
        for j in range(size):  # an OR of every word, vectorised: a free page costs no histogram
            any_set |= row[j]
        if not any_set:
            continue
        first[:] = 0
        second[:] = 0
        third[:] = 0
        fourth[:] = 0
        for j in range(size):  # each byte of a word in a histogram of its own: no wait on one counter
            word = row[j]
            first[word & 0xFF] += 1
            second[(word >> 8) & 0xFF] += 1
            third[(word >> 16) & 0xFF] += 1
            fourth[word >> 24] += 1
        for value in range(256):
            counts[value] = first[value] + second[value] + third[value] + fourth[value]
        # four sums side by side, each over one value in four in order, as verify._block_bits adds
        # with numpy: 8 to 10% faster than one sum, whose 256 additions each wait on the one before
        lane0 = lane1 = lane2 = lane3 = 0.0
        for value in range(0, 256, 4):
            lane0 += c_log_c[counts[value]]
            lane1 += c_log_c[counts[value + 1]]
            lane2 += c_log_c[counts[value + 2]]
            lane3 += c_log_c[counts[value + 3]]
        out[done] = log2_size - ((lane0 + lane1) + (lane2 + lane3)) / block_size
        done += 1
    return out[:done]


def block_bits(blocks: np.ndarray, picked: np.ndarray, c_log_c: np.ndarray) -> np.ndarray:
    """The entropy, bits per byte, of each row of `blocks` (uint8, one block a row, of a multiple
    of 4 bytes) where `picked` is true and that is not all zero, in order: log2(n) minus the sum
    of c_log_c[count] / n over the byte values (`c_log_c`: c * log2(c) for c = 0 .. n), added as
    verify._block_bits adds them."""
    size = blocks.shape[1]
    if size % 4:
        raise ValueError(f"blocks of {size} bytes: the loop counts whole 4-byte words")
    words = np.ascontiguousarray(blocks).view(np.uint32)
    words.flags.writeable = False  # one compiled version for a read's bytearray and a bytes object alike
    # log2 by numpy, as verify._block_bits takes it: the same bits, whichever library numba calls
    return _bits(words, np.asarray(picked, dtype=np.bool_), c_log_c, size, float(np.log2(size)))
