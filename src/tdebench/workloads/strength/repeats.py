"""Repeated ciphertext: how many 16-byte blocks and pages of a database's files occur more than once.

A table of identical rows puts the same plaintext in many blocks and pages. An encryption
with a fresh nonce or IV per page write turns them into different ciphertext; one that reuses
a nonce or IV per page (or encrypts blocks alone, as ECB does) leaves equal ciphertext for
equal plaintext, which tells whoever holds the files where the data repeats (and, for a
reused CTR or stream key stream, the XOR of two plaintexts). The baseline shows how much the
plaintext itself repeats; random bytes of the same length show what chance alone gives.

Blocks are counted at 16-byte offsets from each file's start, pages at the engine's page
offsets (`Database.page_layout`). Blocks and pages of zeros only are left out: they are
unwritten space (preallocation, freed pages), not ciphertext, and would count as repeats
in every configuration alike.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

BLOCK_BYTES = 16  # an AES block: the unit ECB-like equality shows in
RANDOM_CAP_BYTES = 64 * 1024 * 1024  # the random reference never draws more than this


@dataclass(frozen=True)
class Repeats:
    """Units (blocks or pages) of one size, zeros left out: how many, and how many of them
    have a content that occurs more than once."""

    units: int
    repeated: int

    @property
    def share(self) -> float:
        """The repeated units' share of all (NaN when there are none)."""
        return self.repeated / self.units if self.units else float("nan")


def count(chunks: Iterable[bytes]) -> Repeats:
    """How many of `chunks` (zeros left out) have a content that occurs more than once."""
    seen: Counter[bytes] = Counter(chunk for chunk in chunks if chunk.count(0) != len(chunk))
    return Repeats(sum(seen.values()), sum(n for n in seen.values() if n > 1))


def blocks(data: bytes, size: int = BLOCK_BYTES, start: int = 0) -> Iterable[bytes]:
    """`data` cut into whole units of `size` bytes from offset `start` (a tail shorter is dropped)."""
    view = memoryview(data)
    return (bytes(view[i:i + size]) for i in range(start, len(data) - size + 1, size))


def block_repeats(files: Iterable[Path]) -> Repeats:
    """Repeated 16-byte blocks over every file together: a block equal to one in another file
    (the WAL's copy of a page) counts too."""
    return count(chunk for path in files for chunk in blocks(path.read_bytes()))


def page_repeats(file: Path, first_page: int, page_bytes: int) -> Repeats:
    """Repeated pages of one file, from the first page's offset on."""
    return count(blocks(file.read_bytes(), page_bytes, first_page))


def random_reference(total_bytes: int) -> Repeats:
    """Repeated 16-byte blocks in as many random bytes (capped at RANDOM_CAP_BYTES): chance's share."""
    return count(blocks(os.urandom(min(total_bytes, RANDOM_CAP_BYTES))))
