"""The strength workload (issue 30): beyond "is it encrypted", what an attacker holding the
files can still do. Two tables of known rows (data.py) and three tests:

- `repeats`: repeated 16-byte blocks and pages in the closed database's files, and in as many
  random bytes (repeats.py);
- `tamper`: one byte of a data page of the stopped database flipped, the rows read back
  (tamper.py), the byte flipped back after;
- `old-key`: after a rekey, the old key against the database and its backups (oldkeys.py);
- `forgery`: one stored value changed to another without the key, by XORing their difference into
  the ciphertext at the offset an unencrypted twin holds it at (forgery.py).

Every test works on the database at rest: the runner's connection is released and the database
closed first (a server stopped, a gocryptfs mount unmounted), the runner reconnects after. A
tampered file is read back by opening the database again (a server started again, its answer or
refusal as its client library gives it), in a child process for an engine running inside this
one. The file a test changes is the one holding its table (`Database.page_layout`): the main file
of an embedded engine, a server's tablespace or heap file, the cipher file behind it on gocryptfs.
Its results are records of what happened (answers and counts), not timings; the report's
`strength` section reads them (report/strength.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tdebench.engines.base import NONE, Connection, Database, PageLayout
from tdebench.workloads.base import RunContext, Workload, WrongAnswer
from tdebench.workloads.strength import data, forgery, oldkeys, repeats, tamper

REPEATS, TAMPER, OLD_KEY, FORGERY = "repeats", "tamper", oldkeys.TEST, "forgery"
FLIP_AT = 0.75  # the page flipped: this far into the file's pages, among the rows loaded last
FLIP_MASK = b"\x01"  # one bit of one byte
FLIP_TRIES = 16  # pages tried in turn while the read notices nothing (a free or unused page)
# the layers whose ciphertext keeps the engine's page layout: the forgery finds a value where an
# unencrypted twin has it; the others, and why not
KEEPS_LAYOUT = ("none", "native")
KEEPS_LAYOUT_NOT = {"column": "each value is sealed on its own, with a random session key and IV",
                    "fs": "the file is cut into 4 KiB blocks, each with a nonce and a tag"}


class StrengthWorkload(Workload):
    name = "strength"
    # the forgery before old-key: a rekey may rewrite the file (DuckDB copies the database into a new
    # one), whose layout then no longer matches the unencrypted twin's
    tests = (REPEATS, TAMPER, FORGERY, OLD_KEY)
    # the backups it takes around a rekey and the forgery's unencrypted twin, removed when their test ends
    judged_apart = (oldkeys.DIRECTORY, forgery.DIRECTORY)
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
    # for its report (report/strength.py): the words its records answer with
    classes = tamper.CLASSES
    weak_classes = frozenset({tamper.ALTERED, tamper.FORGEABLE, tamper.CRASHED})
    unchanged = tamper.UNCHANGED
    forgeable = tamper.FORGEABLE
    old_key_weak = oldkeys.WEAK

    def __init__(self) -> None:
        self._rekeys = 0

    def prepare(self, scale: float, data_dir: Path, seed: int) -> None:
        data.prepare(data_dir, int(scale), seed)

    def load(self, ctx: RunContext, conn: Connection) -> None:
        data.load(ctx.database, conn, ctx.data_dir, int(ctx.scale), ctx.seed)

    def run(self, test: str, ctx: RunContext, conn: Connection, *, warmup: bool) -> None:
        if test == REPEATS:
            self._repeats(ctx, warmup)
        elif test == TAMPER:
            self._tamper(ctx, warmup)
        elif test == OLD_KEY:
            self._rekeys += 1
            oldkeys.run(ctx, int(ctx.scale), f"strength-rekey-{self._rekeys}", warmup=warmup)
        elif test == FORGERY:
            self._forgery(ctx, warmup)
        else:
            raise ValueError(f"strength has no test {test!r}; valid: {', '.join(self.tests)}")

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
        database, rows = ctx.database, int(ctx.scale)
        layout = database.page_layout(data.ROWS_TABLE)
        if layout is None or ctx.scratch_database is None:
            ctx.recorder.record(FORGERY, "value", {}, warmup=warmup, answer=oldkeys.UNSUPPORTED)
            return
        if database.encryption.layer not in KEEPS_LAYOUT:
            _record(ctx, FORGERY, "value", {}, oldkeys.UNSUPPORTED, f"the {database.encryption.layer} layer does not "
                    f"keep the engine's layout, so an unencrypted twin does not tell where a value is: "
                    f"{KEEPS_LAYOUT_NOT.get(database.encryption.layer, '')}", warmup)
            return
        self._at_rest(ctx)
        row = rows * 3 // 4
        old = data.value(ctx.seed, row)
        found = _twin_offset(ctx, old)
        if found is None:
            _record(ctx, FORGERY, "value", {}, oldkeys.UNSUPPORTED, "an unencrypted database of this engine does not "
                    "store the value verbatim (compressed), so its offset is not known", warmup)
            return
        new = forgery.forged(old)
        changes = [(found.offset, forgery.difference(old, new))]
        if layout.plain_checksum is not None:  # the checksum's change XORed in beside the value's
            changes.append(forgery.checksum_change(layout, layout.plain_checksum, found, new.encode()))
        recomputed = layout.recompute is not None or layout.plain_checksum is not None
        reading = _changed(ctx.database, layout, changes, _reader(ctx, {row: new}), recompute=True)
        said = reading.said or ("its page checksum recomputed" if recomputed else "")
        _record(ctx, FORGERY, "value", {"offset": float(found.offset), "row": float(row),
                                        "checksum_recomputed": float(recomputed)},
                forgery.classify(reading, database.encryption.authenticated), said, warmup)
        _restored(ctx, _reader(ctx))


def _reader(ctx: RunContext, changed: dict[int, str] | None = None) -> Callable[[], str | None]:
    """Open the trial's database and read every row: None when they read as written (with the
    `changed` rows' new values); forgery.UNLANDED when they read as first written though a change
    was expected; else what differs. The database is closed again after."""
    database, rows = ctx.database, int(ctx.scale)

    def read() -> str | None:
        conn = database.connect()
        try:
            differs = data.differences(conn, rows, ctx.seed, changed)
            if differs is not None and changed and data.differences(conn, rows, ctx.seed) is None:
                return forgery.UNLANDED
            return differs
        finally:
            conn.close()
            database.close()

    return read


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
    """The outcome with what the engine said: its first line, every spelling of the key scrubbed."""
    key = ctx.database.key
    ctx.recorder.record(test, step, metrics, warmup=warmup, answer=answer,
                        note=tamper.first_line(key.scrub(said) if key else said))


def _restored(ctx: RunContext, read: Callable[[], str | None]) -> None:
    """With the bytes put back, the database must read as written again."""
    problem = read()
    if problem is not None:
        raise WrongAnswer(f"strength: the database no longer reads as written once its bytes are restored: {problem}")


def _twin_offset(ctx: RunContext, value: str) -> forgery.Found | None:
    """Where an unencrypted database of the trial's engine, loaded with the same rows, holds
    `value`, and its plaintext around it."""
    assert ctx.scratch_database is not None
    area = ctx.database.workspace / forgery.DIRECTORY
    shutil.rmtree(area, ignore_errors=True)
    twin: Database = ctx.scratch_database(area, NONE, None)
    try:
        area.mkdir(mode=0o700)
        twin.create()
        conn = twin.connect()
        try:
            data.load(twin, conn, ctx.data_dir, int(ctx.scale), ctx.seed)
        finally:
            conn.close()
        layout = twin.page_layout(data.ROWS_TABLE)
        twin.close()
        return None if layout is None else forgery.offset_of(layout.file, value)
    finally:
        twin.close()
        shutil.rmtree(area, ignore_errors=True)
