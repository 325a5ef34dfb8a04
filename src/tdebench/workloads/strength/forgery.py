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
"""

from __future__ import annotations

from pathlib import Path

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


def offset_of(file: Path, value: str) -> int | None:
    """The one offset of `value` in `file`; None when it is not there verbatim, or there twice."""
    raw, needle = file.read_bytes(), value.encode()
    first = raw.find(needle)
    return first if first >= 0 and raw.find(needle, first + 1) < 0 else None


def classify(reading: tamper.Reading, authenticated: bool) -> str:
    """The class of a forgery's reading: SAME means the rows read exactly as forged."""
    if reading.status == tamper.SAME:
        return tamper.FORGEABLE
    if reading.status == tamper.DIFFERS and reading.said == UNLANDED:
        return tamper.UNCHANGED
    return tamper.classify(reading, authenticated)
