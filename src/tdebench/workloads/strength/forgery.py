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

CBC does not keep that layout byte for byte: a plaintext block is the decrypted ciphertext block
XORed with the ciphertext block before it (the IV for a page's first block). XORing the
difference into the ciphertext block *before* the value's first block changes the value's bytes in
that block exactly and garbles the block before entirely (`chained_change`). The forgery then
changes only the value's characters in its first block (`block_share`), and lands where the garbled
block is one the engine does not read: the twin tells which value has a block of zeros before its
first one (`unused_before`: free space in the page, as SQLite leaves between its cell pointers and
its cells). A page's first block cannot be changed this way: its IV is not in the file (SQLite3MC
derives it from the page number) and a `CBC_BLOCK` before the page's cipher start is the previous
page's, encrypted under another IV.

A column layer seals each value in a message of its own (pgcrypto: OpenPGP, CFB with an MDC), at an
offset no twin tells: the engine gives the row's message as stored and where the value lies in it
(`Database.sealed_value`), the message is found in the file, and the difference is XORed into the
value's last CFB block (`cfb_tail`, `forged_tail`), so that only the MDC after it is garbled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tdebench.engines.base import PageLayout, PlainChecksum, SealedValue
from tdebench.workloads.strength import tamper

DIRECTORY = "strength-forgery"  # in the trial's workspace: the unencrypted twin, removed after
UNLANDED = "the data reads as written: the change did not land"
PREFIX = "FORGED::"  # the new value: the old one with its first characters replaced by this


CBC_BLOCK = 16  # bytes of an AES block: what a CBC forgery garbles before the value


def forged(old: str, count: int = len(PREFIX)) -> str:
    """The value the forgery writes instead of `old`: as long, and unlike it; only its first
    `count` characters changed (PREFIX, cut to them), as a CBC forgery can change only those in
    one block."""
    head = PREFIX[:count]
    return head + old[len(head):]


def chains(mode: str) -> bool:
    """Whether the mode chains blocks as CBC does (SQLCipher's "CBC+HMAC-SHA512" included: its
    HMAC must then refuse the change)."""
    return mode.upper().startswith("CBC")


def forged_tail(old: str, count: int) -> str:
    """The value a forgery of a sealed value writes instead of `old`: its last `count` characters
    (at most PREFIX's) replaced by PREFIX's first ones."""
    head = PREFIX[:min(count, len(PREFIX))]
    return old[:len(old) - len(head)] + head


def cfb_tail(sealed: SealedValue) -> int:
    """How many of a sealed value's bytes lie in the CFB block holding its last byte. Under CFB a
    ciphertext byte XORed changes its plaintext byte alike and garbles the whole next block (whose
    key stream is the encryption of this one): changed there, the value reads exactly as forged and
    only what follows it is garbled (in an OpenPGP message: its MDC, which then fails)."""
    end = sealed.value_at + sealed.value_bytes - sealed.stream_at
    return min(sealed.value_bytes, (end - 1) % sealed.block_bytes + 1)


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


def offset_of(file: Path, value: str | bytes) -> Found | None:
    """The one offset of `value` (text as UTF-8) in `file`, with the bytes around it; None when it
    is not there verbatim, or there twice."""
    raw, needle = file.read_bytes(), value.encode() if isinstance(value, str) else value
    first = raw.find(needle)
    if first < 0 or raw.find(needle, first + 1) >= 0:
        return None
    return found_at(raw, first, len(needle))


def found_at(raw: bytes, offset: int, length: int) -> Found:
    """The `length` bytes at `offset` of `raw` as found, with the bytes around them."""
    start = max(0, offset - CONTEXT_BYTES)
    return Found(offset, raw[start:offset + length + CONTEXT_BYTES], start)


def offset_in(directory: Path, value: str | bytes) -> tuple[Path, Found] | None:
    """The one file under `directory` that holds `value` (its path relative to `directory`) and
    where (`offset_of`); None when no file holds it verbatim, or more than one does."""
    hits = [(path.relative_to(directory), found) for path in sorted(directory.rglob("*"))
            if path.is_file() and not path.is_symlink() and (found := offset_of(path, value)) is not None]
    return hits[0] if len(hits) == 1 else None


def cipher_start(layout: PageLayout, offset: int) -> int:
    """Where the CBC blocks of the page holding byte `offset` begin (`PageLayout.cbc_blocks_from`,
    0 when it is not known): its first block's IV is not in the file."""
    return layout.page_start(offset) + (layout.cbc_blocks_from or 0)


def block_start(layout: PageLayout, offset: int) -> int:
    """The start of the CBC block holding byte `offset`: blocks count from the page's cipher start."""
    first = cipher_start(layout, offset)
    return first + (offset - first) // CBC_BLOCK * CBC_BLOCK


def _in_first_block(layout: PageLayout, offset: int) -> bool:
    """Whether byte `offset` lies in its page's first CBC block, which no block before it chains."""
    return block_start(layout, offset) - CBC_BLOCK < cipher_start(layout, offset)


def block_share(layout: PageLayout, found: Found, length: int) -> int:
    """How many of the value's `length` bytes lie in the CBC block holding its first byte: the
    bytes one chosen block can change."""
    return min(length, block_start(layout, found.offset) + CBC_BLOCK - found.offset)


def chained_change(layout: PageLayout, found: Found, old: str, new: str) -> tuple[int, bytes]:
    """Where to XOR what, under CBC, to turn `old` into `new` when they differ only in the value's
    first CBC block: the difference, XORed into the block before at the same positions. Raises
    ValueError where that block is the page's first (its IV is not in the file) or the change
    reaches past the block."""
    mask = difference(old, new)
    changed = max((i for i, byte in enumerate(mask) if byte), default=-1) + 1
    if changed > block_share(layout, found, len(mask)):
        raise ValueError("under CBC one block's change must stay in that block")
    at = found.offset - CBC_BLOCK
    if _in_first_block(layout, found.offset):
        raise ValueError("the value starts in its page's first CBC block, whose IV is not in the file")
    return at, mask[:changed]


def unused_before(file: Path, layout: PageLayout, rows: Mapping[str, int], pattern: bytes) -> int | None:
    """The row whose value (each matching `pattern`, `rows` giving its row) has a CBC block of
    zeros only before the block holding its first byte, in the same page: space the page holds
    unused (an engine reads no free space), garbled by a CBC forgery of that value. Of those, the
    one with most of its bytes in that block; None where no value has such a block before it."""
    raw = file.read_bytes()
    best: tuple[int, int] | None = None
    for match in re.finditer(pattern, raw):
        row = rows.get(match.group().decode("ascii"))
        start = block_start(layout, match.start())
        if row is None or _in_first_block(layout, match.start()):
            continue
        if any(raw[start - CBC_BLOCK:start]):
            continue
        share = start + CBC_BLOCK - match.start()
        if best is None or share > best[0]:
            best = (share, row)
    return None if best is None else best[1]


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
