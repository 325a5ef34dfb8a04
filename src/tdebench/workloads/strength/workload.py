"""The strength workload: beyond "is it encrypted", what an attacker holding the
files can still do. Two tables of known rows (data.py) and five tests:

- `repeats`: repeated 16-byte blocks and pages in the closed database's files, and in as many
  random bytes (repeats.py);
- `tamper`: one byte of a data page of the stopped database flipped, the rows read back
  (tamper.py), the byte flipped back after;
- `old-key`: after a rekey, the old key against the database and its backups (oldkeys.py);
- `forgery`: one stored value changed to another without the key, by XORing their difference into
  the ciphertext at the offset an unencrypted twin holds it at (forgery.py);
- `spill`: the trial's canaries sorted past a small cache, so that the engine writes them to temp
  files in the workspace (`Database.spilling`): the at-rest check and the transient capture then
  say whether the encryption covers temp files, with the baseline's as the positive control;
- `backup`: a physical full backup of the database, taken with the engine's own tool, unpacked
  and scanned by the trial's at-rest rules: whether the encryption covers the engine's backups,
  with the baseline's as the positive control (a file-system layer's backup, written outside its
  mount, is not covered).

Every test works on the database at rest: the runner's connection is released and the database
closed first (a server stopped, a gocryptfs mount unmounted), the runner reconnects after. A
tampered file is read back by opening the database again (a server started again, its answer or
refusal as its client library gives it), in a child process for an engine running inside this
one. The file a test changes is the one holding its table (`Database.page_layout`): the main file
of an embedded engine, a server's tablespace or heap file, the cipher file behind it on gocryptfs.
Its results are records of what happened (answers and counts), not timings; the report's
`strength` section reads them (report/sections/strength.py).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tdebench.engines.base import (NONE, Backup, Backups, Connection, Database, LogFile, NotSupported, PageLayout,
                                   SealedValue, backups)
from tdebench.results import BACKUP_FULL
from tdebench.workloads import sqlfiles
from tdebench.workloads.backup import artifact
from tdebench.workloads.base import CANARY_TABLE, RunContext, Workload, WrongAnswer, read_canaries
from tdebench.workloads.strength import data, forgery, oldkeys, repeats, tamper

REPEATS, TAMPER, OLD_KEY, FORGERY, SPILL = "repeats", "tamper", oldkeys.TEST, "forgery", "spill"
SCANNED_BACKUP = "backup"  # the test: a physical backup of the database scanned at rest
SCANNED_BACKUP_DIRECTORY = "strength-backup"  # in the trial's workspace: that backup, removed once judged
SPILL_ROWS = 1_500_000  # rows the spill test sorts: past any small cache (the canaries, repeated)
# the forgery's steps: in the database's file, in a physical backup of it, in its write-ahead log
DATA_FILE, BACKUP, LOG = "value", "backup", "wal"
FLIP_AT = 0.75  # the page flipped: this far into the file's pages, among the rows loaded last
FLIP_MASK = b"\x01"  # one bit of one byte
FLIP_TRIES = 16  # pages tried in turn while the read notices nothing (a free or unused page)
# the layers whose ciphertext keeps the engine's page layout: the forgery finds a value where an
# unencrypted twin has it; the others, and why not
KEEPS_LAYOUT = ("none", "native")
KEEPS_LAYOUT_NOT = {"column": "each value is sealed on its own, with a random session key and IV",
                    "fs": "the file is cut into 4 KiB blocks, each with a nonce and a tag"}
# and why their backup and log are not forged either
KEEPS_LAYOUT_NOT_ELSEWHERE = {
    "column": "the same sealed values as the data file's, forged in the log only where the engine leaves it at "
              "rest and never encrypts it itself (PostgreSQL's pg_wal)",
    "fs": "the engine's backup and log are written through the decrypted view: the backup is not encrypted by "
          "the layer at all (see old-key), the log is ciphertext the same as the file"}


class StrengthWorkload(Workload):
    name = "strength"
    # the forgery before old-key: a rekey may rewrite the file (DuckDB copies the database into a new
    # one), whose layout then no longer matches the unencrypted twin's
    # the spill first, on the runner's connection, before the others close the database; the backup
    # last, of the database as the trial leaves it (rekeyed)
    tests = (SPILL, REPEATS, TAMPER, FORGERY, OLD_KEY, SCANNED_BACKUP)
    # the backups it takes around a rekey and the forgery's unencrypted twin, removed when their test ends
    judged_apart = (oldkeys.DIRECTORY, forgery.DIRECTORY, SCANNED_BACKUP_DIRECTORY)
    # its statements (data.py) in every dialect of an engine whose files tdebench holds; a server is
    # stopped before a byte is flipped and started again to read it back
    dialects = ("duckdb", "sqlite", "mysql", "postgres")
    default_scale = 20_000
    scale_min = 1_000
    scale_max = 2_000_000
    whole_scale = True
    scale_format = "{} rows"
    max_streams = 1
    timed = False  # its results are outcomes, not timings (its plans run one repetition)
    local_tests = {test: "it reads and changes the database's files at rest, which only an engine tdebench owns "
                         "has" for test in tests}
    # for its report (report/sections/strength.py): the words its records answer with
    classes = tamper.CLASSES
    weak_classes = frozenset({tamper.ALTERED, tamper.FORGEABLE, tamper.CRASHED})
    unchanged = tamper.UNCHANGED
    forgeable = tamper.FORGEABLE
    forged_backup = BACKUP  # the forgery's step in a physical backup (its other step: the database's file)
    forged_log = LOG  # its step in the write-ahead log
    old_key_weak = oldkeys.WEAK

    def __init__(self) -> None:
        self._rekeys = 0

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        data.prepare(data_dir, int(scale), seed)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        data.load(ctx.database, conn, ctx.data_dir, int(ctx.scale), ctx.seed)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        if test == SPILL:
            self._spill(ctx, conn, warmup)
        elif test == REPEATS:
            self._repeats(ctx, warmup)
        elif test == TAMPER:
            self._tamper(ctx, warmup)
        elif test == OLD_KEY:
            self._rekeys += 1
            oldkeys.run(ctx, int(ctx.scale), f"strength-rekey-{self._rekeys}", warmup=warmup)
        elif test == FORGERY:
            self._forgery(ctx, warmup)
        elif test == SCANNED_BACKUP:
            self._scanned_backup(ctx, warmup)
        else:
            raise ValueError(f"strength has no test {test!r}; valid: {', '.join(self.tests)}")

    @staticmethod
    def _spill(ctx: RunContext, conn: Connection, warmup: bool) -> None:
        """The canaries, repeated to SPILL_ROWS rows, sorted in a window on a connection whose
        sorts spill (`Database.spilling`), the answer checked; recorded as step `sort` (answer ok,
        failed or unsupported). What reached the temp files is the trial's verdict's to say."""
        statement = sqlfiles.read(__package__, ctx.dialect, SPILL)
        try:
            if statement is None:
                raise NotSupported(SPILL, f"the strength workload has no spill query in the {ctx.dialect} dialect")
            spilling = ctx.database.spilling(conn)
        except NotSupported as exc:
            _record(ctx, SPILL, "sort", {}, oldkeys.UNSUPPORTED, str(exc), warmup)
            return
        try:
            canaries = int(spilling.execute(f"SELECT count(*) FROM {CANARY_TABLE}")[0][0])
            copies = SPILL_ROWS // max(canaries, 1)
            rows, metrics = ctx.recorder.timed(lambda: spilling.execute(statement.format(n=copies)))
        finally:
            if spilling is not conn:
                spilling.close()
        expected = (canaries * copies, canaries * copies * (copies + 1) // 2)
        got = tuple(int(value) for value in rows[0]) if rows else ()
        metrics["rows"] = float(expected[0])
        ctx.recorder.record(SPILL, "sort", metrics, warmup=warmup, answer="ok" if got == expected else "failed")
        if got != expected:
            raise WrongAnswer(f"strength spill: {got} where the sort should give {expected}")

    @staticmethod
    def _scanned_backup(ctx: RunContext, warmup: bool) -> None:
        """A physical full backup (as the forgery takes one: values stored as written), unpacked
        where the method packs it (a compressed plaintext would hide its canaries), scanned and
        judged by the trial's at-rest rules (backup/artifact.py, as the backup workload judges its
        artifacts), then removed; recorded as step `scan` with the verdict as its answer, or
        `unsupported` where the engine has no physical backup."""
        copies = oldkeys.full_backups(ctx.database)
        if copies is None:
            _record(ctx, SCANNED_BACKUP, "scan", {}, oldkeys.UNSUPPORTED, "the engine has no physical backup", warmup)
            return
        area = ctx.database.workspace / SCANNED_BACKUP_DIRECTORY
        shutil.rmtree(area, ignore_errors=True)
        area.mkdir(mode=0o711)  # a server's user writes its backup below it
        try:
            conn = ctx.database.connect()
            try:  # the positive control's premise: the canaries read back through the engine
                readable = read_canaries(conn) == set(ctx.canaries)
            finally:
                conn.close()
            backup = _verbatim_backup(ctx.database, copies, area / "backup")
            checked = artifact.check(ctx, ctx.database, copies.backup_contents(backup, area / "unpacked"), readable)
            ctx.recorder.record(SCANNED_BACKUP, "scan", {**checked.metrics, "bytes": float(backup.size_bytes())},
                                warmup=warmup, answer=checked.verdict, note=backup.method.tool)
        finally:
            shutil.rmtree(area, ignore_errors=True)

    @staticmethod
    def _at_rest(ctx: RunContext) -> None:
        """Every connection closed and the engine stopped: the files are at rest."""
        ctx.session.release()
        ctx.database.close()

    def _repeats(self, ctx: RunContext, warmup: bool) -> None:
        """Repeated blocks and pages in the file holding the table of identical rows (a server's
        other files hold its catalog, some in plaintext by design, and copies of pages such as
        InnoDB's doublewrite buffer: counted with them, a repeat would say nothing of the
        encryption); every file where the engine does not say which holds it."""
        layout = ctx.database.page_layout(data.SAME_TABLE)
        self._at_rest(ctx)
        files = [layout.file] if layout is not None else [p for p in ctx.database.files() if p.is_file()]
        found = repeats.block_repeats(files)
        size = sum(p.stat().st_size for p in files)
        metrics = {"bytes": float(size), "blocks": float(found.units), "repeated_blocks": float(found.repeated),
                   "repeated_block_share": found.share}
        if layout is not None:
            pages = repeats.page_repeats(layout.file, layout.first_page, layout.page_bytes)
            metrics.update(page_bytes=float(layout.page_bytes), pages=float(pages.units),
                           repeated_pages=float(pages.repeated), repeated_page_share=pages.share)
        counted = layout.file.name if layout is not None else "every file"
        ctx.recorder.record(REPEATS, "database", metrics, warmup=warmup, note=f"counted: {counted}")
        chance = repeats.random_reference(size)
        ctx.recorder.record(REPEATS, "random", {"bytes": float(size), "blocks": float(chance.units),
                                                "repeated_blocks": float(chance.repeated),
                                                "repeated_block_share": chance.share}, warmup=warmup)

    def _tamper(self, ctx: RunContext, warmup: bool) -> None:
        layout = ctx.database.page_layout(data.ROWS_TABLE)
        if layout is None:
            ctx.recorder.record(TAMPER, "data-page", {}, warmup=warmup, answer=oldkeys.UNSUPPORTED)
            return
        self._at_rest(ctx)
        read = _reader(ctx)
        for tries, offset in enumerate(tamper.targets(layout, FLIP_AT, FLIP_TRIES), start=1):
            reading = _changed(ctx.database, layout, [(offset, FLIP_MASK)], read)
            if reading.status != tamper.SAME:
                break
        metrics = {"offset": float(offset), "page_bytes": float(layout.page_bytes), "tries": float(tries)}
        _record(ctx, TAMPER, "data-page", metrics, tamper.classify(reading, ctx.database.encryption.authenticated),
                reading.said, warmup)
        _restored(ctx, read)

    def _forgery(self, ctx: RunContext, warmup: bool) -> None:
        database = ctx.database
        layout = database.page_layout(data.ROWS_TABLE)
        if layout is None or ctx.scratch_database is None:
            ctx.recorder.record(FORGERY, DATA_FILE, {}, warmup=warmup, answer=oldkeys.UNSUPPORTED)
            return
        if database.encryption.layer not in KEEPS_LAYOUT:
            layer = database.encryption.layer
            sealed = self._forged_sealed(ctx, layout, warmup)
            if not sealed:
                _record(ctx, FORGERY, DATA_FILE, {}, oldkeys.UNSUPPORTED, f"the {layer} layer does not keep the "
                        f"engine's layout, so an unencrypted twin does not tell where a value is: "
                        f"{KEEPS_LAYOUT_NOT.get(layer, '')}", warmup)
            own_log = sealed and _forged_in_own_log(database)
            if own_log:
                self._forged_own_log(ctx, _Plan(int(ctx.scale), ctx.seed).default_row, warmup)
            for step in () if own_log else (LOG,) if sealed else (BACKUP, LOG):
                _record(ctx, FORGERY, step, {}, oldkeys.UNSUPPORTED,
                        f"the {layer} layer: {KEEPS_LAYOUT_NOT_ELSEWHERE.get(layer, '')}", warmup)
            return
        self._at_rest(ctx)
        plan = _Plan.of(ctx, layout)
        twin = _twin_offsets(ctx, plan)
        old = data.value(ctx.seed, twin.row)
        new = plan.new(old, twin.data)
        if twin.data is None:
            _record(ctx, FORGERY, DATA_FILE, {}, oldkeys.UNSUPPORTED, "an unencrypted database of this engine does "
                    "not store the value verbatim (compressed), so its offset is not known", warmup)
        else:
            if _forged(ctx, DATA_FILE, layout, twin.data, twin.row, old, new, _reader(ctx, {twin.row: new}), plan,
                       warmup):
                _restored(ctx, _reader(ctx))
        self._forged_backup(ctx, layout, twin, twin.row, old, new, plan, warmup)
        self._forged_log(ctx, twin, old, new, plan, warmup)

    def _forged_sealed(self, ctx: RunContext, layout: PageLayout, warmup: bool) -> bool:
        """A value a column layer sealed on its own, forged in the table's file and in a physical
        backup: the row's sealed form as stored, and where its plaintext lies in it, from the engine
        (`Database.sealed_value`, no key needed); that form found in the stopped database's file,
        the difference XORed into the value's last CFB block (`forgery.cfb_tail`: only the block
        after the value garbled, in OpenPGP its MDC), read back, put back; then the same in the
        backup's copy of that file (`_forged_sealed_backup`). False where the layer gives no sealed
        value (the steps are then the caller's to record)."""
        row = _Plan(int(ctx.scale), ctx.seed).default_row
        old = data.value(ctx.seed, row)
        try:
            sealed = _sealed(ctx.database, row)
        except ValueError as exc:
            _record(ctx, FORGERY, DATA_FILE, {}, oldkeys.UNSUPPORTED, str(exc), warmup)
            return True
        if sealed is None:
            return False
        self._at_rest(ctx)
        found = forgery.offset_of(layout.file, sealed.stored)
        if found is None or sealed.value_bytes != len(old.encode()):
            _record(ctx, FORGERY, DATA_FILE, {}, oldkeys.UNSUPPORTED, "the row's sealed value is not once in the "
                    "table's file as the engine gave it, or holds a value of another length", warmup)
            return True
        new, within, mask, how = _sealed_change(sealed, old)
        at = found.offset + within
        reading = _changed(ctx.database, layout, [(at, mask)], _reader(ctx, {row: new}))
        _record_forgery(ctx, DATA_FILE, forgery.Found(at, b"", at), row, False, reading, how, False, warmup)
        _restored(ctx, _reader(ctx))
        self._forged_sealed_backup(ctx, layout, sealed.stored, within, mask, row, new, how, warmup)
        return True

    def _forged_sealed_backup(self, ctx: RunContext, layout: PageLayout, stored: bytes, value_at: int, mask: bytes,
                              row: int, new: str, how: str, warmup: bool) -> None:
        """`mask` XORed at `value_at` of the sealed value `stored` where a physical backup holds it
        (a copy of the table's file), restored into a fresh database with the trial's key and read
        back; the backup put back, its restore must read as written."""
        copies = oldkeys.full_backups(ctx.database)
        if copies is None:
            _record(ctx, FORGERY, BACKUP, {}, oldkeys.UNSUPPORTED, "the engine has no physical backup", warmup)
            return
        with _backed_up(ctx, copies) as (backup, contents, area):
            hit = forgery.offset_in(contents, stored)
            if hit is None:
                _record(ctx, FORGERY, BACKUP, {}, oldkeys.UNSUPPORTED, "the row's sealed value is not once in one "
                        "file of the backup", warmup)
                return
            relative, found = hit
            at = found.offset + value_at
            reading = _changed(ctx.database, dataclasses.replace(layout, file=contents / relative), [(at, mask)],
                               _restore_reader(ctx, backup, area, {row: new}))
            _record_forgery(ctx, BACKUP, forgery.Found(at, b"", at), row, False, reading, how, False, warmup)
            _restored(ctx, _restore_reader(ctx, backup, area))

    def _forged_log(self, ctx: RunContext, twin: _Twin, old: str, new: str, plan: _Plan, warmup: bool) -> None:
        """The value committed again on a connection whose commit the engine leaves in its
        write-ahead log (no checkpoint on closing), forged there at the offset the twin's log
        holds it at (the log's checksums recomputed, where the engine says how), read back once
        the engine replays the log on opening (without checkpointing it either), the log put back.
        Under CBC the block before the value's in its frame is changed (`LogFile.frames`), as in the
        file; where the log does not say where its frames' blocks start, as under a stream cipher.
        A log the engine never encrypts is forged by what it holds (`_forged_own_log`)."""
        if _forged_in_own_log(ctx.database):
            self._forged_own_log(ctx, twin.row, warmup)
            return
        if twin.log is None:
            _record(ctx, FORGERY, LOG, {}, oldkeys.UNSUPPORTED, twin.log_missing, warmup)
            return
        log, _ = _logged(ctx.database, ctx.seed, twin.row)
        if log is None or not log.file.is_file():
            _record(ctx, FORGERY, LOG, {}, oldkeys.UNSUPPORTED, "the trial's log was not left at rest", warmup)
            return
        frames = log.frames()
        if frames is None:
            plan, new = _Plan(int(ctx.scale), ctx.seed), forgery.forged(old)
        changes = None
        if log.relocate is not None:  # the trial's log laid out otherwise than the twin's
            try:
                changes = log.relocate(twin.log_raw, log.file.read_bytes(), twin.log.offset, old.encode(), new.encode())
            except ValueError as exc:
                _record(ctx, FORGERY, LOG, {}, oldkeys.UNSUPPORTED, str(exc), warmup)
                return
        with _files_put_back(ctx):
            forged = _forged(ctx, LOG, log.layout(), twin.log, twin.row, old, new,
                             _reader(ctx, {twin.row: new}, keep_log=True), plan, warmup, blocks=frames, changes=changes)
        if forged:
            _restored(ctx, _reader(ctx, keep_log=True))

    def _forged_own_log(self, ctx: RunContext, row: int, warmup: bool) -> None:
        """The row committed again on a connection whose commit the engine leaves in its log, which
        it never encrypts itself (`LogFile.changes_in`): every copy of the value among the log's
        records forged — in plaintext the value's first characters (`forgery.forged`), sealed by a
        column layer the last CFB block of the message the commit sealed anew (`_sealed_change`) —,
        the records' checksums recomputed, in a copy of the stopped database (`LogFile.copied`)
        restored into a fresh one with the trial's key, whose start replays the log; read back, put
        back, the copy's restore must then read as written."""
        old = data.value(ctx.seed, row)
        try:
            log, sealed = _logged(ctx.database, ctx.seed, row)
        except ValueError as exc:  # a sealed value not laid out as the layer writes it
            _record(ctx, FORGERY, LOG, {}, oldkeys.UNSUPPORTED, str(exc), warmup)
            return
        if log is None or log.changes_in is None or log.copied is None:
            _record(ctx, FORGERY, LOG, {}, oldkeys.UNSUPPORTED, ctx.database.kept_log_missing, warmup)
            return
        change = _stored_change(old, sealed)
        if change is None:
            _record(ctx, FORGERY, LOG, {}, oldkeys.UNSUPPORTED, "the row's sealed value holds a value of another "
                    "length", warmup)
            return
        new, needle, within, mask, how = change
        with _forgery_area(ctx) as area:
            backup, file = log.copied(area / "backup")
            try:
                changes = log.changes_in(file.read_bytes(), needle, within, mask)
            except ValueError as exc:
                _record(ctx, FORGERY, LOG, {}, oldkeys.UNSUPPORTED, str(exc), warmup)
                return
            reading = _changed(ctx.database, dataclasses.replace(log, file=file).layout(), changes,
                               _restore_reader(ctx, backup, area, {row: new}), recompute=True)
            first = changes[0][0]
            _record_forgery(ctx, LOG, forgery.Found(first, b"", first), row, log.recompute is not None, reading,
                            how, False, warmup, what="its records'")
            _restored(ctx, _restore_reader(ctx, backup, area))

    def _forged_backup(self, ctx: RunContext, layout: PageLayout, twin: _Twin, row: int, old: str, new: str,
                       plan: _Plan, warmup: bool) -> None:
        """The same forgery in a physical backup of the trial's database, at the offset a backup
        of the twin holds the value at, restored into a fresh database with the trial's key and
        read back; the backup put back, its restore must read as written (the control that the
        restore itself works)."""
        copies = oldkeys.full_backups(ctx.database)
        if copies is None or twin.backup is None:
            _record(ctx, FORGERY, BACKUP, {}, oldkeys.UNSUPPORTED, twin.backup_missing, warmup)
            return
        relative, found = twin.backup
        with _backed_up(ctx, copies) as (backup, contents, area):
            copied = dataclasses.replace(layout, file=contents / relative)
            changed = _restore_reader(ctx, backup, area, {row: new})
            if _forged(ctx, BACKUP, copied, found, row, old, new, changed, plan, warmup):
                _restored(ctx, _restore_reader(ctx, backup, area))


@contextmanager
def _backed_up(ctx: RunContext, copies: Backups) -> Iterator[tuple[Backup, Path, Path]]:
    """A physical full backup of the trial's database (`_verbatim_backup`) in the forgery's area
    of its workspace, the database closed after: the backup, its contents as files (unpacked where
    the method packs them) and the area, removed when the block ends."""
    with _forgery_area(ctx) as area:
        backup = _verbatim_backup(ctx.database, copies, area / "backup")
        ctx.database.close()
        yield backup, copies.backup_contents(backup, area / "unpacked"), area


@contextmanager
def _files_put_back(ctx: RunContext) -> Iterator[None]:
    """Every file of the stopped database as it was before the block, put back after it (the
    owner and mode kept): replaying a forged log writes its pages to the data files as well (InnoDB
    with a buffer pool too small to keep them evicts them during recovery), and those pages then
    carry log sequence numbers past the log put back, which the next start refuses ("log sequence
    number is in the future")."""
    area = ctx.database.workspace / f"{forgery.DIRECTORY}-files"
    shutil.rmtree(area, ignore_errors=True)
    area.mkdir(mode=0o700)
    saved = {path: (area / str(number), path.stat()) for number, path in enumerate(ctx.database.files())}
    try:
        for path, (copy, _) in saved.items():
            shutil.copyfile(path, copy)
        yield
    finally:
        for path, (copy, stat) in saved.items():
            if copy.exists():
                existed = path.exists()
                shutil.copyfile(copy, path)  # into the file where it is still there: its owner and mode stay
                if not existed:
                    os.chmod(path, stat.st_mode)
                    os.chown(path, stat.st_uid, stat.st_gid)
        shutil.rmtree(area, ignore_errors=True)


@contextmanager
def _forgery_area(ctx: RunContext) -> Iterator[Path]:
    """The forgery's area of the trial's workspace, made new and removed when the block ends."""
    area = ctx.database.workspace / forgery.DIRECTORY
    shutil.rmtree(area, ignore_errors=True)
    area.mkdir(mode=0o711)  # a server's user passes through to its restore's workspace
    try:
        yield area
    finally:
        shutil.rmtree(area, ignore_errors=True)


@dataclass(frozen=True)
class _Plan:
    """How the trial's encryption is forged: as a stream cipher (the difference XORed at the value,
    row three quarters of the way through), or chained as CBC (`chained`: the difference XORed into
    the block before the value's first, the value chosen with unused space before it)."""

    rows: int
    seed: int
    chained: bool = False
    layout: PageLayout | None = None

    @staticmethod
    def of(ctx: RunContext, layout: PageLayout) -> _Plan:
        chained = forgery.chains(ctx.database.encryption.mode) and layout.cbc_blocks_from is not None
        return _Plan(int(ctx.scale), ctx.seed, chained, layout if chained else None)

    @property
    def default_row(self) -> int:
        return self.rows * 3 // 4

    def choose(self, twin_file: Path) -> int:
        """The row to forge, from the twin's file holding the table: under CBC one with a block of
        zeros (unused space) before its value's first block, where the twin has one."""
        if self.layout is None:
            return self.default_row
        layout = dataclasses.replace(self.layout, file=twin_file)
        found = forgery.unused_before(twin_file, layout, data.values(self.seed, self.rows), data.VALUE_PATTERN)
        return self.default_row if found is None else found

    def new(self, old: str, found: forgery.Found | None) -> str:
        """The forged value: under CBC only the characters in the value's first block changed."""
        if self.layout is None or found is None:
            return forgery.forged(old)
        return forgery.forged(old, forgery.block_share(self.layout, found, data.VALUE_BYTES))

    def note(self, found: forgery.Found, blocks: PageLayout | None = None) -> str:
        """What the record says of how the change was made (empty for a stream cipher's): under CBC,
        how many bytes, and what the garbled block held in the twin (blocks aligned on `blocks`'
        pages where given, else on the file's)."""
        if self.layout is None:
            return ""
        layout = blocks or self.layout
        start = forgery.block_start(layout, found.offset) - forgery.CBC_BLOCK - found.start
        held = "free space" if not any(found.around[max(0, start):start + forgery.CBC_BLOCK]) else "data"
        return (f"CBC: the value's first {forgery.block_share(layout, found, data.VALUE_BYTES)} bytes changed "
                f"through the block before, garbled ({held} in the twin)")


def _forged(ctx: RunContext, step: str, layout: PageLayout, found: forgery.Found, row: int, old: str, new: str,
            read: Callable[[], str | None], plan: _Plan, warmup: bool, blocks: PageLayout | None = None,
            changes: list[tuple[int, bytes]] | None = None) -> bool:
    """`old` turned into `new` at `found` in the layout's file (and the page's unkeyed checksum
    with it, where the layout knows how), `read` run, the pages put back, the outcome recorded as
    `step`; False (recorded `unsupported`) where the change cannot be made. Under CBC
    (`plan.chained`) the change goes into the block before the value's, and a checksum of the
    plaintext cannot follow it (that block is garbled); its blocks aligned on `blocks`' pages where
    given (a log's frames), else on the layout's. `changes`: the (offset, mask) pairs the engine
    worked out itself (a log laid out otherwise than the twin's), its checksum's among them."""
    if changes is not None:
        reading = _changed(ctx.database, layout, changes, read, recompute=True)
        _record_forgery(ctx, step, found, row, True, reading, "", False, warmup, what="its entry's")
        return True
    if plan.chained:
        try:
            changes = [forgery.chained_change(blocks or layout, found, old, new)]
        except ValueError as exc:
            _record(ctx, FORGERY, step, {}, oldkeys.UNSUPPORTED, str(exc), warmup)
            return False
    else:
        changes = [(found.offset, forgery.difference(old, new))]
    plain = layout.plain_checksum is not None and not plan.chained
    if plain:  # the checksum's change XORed in beside the value's
        assert layout.plain_checksum is not None
        changes.append(forgery.checksum_change(layout, layout.plain_checksum, found, new.encode()))
    recomputed = layout.recompute is not None or plain
    reading = _changed(ctx.database, layout, changes, read, recompute=True)
    _record_forgery(ctx, step, found, row, recomputed, reading, plan.note(found, blocks), plan.chained, warmup,
                    what="its frames'" if step == LOG else "its page")
    return True


def _record_forgery(ctx: RunContext, step: str, found: forgery.Found, row: int, recomputed: bool,
                    reading: tamper.Reading, how: str, chained: bool, warmup: bool, what: str = "its page") -> None:
    said = "; ".join(part for part in (how, reading.said or (
        f"{what} checksum recomputed" if recomputed else "")) if part)
    _record(ctx, FORGERY, step, {"offset": float(found.offset), "row": float(row),
                                 "checksum_recomputed": float(recomputed), "cbc_chained": float(chained)},
            forgery.classify(reading, ctx.database.encryption.authenticated), said, warmup)


def _compared(conn: Connection, ctx: RunContext, changed: dict[int, str] | None) -> str | None:
    """None when the rows read as written (with the `changed` rows' new values); forgery.UNLANDED
    when they read as first written though a change was expected; else what differs."""
    rows = int(ctx.scale)
    differs = data.differences(conn, rows, ctx.seed, changed)
    if differs is not None and changed and data.differences(conn, rows, ctx.seed) is None:
        return forgery.UNLANDED
    return differs


def _reader(ctx: RunContext, changed: dict[int, str] | None = None,
            keep_log: bool = False) -> Callable[[], str | None]:
    """Open the trial's database and read every row (`_compared`); the database is closed again after
    (with `keep_log`, its write-ahead log left as it is: replayed, not checkpointed)."""
    database = ctx.database

    def read() -> str | None:
        conn = database.connect()
        try:
            if keep_log:
                database.keep_log(conn)
            return _read_back(database, conn, ctx, changed)
        finally:
            conn.close()
            database.close()

    return read


def _read_back(database: Database, conn: Connection, ctx: RunContext, changed: dict[int, str] | None) -> str | None:
    """`_compared` on `database`'s connection; a server that aborts on a tampered page answers its
    client with a lost connection, a crash that a refusal's class would hide: raised as
    tamper.EngineDied (an embedded engine's crash ends read_apart's child instead)."""
    try:
        return _compared(conn, ctx, changed)
    except Exception as exc:
        if database.connect_starts_processes and tamper.server_died(database.engine_processes):
            raise tamper.EngineDied(f"the server ended while reading: {type(exc).__name__}: {exc}") from exc
        raise


def _restore_reader(ctx: RunContext, backup: Backup, area: Path,
                    changed: dict[int, str] | None = None) -> Callable[[], str | None]:
    """Restore `backup` into a fresh database with the trial's encryption and key (in `area`,
    removed after) and read every row (`_compared`); a refused restore raises, as a refused read does."""
    assert ctx.scratch_database is not None
    make = ctx.scratch_database

    def read() -> str | None:
        workspace = area / "restored"
        restored = make(workspace, ctx.database.encryption, ctx.database.key)
        try:
            backups(restored, "restore").restore(backup)
            conn = restored.connect()
            try:
                return _read_back(restored, conn, ctx, changed)
            finally:
                conn.close()
        finally:
            restored.close()
            shutil.rmtree(workspace, ignore_errors=True)

    return read


def _logged(database: Database, seed: int, row: int) -> tuple[LogFile | None, SealedValue | None]:
    """`row` committed again on a connection whose commits the engine leaves in its write-ahead
    log, the database closed after: the log (None: the engine cannot keep one at rest), and the
    row's value as a column layer sealed it anew (`_sealed`, asked before the database closes)."""
    conn = database.connect()
    sealed = None
    try:
        log = database.keep_log(conn)
        if log is not None:
            data.rewrite(conn, seed, row, log.changes_only)
            sealed = _sealed(database, row)
    finally:
        conn.close()
        database.close()
    return log, sealed


def _value_in_log(log: LogFile, value: str) -> forgery.Found | None:
    """Where the twin's log holds `value`: where the log says replaying it writes the value
    (`LogFile.value_in`), else its one offset in the whole file; None where it is not there once."""
    if log.value_in is None:
        return forgery.offset_of(log.file, value)
    raw = log.file.read_bytes()
    at = log.value_in(raw, value.encode())
    return None if at is None else forgery.found_at(raw, at, len(value.encode()))


def _forged_in_own_log(database: Database) -> bool:
    """Whether the forgery finds the value in the trial's own log (one the engine keeps at rest and
    never encrypts itself, `LogFile.changes_in`), not at an unencrypted twin's offset."""
    return database.keeps_log and not database.log_needs_twin


def _sealed(database: Database, row: int) -> SealedValue | None:
    """The row's value as a column layer stores it (`Database.sealed_value`; None: not sealed)."""
    return database.sealed_value(data.ROWS_TABLE, data.COLUMNS[data.ROWS_TABLE][-1], data.KEYS[data.ROWS_TABLE][0],
                                 row)


def _stored_change(old: str, sealed: SealedValue | None) -> tuple[str, bytes, int, bytes, str] | None:
    """How a value is forged where it is found as stored: the new value, the bytes to find (the
    value, or the message a column layer sealed it in), where in them the change starts, what to
    XOR there and the record's note of it; None where the sealed value holds another length."""
    if sealed is None:
        new = forgery.forged(old)
        return new, old.encode(), 0, forgery.difference(old, new), ""
    if sealed.value_bytes != len(old.encode()):
        return None
    new, within, mask, how = _sealed_change(sealed, old)
    return new, sealed.stored, within, mask, how


def _sealed_change(sealed: SealedValue, old: str) -> tuple[str, int, bytes, str]:
    """How a sealed value is forged: the new value (its last CFB block's characters changed,
    `forgery.cfb_tail`), where in the sealed form the change starts, what to XOR there, and the
    record's note of it."""
    new = forgery.forged_tail(old, forgery.cfb_tail(sealed))
    mask = forgery.difference(old, new)
    kept = len(mask) - len(mask.lstrip(b"\0"))  # the value's first bytes, left as they are
    how = (f"CFB: the value's last {len(mask) - kept} bytes changed in their block, the block after it garbled "
           f"(what follows the value: OpenPGP's MDC)")
    return new, sealed.value_at + kept, mask[kept:], how


def _verbatim_backup(database: Database, copies: Backups, target: Path) -> Backup:
    """A physical full backup, taken while a connection that has the engine store values as
    written (`store_verbatim`, as the load did) is open: DuckDB's copy writes its blocks anew and
    would compress them otherwise."""
    conn = database.connect()
    try:
        database.store_verbatim(conn)
        return copies.backup(copies.backup_method(BACKUP_FULL), target)
    finally:
        conn.close()


def _changed(database: Database, layout: PageLayout, changes: list[tuple[int, bytes]],
             read: Callable[[], str | None], recompute: bool = False) -> tamper.Reading:
    """Each (offset, mask) of `changes` XORed into the layout's file (with `recompute`, the pages
    they touch then given their checksum again, where the layout knows how), `read` run, the pages
    put back. In a child process for an engine that runs inside this one (a crash ends the child
    only); here for one whose connect starts a server or a mount, which this process must stop."""
    starts = sorted({layout.page_start(at) for offset, mask in changes for at in (offset, offset + len(mask) - 1)})
    saved = {start: tamper.read_at(layout.file, start, layout.page_bytes) for start in starts}
    for offset, mask in changes:
        tamper.xor(layout.file, offset, mask)
    try:
        if recompute and layout.recompute is not None:
            for start in starts:
                tamper.write_at(layout.file, start,
                                layout.recompute(tamper.read_at(layout.file, start, layout.page_bytes)))
        return tamper.read_here(read) if database.connect_starts_processes else tamper.read_apart(read)
    finally:
        for start, content in saved.items():
            tamper.write_at(layout.file, start, content)


def _record(ctx: RunContext, test: str, step: str, metrics: dict[str, float], answer: str, said: str,
            warmup: bool) -> None:
    """The outcome with what the engine said (`tamper.in_brief`), every spelling of the key scrubbed."""
    key = ctx.database.key
    ctx.recorder.record(test, step, metrics, warmup=warmup, answer=answer,
                        note=tamper.in_brief(key.scrub(said) if key else said))


def _restored(ctx: RunContext, read: Callable[[], str | None]) -> None:
    """With the bytes put back, the database must read as written again."""
    problem = read()
    if problem is not None:
        raise WrongAnswer(f"strength: the database no longer reads as written once its bytes are restored: {problem}")


@dataclass(frozen=True)
class _Twin:
    """Where the unencrypted twin holds the value: in its file holding the table (`data`), and in
    a physical backup of it (`backup`: the file, relative to the backup's contents, and where);
    None where it is not there verbatim, `backup_missing` saying why."""

    row: int
    data: forgery.Found | None
    backup: tuple[Path, forgery.Found] | None
    backup_missing: str = ""
    log: forgery.Found | None = None  # where its write-ahead log holds the value, committed again
    log_missing: str = ""
    log_raw: bytes = b""  # that log, for an engine whose trial log is laid out otherwise (LogFile.relocate)


def _twin_offsets(ctx: RunContext, plan: _Plan) -> _Twin:
    """An unencrypted database of the trial's engine, loaded with the same rows and backed up as
    the trial will be: the row to forge (`plan.choose`, given the twin's file holding the table), where
    it holds that row's value, and its plaintext around it."""
    assert ctx.scratch_database is not None
    area = ctx.database.workspace / forgery.DIRECTORY
    shutil.rmtree(area, ignore_errors=True)
    twin: Database = ctx.scratch_database(area / "twin", NONE, None)
    try:
        area.mkdir(mode=0o711)  # a server's user passes through to the twin's workspace
        twin.workspace.mkdir(mode=0o700)
        twin.create()
        conn = twin.connect()
        try:
            data.load(twin, conn, ctx.data_dir, int(ctx.scale), ctx.seed)
        finally:
            conn.close()
        twin.close()  # at rest once, as the trial is before its backup: its pages written (InnoDB: out of its redo log)
        copies = oldkeys.full_backups(twin)
        backup = None if copies is None else _verbatim_backup(twin, copies, area / "backup")
        layout = twin.page_layout(data.ROWS_TABLE)
        twin.close()
        row = plan.choose(layout.file) if layout is not None else plan.default_row
        value = data.value(ctx.seed, row)
        found = None if layout is None else forgery.offset_of(layout.file, value)
        in_backup, backup_missing = None, "the engine has no physical backup"
        if copies is not None and backup is not None:
            in_backup = forgery.offset_in(copies.backup_contents(backup, area / "unpacked"), value)
            backup_missing = "" if in_backup else ("an unencrypted backup of this engine does not store the value "
                                                   "verbatim in one file (compressed), so its offset is not known")
        # last: the backup taken without it; none where the trial's own log tells where the value is
        log = _logged(twin, ctx.seed, row)[0] if twin.keeps_log and not _forged_in_own_log(twin) else None
        in_log = None if log is None or not log.file.is_file() else _value_in_log(log, value)
        log_missing = (twin.kept_log_missing if log is None else
                       "" if in_log else
                       "the twin's log does not hold the value verbatim once, so its offset is not known")
        raw = log.file.read_bytes() if in_log is not None and log is not None else b""
        return _Twin(row, found, in_backup, backup_missing, in_log, log_missing, raw)
    finally:
        twin.close()
        shutil.rmtree(area, ignore_errors=True)
