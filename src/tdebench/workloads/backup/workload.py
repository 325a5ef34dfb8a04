"""Backup and restore (the backup tests of Madyatmadja et al. (2021), Dolyetyus (n.d.) and
Aydın (2022), docs/references.md): how long a backup takes with and without encryption,
compressed or not, whether it restores completely, whether it is encrypted at rest, and
whether it restores without the key.

The data is TPC-H at the plan's scale, loaded by the tpch workload's own code, plus the
trial's canary table. Each test is one of the engine's backup methods (`Backups.backup_methods`):

| test              | what                                                              |
|-------------------|-------------------------------------------------------------------|
| `full`            | physical backup, uncompressed                                     |
| `full-compressed` | physical backup, gzip-compressed (level 6 for every engine)       |
| `logical`         | the engine's logical dump (compressed where the tool's default is) |

and records these steps:

| step                  | timed | metrics                                                             |
|-----------------------|-------|---------------------------------------------------------------------|
| `backup`              | yes   | `elapsed_s`, `cpu_s` (engine and tools), `tool_cpu_s`, I/O, `size_bytes` (artifact), `unpacked_bytes` (artifact decompressed), `ratio` (= unpacked / size: the compression ratio, 1 uncompressed), `zero_share` (of the unpacked bytes, those in 4 KiB blocks of zeros: unwritten space, which compresses whether encrypted or not), `database_bytes`, `compressed` (1 or 0, the method's); `full-compressed` also `compression_elapsed_share` and `compression_cpu_share` (its excess over the same trial's `full`, as a share of its own) |
| `scan`                | no    | `canary_hits`, `marker_hits`, `plaintext_headers`, `files_scanned`; its `answer` is the artifact's verdict: `encrypted`, `plaintext` or `inconclusive` |
| `restore`             | yes   | the restore into a fresh instance with the same key, until it can be connected to; `restore_ok` (1: row counts and checksums of every table equal the original's), `rows`; `answer` `ok` or `failed` |
| `restore-without-key` | no    | encrypted configurations only: the restore into a fresh instance with a wrong key (a new random one); `restore_without_key_failed` (1: it raised, or what it restored differs); `answer` `refused` or `accepted` |

With the plan key `backup_encryptions` (default `["none"]`), each entry other than `none` runs
the test once more with the backup sealed by the workload's own encryption (`sealing`: the
engines here have no backup encryption of their own), recorded as test `<method>+<entry>`:
`backup` (as above), `encrypt` (timed in this process: `elapsed_s`, `cpu_s`, `size_bytes` of the
sealed file, `plain_bytes`, `time_share` and `cpu_share` of backup + encryption; its answer the
construction), `scan` (the sealed file as stored), `decrypt` (timed), `restore` (what was
decrypted, checked like any restore) and `restore-without-key` (opened with a wrong key).

A backup in plaintext while the database is encrypted is a finding, not a failure; a restore
that loses or changes data fails the trial (WrongAnswer, after the measurements are stored).
Everything a test writes (the artifact, its unpacked copy, the sealed file, the restored
instances) lives in `backup-<test>/` in the trial's workspace and is removed before the test
ends, so the trial's own verdict still judges the database alone.
"""  # noqa: E501 (a Markdown table, read as one)

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from tdebench.engines.base import Backup, BackupMethod, Connection, Database, Encryption, backups
from tdebench.keys import Secret
from tdebench.results import BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL
from tdebench.workloads.backup import artifact, sealing, usage
from tdebench.workloads.backup.checksum import TableChecksum, checksums, differences
from tdebench.workloads.base import (CANARY_TABLE, LOAD_HEADLINES, Headline, Option, Reporting, RunContext, Workload,
                                     WrongAnswer,
                                     read_canaries)
from tdebench.workloads.tpch import TABLES as TPCH_TABLES
from tdebench.workloads.tpch import TpchWorkload

TABLES: dict[str, tuple[str, ...]] = {**TPCH_TABLES, CANARY_TABLE: ("id", "canary", "marker")}
"""Every table the workload's database holds, with its columns: what a restore must bring back."""


def _share(part: float | None, rest: float | None) -> float:
    """part / (part + rest), NaN when either is unknown or both are 0."""
    if part is None or rest is None or part + rest <= 0:
        return math.nan
    return part / (part + rest)


def _scratch_database(ctx: RunContext) -> Callable[[Path, Encryption, Secret | None], Database]:
    """`RunContext.scratch_database`, which this workload needs: it restores into databases of its own."""
    if ctx.scratch_database is None:
        raise RuntimeError("the backup workload restores into a database of its own: "
                           "RunContext.scratch_database must be set")
    return ctx.scratch_database


class BackupWorkload(Workload):
    name = "backup"
    judged_apart = ("backup-*",)  # each test's area: artifacts, plaintext exports, restores (artifact.py)
    dialects = TpchWorkload.dialects  # its data and load are TPC-H's
    tests = (BACKUP_FULL, BACKUP_FULL_COMPRESSED, BACKUP_LOGICAL)
    default_scale = 0.01
    scale_min = TpchWorkload.scale_min  # its data are TPC-H's
    scale_max = TpchWorkload.scale_max
    max_streams = 1
    local_tests = {test: "it backs up and restores with the engine's own tools, on files and instances tdebench "
                         "owns; a server by url has neither for tdebench to use" for test in tests}
    options = {
        "backup_encryptions": Option(
            (sealing.NONE,), "how each backup is stored: as the engine's tool made it (none) and/or sealed "
            "into one file by a streaming encryptor with a fresh key (aes-128/192/256: GCM; 3des: CBC then "
            "HMAC-SHA256)", choices=sealing.BACKUP_ENCRYPTIONS),
    }
    # for its report (report/sections/backup.py): the backups and restores, and how a sealed one is named
    reporting = Reporting(headlines=(Headline("elapsed_s", ("backup", "restore")), *LOAD_HEADLINES))
    sealings: ClassVar[tuple[str, ...]] = sealing.BACKUP_ENCRYPTIONS  # in the report's order, unsealed first
    unsealed: ClassVar[str] = sealing.NONE
    constructions: ClassVar[dict[str, str]] = {c.name: c.construction for c in sealing.CIPHERS.values()}
    split_test = staticmethod(sealing.split_test)  # a recorded test's (method, sealing)

    def __init__(self) -> None:
        self._tpch = TpchWorkload()
        self._sealings = itertools.count(1)  # numbers each sealed backup's key purpose: a fresh key per backup
        # the uncompressed physical backup's metrics, by test (its method replaced by "physical") and warm-up
        self._uncompressed: dict[tuple[str, bool], dict[str, float]] = {}

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        self._tpch.prepare(scale, data_dir, seed)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        self._tpch.load(ctx, conn)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        if test not in self.tests:
            raise ValueError(f"backup has no test {test!r}; valid: {', '.join(self.tests)}")
        _scratch_database(ctx)  # before anything is backed up
        method = backups(ctx.database, "backup").backup_method(test)
        original = checksums(conn, ctx.dialect, TABLES)
        readable = read_canaries(conn) == set(ctx.canaries)
        lost: list[str] = []
        for name in ctx.options.get("backup_encryptions", (sealing.NONE,)):
            area = ctx.database.workspace / f"backup-{sealing.sealed_test(test, name)}"
            shutil.rmtree(area, ignore_errors=True)
            area.mkdir()
            try:
                if name == sealing.NONE:
                    lost += self._plain(ctx, method, area, original, readable, warmup)
                else:
                    lost += self._sealed(ctx, method, sealing.CIPHERS[name], area, original, readable, warmup)
            finally:
                shutil.rmtree(area, ignore_errors=True)
        if lost:
            raise WrongAnswer(f"backup {test}: the restored database differs from the original: {'; '.join(lost)}")

    def _backup(self, ctx: RunContext, method: BackupMethod, area: Path, test: str, readable: bool,
                warmup: bool) -> tuple[Backup, dict[str, float]]:
        """Back up (timed) and record the step under `test`, with the artifact's size unpacked as
        anyone holding it could unpack it. A backup stored as it is (`test` is the method) is also
        scanned there and its verdict recorded; a sealed one is scanned once sealed instead."""
        database, engine = ctx.database, backups(ctx.database, "backup")
        backup, metrics = usage.timed(ctx.recorder, lambda: engine.backup(method, area / "artifact"), [database])
        contents = engine.backup_contents(backup, area / "unpacked")
        stored_as_is = test == method.name
        checked = artifact.check(ctx, database, contents, readable) if stored_as_is else None
        size = backup.size_bytes()
        unpacked = Backup(method, contents).size_bytes()
        metrics.update(size_bytes=float(size), unpacked_bytes=float(unpacked),
                       ratio=unpacked / size if size else float("nan"), zero_share=artifact.zero_share(contents),
                       database_bytes=float(database.size_bytes()), compressed=float(method.compressed))
        metrics.update(self._compression_shares(method, test, warmup, metrics))
        ctx.recorder.record(test, "backup", metrics, warmup=warmup)
        if checked is not None:
            ctx.recorder.record(test, "scan", checked.metrics, warmup=warmup, answer=checked.verdict)
        if contents != backup.path:
            shutil.rmtree(contents, ignore_errors=True)
        return backup, metrics

    def _plain(self, ctx: RunContext, method: BackupMethod, area: Path, original: dict[str, TableChecksum],
               readable: bool, warmup: bool) -> list[str]:
        """The backup stored as the engine's tool made it: back up, scan, restore; for an encrypted
        database also a restore with a wrong database key. Returns what the restore lost."""
        backup, _ = self._backup(ctx, method, area, method.name, readable, warmup)
        lost = self._restore(ctx, backup, method.name, area / "restored", original, warmup)
        if not ctx.database.encryption.is_baseline:
            wrong_key = Secret(os.urandom(32))
            refused = not self._restores_with(ctx, backup, area / "wrong-key", wrong_key, original)
            self._record_refusal(ctx, method.name, refused, warmup)
        return lost

    def _sealed(self, ctx: RunContext, method: BackupMethod, cipher: sealing.BackupCipher, area: Path,
                original: dict[str, TableChecksum], readable: bool, warmup: bool) -> list[str]:
        """The backup sealed with a key of its own (test `<method>+<cipher>`): back up, encrypt
        (timed in this process), scan the sealed file, decrypt (timed) and restore what came out,
        and try to open it with a wrong key. Returns what the restore lost."""
        test = sealing.sealed_test(method.name, cipher.name)
        backup, backed = self._backup(ctx, method, area, test, readable, warmup)
        key = ctx.new_key(f"backup-{next(self._sealings)}") if ctx.new_key else Secret(os.urandom(32))
        here = dataclasses.replace(ctx.recorder, processes=None)  # the encryption runs in this process
        sealed, metrics = here.timed(lambda: sealing.seal(backup.path, cipher, key, area / "sealed"))
        shutil.rmtree(backup.path)  # from here on only the sealed file is left, as in backup storage
        size = sealed.stat().st_size
        metrics.update(size_bytes=float(size), plain_bytes=backed["size_bytes"],
                       time_share=_share(metrics["elapsed_s"], backed["elapsed_s"]),
                       cpu_share=_share(metrics.get("cpu_s"), backed.get("cpu_s")))
        ctx.recorder.record(test, "encrypt", metrics, warmup=warmup, answer=cipher.construction)
        checked = artifact.check_sealed(ctx, sealed, sealing.payload_offset(sealed), readable)
        ctx.recorder.record(test, "scan", checked.metrics, warmup=warmup, answer=checked.verdict)
        opened, metrics = here.timed(lambda: sealing.open_sealed(sealed, key, area / "opened"))
        ctx.recorder.record(test, "decrypt", metrics, warmup=warmup)
        lost = self._restore(ctx, Backup(method, opened), test, area / "restored", original, warmup)
        shutil.rmtree(opened)
        try:
            sealing.open_sealed(sealed, Secret(os.urandom(32)), area / "wrong-key")
            refused = False
        except sealing.SealBroken:
            refused = True
        self._record_refusal(ctx, test, refused, warmup)
        return lost

    def _compression_shares(self, method: BackupMethod, test: str, warmup: bool,
                            metrics: dict[str, float]) -> dict[str, float]:
        """The compressor's share of a compressed physical backup's time and CPU: its excess over
        the same trial's uncompressed physical backup of the same test (`full` runs before
        `full-compressed` in every plan's order), as a share of its own; none without that."""
        if method.kind != "physical":
            return {}
        key = (test.replace(method.name, "physical", 1), warmup)
        if not method.compressed:
            self._uncompressed[key] = metrics
            return {}
        plain = self._uncompressed.get(key)
        if plain is None:
            return {}
        return {f"compression_{name}_share": (metrics[f"{name}_s"] - plain[f"{name}_s"]) / metrics[f"{name}_s"]
                for name in ("elapsed", "cpu") if metrics.get(f"{name}_s") and f"{name}_s" in plain}

    @staticmethod
    def _record_refusal(ctx: RunContext, test: str, refused: bool, warmup: bool) -> None:
        ctx.recorder.record(test, "restore-without-key", {"restore_without_key_failed": float(refused)},
                            warmup=warmup, answer="refused" if refused else "accepted")

    def _restore(self, ctx: RunContext, backup: Backup, test: str, workspace: Path,
                 original: dict[str, TableChecksum], warmup: bool) -> list[str]:
        """Restore into a fresh instance with the same key (timed), compare every table, record
        the step under `test`; returns what differs (nothing when the restore lost nothing)."""
        restored = _scratch_database(ctx)(workspace, ctx.database.encryption, ctx.database.key)
        try:
            _, metrics = usage.timed(ctx.recorder, lambda: backups(restored, "restore").restore(backup),
                                     [ctx.database, restored])
            found = self._checksums(ctx, restored)
        finally:
            restored.close()
        lost = differences(original, found)
        metrics.update(restore_ok=float(not lost), rows=float(sum(c.rows for c in found.values())))
        ctx.recorder.record(test, "restore", metrics, warmup=warmup, answer="failed" if lost else "ok")
        return lost

    def _restores_with(self, ctx: RunContext, backup: Backup, workspace: Path, key: Secret,
                       original: dict[str, TableChecksum]) -> bool:
        """Whether a fresh instance with `key` restores exactly the original data from `backup`;
        any failure on the way (the restore, the start, reading a table) means it does not."""
        stranger = _scratch_database(ctx)(workspace, ctx.database.encryption, key)
        try:
            backups(stranger, "restore").restore(backup)
            return self._checksums(ctx, stranger) == original
        except Exception:  # the expected outcome for an encrypted backup: refused, one way or another
            return False
        finally:
            stranger.close()

    @staticmethod
    def _checksums(ctx: RunContext, database: Database) -> dict[str, TableChecksum]:
        conn = database.connect()
        try:
            return checksums(conn, ctx.dialect, TABLES)
        finally:
            conn.close()
