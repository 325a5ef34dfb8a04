"""The strength workload (issue 30): beyond "is it encrypted", what an attacker holding the
files can still do. Two tables of known rows (data.py) and three tests:

- `repeats`: repeated 16-byte blocks and pages in the closed database's files, and in as many
  random bytes (repeats.py);
- `tamper`: one byte of a data page of the stopped database flipped, the rows read back
  (tamper.py), the byte flipped back after;
- `old-key`: after a rekey, the old key against the database and its backups (oldkeys.py).

Every test works on the database at rest: the runner's connection is released first and the
runner reconnects after. Its results are records of what happened (answers and counts), not
timings; the report's `strength` section reads them (report/strength.py).
"""

from __future__ import annotations

from pathlib import Path

from tdebench.engines.base import Connection
from tdebench.workloads.base import RunContext, Workload, WrongAnswer
from tdebench.workloads.strength import data, oldkeys, repeats, tamper

REPEATS, TAMPER, OLD_KEY = "repeats", "tamper", oldkeys.TEST
FLIP_AT = 0.75  # the page flipped: this far into the file's pages, among the rows loaded last
FLIP_MASK = b"\x01"  # one bit of one byte
FLIP_TRIES = 16  # pages tried in turn while the read notices nothing (a free or unused page)


class StrengthWorkload(Workload):
    name = "strength"
    tests = (REPEATS, TAMPER, OLD_KEY)
    judged_apart = (oldkeys.DIRECTORY,)  # the backups it takes around a rekey, removed when the test ends
    # tested on the embedded engines; a server's files need a page layout (Database.page_layout) and
    # a copy of the stopped server to tamper with, which tdebench has not written yet
    dialects = ("duckdb", "sqlite")
    default_scale = 20_000
    scale_min = 1_000
    scale_max = 2_000_000
    whole_scale = True
    scale_format = "{} rows"
    max_streams = 1
    local_tests = {test: "it reads and changes the database's files at rest, which only an engine tdebench owns "
                         "has" for test in tests}
    # for its report (report/strength.py): the words its records answer with
    classes = tamper.CLASSES
    weak_classes = frozenset({tamper.ALTERED, tamper.FORGEABLE, tamper.CRASHED})
    unchanged = tamper.UNCHANGED
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
        else:
            raise ValueError(f"strength has no test {test!r}; valid: {', '.join(self.tests)}")

    @staticmethod
    def _at_rest(ctx: RunContext) -> None:
        """Every connection closed and the engine stopped: the files are at rest."""
        ctx.session.release()
        ctx.database.close()

    def _repeats(self, ctx: RunContext, warmup: bool) -> None:
        self._at_rest(ctx)
        files = [p for p in ctx.database.files() if p.is_file()]
        found = repeats.block_repeats(files)
        size = sum(p.stat().st_size for p in files)
        metrics = {"bytes": float(size), "blocks": float(found.units), "repeated_blocks": float(found.repeated),
                   "repeated_block_share": found.share}
        layout = ctx.database.page_layout()
        if layout is not None:
            pages = repeats.page_repeats(layout.file, layout.first_page, layout.page_bytes)
            metrics.update(page_bytes=float(layout.page_bytes), pages=float(pages.units),
                           repeated_pages=float(pages.repeated), repeated_page_share=pages.share)
        ctx.recorder.record(REPEATS, "database", metrics, warmup=warmup)
        chance = repeats.random_reference(size)
        ctx.recorder.record(REPEATS, "random", {"bytes": float(size), "blocks": float(chance.units),
                                                "repeated_blocks": float(chance.repeated),
                                                "repeated_block_share": chance.share}, warmup=warmup)

    def _tamper(self, ctx: RunContext, warmup: bool) -> None:
        database, rows = ctx.database, int(ctx.scale)
        layout = database.page_layout()
        if layout is None:
            ctx.recorder.record(TAMPER, "data-page", {}, warmup=warmup, answer=oldkeys.UNSUPPORTED)
            return
        self._at_rest(ctx)

        def read() -> str | None:
            conn = database.connect()
            try:
                return data.differences(conn, rows, ctx.seed)
            finally:
                conn.close()
                database.close()

        for tries, offset in enumerate(tamper.targets(layout, FLIP_AT, FLIP_TRIES), start=1):
            tamper.xor(layout.file, offset, FLIP_MASK)
            try:
                reading = tamper.read_apart(read)
            finally:
                tamper.xor(layout.file, offset, FLIP_MASK)
            if reading.status != tamper.SAME:
                break
        said = tamper.first_line(database.key.scrub(reading.said) if database.key else reading.said)
        verdict = tamper.classify(reading, database.encryption.authenticated)
        metrics = {"offset": float(offset), "page_bytes": float(layout.page_bytes), "tries": float(tries)}
        ctx.recorder.record(TAMPER, "data-page", metrics, warmup=warmup, answer=verdict, note=said)
        restored = read()  # the byte flipped back: the database must read as written again
        if restored is not None:
            raise WrongAnswer(f"tamper: the database no longer reads as written once the byte is restored: {restored}")
