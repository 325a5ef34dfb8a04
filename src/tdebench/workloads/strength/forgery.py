"""A known-plaintext forgery: tdebench knows every byte it wrote, so where an encryption keeps
the plaintext's layout (a stream cipher or CTR without a MAC: the same offsets, ciphertext =
plaintext XOR key stream) it can change one stored value to another of its choice without the
key, by XORing the difference of the two into the ciphertext at the value's offset.

The offset comes from an unencrypted twin: a database of the same engine loaded with the same
rows beside the trial's, in which the value is found verbatim. The trial's file is then XORed
there with (old value XOR new value), read back in a child process (tamper.read_apart) and
restored. The class: `forgeable` when the row reads the new value and every other row as
written; otherwise what a flipped byte's reading would be (tamper.classify), `unchanged` when
the data reads as written (the change did not land). An engine whose twin does not store the
value verbatim (compressed) cannot be forged this way here: `unsupported`, with why. The
baseline's own forgery is the positive control: accepted, the change landed in the data.

A physical backup is forged the same way (step `backup`; the data file's is step `value`): it is
a file of the engine's own format under the same cipher, so a backup of the twin, taken the same
way, gives the value's offset in the trial's backup (`offset_in`); the forged backup is restored
into a fresh database with the trial's key and read back. A copy the engine makes by reading
pages and writing them again (DuckDB, SQLite) is a new file: its offsets come from the twin's
copy, not from the twin's database.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tdebench.engines.base import PageLayout, PlainChecksum
from tdebench.workloads.strength import tamper

DIRECTORY = "strength-forgery"  # in the trial's workspace: the unencrypted twin, removed after
UNLANDED = "the data reads as written: the change did not land"
PREFIX = "FORGED::"  # the new value: the old one with its first characters replaced by this


def forged(old: str) -> str:
    """The value the forgery writes instead of `old`: as long, and unlike it."""
    return PREFIX + old[len(PREFIX):]


def difference(old: str, new: str) -> bytes:
    """What to XOR into the ciphertext to turn `old` into `new` (both as stored: UTF-8)."""
    return bytes(a ^ b for a, b in zip(old.encode(), new.encode(), strict=True))


CONTEXT_BYTES = 64  # the twin's plaintext kept on each side of the value: its checksum's words


@dataclass(frozen=True)
class Found:
    """Where the unencrypted twin holds the value, and its plaintext around it (`around`, from `start`)."""

    offset: int
    around: bytes
    start: int


def offset_of(file: Path, value: str) -> Found | None:
    """The one offset of `value` in `file`, with the bytes around it; None when it is not there
    verbatim, or there twice."""
    raw, needle = file.read_bytes(), value.encode()
    first = raw.find(needle)
    if first < 0 or raw.find(needle, first + 1) >= 0:
        return None
    start = max(0, first - CONTEXT_BYTES)
    return Found(first, raw[start:first + len(needle) + CONTEXT_BYTES], start)


def offset_in(directory: Path, value: str) -> tuple[Path, Found] | None:
    """The one file under `directory` that holds `value` (its path relative to `directory`) and
    where (`offset_of`); None when no file holds it verbatim, or more than one does."""
    hits = [(path.relative_to(directory), found) for path in sorted(directory.rglob("*"))
            if path.is_file() and not path.is_symlink() and (found := offset_of(path, value)) is not None]
    return hits[0] if len(hits) == 1 else None


def checksum_change(layout: PageLayout, checksum: PlainChecksum, found: Found, new: bytes) -> tuple[int, bytes]:
    """Where the page's checksum of its plaintext is stored and what to XOR into it once `new`
    replaces the value at `found.offset`: the change of the checksum's words that hold the value,
    their plaintext taken from the twin (the value's neighbours included), aligned as the trial's
    page aligns them. Under a stream cipher or CTR the XOR lands in the plaintext checksum as it
    lands in the value; in the baseline it is the checksum itself."""
    page = layout.page_start(found.offset)
    base, word = page + checksum.data_from, checksum.word_bytes
    low = base + (found.offset - base) // word * word
    high = base + -(-(found.offset + len(new) - base) // word) * word
    before = found.around[low - found.start:high - found.start]
    if len(before) != high - low:
        raise ValueError("the twin's plaintext around the value is shorter than the checksum's words")
    at = found.offset - low
    return page + checksum.at, checksum.change(before, before[:at] + new + before[at + len(new):])


def classify(reading: tamper.Reading, authenticated: bool) -> str:
    """The class of a forgery's reading: SAME means the rows read exactly as forged."""
    if reading.status == tamper.SAME:
        return tamper.FORGEABLE
    if reading.status == tamper.DIFFERS and reading.said == UNLANDED:
        return tamper.UNCHANGED
    return tamper.classify(reading, authenticated)
