"""Is a backup encrypted at rest? The trial's at-rest scan, applied to the backup artifact.

The artifact is scanned as anyone holding it can read it with standard tools and no key:
decompressed and unpacked (`Backups.backup_contents`), because canaries in a compressed
plaintext would hide from a scan of the compressed bytes. The rules are the trial verdict's
(`RunContext.judge_at_rest`): a canary found means plaintext; for `none` a canary *must* be found (the
positive control, the same scan on the same kind of artifact); under column-level encryption
the marker beside each canary must be found and the canary must not.

A backup sealed by the workload's own encryption (`sealing`) cannot be unpacked without its
key, so `check_sealed` scans the sealed file as it is stored: it must show neither canary nor
marker (the sealing covers every column), nor any of the plaintext formats a backup is made
of (`PLAINTEXT_MAGIC`: tar, gzip, xbstream, pg_dump, SQLite, DuckDB, SQL). The positive control
is the same test's plain artifact, scanned the same way before it was sealed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tdebench.engines.base import Database
from tdebench.results import FileScan
from tdebench.workloads.base import RunContext

PLAINTEXT_MAGIC: dict[str, tuple[int | None, bytes]] = {
    "tar": (257, b"ustar"), "gzip": (0, b"\x1f\x8b\x08"), "xbstream": (None, b"XBSTCK01"),
    "pg_dump": (None, b"PGDMP"), "SQLite": (None, b"SQLite format 3"), "SQL": (None, b"CREATE TABLE"),
}
"""The formats a backup is made of, by where their magic bytes stand in the packed stream: at an
offset of its start (short magic, which random bytes would match somewhere by chance), or
(None) anywhere in its first 64 KiB (5 bytes or more: a chance match is below 1 in 10^7)."""


@dataclass(frozen=True)
class ArtifactCheck:
    verdict: str  # "encrypted", "plaintext" or "inconclusive", as the trial verdict's rules give it
    expected: str  # "plaintext" for the baseline, "encrypted" otherwise
    scans: tuple[FileScan, ...]

    @property
    def metrics(self) -> dict[str, float]:
        return {"canary_hits": float(sum(s.hits for s in self.scans)),
                "marker_hits": float(sum(s.marker_hits for s in self.scans)),
                "plaintext_headers": float(sum(bool(s.plaintext_header) for s in self.scans)),
                "files_scanned": float(len(self.scans))}


def check(ctx: RunContext, database: Database, contents: Path, canaries_readable: bool) -> ArtifactCheck:
    """Scan the unpacked artifact `contents` of `database` for the trial's canaries and markers and
    judge it."""
    expected = "plaintext" if database.encryption.is_baseline else "encrypted"
    verdict = ctx.judge_at_rest(contents, expected, readable=canaries_readable, like=database)
    return ArtifactCheck(verdict.verdict, expected, verdict.files)


def magic_found(path: Path, start: int) -> list[str]:
    """The plaintext formats whose magic bytes appear in `path`'s payload, which begins at
    `start` (a sealed file's, after its header): any of them means the payload is not encrypted."""
    with path.open("rb") as fh:
        fh.seek(start)
        head = fh.read(1 << 16)
    return [name for name, (offset, magic) in PLAINTEXT_MAGIC.items()
            if (magic in head if offset is None else head[offset:offset + len(magic)] == magic)]


def check_sealed(ctx: RunContext, sealed: Path, payload_start: int, canaries_readable: bool) -> ArtifactCheck:
    """Scan a sealed backup file for the trial's canaries and markers (every column is sealed:
    a marker found is plaintext too) and for a plaintext format's magic bytes, and judge it."""
    verdict = ctx.judge_at_rest(sealed, "encrypted", readable=canaries_readable,
                                plaintext_format=bool(magic_found(sealed, payload_start)))
    return ArtifactCheck(verdict.verdict, "encrypted", verdict.files)


ZERO_BLOCK = 4096
"""The block `zero_share` counts in: a page of every engine here is a whole number of them."""
_READ = ZERO_BLOCK * 2048  # 8 MiB read at a time


def zero_share(contents: Path) -> float:
    """The share of the bytes under `contents` (a file, or every file below a directory) that lie
    in blocks of ZERO_BLOCK zero bytes, each file cut into blocks from its start (a last, shorter
    block counts when it is all zeros): space a tool copied unwritten (preallocated extents, a
    system tablespace's free pages), which compresses to almost nothing whether the engine
    encrypts its pages or not. NaN when there are no bytes."""
    files = [contents] if contents.is_file() else sorted(p for p in contents.rglob("*") if p.is_file())
    zeros = total = 0
    for path in files:
        with path.open("rb") as fh:
            while chunk := fh.read(_READ):
                whole = len(chunk) - len(chunk) % ZERO_BLOCK
                blocks = np.frombuffer(chunk, dtype=np.uint8, count=whole).reshape(-1, ZERO_BLOCK)
                zeros += ZERO_BLOCK * int(np.count_nonzero(~blocks.any(axis=1)))
                if whole < len(chunk) and not any(chunk[whole:]):
                    zeros += len(chunk) - whole
                total += len(chunk)
    return zeros / total if total else float("nan")
