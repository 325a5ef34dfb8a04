"""Is a backup encrypted at rest? The trial's at-rest scan, applied to the backup artifact.

The artifact is scanned as anyone holding it can read it with standard tools and no key:
decompressed and unpacked (`Database.backup_contents`), because canaries in a compressed
plaintext would hide from a scan of the compressed bytes. The rules are the trial verdict's
(`verify.judge`): a canary found means plaintext; for `none` a canary *must* be found (the
positive control, the same scan on the same kind of artifact); under column-level encryption
the marker beside each canary must be found and the canary must not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tdebench import verify
from tdebench.engines.base import Database
from tdebench.store import FileScan, TrialKey


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


def check(trial: TrialKey, database: Database, contents: Path, canaries: Sequence[str], markers: Sequence[str],
          canaries_readable: bool) -> ArtifactCheck:
    """Scan the unpacked artifact `contents` for the trial's canaries and markers and judge it."""
    expected = "plaintext" if database.encryption.is_baseline else "encrypted"
    scans = verify.scan([contents], canaries, contents, database.plaintext_signature(), markers=markers)
    verdict = verify.judge(trial, expected, scans, canaries_readable,
                           column_layer=database.encryption.layer == "column")
    return ArtifactCheck(verdict.verdict, expected, scans)
