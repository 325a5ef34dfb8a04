"""The at-rest check: is the data that reached the disk really encrypted?

With the database closed, every file it wrote is scanned for the canary strings the
workload inserted, in every encoding an engine may store text in (UTF-8 for most engines,
UTF-16 for some). A canary found on disk is proof of plaintext. A canary *not* found is only
evidence of encryption when the same scan finds it in the unencrypted baseline (the
positive control) and the canary could be read back through the engine (so it was really
written). Beside each canary a marker sits in a column that column-level encryption leaves
readable: under such an encryption the marker must be found (the scan sees the table's rows)
and shows which files hold the other columns' plaintext. Entropy per block is reported as
supporting evidence, never as a trial's verdict: compressed plaintext has high entropy too, and
encrypted files carry low-entropy headers. A trial measures it on a sample of the blocks
(ENTROPY_EVERY); `tdebench verify`, whose verdict without a positive control rests on it, on a
sample large enough to tell which side of ENCRYPTED_LOW_SHARE the files are on but for a chance
of VERDICT_ERROR, and on every block where none is (`verify_paths`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import io
import math
import mmap
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np

from tdebench.results import (NOT_VERIFIED, TRANSIENT_CANARIES, TRANSIENT_CLEAN, TRANSIENT_NONE, FileScan, TrialKey,
                              Verdict)

try:  # Hyperscan's wheel bundles the library, for x86-64 and macOS: elsewhere the numpy sieve serves
    import hyperscan
    HYPERSCAN = True
except ImportError:  # pragma: no cover - on a platform without its wheel
    HYPERSCAN = False

ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be")
CHUNK_BYTES = 4 << 20  # read size: large for throughput, small enough to never hold a big file
MAP_BYTES = 64 << 20
"""A file no process has open for writing is scanned through a memory map of this many bytes at
a time, each under a read lease (see `_mapped`): no copy into a buffer (the scan by reads takes
about 1.1 times as long, `bench/verify_scan.py`), and a writer that comes meanwhile waits one
map's scan at most. A part with a hole is read, not mapped (`_has_hole`)."""
BLOCK_BYTES = 4096  # entropy block: a typical database page
LOW_ENTROPY = 7.0  # bits/byte; ciphertext of a 4 KiB block measures ~7.95
ENTROPY_FIRST_BLOCKS = 256  # the blocks at the start of a file whose entropy is always measured: 1 MiB
ENTROPY_EVERY = 16
"""A trial's scan measures the entropy of one block in this many beyond a file's first
ENTROPY_FIRST_BLOCKS (see `_sampled`): no trial verdict rests on the entropy (`judge`), and the
histograms were half the scan's time. `tdebench verify`, whose verdict does, samples its own way
(`verify_paths`)."""


def canary_encodings(canary: str) -> dict[str, bytes]:
    """The byte patterns `canary` may appear as on disk, by encoding name."""
    if not canary:
        raise ValueError("a canary must not be empty: it would match everywhere")
    return {encoding: canary.encode(encoding) for encoding in ENCODINGS}


def _patterns(canaries: Sequence[str]) -> list[tuple[str, bytes]]:
    return [(encoding, pattern) for canary in canaries
            for encoding, pattern in canary_encodings(canary).items()]


SIEVE_BYTES = 1 << 18  # the piece of a haystack sieved at once: its masks stay in the cache


def _finds(haystack: bytes | bytearray, needle: bytes, start: int = 0) -> Iterator[int]:
    """Every offset from `start` on where `needle` occurs, overlapping ones too, in increasing
    order.

    A needle of three bytes or more is sieved first: numpy marks, a piece of the haystack at a
    time, where its first, middle and last bytes stand at their distances (three vectorised
    compares: about twice as fast as bytes.find over the same bytes), and only those candidates
    are compared whole. A piece with many candidates (look-alikes everywhere) is searched with
    bytes.find instead, so that no haystack costs much more than the find would.
    """
    if len(needle) < 3:
        yield from _find_each(haystack, needle, start, len(haystack))
        return
    data = np.frombuffer(haystack, dtype=np.uint8)
    last, middle = len(needle) - 1, (len(needle) - 1) // 2
    end = len(haystack) - last  # where the needle no longer fits
    for piece in range(start, end, SIEVE_BYTES):
        n = min(SIEVE_BYTES, end - piece)
        sieve = data[piece:piece + n] == needle[0]
        sieve &= data[piece + last:piece + last + n] == needle[last]
        sieve &= data[piece + middle:piece + middle + n] == needle[middle]
        candidates = np.flatnonzero(sieve)
        if len(candidates) > n // 64:
            yield from _find_each(haystack, needle, piece, piece + n + last)
        else:
            yield from (piece + i for i in candidates.tolist() if haystack.startswith(needle, piece + i))


def _find_each(haystack: bytes | bytearray, needle: bytes, start: int, end: int) -> Iterator[int]:
    """Every offset where `needle` lies whole within haystack[start:end], by bytes.find."""
    at = haystack.find(needle, start, end)
    while at != -1:
        yield at
        at = haystack.find(needle, at + 1, end)


class _Folded:
    """One read folded (byte j: bytes 2j | 2j+1; an odd last byte left out; see _SieveMatcher) and
    where each needle occurs in the fold: both made on first need, once per read."""

    def __init__(self, buffer: bytes | bytearray) -> None:
        self.buffer = buffer
        self.fold: bytes | None = None
        self.found: dict[bytes, list[int]] = {}

    def offsets(self, needle: bytes) -> list[int]:
        if needle not in self.found:
            if self.fold is None:
                pairs = np.frombuffer(self.buffer, dtype=np.uint16, count=len(self.buffer) // 2)
                self.fold = (pairs | (pairs >> 8)).astype(np.uint8).tobytes()
            self.found[needle] = list(_finds(self.fold, needle))
        return self.found[needle]


class _SieveMatcher:
    """Counts many patterns in one pass per shared prefix instead of one pass per pattern: the
    search where Hyperscan has no wheel (see `_Matcher`).

    Canaries and markers of one encoding share a prefix ("TDEBENCH-"), so each group's
    prefix is searched once (`_finds`: a numpy sieve, then a compare) and only its few
    occurrences are compared with the members. Counting is bytes.count's: non-overlapping per pattern.

    A UTF-16 prefix ("T\\0D\\0…") holds zero bytes, and a find for it crawls through zeros
    (sparse files, free pages). Its letters sit at one parity with zeros between them, so it is
    looked for in the read *folded*: byte j of the fold is bytes 2j | 2j+1 of the read (one
    vectorised pass, half as long). Wherever the prefix starts, each of its letters but the first
    and the last shares its pair with one of its zeros, so the fold shows those middle letters
    unchanged and in a row: one find for them, in a buffer without the prefix's zeros, serves
    both byte orders and both alignments, and each candidate is checked in the read itself.
    """

    KEY_BYTES = 8  # patterns sharing this many leading bytes are searched together

    def __init__(self, patterns: Sequence[tuple[bool, bytes]]) -> None:
        groups: dict[bytes, list[tuple[bool, bytes]]] = {}
        for is_marker, pattern in patterns:
            groups.setdefault(pattern[:self.KEY_BYTES], []).append((is_marker, pattern))
        # commonprefix of bytes is bytes; typeshed allows its '' for an empty list, which no group is
        prefixes = [cast(bytes, os.path.commonprefix([p for _, p in members])) for members in groups.values()]
        # each group's prefix, how it is searched (`_strided`, decided once) and its members
        self.groups = [(prefix, self._strided(prefix), members) for prefix, members in zip(prefixes, groups.values())]
        self.longest = max((len(p) for _, p in patterns), default=1)

    @staticmethod
    def _strided(prefix: bytes) -> tuple[bytes, int] | None:
        """(the middle letters, the parity of the letters in the prefix) of a prefix whose bytes
        of one parity are all zero and of the other none (UTF-16 of ASCII), with three letters
        or more; else None."""
        for parity in (0, 1):
            letters, zeros = prefix[parity::2], prefix[1 - parity::2]
            if len(letters) >= 3 and b"\0" not in letters and zeros.count(0) == len(zeros):
                return letters[1:-1], parity
        return None

    @staticmethod
    def _starts(buffer: bytes | bytearray, prefix: bytes, strided: tuple[bytes, int] | None, start: int,
                folded: _Folded) -> Iterator[int]:
        """Every offset from `start` on where `prefix` occurs in `buffer`, in increasing order
        (for a strided prefix a few more: the candidates, which `matches` checks anyway);
        `strided` is `_strided(prefix)`, `folded` the read's fold."""
        if strided is None:
            yield from _finds(buffer, prefix, start)
            return
        middle, parity = strided
        for i in folded.offsets(middle):  # the first letter is in the pair before, at either byte of it
            yield from (at for at in (2 * i - 2 - parity, 2 * i - 1 - parity) if at >= start)

    def matches(self, buffer: bytes | bytearray | memoryview, tail: int) -> Iterator[tuple[bool, int]]:
        """(is_marker, offset) of every match in `buffer` that ends past its first `tail`
        bytes (the others were counted in the previous read). A part of a memory map is copied: the
        searches need a bytes object's find."""
        buffer = buffer.tobytes() if isinstance(buffer, memoryview) else buffer
        folded = _Folded(buffer)
        for prefix, strided, members in self.groups:
            # per pattern: where its next match may start (past its last one, and ending past the tail)
            free = {pattern: max(0, tail - len(pattern) + 1) for _, pattern in members}
            for at in self._starts(buffer, prefix, strided, min(free.values()), folded):
                for is_marker, pattern in members:
                    if at >= free[pattern] and buffer.startswith(pattern, at):
                        free[pattern] = at + len(pattern)
                        yield is_marker, at


class _HyperscanMatcher:
    """Counts many patterns in one pass over a read with Hyperscan (Intel's compiled multi-literal
    matcher, SIMD): about 4 times the numpy sieve's speed (`bench/verify_scan.py`, "search").

    Hyperscan reports every occurrence of every pattern, overlapping ones too, in increasing
    order of their ends, so per pattern the starts increase; the callback keeps, per pattern, the
    ones that start past its last kept match and end past the tail, which is exactly what
    `_SieveMatcher` (and bytes.count) counts. The same bytes given twice (a canary also a marker)
    count once, for the first. Each pattern is compiled as a regular expression of escaped bytes
    (Hyperscan's literal API ends a pattern at its first zero byte, which UTF-16 is full of).
    One scratch space per thread: a scan may run in several threads at once (a capture beside the
    trial), and Hyperscan refuses a scratch space that is in use.
    """

    def __init__(self, patterns: Sequence[tuple[bool, bytes]]) -> None:
        unique: dict[bytes, bool] = {}
        for is_marker, pattern in patterns:
            unique.setdefault(pattern, is_marker)
        self.patterns = list(unique)
        self.is_marker = list(unique.values())
        self.longest = max(map(len, self.patterns), default=1)
        self.database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.database.compile(expressions=["".join(f"\\x{b:02x}" for b in p).encode() for p in self.patterns],
                              ids=list(range(len(self.patterns))), elements=len(self.patterns))
        self._local = threading.local()

    def _scratch(self) -> hyperscan.Scratch:
        if not hasattr(self._local, "scratch"):
            self._local.scratch = hyperscan.Scratch(self.database)
        return cast(hyperscan.Scratch, self._local.scratch)

    def matches(self, buffer: bytes | bytearray | memoryview, tail: int) -> Iterator[tuple[bool, int]]:
        """(is_marker, offset) of every match in `buffer` that ends past its first `tail`
        bytes (the others were counted in the previous read)."""
        lengths, is_marker = [len(p) for p in self.patterns], self.is_marker
        free = [max(0, tail - n + 1) for n in lengths]  # per pattern: where its next match may start
        found: list[tuple[bool, int]] = []

        def on_match(pattern: int, _from: int, end: int, _flags: int, _context: object) -> None:
            at = end - lengths[pattern]
            if at >= free[pattern]:
                free[pattern] = end
                found.append((is_marker[pattern], at))

        if self.patterns:
            # its stubs say bytes; any buffer serves, without a copy
            self.database.scan(cast(bytes, buffer), match_event_handler=on_match, scratch=self._scratch())
        return iter(found)


_Matcher: Callable[[Sequence[tuple[bool, bytes]]], _HyperscanMatcher | _SieveMatcher] = (
    _HyperscanMatcher if HYPERSCAN else _SieveMatcher)
"""The search of a scan: Hyperscan where its wheel is installed, else the numpy sieve."""


def _sampled(first: int, count: int, every: int) -> np.ndarray:
    """Which of a file's blocks `first` .. `first + count - 1` get their entropy measured: all
    when `every` is 1; else every one of the file's first ENTROPY_FIRST_BLOCKS (a small file is
    measured whole, as before sampling), and beyond them one in `every` (a power of two), chosen
    by the top bits of the block's index times 2**64 / golden ratio (Fibonacci hashing). That
    choice is fixed, so a scan is repeatable, and unlike "every 8th block" it follows no stride:
    the blocks at any fixed distance apart (one page type per extent, say) are sampled one in
    `every` too, never all or none of them."""
    if every == 1:
        return np.ones(count, dtype=bool)
    index = np.arange(first, first + count, dtype=np.uint64)
    return cast(np.ndarray, (index < ENTROPY_FIRST_BLOCKS) | _hashed(index, every))


def _hashed(index: np.ndarray, every: int) -> np.ndarray:
    """Where `index` (uint64 block numbers) is one of the one in `every` (a power of two) that
    Fibonacci hashing picks: the top log2(every) bits of index * 2**64 / golden ratio all zero.
    The picks at `every` are among those at every // 2."""
    top_bits = np.uint64(every.bit_length() - 1)
    if not top_bits:
        return np.ones(len(index), dtype=bool)
    return cast(np.ndarray, (index * np.uint64(0x9E3779B97F4A7C15)) >> (np.uint64(64) - top_bits) == 0)


ENTROPY_KERNEL_BLOCKS = 256
"""A read with this many blocks to measure or more (`tdebench verify`'s, a file's first MiB) has
their entropy measured by the compiled loop of `byte_counts` (blocks of whole 4-byte words, as
every page size is); fewer, by one np.bincount per block (the same bits), so a scan of small
files never imports numba."""
ENTROPY_HELPERS = min(3, (os.cpu_count() or 1) - 1)
"""The helper threads that measure a read's entropy while the scan's own thread searches it: one
core each beside the scan's, at most 3 (see `_Shares`)."""


def _block_bits(blocks: np.ndarray, picked: np.ndarray, c_log_c: np.ndarray) -> np.ndarray:
    """The entropy, bits per byte, of each of `blocks` where `picked` is true and that is not all
    zero (a free page): log2(n) - sum(c * log2(c)) / n over its n bytes' value counts c, the
    c * log2(c) from `c_log_c`, added in four lanes (byte values 0, 4, 8, … in order; 1, 5, 9, …;
    and so on) and the lanes as (0 + 1) + (2 + 3), so that both ways below give the same bits."""
    size = blocks.shape[1]
    if size % 4 == 0 and np.count_nonzero(picked) >= ENTROPY_KERNEL_BLOCKS:
        from tdebench.byte_counts import block_bits  # numba: imported on first need (see its module)

        return block_bits(blocks, picked, c_log_c)
    return _counted_bits(blocks[picked], c_log_c)


def _counted_bits(chosen: np.ndarray, c_log_c: np.ndarray) -> np.ndarray:
    """`_block_bits` of every one of the blocks `chosen`, by one np.bincount per block: no numba."""
    size = chosen.shape[1]
    used = (chosen.view(np.uint64) if size % 8 == 0 else chosen).any(axis=1)
    counts = np.array([np.bincount(block, minlength=256) for block in chosen[used]], dtype=np.intp).reshape(-1, 256)
    # cumsum adds in order, as each lane of the compiled loop does (sum would add pairwise)
    lanes = np.cumsum(c_log_c[counts].reshape(-1, 64, 4), axis=1)[:, -1]
    return cast(np.ndarray, np.log2(size) - ((lanes[:, 0] + lanes[:, 1]) + (lanes[:, 2] + lanes[:, 3])) / size)


class _Shares:
    """A read's blocks to measure, in shares of ENTROPY_KERNEL_BLOCKS blocks (the last takes the
    rest) that the helper threads (`measure`) and the scan's own thread, once it has searched the
    read (`bits`), take in turn, each the next share no thread has taken, until none is left.

    numba's loop and Hyperscan's search both release the GIL, so they run side by side, on as
    many cores as are free: the histograms are three quarters of `tdebench verify`'s CPU time on
    random bytes (`bench/verify_scan.py`, "random: entropy alone"). A helper that a busy machine
    starts late takes fewer shares or none, and the scan's thread waits only for the shares
    under way in a helper, never for a helper to start."""

    def __init__(self, blocks: np.ndarray, picked: np.ndarray, c_log_c: np.ndarray) -> None:
        self.blocks, self.picked, self.c_log_c = blocks, picked, c_log_c
        starts = range(0, len(blocks) // ENTROPY_KERNEL_BLOCKS * ENTROPY_KERNEL_BLOCKS, ENTROPY_KERNEL_BLOCKS)
        self._todo = iter(enumerate(zip(starts, [*starts[1:], len(blocks)])))
        self._left = len(starts)  # shares not measured yet
        self._changed = threading.Condition()
        self._bits: list[np.ndarray] = [np.empty(0)] * len(starts)  # each share's, in order
        self._errors: list[Exception] = []  # raised in the scan's thread by `bits`, whichever thread measured

    def measure(self) -> None:
        """Measure the next share no thread has taken, until none is left."""
        while True:
            with self._changed:
                share = next(self._todo, None)
            if share is None:
                return
            index, (begin, end) = share
            try:
                self._bits[index] = _block_bits(self.blocks[begin:end], self.picked[begin:end], self.c_log_c)
            except Exception as error:
                self._errors.append(error)
            with self._changed:
                self._left -= 1
                self._changed.notify_all()

    def bits(self) -> np.ndarray:
        """Every block's bits, in order (as `_block_bits` gives them): the shares no helper has
        taken measured in this thread, then those under way in a helper waited for."""
        self.measure()
        with self._changed:
            self._changed.wait_for(lambda: self._left == 0)
        if self._errors:
            raise self._errors[0]
        return np.concatenate(self._bits)


@functools.cache
def _c_log_c(block_size: int) -> np.ndarray:
    """c * log2(c) for every count c from 0 to `block_size` (0 for 0): made once, not per file."""
    counts = np.arange(block_size + 1, dtype=np.float64)
    table = counts * np.log2(np.maximum(counts, 1))
    table.flags.writeable = False  # shared by every scan
    return table


class _Entropy:
    """Running per-block entropy statistics of one file.

    Every whole block counts in `blocks` and is tested for being all zero (a free page: neither
    plaintext nor ciphertext, it gets no histogram); the others' entropy is measured where
    `_sampled` picks them, none when `every` is 0 (`measured`; `mean` and `low` are over those). A block's entropy is
    log2(n) - sum(c * log2(c)) / n over its n bytes' value counts c, the c * log2(c) from a
    table, for all the blocks of a read at once (`_block_bits`: a compiled loop for many blocks,
    one bincount per block for a few).
    """

    def __init__(self, block_size: int, every: int = 1) -> None:
        self.block_size = block_size
        self.every = every
        self.blocks = 0
        self.measured = 0
        self.low = 0
        self.total = 0.0
        self._c_log_c = _c_log_c(block_size)

    def add(self, chunk: bytes | bytearray | memoryview, helpers: Executor | None = None) -> Callable[[], None]:
        """Account every whole block of `chunk` (which starts on a block border). All-zero
        blocks among those `_sampled` picks are found before any histogram and cost none.

        Returns the call that completes it, which must come before `chunk`'s buffer is read into
        again: with `helpers` and 2 * ENTROPY_KERNEL_BLOCKS blocks to measure or more (every read
        of `tdebench verify` but a file's last) the helper threads measure them meanwhile, while
        the caller goes on (to search the same bytes), and the call measures what they have not
        taken (`_Shares`). The shares' bits are summed as one array, so the figures are those of
        one thread, to the last bit."""
        data = np.frombuffer(chunk, dtype=np.uint8)
        whole = len(data) // self.block_size
        if not whole or not self.every:
            self.blocks += whole
            return lambda: None
        blocks = data[:whole * self.block_size].reshape(whole, self.block_size)
        picked = _sampled(self.blocks, whole, self.every)
        self.blocks += whole
        if helpers is None or np.count_nonzero(picked) < 2 * ENTROPY_KERNEL_BLOCKS:
            self._account(_block_bits(blocks, picked, self._c_log_c))
            return lambda: None
        shares = _Shares(blocks, picked, self._c_log_c)
        for _ in range(ENTROPY_HELPERS):
            helpers.submit(shares.measure)
        return lambda: self._account(shares.bits())

    def _account(self, bits: np.ndarray) -> None:
        """The entropy, bits per byte, of the blocks measured in one read, in order."""
        if len(bits):
            self.measured += len(bits)
            self.total += float(bits.sum())
            self.low += int((bits < LOW_ENTROPY).sum())

    @property
    def mean(self) -> float:
        return self.total / self.measured if self.measured else 0.0


@functools.lru_cache(maxsize=4)
def _matcher(canaries: tuple[str, ...], markers: tuple[str, ...]) -> _HyperscanMatcher | _SieveMatcher:
    """The matcher of these canaries and markers, made once for all the files of a scan (it is
    not changed by use)."""
    return _Matcher([(False, p) for _, p in _patterns(canaries)] + [(True, p) for _, p in _patterns(markers)])


def _fill(fh: io.BufferedReader, view: memoryview) -> int:
    """Read into all of `view` unless the file ends first (a read may return less, on FUSE
    for one): the bytes read. Whole reads keep every chunk on a block border."""
    filled = 0
    while filled < len(view) and (got := fh.readinto(view[filled:])):
        filled += got
    return filled


def _reads(fh: io.BufferedReader, overlap: int, read_size: int, kept: int = 0) -> Iterator[tuple[bytearray, int]]:
    """(the buffer, how many bytes at its start the read before left) for each `read_size` read
    of `fh`: one buffer for all the reads, so no copy but the `overlap` bytes kept. The last,
    short read is a copy (the searches would see stale bytes past its end); the buffer is only
    valid until the next read. `kept`: the first `kept` bytes from where `fh` stands were seen
    already (by `_mapped`), and are read as the overlap of the first read."""
    buffer = bytearray(overlap + read_size)
    kept = _fill(fh, memoryview(buffer)[:kept])
    while read := _fill(fh, memoryview(buffer)[kept:kept + read_size]):
        yield (buffer if kept + read == len(buffer) else buffer[:kept + read]), kept
        keep = min(overlap, kept + read)
        buffer[:keep] = buffer[kept + read - keep:kept + read]
        kept = keep


@contextlib.contextmanager
def _read_lease(fd: int) -> Iterator[bool]:
    """Hold a read lease on `fd` (opened read-only) while the block runs; yields whether it was
    taken. The kernel grants one only while no process has the file open for writing, and while
    it is held an open for writing or a truncate waits until it is released (at most
    /proc/sys/fs/lease-break-time, 45 s by default): so a memory map of the file cannot lose its
    pages under the scan, which would end the process with SIGBUS. The lease's break notice is
    SIGURG, ignored by default (SIGIO, the kernel's default notice, would end the process).
    Refused (EAGAIN: a writer has the file open; EACCES: another user's file without CAP_LEASE;
    EINVAL: a filesystem without leases), the scan reads instead."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)


def _has_hole(fd: int, begin: int, end: int) -> bool:
    """Whether bytes `begin` .. `end` of the file hold a hole (a range never written: a sparse
    file's, or what an engine extended its file by and could not fill); True when the file system
    cannot say. Read, a hole is zeros; mapped, tmpfs backs a hole's page on the first touch, which
    on a full tmpfs it cannot: the process ends with SIGBUS (a trial's scan, when its work
    directory filled up). The file's offset is left where it was (`fh` reads on from it)."""
    position = os.lseek(fd, 0, os.SEEK_CUR)
    try:
        return os.lseek(fd, begin, os.SEEK_HOLE) < end
    except OSError:
        return True
    finally:
        os.lseek(fd, position, os.SEEK_SET)


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    """`view` filled from byte `offset` of the file unless it ends first (a read may return less):
    the bytes read."""
    filled = 0
    while filled < len(view) and (got := os.preadv(fd, [view[filled:]], offset + filled)):
        filled += got
    return filled


def _mapped(fh: io.BufferedReader, overlap: int, read_size: int) -> Iterator[tuple[bytearray | memoryview, int]]:
    """What `_reads` yields, from memory maps of the file instead of reads into a buffer while a
    read lease can be held (`_read_lease`), MAP_BYTES at a time; where it cannot (a writer
    opened the file meanwhile, or never a lease; or the filesystem cannot map it), by `_reads`
    from there on. Each map starts whole pages before its part of the file, so the `overlap`
    bytes before it are `kept` (a pattern across the border is found); the file's size is taken
    under the lease, so no map reaches past the file's end. A part with a hole (`_has_hole`) is
    read instead, `read_size` at a time into one buffer with its `overlap` bytes before (a map
    of it could end the process with SIGBUS). `read_size` and MAP_BYTES are multiples of the
    entropy's block, so every part but the file's last starts and ends on a block border."""
    fd, start, before = fh.fileno(), 0, -(-overlap // mmap.PAGESIZE) * mmap.PAGESIZE
    buffer: memoryview | None = None  # for the parts read
    while True:
        with _read_lease(fd) as leased:
            size = os.fstat(fd).st_size
            if not leased or start >= size:
                break
            begin, end = max(0, start - before), min(size, start + MAP_BYTES)
            if _has_hole(fd, begin, end):
                buffer = buffer if buffer is not None else memoryview(bytearray(overlap + read_size))
                for at in range(start, end, read_size):
                    kept = min(overlap, at)
                    yield buffer[:_pread_into(fd, buffer[:kept + min(end, at + read_size) - at], at - kept)], kept
                start = end
                continue
            try:
                whole = memoryview(mmap.mmap(fd, end - begin, prot=mmap.PROT_READ, offset=begin))
            except OSError:  # a filesystem that leases but does not map (FUSE with direct I/O)
                break
            for at in range(start, end, read_size):
                kept = min(overlap, at - begin)
                yield whole[at - kept - begin:min(end, at + read_size) - begin], kept
            start = end
    kept = min(overlap, start)
    fh.seek(start - kept)  # the rest, read: all of it without a lease, else what a writer added since
    yield from _reads(fh, overlap, read_size, kept=kept)


def _read_signature(fh: BinaryIO, signature: tuple[int, bytes] | None) -> bool | None:
    if signature is None:
        return None
    offset, magic = signature
    fh.seek(offset)
    found = fh.read(len(magic)) == magic
    fh.seek(0)
    return found


def scan_file(path: Path, canaries: Sequence[str], root: Path, signature: tuple[int, bytes] | None,
              block_size: int = BLOCK_BYTES, chunk_size: int = CHUNK_BYTES, markers: Sequence[str] = (),
              entropy_every: int = ENTROPY_EVERY, mapped: bool = True) -> FileScan:
    """Scan one file in `chunk_size` reads, keeping (longest pattern - 1) bytes of overlap
    so a canary split across two reads is still found, and counting it exactly once. Every
    byte is searched for every pattern, whatever `entropy_every` is.

    Entropy covers whole blocks only: a short trailing block cannot reach 8 bits/byte and
    would look like plaintext. All-zero blocks (free pages) count in `blocks` but not in
    the entropy mean or the low-entropy count, and neither do blocks `_sampled` leaves out
    with `entropy_every` above 1 (with 0, none is: `verify_paths` samples them itself);
    `entropy_blocks` counts those measured. `plaintext_header`
    compares the bytes at the signature's offset with the signature (None when there is no
    signature). `mapped`: read through memory maps where a read lease allows (`_mapped`); a
    capture scanning files the engine may open for writing again at any moment reads instead,
    so that it never makes the engine wait.

    `hits` counts pattern matches: a UTF-16 canary next to a zero byte also matches the
    other byte order and counts twice, which changes no verdict. `marker_hits` counts the
    markers' matches the same way, in the same reads.
    """
    if chunk_size % block_size:
        raise ValueError(f"chunk_size {chunk_size} must be a multiple of block_size {block_size}")
    if entropy_every < 0 or entropy_every & (entropy_every - 1):
        raise ValueError(f"entropy_every {entropy_every} must be a power of two, or 0")
    matcher = _matcher(tuple(canaries), tuple(markers))
    overlap = matcher.longest - 1
    entropy = _Entropy(block_size, entropy_every)
    hits = marker_hits = size = 0
    first: int | None = None
    # the helpers start on the first read with many blocks to measure (_Entropy.add), else never
    with path.open("rb") as fh, ThreadPoolExecutor(max(1, ENTROPY_HELPERS), thread_name_prefix="entropy") as helpers:
        header = _read_signature(fh, signature)
        status = os.fstat(fh.fileno())
        blocks = -(-status.st_size // block_size)  # whole blocks, even if the file grows
        read_size = min(chunk_size, max(1, blocks) * block_size)
        # a part of a map ends on a multiple of read_size: one is a divisor of MAP_BYTES unless one read takes all
        mappable = mapped and stat.S_ISREG(status.st_mode) and (
            MAP_BYTES % read_size == 0 or read_size == blocks * block_size)
        chunks: Iterator[tuple[bytearray | memoryview, int]] = (
            _mapped(fh, overlap, read_size) if mappable else _reads(fh, overlap, read_size))
        for data, kept in chunks:
            measured = entropy.add(memoryview(data)[kept:], helpers)  # in the helpers, while this thread searches
            base = size - kept  # file offset of data[0]
            for is_marker, at in matcher.matches(data, kept):
                if is_marker:
                    marker_hits += 1
                else:
                    hits += 1
                    first = base + at if first is None else min(first, base + at)
            measured()  # before the next read reuses the buffer
            size += len(data) - kept
    return FileScan(path=os.path.relpath(path, root), bytes=size, hits=hits, first_hit_offset=first,
                    entropy_mean=round(entropy.mean, 4), low_entropy_blocks=entropy.low,
                    blocks=entropy.blocks, plaintext_header=header, marker_hits=marker_hits,
                    entropy_blocks=entropy.measured)


def _regular_files(path: Path) -> Iterable[Path]:
    """Regular files under a directory, without following symlinks."""
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                yield from _regular_files(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)


def _files(paths: Iterable[Path]) -> list[Path]:
    found: set[Path] = set()
    for path in paths:
        mode = os.stat(path).st_mode  # raises FileNotFoundError naming the path
        if stat.S_ISDIR(mode):
            found.update(_regular_files(path))
        elif stat.S_ISREG(mode):
            found.add(path)
    return sorted(found)


def scan(paths: Iterable[Path], canaries: Sequence[str], root: Path,
         signature: tuple[int, bytes] | None = None, markers: Sequence[str] = (),
         live: bool = False, entropy_every: int = ENTROPY_EVERY) -> tuple[FileScan, ...]:
    """Scan every regular file under `paths` (directories recursively, symlinks inside them
    not followed), sorted by path.

    The signature is checked on every file: only the main file can match it, because a
    WAL, journal or temp file never starts with the main file's magic bytes. `live`: the
    engine is still running there (an fs layer's decrypted view), so a file it deletes between
    the listing and the read (PostgreSQL's pg_internal.init) is left out instead of failing.
    """
    scans = []
    for path in _files(paths):
        try:
            scans.append(scan_file(path, canaries, root, signature, markers=markers, entropy_every=entropy_every))
        except FileNotFoundError:
            if not live:
                raise
    return tuple(scans)


def view_hits(view: Path | None, canaries: Sequence[str], live: bool = False) -> int | None:
    """The canary hits in a layer's decrypted view (`Database.plaintext_view`), scanned while the
    engine runs: that layer's positive control. None without a view (no layer below the engine)."""
    if view is None:
        return None
    return sum(s.hits for s in scan([view], canaries, view, live=live))


def label_first_hit(scans: Sequence[FileScan], root: Path, canaries: Sequence[str]) -> str | None:
    """"path@offset (encoding)" of the first canary hit, in scan order.

    `FileScan` keeps only the offset, so the encoding is recovered by reading the few
    bytes at that offset again.
    """
    scanned = next((s for s in scans if s.hits and s.first_hit_offset is not None), None)
    if scanned is None or scanned.first_hit_offset is None:
        return None
    patterns = _patterns(canaries)
    with (root / scanned.path).open("rb") as fh:
        fh.seek(scanned.first_hit_offset)
        found = fh.read(max(len(p) for _, p in patterns))
    encoding = next((enc for enc, pattern in patterns if found.startswith(pattern)), "unknown encoding")
    return f"{scanned.path}@{scanned.first_hit_offset} ({encoding})"


def _default_label(scans: Sequence[FileScan]) -> str | None:
    for s in scans:
        if s.hits:
            return f"{s.path}@{s.first_hit_offset}"
    for s in scans:
        if s.plaintext_header:
            return f"{s.path} (plaintext header)"
    return None


def _measured(scan: FileScan) -> int:
    """The blocks `scan`'s entropy is over (None, not counted: all its blocks, as
    `results.upgrade` reads the scans of format 1, before sampling)."""
    return scan.blocks if scan.entropy_blocks is None else scan.entropy_blocks


def _summary(scans: Sequence[FileScan]) -> str:
    total = sum(s.bytes for s in scans)
    transient = sum(s.transient for s in scans)
    measured = sum(_measured(s) for s in scans)
    mean = sum(s.entropy_mean * _measured(s) for s in scans) / measured if measured else 0.0
    low = sum(s.low_entropy_blocks for s in scans)
    blocks = sum(s.blocks for s in scans)
    caught = f" ({transient} caught while the trial ran)" if transient else ""
    return (f"scanned {len(scans)} file{'s' * (len(scans) != 1)}{caught}, {total:,} bytes, "
            f"mean entropy {mean:.2f} bits/byte, {low} of {measured} measured blocks below {LOW_ENTROPY:g} "
            f"({blocks} in all)")


def _spills(scans: Sequence[FileScan]) -> list[FileScan]:
    """The temp and spill files among the files the transient capture caught (all of them in
    scans without kinds): where the transient positive control must show the canaries. A WAL
    deleted at a checkpoint is caught too, and judged, but proves nothing about spills."""
    return [s for s in scans if s.transient and s.kind in ("temp", "")]


def transient_state(scans: Sequence[FileScan]) -> str:
    """`Verdict.transient` of a trial whose capture ran, from its scans: about its temp and
    spill files (`_spills`)."""
    caught = _spills(scans)
    if not caught:
        return TRANSIENT_NONE
    return TRANSIENT_CANARIES if any(s.hits for s in caught) else TRANSIENT_CLEAN


def _transient_text(scans: Sequence[FileScan], expected: str) -> str:
    """The verdict detail's sentence on the transient capture."""
    caught, spills = [s for s in scans if s.transient], _spills(scans)
    text = (f"; {len(caught)} file{'s' * (len(caught) != 1)} caught while the trial ran "
            f"({len(spills)} temp/spill), {sum(bool(s.hits) for s in caught)} with canaries")
    if expected == "plaintext" and not any(s.hits for s in spills):
        why = "no temp or spill file was caught" if not spills else "none of its temp or spill files held a canary"
        text += f"; transient coverage was not exercised: {why}"
    return text


def judge(trial: TrialKey, expected: str, scans: Sequence[FileScan], canary_readable: bool,
          first_hit_label: str | None = None, view_hits: int | None = None,
          engine_state: str = "", column_layer: bool = False, view_gone: str = "",
          captured: bool = False) -> Verdict:
    """The verdict of a trial's scans. Rules, in order:

    1. no file, or 0 bytes scanned → "inconclusive" (nothing was looked at);
    2. no canary hit in the `none` baseline (expected "plaintext") → "inconclusive": the
       positive control failed, so the scan cannot be trusted to find plaintext anywhere (a
       plaintext header alone does not prove that the canary search works);
    3. any canary hit or any plaintext header → "plaintext" (proof needs one hit); so is a
       marker hit, except under column-level encryption, which leaves markers readable;
    4. no hit, but the canary could not be read back through the engine → "inconclusive":
       the data looked for may never have been written, so its absence proves nothing;
    5. a file-system layer whose decrypted view could not be scanned (`view_gone` says why:
       its mount vanished) or, scanned while mounted (`view_hits`), did not show the canaries
       → "error": that layer's positive control failed, so the run must not pass;
    6. column-level encryption (`column_layer`) where no marker was found → "inconclusive":
       the canary table's rows were not seen at all, so the canary's absence proves nothing;
    7. otherwise → "encrypted"; under column-level encryption `exposed` lists the files that
       hold the plaintext of the columns it leaves unencrypted.

    `captured`: the transient capture ran, and `scans` hold what it caught (`FileScan.transient`),
    judged by the same rules as the files at rest (a canary in a spill file makes an encrypted
    trial "plaintext"); `Verdict.transient` and the detail say what it caught, and a baseline
    whose transient files showed no canary says that transient coverage was not exercised.

    Otherwise "error" is not produced here: the caller turns an exception into `error_verdict`.
    `first_hit_label` is the caller's label of the first hit (see `label_first_hit`, which
    adds the encoding); without it the label is built from the scans.
    """
    scans = tuple(scans)
    total = sum(s.bytes for s in scans)

    exposed = tuple(s.path for s in scans if s.marker_hits)

    def verdict(word: str, detail: str, first_hit: str | None = None) -> Verdict:
        return Verdict(trial=trial, verdict=word, expected=expected, files_scanned=len(scans),
                       bytes_scanned=total, first_hit=first_hit,
                       detail=detail + (_transient_text(scans, expected) if captured else ""), files=scans,
                       engine_state=engine_state, view_hits=view_hits,
                       exposed=exposed if column_layer else (),
                       transient=transient_state(scans) if captured else "")

    if total == 0:
        return verdict("inconclusive", f"nothing to scan: {len(scans)} files, 0 bytes")
    summary = _summary(scans)
    hits = sum(s.hits for s in scans)
    headers = sum(bool(s.plaintext_header) for s in scans)
    if expected == "plaintext" and not hits:
        return verdict("inconclusive", "positive control failed: the baseline's canaries were not "
                       f"found, so the scan cannot prove anything; {summary}")
    marker_hits = 0 if column_layer else sum(s.marker_hits for s in scans)
    if hits or headers or marker_hits:
        found = []
        if hits:
            found.append(f"canary found {hits} times in {sum(s.hits > 0 for s in scans)} files")
        if marker_hits:
            found.append(f"marker found {marker_hits} times in {len(exposed)} files")
        if headers:
            found.append(f"plaintext header in {headers} files")
        return verdict("plaintext", f"{'; '.join(found)}; {summary}",
                       first_hit_label or _default_label(scans))
    if not canary_readable:
        return verdict("inconclusive", "no canary found, but the canary could not be read back "
                       f"through the engine, so it may never have been written; {summary}")
    if view_gone:
        return verdict("error", f"{view_gone}: the decrypted view could not be scanned, so the positive "
                       f"control failed; {summary}")
    if view_hits == 0:
        return verdict("error", "no canary found in the decrypted view: the positive control failed, so "
                       f"their absence below it proves nothing; {summary}")
    if column_layer and not exposed:
        return verdict("inconclusive", "positive control failed: the marker beside each canary, in a column "
                       f"column-level encryption leaves readable, was not found either; {summary}")
    shown = f"; the decrypted view showed them {view_hits} times" if view_hits else ""
    if column_layer:
        shown += (f"; as column-level encryption leaves them, other columns are plaintext in {len(exposed)} "
                  f"files: {', '.join(exposed)}")
    return verdict("encrypted", f"no canary and no plaintext header found{shown}; {summary}")


def not_verified(trial: TrialKey, expected: str, engine_state: str) -> Verdict:
    """The verdict of a remote server's trial with no `data_path`: its files were not looked at,
    so nothing is claimed about them beyond what the engine itself reports (`engine_state`)."""
    return Verdict(trial=trial, verdict=NOT_VERIFIED, expected=expected, files_scanned=0, bytes_scanned=0,
                   first_hit=None, engine_state=engine_state,
                   detail="the server's data files are not readable here (give data_path to scan them); "
                          + (f"the engine reports: {engine_state}" if engine_state else "the engine reports nothing"))


def error_verdict(trial: TrialKey, expected: str, exc_text: str) -> Verdict:
    """The verdict of a check that raised: nothing is claimed about the files."""
    return Verdict(trial=trial, verdict="error", expected=expected, files_scanned=0,
                   bytes_scanned=0, first_hit=None, detail=exc_text)


@dataclass(frozen=True)
class TrialScan:
    """The at-rest scan and verdict rules bound to one trial: its key, canaries and markers.

    The runner judges the trial's closed database with it and hands it to the trial's workloads
    (`RunContext.judge_at_rest`), which judge what they write beside that database (maintenance's
    converted copy, backup's artifacts) by the same rules without importing this module."""

    trial: TrialKey
    canaries: tuple[str, ...]
    markers: tuple[str, ...]

    def view_hits(self, view: Path | None) -> int | None:
        """The canary hits in a layer's decrypted view (see `view_hits`)."""
        return view_hits(view, self.canaries)

    def judge(self, path: Path, expected: str, *, readable: bool, signature: tuple[int, bytes] | None = None,
              column_layer: bool = False, view_hits: int | None = None, engine_state: str = "",
              view_gone: str = "", plaintext_format: bool = False, transient: Sequence[FileScan] | None = None,
              kind_of: Callable[[str], str] | None = None) -> Verdict:
        """`path` (a closed database's directory, an unpacked artifact, or one file) scanned and
        judged. `plaintext_format`: the caller found a plaintext format's magic bytes in what
        `path` holds (a sealed backup's payload), which counts as a plaintext header in every file.
        `transient`: what the transient capture caught while the trial ran (None: no capture),
        judged with the files at rest; `kind_of` gives each file's kind (`Database.file_kind`)."""
        root = path if path.is_dir() else path.parent
        at_rest = scan([path], self.canaries, root, signature, markers=self.markers)
        if plaintext_format:
            at_rest = tuple(replace(s, plaintext_header=True) for s in at_rest)
        label = label_first_hit(at_rest, root, self.canaries)
        caught = tuple(transient or ())
        if label is None and any(s.hits for s in caught):
            label = f"{_default_label(caught)} (transient: gone before the trial ended)"
        scans = at_rest + caught
        if kind_of is not None:
            scans = tuple(replace(s, kind=kind_of(s.path)) for s in scans)
        return judge(self.trial, expected, scans, readable, first_hit_label=label, view_hits=view_hits,
                     engine_state=engine_state, column_layer=column_layer, view_gone=view_gone,
                     captured=transient is not None)


def _root(paths: Sequence[Path]) -> Path:
    common = Path(os.path.commonpath([p.absolute() for p in paths]))
    return common.parent if common.is_file() else common


ENCRYPTED_LOW_SHARE = 0.05
"""`tdebench verify` calls files without a canary "encrypted" only when at most this share of
their blocks (zero blocks left out) is below LOW_ENTROPY: a database's plaintext headers are a
few blocks, plaintext or compressed data is most of them."""

VERDICT_SAMPLE = 1024
"""`tdebench verify` decides which side of ENCRYPTED_LOW_SHARE its files are on from a sample of
about this many blocks, then of 8 times as many while the sample cannot tell, and from every
block when it still cannot (see `_sample_verdict`): a sample of this size tells data with at most
1% of its blocks low (uniformly random data from 453 blocks on), or 10.4% and more, at the first
look (docs/method/scan-speed.md)."""
VERDICT_ERROR = 1e-9
"""The chance, at most, that a sampled decision differs from the one every block would give."""
VERDICT_COUNTED_BLOCKS = 8192
"""Files of at most this many blocks in all (32 MiB) have every block measured by bincount in
`_sample`; larger ones by the scan itself (numba's loop: its import and first call cost more CPU
time than counting these blocks)."""


@dataclass(frozen=True)
class _Tally:
    """The measured blocks of one file in a sample: `picked` whole blocks, `measured` of them not
    all zero, `low` of those below LOW_ENTROPY, their entropy summed in `bits`. Not `counted`: the
    sample picked none of the file's blocks, and its first block was measured to describe it,
    outside the sample."""

    picked: int
    measured: int
    low: int
    bits: float
    counted: bool = True


def _rates(blocks: int) -> list[int]:
    """The sampling rates `verify_paths` tries in turn for `blocks` blocks in all: one block in
    the largest power of two that still picks about VERDICT_SAMPLE, then in an eighth of that,
    and so on, down to 1 (every block)."""
    every = 1 << max(0, (blocks // VERDICT_SAMPLE).bit_length() - 1)
    rates = []
    while every > 1:
        rates.append(every)
        every //= 8
    return [*rates, 1]


def _sample(scans: Sequence[FileScan], root: Path, every: int, block_size: int = BLOCK_BYTES) -> list[_Tally]:
    """The entropy of the blocks Fibonacci hashing (`_hashed`) picks one in `every` of all the
    scanned files' whole blocks, numbered in one sequence (file after file, as `scans` lists
    them), so that the picks are one sample of the set: each read alone, counted by bincount.
    A block the file no longer holds whole (it shrank since the scan) is not picked; a file none
    of whose blocks is picked has its first block measured, outside the sample (`_Tally.counted`)."""
    c_log_c = _c_log_c(block_size)
    tallies, first = [], 0
    for scanned in scans:
        picked: list[np.ndarray] = []
        for start in range(first, first + scanned.blocks, 1 << 20):  # the indices in pieces: a big file's are many
            index = np.arange(start, min(first + scanned.blocks, start + (1 << 20)), dtype=np.uint64)
            picked.append(np.flatnonzero(_hashed(index, every)) + (start - first))
        offsets = np.concatenate(picked or [np.empty(0, np.intp)]) * block_size
        counted = bool(len(offsets)) or not scanned.blocks
        offsets = offsets if counted else np.zeros(1, np.intp)
        rows = np.empty((len(offsets), block_size), dtype=np.uint8)
        whole = np.zeros(len(offsets), dtype=bool)
        with (root / scanned.path).open("rb", buffering=0) as fh:
            for row, offset in enumerate(offsets.tolist()):
                whole[row] = _pread_into(fh.fileno(), memoryview(rows[row]), offset) == block_size
        bits = _counted_bits(rows[whole], c_log_c)
        tallies.append(_Tally(int(whole.sum()), len(bits), int((bits < LOW_ENTROPY).sum()), float(bits.sum()),
                              counted))
        first += scanned.blocks
    return tallies


def _bound(count: int, picked: int, log_odds: float, upper: bool) -> float:
    """The largest (`upper`) or smallest share p of a set that `count` of `picked` blocks sampled
    from it leave plausible: Chernoff's bound, p with picked * KL(count / picked || p) at most
    `log_odds` (KL, the binomial's relative entropy), so that a share beyond it shows so few (or
    so many) in a sample with a chance of at most exp(-log_odds); a sample without replacement
    is as concentrated (Hoeffding, "Probability inequalities for sums of bounded random
    variables", 1963, section 6). By bisection, ending on the safe side."""
    seen = count / picked

    def divergence(p: float) -> float:
        return sum(a * math.log(a / b) for a, b in ((seen, p), (1 - seen, 1 - p)) if a)

    low, high = (seen, 1.0) if upper else (0.0, seen)
    for _ in range(60):
        middle = (low + high) / 2
        if (picked * divergence(middle) <= log_odds) == upper:
            low = middle
        else:
            high = middle
    return high if upper else low


def _sample_verdict(tallies: Sequence[_Tally], looks: int) -> str | None:
    """"encrypted" when at most ENCRYPTED_LOW_SHARE of the non-zero blocks of the whole set are
    low, "inconclusive" when more are, each only where the sample shows it but for a chance of
    VERDICT_ERROR / `looks` (the samples of one verify that may be looked at); else None.

    At most s = ENCRYPTED_LOW_SHARE of the non-zero blocks are low when L * (1 - s) <= s * H, L
    and H the shares of low and of high blocks among all blocks, zero ones included; the sample
    bounds each of them on both sides (`_bound`) at a chance of VERDICT_ERROR / (4 * looks), and
    the decision holds for every L and H within the bounds."""
    tallies = [t for t in tallies if t.counted]
    picked = sum(t.picked for t in tallies)
    if not picked:
        return None
    low, high = sum(t.low for t in tallies), sum(t.measured - t.low for t in tallies)
    log_odds = math.log(4 * looks / VERDICT_ERROR)
    share = ENCRYPTED_LOW_SHARE
    lows = [_bound(low, picked, log_odds, upper) for upper in (False, True)]
    highs = [_bound(high, picked, log_odds, upper) for upper in (False, True)]
    if lows[1] * (1 - share) <= share * highs[0]:
        return "encrypted"
    if lows[0] * (1 - share) > share * highs[1]:
        return "inconclusive"
    return None


def _tallied(scans: Sequence[FileScan], tallies: Sequence[_Tally]) -> tuple[FileScan, ...]:
    """`scans` with the entropy of their sampled blocks."""
    return tuple(replace(s, entropy_mean=round(t.bits / t.measured, 4) if t.measured else 0.0,
                         low_entropy_blocks=t.low, entropy_blocks=t.measured) for s, t in zip(scans, tallies))


def verify_paths(paths: Sequence[Path], canaries: Sequence[str]) -> tuple[str, tuple[FileScan, ...], str]:
    """`tdebench verify`: scan files or directory trees for canaries and judge them, without
    the positive control a trial has (nothing here proves the canary was ever written).

    Returns the state, the scans and why: "plaintext" (a canary found), "encrypted" (no
    canary, and the blocks look like ciphertext: see ENCRYPTED_LOW_SHARE), "inconclusive" (no
    canary, but the data is not uniformly random, or too small or all zeros to tell: the canary
    may just not be in these files) or "empty" (no byte scanned). Paths in the scans are relative to the
    deepest directory holding every path. A missing path raises FileNotFoundError naming it.

    Every byte is searched; the entropy is then measured on a sample of the blocks (`_rates`,
    `_sample`), larger while it cannot tell which side of ENCRYPTED_LOW_SHARE the files are on
    (`_sample_verdict`), and on every block when no sample can; with a canary found, on the
    first sample alone (the scans' entropy is then only a description).
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no path to verify")
    root = _root(paths)
    scans = scan(paths, canaries, root, entropy_every=0)  # the search: the entropy is sampled below
    if sum(s.bytes for s in scans) == 0:
        return "empty", scans, "no bytes to scan"
    found = [s for s in scans if s.hits]
    blocks = sum(s.blocks for s in scans)
    rates = _rates(blocks)
    decided, share = None, ""
    for every in rates:
        if every == 1 and blocks > VERDICT_COUNTED_BLOCKS:
            scans = scan(paths, canaries, root, entropy_every=1)  # every block, by the scan's compiled loop
            break
        tallies = _sample(scans, root, every)
        scans = _tallied(scans, tallies)
        if every == 1 or found:
            break
        if decided := _sample_verdict(tallies, len(rates) - 1):
            counted = [t for t in tallies if t.counted]
            share = (f"{sum(t.low for t in counted):,}/{sum(t.measured for t in counted):,} blocks below "
                     f"{LOW_ENTROPY:g} bits/byte in a sample of one block in {every:,} of {blocks:,}: all of them "
                     f"on this side of {ENCRYPTED_LOW_SHARE:.0%} but for a chance under {VERDICT_ERROR:g}")
            break
    if found:
        return "plaintext", scans, (f"a canary found {sum(s.hits for s in found)} times in {len(found)} "
                                    f"file{'' if len(found) == 1 else 's'}")
    if decided is None:  # from every block: all-zero ones (free pages) are neither plaintext nor ciphertext
        measured, low = sum(_measured(s) for s in scans), sum(s.low_entropy_blocks for s in scans)
        if not measured:
            return "inconclusive", scans, ("no canary, but no block to judge by entropy: the files are too small "
                                           "or all zeros")
        share = f"{low:,}/{measured:,} blocks below {LOW_ENTROPY:g} bits/byte"
        decided = "encrypted" if low <= ENCRYPTED_LOW_SHARE * measured else "inconclusive"
    if decided == "encrypted":
        return "encrypted", scans, f"no canary, and the data looks like ciphertext ({share})"
    return "inconclusive", scans, (f"no canary, but {share}: plaintext, compressed or structured data, "
                                   "so the canary may simply not be in these files")


def describe(scans: Sequence[FileScan]) -> list[str]:
    """One human line per scanned file."""
    lines = []
    for s in scans:
        first = f" (first at byte {s.first_hit_offset:,})" if s.hits else ""
        whole = f" ({s.blocks:,} in all)" if _measured(s) < s.blocks else ""  # zero ones, or a sample
        low = f"{s.low_entropy_blocks:,}/{_measured(s):,} blocks low{whole}"
        entropy = (f"entropy {s.entropy_mean:.2f} bits/byte, {low}" if _measured(s)
                   else "all zeros: no entropy" if s.blocks else "too small for entropy")
        header = {True: ", plaintext header", False: ", no plaintext header", None: ""}[s.plaintext_header]
        lines.append(f"{s.path}: {s.bytes:,} bytes, {s.hits} canary hits{first}, {entropy}{header}")
    return lines
