"""Keys that should no longer work: after a rekey (the engine's own, `Reencrypts.rekey`, as the
maintenance workload's rekey test runs it), the old key must open neither the database nor a
backup taken after the rekey, and a backup taken before it must still need the old key (a
rekey does not reach copies already made: whoever holds the old key and an old backup reads
it).

Steps of test `old-key` (each answer a word of `WORDS`):
- `database`: the old key against the rekeyed database (`Reencrypts.opens_with`);
- `backup-before-rekey`: a physical backup taken before the rekey, restored with the old key and
  with the new one;
- `backup-after-rekey`: a physical backup taken after it, restored with the old key.
An engine that cannot rekey records `unsupported`; the baseline, which has no key,
`not applicable`; an engine without physical backups records only `database`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tdebench.engines.base import Backup, Backups, Database, NotSupported, backups, reencrypts
from tdebench.keys import Secret
from tdebench.results import BACKUP_FULL
from tdebench.workloads.base import RunContext, WrongAnswer
from tdebench.workloads.strength import data, tamper

TEST = "old-key"
DIRECTORY = "strength-old-key"  # in the trial's workspace: the backups and their restores, removed after
REFUSED, OPENS = "refused", "opens"
NEEDS_OLD, NEW_OPENS, NONE_OPENS = "needs the old key", "the new key opens it", "no key opens it"
UNSUPPORTED, NOT_APPLICABLE = "unsupported", "not applicable"
WORDS = (REFUSED, OPENS, NEEDS_OLD, NEW_OPENS, NONE_OPENS, UNSUPPORTED, NOT_APPLICABLE)
KEYLESS = ("the new key restores a backup taken before it existed: the engine's backup is not encrypted by "
           "this encryption (a file-system layer's backup tool reads the decrypted view), so any key restores it")
WEAK = frozenset({OPENS, NEW_OPENS})
"""Answers that mean an old key still reads what it should not (or a rekey reached a copy it cannot have)."""



def run(ctx: RunContext, rows: int, purpose: str, *, warmup: bool) -> None:
    database = ctx.database
    if not database.encryption.encrypts:
        ctx.recorder.record(TEST, "database", {}, warmup=warmup, answer=NOT_APPLICABLE)
        return
    if ctx.new_key is None or database.key is None or ctx.scratch_database is None:
        raise RuntimeError("the old-key test needs the runner's key source and scratch databases")
    ctx.session.release()  # the key changes with the database closed; the runner reconnects after
    area = database.workspace / DIRECTORY
    shutil.rmtree(area, ignore_errors=True)
    area.mkdir()
    try:
        _run(ctx, area, rows, purpose, warmup)
    finally:
        shutil.rmtree(area, ignore_errors=True)


def _run(ctx: RunContext, area: Path, rows: int, purpose: str, warmup: bool) -> None:
    database = ctx.database
    old = database.key
    assert old is not None and ctx.new_key is not None
    copies = full_backups(database)
    before = copies.backup(copies.backup_method(BACKUP_FULL), area / "before") if copies else None
    try:
        method = reencrypts(database, "rekey").rekey(new := ctx.new_key(purpose))
    except NotSupported as exc:  # the method that would do it and why not, as the engine says it
        ctx.recorder.record(TEST, "database", {}, warmup=warmup, answer=UNSUPPORTED, note=f"{exc.method}: {exc}")
        return
    rekeyed = reencrypts(database, method)
    if not rekeyed.opens_with(new):
        raise WrongAnswer(f"old-key ({database.encryption.name}): the new key does not open the rekeyed database")
    old_opens = rekeyed.opens_with(old)
    ctx.recorder.record(TEST, "database", {"old_key_opens": float(old_opens)}, warmup=warmup,
                        answer=OPENS if old_opens else REFUSED)
    if copies is None or before is None:
        return
    (with_old, old_said), (with_new, _) = (_restores(ctx, before, area / f"before-{name}", key, rows)
                                          for name, key in (("old", old), ("new", new)))
    answer = NEW_OPENS if with_new else NEEDS_OLD if with_old else NONE_OPENS
    # a key the backup was never made with opens it: the engine's backup is not under this encryption
    keyless = KEYLESS if with_new else None
    ctx.recorder.record(TEST, "backup-before-rekey", {"old_key_opens": float(with_old),
                                                      "new_key_opens": float(with_new)}, warmup=warmup,
                        answer=answer, note=keyless if with_new or with_old else _failed(ctx, old_said))
    database.connect().close()  # open again (a server started, a mount made) for its backup tool
    after = copies.backup(copies.backup_method(BACKUP_FULL), area / "after")
    old_opens, _ = _restores(ctx, after, area / "after-old", old, rows)
    if old_opens:
        answer, note = OPENS, keyless
    else:  # the control: the key it was made with restores it, else the refusal proves nothing
        new_opens, new_said = _restores(ctx, after, area / "after-new", new, rows)
        answer, note = (REFUSED, None) if new_opens else (NONE_OPENS, _failed(ctx, new_said))
    ctx.recorder.record(TEST, "backup-after-rekey", {"old_key_opens": float(old_opens)}, warmup=warmup,
                        answer=answer, note=note)


def _failed(ctx: RunContext, said: str) -> str:
    """Why the key a backup was made with did not restore it: the restore itself failed, so a
    refusal of the other key proves nothing (first line, keys scrubbed)."""
    key = ctx.database.key
    return "the key it was made with did not restore it either: " + tamper.in_brief(key.scrub(said) if key else said)


def full_backups(database: Database) -> Backups | None:
    """The database's backups, when it has a physical full one; None otherwise."""
    try:
        copies = backups(database, "backup")
        copies.backup_method(BACKUP_FULL)
    except (NotSupported, KeyError):
        return None
    return copies


def _restores(ctx: RunContext, backup: Backup, workspace: Path, key: Secret, rows: int) -> tuple[bool, str]:
    """Whether `key` restores `backup` into a fresh database whose rows are all as written, and
    if not, what failed on the way (the restore, the open, a read)."""
    assert ctx.scratch_database is not None
    restored = ctx.scratch_database(workspace, ctx.database.encryption, key)
    try:
        backups(restored, "restore").restore(backup)
        conn = restored.connect()
        try:
            differs = data.differences(conn, rows, ctx.seed)
            return differs is None, differs or ""
        finally:
            conn.close()
    except Exception as exc:  # the expected outcome for a wrong key: refused, one way or another
        return False, f"{type(exc).__name__}: {key.scrub(str(exc))}"
    finally:
        restored.close()
