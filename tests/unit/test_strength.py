"""The strength workload without real engines: repeated blocks and pages, where a byte is flipped,
how a reading is classified (a child that crashes included), the tamper test end to end on a
fake file-backed database (with and without a checksum, with and without a tag), and the report's
tables and findings from hand-made records."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, cast

import psutil
import pytest

from tdebench.engines import page_checksums, pgcrypto
from tdebench.engines.base import (NONE, Backup, BackupMethod, Backups, Connection, Database, Encryption, LogFile,
                                   PageLayout, PlainChecksum, Reencrypts)
from tdebench.keys import Secret
from fake_clock import FakeClock
from tdebench.measure.recorder import Recorder
from tdebench.report.sections import core, strength as report
from tdebench.report.data.records import summary_records
from tdebench.report.sections.document import SOURCES
from tdebench.results import BACKUP_FULL, Measurement, RunData, TrialKey
from tdebench.workloads import WORKLOADS
from tdebench.workloads.base import RunContext
from tdebench.workloads.strength import data, forgery, repeats, tamper
from tdebench.workloads.strength.workload import StrengthWorkload, _value_in_log

# --- repeated blocks and pages ----------------------------------------------------------------


def test_repeats_count_equal_chunks_and_leave_zeros_out() -> None:
    a, b, zero = b"a" * 16, b"b" * 16, bytes(16)
    found = repeats.count([a, b, a, zero, zero, a])
    assert (found.units, found.repeated, found.share) == (4, 3, 0.75)
    assert repeats.count([zero]).units == 0


def test_block_and_page_repeats_over_files(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_bytes(b"H" * 8 + b"p" * 32 + b"q" * 16)  # a header, then pages of 16 from offset 8
    two.write_bytes(b"p" * 16 + b"tail")  # equal to a block of `one`: counted across files; the tail dropped
    blocks = repeats.block_repeats([one, two])
    assert (blocks.units, blocks.repeated) == (4, 2)  # blocks at 0, 16, 32 of one (H..p, pp, pq..) and two's
    pages = repeats.page_repeats(one, 8, 16)
    assert (pages.units, pages.repeated) == (3, 2)  # pp, pp, qq


def test_random_bytes_repeat_no_block() -> None:
    assert repeats.random_reference(1 << 20).repeated == 0


# --- flipping and classifying -------------------------------------------------------------------


def test_targets_start_at_the_fraction_and_go_back(tmp_path: Path) -> None:
    file = tmp_path / "db"
    file.write_bytes(bytes(100 + 4 * 10))  # a 100-byte header, 4 pages of 10
    layout = PageLayout(file, 100, 10)
    assert tamper.targets(layout, 0.75, 3) == [135, 125, 115]
    assert tamper.targets(layout, 0.25, 3) == [115, 105, 135]  # round to the last
    assert len(tamper.targets(layout, 0.5, 16)) == 4
    with pytest.raises(ValueError, match="no whole page"):
        tamper.targets(PageLayout(file, 200, 10), 0.5, 1)


def test_targets_leave_out_pages_never_written(tmp_path: Path) -> None:
    file = tmp_path / "db"
    file.write_bytes(bytes(100) + b"\x01" * 20 + bytes(20))  # 4 pages of 10: the last two zeros only
    assert tamper.targets(PageLayout(file, 100, 10), 0.75, 3) == [115, 105]


def test_xor_twice_restores_the_file(tmp_path: Path) -> None:
    file = tmp_path / "db"
    file.write_bytes(b"abcdef")
    assert tamper.xor(file, 2, b"\x01") == b"c"
    assert file.read_bytes() == b"abbdef"
    tamper.xor(file, 2, b"\x01")
    assert file.read_bytes() == b"abcdef"


@pytest.mark.parametrize(("status", "authenticated", "expected"), [
    (tamper.REFUSED, True, tamper.TAG), (tamper.REFUSED, False, tamper.UNTAGGED),
    (tamper.DIFFERS, True, tamper.ALTERED), (tamper.SAME, False, tamper.UNCHANGED),
    (tamper.DIED, True, tamper.CRASHED)])
def test_classify(status: str, authenticated: bool, expected: str) -> None:
    assert tamper.classify(tamper.Reading(status), authenticated) == expected


def _raise(exc: BaseException) -> str | None:
    raise exc


def test_read_apart_reports_what_the_child_saw() -> None:
    assert tamper.read_apart(lambda: None) == tamper.Reading(tamper.SAME)
    assert tamper.read_apart(lambda: "3 rows changed") == tamper.Reading(tamper.DIFFERS, "3 rows changed")
    refused = tamper.read_apart(lambda: _raise(RuntimeError("Computed AES tag differs")))
    assert refused == tamper.Reading(tamper.REFUSED, "RuntimeError: Computed AES tag differs")
    garbled = tamper.read_apart(lambda: _raise(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")))
    assert garbled.status == tamper.DIFFERS and "not the text written" in garbled.said


def test_read_apart_survives_a_crash_and_a_hang() -> None:
    died = tamper.read_apart(lambda: _raise(SystemExit(os.kill(os.getpid(), signal.SIGKILL))))
    assert died.status == tamper.DIED and "-9" in died.said
    hung = tamper.read_apart(lambda: _raise(SystemExit(signal.pause())), timeout_s=0.5)
    assert hung == tamper.Reading(tamper.DIED, "no answer in 0.5 s")


def test_what_an_engine_said_is_kept_in_brief() -> None:
    assert tamper.in_brief("Error: bad\nLINE 1: SELECT") == "Error: bad"
    assert len(tamper.in_brief("x" * 1000)) == tamper.MESSAGE_CHARS
    assert tamper.in_brief("") == ""


def test_a_server_that_did_not_start_is_kept_with_the_reason_its_log_gives() -> None:
    """A tampered MariaDB that refused to start had been recorded as "…; its log ends:", the
    reason left on the lines after it."""
    said = ("ServerError: mariadbd could not start on port 41000: mariadbd exited with 1 while starting; its log "
            "ends:\n2026-12-02 14:00:01 0 [Note] InnoDB: Using Linux native AIO\n"
            "2026-12-02 14:00:01 0 [ERROR] InnoDB: Corrupted page identifier at 1234567; set innodb_force_recovery=1"
            "\n2026-12-02 14:00:01 0 [ERROR] Plugin 'InnoDB' registration as a STORAGE ENGINE failed.")
    brief = tamper.in_brief(said)
    assert brief.startswith("ServerError: mariadbd could not start") and "Corrupted page identifier at 1234567" in brief
    assert "[Note]" not in brief and "registration" not in brief and len(brief) <= tamper.MESSAGE_CHARS
    # a log with no error line: its first line, for what it is worth
    assert tamper.in_brief("a tool failed; its log ends:\nstarting\nstopped").endswith("ends: starting")


@pytest.mark.parametrize(("mode", "authenticated"), [
    ("GCM", True), ("AEAD", True), ("CBC+HMAC-SHA512", True), ("CTR", False), ("CBC", False), ("stream", False),
    ("none", False)])
def test_authenticated_modes(mode: str, authenticated: bool) -> None:
    assert Encryption("e", "AES", 256, mode, "native", ()).authenticated is authenticated


def test_a_keyed_check_beside_the_mode_authenticates() -> None:
    """pgcrypto's CFB has no tag in its mode's name; its MDC is a check under the key."""
    assert Encryption("e", "AES", 256, "CFB (OpenPGP)", "column", (), keyed_check="an MDC").authenticated
    assert pgcrypto.COLUMN_AES_256.authenticated and pgcrypto.COLUMN_AES_256.keyed_check == pgcrypto.MDC


def _openpgp(block: int, value_bytes: int, length: bytes | None = None) -> bytes:
    """A message laid out as pgp_sym_encrypt writes it (the encrypted part random): a 14-byte key
    packet, the data packet's tag, its length (`length`, else one byte), version 1, the stream."""
    stream = os.urandom(block + 2 + 2 + 6 + value_bytes + 22)
    return bytes.fromhex("c30c0409010800112233445566778899"[:28]) + b"\xd2" + (
        length if length is not None else bytes([len(stream) + 1])) + b"\x01" + stream


@pytest.mark.parametrize(("name", "value_at", "tail"), [("column-aes-256", 43, 10), ("column-3des", 35, 2)])
def test_sealed_layout_puts_the_value_after_the_prefix_and_the_literal_header(name: str, value_at: int,
                                                                               tail: int) -> None:
    """14 bytes of key packet, 3 of the data packet's header and version, then a block and 2 of
    prefix and the literal packet's 8 bytes of header; the last CFB block holds the value's last
    `tail` bytes (AES: 64 bytes from stream offset 26, blocks of 16: 10)."""
    cipher = pgcrypto.COLUMN_CIPHERS[name]
    sealed = pgcrypto.sealed_layout(_openpgp(cipher.block_bytes, 64), cipher)
    assert (sealed.value_at, sealed.value_bytes, sealed.stream_at) == (value_at, 64, 17)
    assert forgery.cfb_tail(sealed) == tail
    old = data.value(SEED, 3)
    assert forgery.forged_tail(old, tail) == old[:-min(tail, 8)] + "FORGED::"[:tail]


@pytest.mark.parametrize(("message", "why"), [
    (b"\xc6\x01", "not an OpenPGP message"),
    (_openpgp(16, 64, length=b"\xee"), "streamed in parts"),
    (_openpgp(16, 64, length=b"\x50"), "does not end the message"),
    (_openpgp(16, 64)[:15] + b"\x2e\x01" + os.urandom(45), "fits no literal data packet"),  # shorter than its headers
], ids=["other-packet", "partial-length", "length-off", "too-short"])  # random bytes: ids of their own for xdist
def test_sealed_layout_refuses_what_pgcrypto_does_not_write_so(message: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        pgcrypto.sealed_layout(message, pgcrypto.COLUMN_CIPHERS["column-aes-256"])


# --- the tamper test end to end on a fake database ---------------------------------------------

ROWS, SEED, PAGE = 200, 1, 256
PER_PAGE = PAGE // 64 - 1  # rows per page: 64 bytes each, the page's last 64 bytes its checksum


class _FileConnection:
    """Answers data.differences' two queries from the file: rows of 64 bytes, pages of PAGE bytes
    ending in a CRC-32 (`checked`: verified on reading), as an engine without or with a checksum."""

    def __init__(self, database: "_FileDatabase") -> None:
        self._database = database

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if data.SAME_TABLE in sql:
            return [(data.SAME_VALUE, ROWS)]
        raw = self._database.path.read_bytes()
        values: list[str] = []
        for start in range(0, len(raw), PAGE):
            page = raw[start:start + PAGE]
            body, stored = page[:-64], page[-64:-60]
            if self._database.checked and zlib.crc32(body).to_bytes(4, "big") != stored:
                if self._database.crashes:  # a server aborting on the page: its client loses the connection
                    self._database.down = True
                    raise RuntimeError("Lost connection to server during query")
                raise RuntimeError(f"checksum mismatch in page at {start}")
            values += [body[i:i + 64].decode("latin-1") for i in range(0, len(body), 64)]
        return list(enumerate(values[:ROWS], start=1))

    def execute_batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        return [self.execute(sql, params) for sql, params in statements]

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def set_timeout(self, seconds: float | None) -> None: ...

    def close(self) -> None: ...


def _recomputed(page: bytes) -> bytes:
    """A fake page with its CRC-32 recomputed."""
    body = page[:-64]
    return body + zlib.crc32(body).to_bytes(4, "big") + page[-60:]


@dataclass
class _FileDatabase(Database):
    checked: bool = False
    starts_processes: bool = False  # as a server's: connect() after close() starts one
    public_checksum: bool = False  # its layout says how to recompute the checksum, as InnoDB's
    crashes: bool = False  # a server that aborts on a page failing its checksum
    down: bool = False  # that server has ended
    path: Path = field(init=False)
    tampered_opens: list[int] = field(default_factory=list)  # the pid of each connect() to changed bytes
    written: bytes = b""

    def __post_init__(self) -> None:
        self.path = self.workspace / "db"

    def create(self) -> None:
        values = [data.value(SEED, row).encode() for row in range(1, ROWS + 1)]
        pages = [b"".join(values[i:i + PER_PAGE]).ljust(PAGE - 64, b"\0") for i in range(0, ROWS, PER_PAGE)]
        self.written = b"".join(body + zlib.crc32(body).to_bytes(4, "big") + bytes(60) for body in pages)
        self.path.write_bytes(self.written)

    def connect(self) -> Connection:
        self.down = False  # a server starts again
        if self.path.exists() and self.path.read_bytes() != self.written:
            self.tampered_opens.append(os.getpid())
        return _FileConnection(self)

    @property
    def connect_starts_processes(self) -> bool:
        return self.starts_processes

    def engine_processes(self) -> list[psutil.Process] | None:
        if not self.starts_processes:
            return None
        return [] if self.down else [psutil.Process()]

    def files(self) -> list[Path]:
        return [self.path]

    def page_layout(self, table: str) -> PageLayout:
        return PageLayout(self.path, 0, PAGE, recompute=_recomputed if self.public_checksum else None)

    def bulk_load(self, conn: Connection, table: str, columns: Sequence[str], parquet: Path) -> None:
        """The rows are the file create() wrote: nothing to load."""


@dataclass
class _CopiedFile(_FileDatabase, Backups):
    """Backs up by copying its file (as SQLite's backup API or DuckDB's COPY FROM DATABASE make a
    file of the same format), restores by copying it back."""

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        return (BackupMethod(BACKUP_FULL, "physical", False, "copy"),)

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        (target / "copy").mkdir(parents=True)
        (target / "copy" / "db.bak").write_bytes(self.path.read_bytes())
        return Backup(method, target)

    def restore(self, backup: Backup) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes((backup.path / "copy" / "db.bak").read_bytes())


class _Records:
    def __init__(self) -> None:
        self.records: list[Measurement] = []

    def append(self, record: Measurement) -> None:
        self.records.append(record)


def _run_tamper(tmp_path: Path, mode: str, checked: bool, test: str = "tamper", layer: str = "native",
                server: bool = False, public_checksum: bool = False, crashes: bool = False) -> Measurement:
    encryption = Encryption("fake", "AES", 256, mode, layer, ("main file",))
    key = Secret(os.urandom(32))
    database = _CopiedFile(workspace=tmp_path, encryption=encryption, key=key, checked=checked,
                           starts_processes=server, public_checksum=public_checksum, crashes=crashes)
    database.create()
    original = database.path.read_bytes()
    records = _Records()
    trial = TrialKey("fake", "fake", "strength", ROWS, 1)

    def twin(workspace: Path, enc: Encryption, twin_key: Secret | None) -> Database:
        return _CopiedFile(workspace=workspace, encryption=enc, key=twin_key, checked=checked,
                           public_checksum=public_checksum, starts_processes=server, crashes=crashes)

    ctx = RunContext(database=database, dialect="duckdb", recorder=Recorder(records, trial, FakeClock()),
                     scale=ROWS, streams=1, data_dir=tmp_path, seed=SEED, scratch_database=twin)
    StrengthWorkload().run(test, ctx, ctx.session.connection(), warmup=False)
    assert database.path.read_bytes() == original  # the bytes put back
    record, *backup = records.records
    if backup and backup[-1].step == "wal":  # a fake keeps no write-ahead log at rest: said so
        log = backup.pop()
        assert log.answer == "unsupported" and ("cannot have this engine leave its write-ahead log" in (log.note or "")
                                                or f"the {layer} layer" in (log.note or ""))
    if "layer" in (record.note or ""):  # nor are its backup and log forged, and the records say why
        assert [(m.step, m.answer) for m in backup] == [("backup", "unsupported")]
        backup = []
    assert record.test == test and key.hex() not in (record.note or "")
    # the forgery again in a backup (a copy of the file): classed as the file's, at the same offset
    assert [(m.step, m.answer, m.metrics) for m in backup] == ([] if test == "tamper" or "layer" in (record.note or "")
                                                               else [("backup", record.answer, record.metrics)])
    # a server's database is opened again here, whose processes this process must stop; else in a child
    assert (os.getpid() in database.tampered_opens) == server
    assert not (tmp_path / forgery.DIRECTORY).exists()  # the twin removed
    return record


def test_a_checksum_refuses_and_is_called_refused_without_a_tag(tmp_path: Path) -> None:
    record = _run_tamper(tmp_path, "CTR", checked=True)
    assert record.answer == tamper.UNTAGGED and "checksum mismatch" in (record.note or "")


def test_a_refusal_under_a_tag_is_called_tag_detects(tmp_path: Path) -> None:
    assert _run_tamper(tmp_path, "GCM", checked=True).answer == tamper.TAG


def test_no_check_reads_the_change_as_data(tmp_path: Path) -> None:
    record = _run_tamper(tmp_path, "stream", checked=False)
    assert record.answer == tamper.ALTERED and "1 of 200 rows changed" in (record.note or "")


def test_a_forgery_without_a_check_is_read_back_as_forged(tmp_path: Path) -> None:
    record = _run_tamper(tmp_path, "stream", checked=False, test="forgery")
    assert record.answer == tamper.FORGEABLE and record.metrics["row"] == ROWS * 3 // 4


def test_a_server_is_read_back_in_this_process(tmp_path: Path) -> None:
    record = _run_tamper(tmp_path, "CTR", checked=True, server=True)
    assert record.answer == tamper.UNTAGGED and "checksum mismatch" in (record.note or "")


@pytest.mark.parametrize("test", ["tamper", "forgery"])
def test_a_server_that_ends_on_the_tampered_page_crashed_rather_than_refused(tmp_path: Path, test: str) -> None:
    """Its forged backup too (_run_tamper checks the backup's class is the file's)."""
    record = _run_tamper(tmp_path, "CTR", checked=True, server=True, crashes=True, test=test)
    assert record.answer == tamper.CRASHED and "the server ended while reading" in (record.note or "")
    assert "Lost connection" in (record.note or "")


def test_server_died_waits_a_moment_for_a_server_going_down() -> None:
    looks = iter([[object()], [object()], []])
    assert tamper.server_died(lambda: next(looks), wait_s=5)
    assert not tamper.server_died(lambda: [object()], wait_s=0.2)


@pytest.mark.parametrize("layer", ["column", "fs"])
def test_no_forgery_where_the_layer_moves_the_values(tmp_path: Path, layer: str) -> None:
    record = _run_tamper(tmp_path, "stream", checked=False, test="forgery", layer=layer)
    assert record.answer == "unsupported" and f"the {layer} layer does not keep" in (record.note or "")


def test_a_forgery_that_recomputes_a_public_checksum_is_accepted(tmp_path: Path) -> None:
    record = _run_tamper(tmp_path, "CTR", checked=True, test="forgery", public_checksum=True)
    assert record.answer == tamper.FORGEABLE and record.metrics["checksum_recomputed"] == 1.0


def test_a_flipped_byte_leaves_the_checksum_alone(tmp_path: Path) -> None:
    """Only the forgery recomputes it: a random flip is the weak test, as the engine meets it."""
    assert _run_tamper(tmp_path, "CTR", checked=True, public_checksum=True).answer == tamper.UNTAGGED


def test_crc32c_and_innodb_full_crc32() -> None:
    assert page_checksums.crc32c(b"123456789") == 0xE3069283  # the standard check value
    page = bytes(range(256)) * 64
    resealed = page_checksums.innodb_full_crc32(page)
    assert resealed[:-4] == page[:-4] and resealed[-4:] == page_checksums.crc32c(page[:-4]).to_bytes(4, "big")


def test_duckdb_checksum_change_is_what_recomputing_gives() -> None:
    """XORing the change of DuckDB's checksum into the stored one gives the new block's checksum:
    only the changed words matter (what makes the forgery work under CTR)."""
    data_before = os.urandom(8 * 40)
    data_after = data_before[:100] + b"FORGED::" + data_before[108:]
    before = page_checksums.duckdb_checksum(data_before)
    change = page_checksums.duckdb_checksum_change(data_before[96:112], data_after[96:112])
    assert bytes(a ^ b for a, b in zip(before, change)) == page_checksums.duckdb_checksum(data_after)


def test_checksum_change_aligns_on_the_trial_page() -> None:
    layout = PageLayout(Path("f"), 100, 64, plain_checksum=PlainChecksum(
        at=4, data_from=12, change=lambda before, after: bytes([len(before), len(after)])))
    found = forgery.Found(offset=100 + 64 + 12 + 10, around=bytes(range(200)), start=100)
    at, mask = forgery.checksum_change(layout, layout.plain_checksum, found, b"xyz")  # type: ignore[arg-type]
    assert at == 100 + 64 + 4  # in the value's page
    assert mask == bytes([8, 8])  # the value's bytes 10-12 of the data: one word, bytes 8-15


def test_a_forgery_that_breaks_a_checksum_is_refused(tmp_path: Path) -> None:
    assert _run_tamper(tmp_path, "CTR", checked=True, test="forgery").answer == tamper.UNTAGGED


def test_forgery_pieces(tmp_path: Path) -> None:
    old = data.value(1, 7)
    new = forgery.forged(old)
    assert len(new) == len(old) and new != old and new.startswith(forgery.PREFIX)
    assert bytes(a ^ b for a, b in zip(old.encode(), forgery.difference(old, new))) == new.encode()
    file = tmp_path / "f"
    file.write_bytes(b"xx" + old.encode() + b"yy")
    found = forgery.offset_of(file, old)
    assert found is not None and (found.offset, found.start, found.around) == (2, 0, file.read_bytes())
    assert forgery.offset_of(file, new) is None
    file.write_bytes(old.encode() * 2)
    assert forgery.offset_of(file, old) is None  # twice: not one offset
    assert forgery.classify(tamper.Reading(tamper.SAME), False) == tamper.FORGEABLE
    assert forgery.classify(tamper.Reading(tamper.DIFFERS, forgery.UNLANDED), False) == tamper.UNCHANGED
    assert forgery.classify(tamper.Reading(tamper.DIFFERS, "garbled"), False) == tamper.ALTERED
    assert forgery.classify(tamper.Reading(tamper.REFUSED, "bad tag"), True) == tamper.TAG


def test_a_database_without_a_page_layout_is_unsupported(tmp_path: Path) -> None:
    class _NoLayout(_FileDatabase):
        def page_layout(self, table: str) -> None:  # type: ignore[override]
            return None

    records = _Records()
    database = _NoLayout(workspace=tmp_path, encryption=NONE, key=None)
    ctx = RunContext(database=database, dialect="duckdb", recorder=Recorder(records, TrialKey("f", "none", "strength",
                     ROWS, 1), FakeClock()), scale=ROWS, streams=1, data_dir=tmp_path)
    StrengthWorkload().run("tamper", ctx, ctx.session.connection(), warmup=False)
    assert [r.answer for r in records.records] == ["unsupported"]


def test_an_engine_that_cannot_rekey_records_unsupported_once(tmp_path: Path) -> None:
    records = _Records()
    encryption = Encryption("fake", "AES", 256, "CTR", "native", ("main file",))
    database = _FileDatabase(workspace=tmp_path, encryption=encryption, key=Secret(os.urandom(32)))
    ctx = RunContext(database=database, dialect="duckdb", recorder=Recorder(records, TrialKey("f", "fake", "strength",
                     ROWS, 1), FakeClock()), scale=ROWS, streams=1, data_dir=tmp_path,
                     new_key=lambda purpose: Secret(os.urandom(32)), scratch_database=lambda w, e, k: database)
    StrengthWorkload().run("old-key", ctx, ctx.session.connection(), warmup=False)
    assert [(r.step, r.answer) for r in records.records] == [("database", "unsupported")]
    assert "cannot re-encrypt" in (records.records[0].note or "")
    assert not (tmp_path / "strength-old-key").exists()


@dataclass
class _UnrestorableFile(_FileDatabase, Reencrypts, Backups):
    """Rekeys, backs up, but no restore succeeds (as MariaDB's under gocryptfs, whose copy into the
    mount cannot keep owners): whatever the key, the restore itself fails."""

    def _reencrypt(self, old: Secret | None, new: Secret) -> str:
        return "rekey"

    def opens_with(self, key: Secret) -> bool:
        return key == self.key

    def backup_methods(self) -> tuple[BackupMethod, ...]:
        return (BackupMethod(BACKUP_FULL, "physical", False, "copy"),)

    def backup(self, method: BackupMethod, target: Path) -> Backup:
        target.mkdir(parents=True)
        return Backup(method, target)

    def restore(self, backup: Backup) -> None:
        raise RuntimeError("cp exited with 1: failed to preserve ownership")

    def backup_contents(self, backup: Backup, scratch: Path) -> Path:
        return backup.path


def test_a_backup_no_key_restores_says_the_restore_failed(tmp_path: Path) -> None:
    """A refusal counts only where the key the backup was made with restores it: else the step
    says no key opens it, and why."""
    records = _Records()
    encryption = Encryption("fake", "AES", 256, "CTR", "native", ("main file",))
    database = _UnrestorableFile(workspace=tmp_path, encryption=encryption, key=Secret(os.urandom(32)))

    def scratch(workspace: Path, enc: Encryption, key: Secret | None) -> Database:
        return _UnrestorableFile(workspace=workspace, encryption=enc, key=key)

    ctx = RunContext(database=database, dialect="duckdb", recorder=Recorder(records, TrialKey("f", "fake", "strength",
                     ROWS, 1), FakeClock()), scale=ROWS, streams=1, data_dir=tmp_path,
                     new_key=lambda purpose: Secret(os.urandom(32)), scratch_database=scratch)
    StrengthWorkload().run("old-key", ctx, ctx.session.connection(), warmup=False)
    answers = {r.step: (r.answer, r.note or "") for r in records.records}
    assert answers["database"][0] == "refused"
    for step in ("backup-before-rekey", "backup-after-rekey"):
        assert answers[step][0] == "no key opens it" and "preserve ownership" in answers[step][1]


# --- the report ----------------------------------------------------------------------------------


def _m(encryption: str, test: str, step: str, metrics: dict[str, float], answer: str | None = None,
       note: str | None = None, engine: str = "sqlite") -> Measurement:
    return Measurement(TrialKey(engine, encryption, "strength", 20000, 1), test, step, metrics, answer=answer,
                       note=note)


def _run(measurements: list[Measurement]) -> RunData:
    return RunData(Path("."), "", {}, measurements=measurements)


def test_the_report_has_a_strength_section_with_its_findings() -> None:
    assert WORKLOADS["strength"] is StrengthWorkload and report.section in [source.content for source in SOURCES]
    share = {"bytes": 1e6, "pages": 200.0, "repeated_pages": 0.0, "repeated_page_share": 0.0}
    run = _run([
        _m("none", "repeats", "database", {**share, "repeated_block_share": 0.41}),
        _m("none", "repeats", "random", {"repeated_block_share": 0.0}),
        _m("rc4", "repeats", "database", {**share, "repeated_block_share": 0.41}),
        _m("rc4", "repeats", "random", {"repeated_block_share": 0.0}),
        _m("aegis-256", "repeats", "database", {**share, "repeated_block_share": 0.0}),
        _m("aegis-256", "repeats", "random", {"repeated_block_share": 0.0}),
        _m("none", "tamper", "data-page", {"tries": 1.0}, tamper.UNCHANGED),
        _m("rc4", "tamper", "data-page", {"tries": 1.0}, tamper.ALTERED, "1 of 20000 rows changed"),
        _m("aegis-256", "tamper", "data-page", {"tries": 1.0}, tamper.TAG, "CorruptError: malformed"),
        _m("rc4", "forgery", "value", {"row": 15000.0}, tamper.FORGEABLE),
        _m("rc4", "forgery", "wal", {"row": 15000.0}, tamper.FORGEABLE),
        _m("aegis-256", "forgery", "wal", {"row": 15000.0}, tamper.TAG, "CorruptError: malformed"),
        _m("none", "forgery", "value", {"row": 15000.0}, tamper.FORGEABLE),
        _m("rc4", "old-key", "database", {}, "refused"),
        _m("rc4", "old-key", "backup-before-rekey", {}, "needs the old key"),
        _m("aegis-256", "old-key", "database", {}, "opens"),
        _m("none", "load", "total", {"elapsed_s": 1.0}),
    ])
    section = report.section(run, [])
    assert section is not None and [name for name, _ in section.csvs] == ["strength.csv"]
    assert [b.title for b in section.blocks] == ["Repeated ciphertext", "Tamper detection", "Old keys after a rekey"]
    repeated = {row["encryption"]: row for row in section.blocks[0].parts[0].table.rows}
    assert list(repeated) == ["none", "aegis-256", "rc4"] and repeated["rc4"]["pages"] == "0 of 200"
    tampered = section.blocks[1].parts[0].table
    assert [tampered.alarmed(row) for row in tampered.rows] == [False, False, True]
    assert [(row["forgery"], row["log"]) for row in tampered.rows] == [
        ("forgeable", None), (None, "tag detects"), ("forgeable", "forgeable")]  # the WAL's step: a column of its own
    findings = " ".join(section.findings)
    assert "sqlite rc4: 41.0% of the 16-byte blocks" in findings and "aegis-256: 0.0%" not in findings
    assert "sqlite rc4: a known-plaintext forgery was accepted in its file and in its write-ahead log" in findings
    assert report._listed(["its file", "a physical backup", "its write-ahead log"]) == \
        "its file, in a physical backup and in its write-ahead log"
    assert "sqlite none: a known-plaintext forgery" not in findings  # the baseline's: the positive control
    assert "sqlite: the flipped byte went unnoticed in the unencrypted baseline too" in findings
    assert "sqlite aegis-256: after a rekey, the old key still reads" in findings
    assert len(section.csvs[0][1].rows) == 16  # every strength record, the load left out


def test_a_run_without_strength_has_no_section() -> None:
    assert report.section(_run([_m("none", "load", "total", {"elapsed_s": 1.0})]), []) is None


def test_a_strength_run_has_no_timing_sections() -> None:
    """Its load times are measured like any workload's, but its results are outcomes: the report's
    timing sections (core.overhead, cache_fit, cipher_context, connection) leave it out, and come back for the same
    figures of a timed workload."""
    def timed(workload: str) -> RunData:
        trials = [(TrialKey("sqlite", encryption, workload, 20000, repetition), seconds)
                  for encryption, seconds in (("none", 1.0), ("rc4", 1.2)) for repetition in (1, 2, 3)]
        return _run([m for trial, seconds in trials for m in (
            Measurement(trial, "load", "total", {"elapsed_s": seconds + trial.repetition / 10}),
            Measurement(trial, "open", "connect", {"elapsed_s": seconds / 100}))])
    strength, crud = timed("strength"), timed("crud")
    assert core.overhead(strength, summary_records(strength)) is None
    assert core.connection(strength, summary_records(strength)) is None
    assert core.cipher_context(strength, summary_records(strength)) is None
    assert core.overhead(crud, summary_records(crud)) is not None
    assert core.connection(crud, summary_records(crud)) is not None


# --- CBC's chosen block ----------------------------------------------------------------------------

def _cbc(page: bytes, key: bytes, iv: bytes, encrypt: bool) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    cipher = Cipher(algorithms.AES(key), modes.CBC(iv))
    context = cipher.encryptor() if encrypt else cipher.decryptor()
    return context.update(page) + context.finalize()


def test_a_cbc_forgery_changes_the_chosen_block_and_garbles_the_one_before(tmp_path: Path) -> None:
    """Real AES-CBC page by page (the IV from the page number, as SQLite3MC's wxSQLite3 ciphers):
    the row chosen is the one with a block of zeros before its value's first block; its first
    bytes read as forged, that zero block garbled, every other byte as written."""
    page_bytes, key = 256, os.urandom(16)
    rows = {data.value(SEED, row): row for row in (1, 2, 3)}
    plain = bytearray(2 * page_bytes)
    plain[16 + 5:16 + 5 + 64] = data.value(SEED, 1).encode()  # page 0: a block of the page's header before it
    plain[page_bytes + 100:page_bytes + 164] = data.value(SEED, 2).encode()  # zeros before its block (96-111)
    plain[page_bytes + 170:page_bytes + 234] = data.value(SEED, 3).encode()  # right after row 2: data before it
    twin = tmp_path / "twin"
    twin.write_bytes(bytes(plain))
    layout = PageLayout(twin, 0, page_bytes, cbc_blocks_from=0)
    assert forgery.unused_before(twin, layout, rows, data.VALUE_PATTERN) == 2
    found = forgery.offset_of(twin, data.value(SEED, 2))
    assert found is not None and forgery.block_share(layout, found, 64) == 12  # bytes 100-111
    old = data.value(SEED, 2)
    new = forgery.forged(old, forgery.block_share(layout, found, 64))
    at, mask = forgery.chained_change(layout, found, old, new)
    assert at == page_bytes + 100 - 16 and len(mask) == 8  # PREFIX's 8 characters, all in the block

    ivs = [bytes([n]) * 16 for n in range(2)]
    stored = bytearray(b"".join(_cbc(bytes(plain[n * page_bytes:(n + 1) * page_bytes]), key, ivs[n], True)
                                for n in range(2)))
    stored[at:at + len(mask)] = bytes(a ^ b for a, b in zip(stored[at:at + len(mask)], mask))
    read = b"".join(_cbc(bytes(stored[n * page_bytes:(n + 1) * page_bytes]), key, ivs[n], False) for n in range(2))
    expected = bytearray(plain)
    expected[page_bytes + 100:page_bytes + 164] = new.encode()
    before = slice(page_bytes + 80, page_bytes + 96)  # the block before the value's: garbled
    assert read[before] != expected[before]
    assert read[:before.start] == expected[:before.start] and read[before.stop:] == expected[before.stop:]

    first = forgery.offset_of(twin, data.value(SEED, 1))
    assert first is not None
    with pytest.raises(ValueError, match="IV"):  # its first block is its page's: the IV is not in the file
        forgery.chained_change(layout, dataclasses.replace(first, offset=5), data.value(SEED, 1),
                               forgery.forged(data.value(SEED, 1), 11))
    with pytest.raises(ValueError, match="stay in that block"):  # 8 characters, only 6 in the block
        forgery.chained_change(layout, dataclasses.replace(found, offset=page_bytes + 106), old, forgery.forged(old))


def test_a_cbc_forgery_finds_no_row_without_unused_space(tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    twin.write_bytes(b"\x01" * 40 + data.value(SEED, 1).encode() + bytes(100))
    layout = PageLayout(twin, 0, 256, cbc_blocks_from=0)
    assert forgery.unused_before(twin, layout, {data.value(SEED, 1): 1}, data.VALUE_PATTERN) is None
    assert forgery.chains("CBC+HMAC-SHA512") and forgery.chains("CBC") and not forgery.chains("CTR")


def test_sqlite_wal_checksums_are_what_sqlite_writes(tmp_path: Path) -> None:
    """A WAL SQLite wrote (left at rest: no checkpoint on closing), its sums zeroed, recomputed:
    the file as SQLite wrote it; a page changed, every later frame's sums change too (chained)."""
    import apsw

    conn = apsw.Connection(str(tmp_path / "db"))
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (v TEXT)")
    for n in range(3):
        conn.execute("INSERT INTO t VALUES (?)", (str(n) * 50,))
    conn.close()
    wal = (tmp_path / "db-wal").read_bytes()
    frame = 24 + 4096
    assert len(wal) >= 32 + 3 * frame
    zeroed = bytearray(wal)
    zeroed[24:32] = bytes(8)
    for at in range(32, len(wal), frame):
        zeroed[at + 16:at + 24] = bytes(8)
    assert page_checksums.sqlite_wal_checksums(bytes(zeroed)) == wal
    changed = bytearray(wal)
    changed[32 + 24 + 100] ^= 1  # the first frame's page
    resummed = page_checksums.sqlite_wal_checksums(bytes(changed))
    assert all(resummed[at + 16:at + 24] != wal[at + 16:at + 24] for at in range(32, len(wal), frame))


def test_duckdb_wal_entries_are_found_by_structure_past_nonces_and_tags() -> None:
    """A plain log (header, entries of size, checksum, payload) and the same entries as an
    encrypted log lays them out (size, nonce, checksum and payload XORed with a key stream, tag):
    the value's changes land on the trial's value and its checksum; decrypted, the checksum is the
    new payload's."""
    from tdebench.engines import duckdb_wal

    def header(identifier: bytes) -> bytes:  # fields 100, 101, 102 (a list of varints), 103, the end
        varints = b"".join(bytes([b]) if b < 0x80 else bytes([b & 0x7F | 0x80, b >> 7]) for b in identifier)
        return (b"\x64\x00\x01\x65\x00\x02\x66\x00\x10" + varints + b"\x67\x00\x05\xff\xff")

    payloads = [os.urandom(40), b"\x01" * 10 + data.value(SEED, 3).encode() + b"\x02" * 30, os.urandom(24)]
    twin = header(bytes(range(16))) + b"".join(
        len(p).to_bytes(8, "little") + page_checksums.duckdb_checksum(p) + p for p in payloads)
    streams = [os.urandom(8 + len(p)) for p in payloads]
    nonce, tag = 16, 16
    trial = bytearray(header(bytes(range(120, 136))))  # varints two bytes long: a longer header
    starts = []
    for p, stream in zip(payloads, streams):
        starts.append(len(trial))
        sealed = bytes(a ^ b for a, b in zip(page_checksums.duckdb_checksum(p) + p, stream))
        trial += len(p).to_bytes(8, "little") + os.urandom(nonce) + sealed + os.urandom(tag)
    old = data.value(SEED, 3).encode()
    new = forgery.forged(old.decode()).encode()
    changes = duckdb_wal.changes(twin, bytes(trial), twin.index(old), old, new, tag)
    for at, mask in changes:
        trial[at:at + len(mask)] = bytes(a ^ b for a, b in zip(trial[at:at + len(mask)], mask))
    sealed_from = starts[1] + 8 + nonce
    opened = bytes(a ^ b for a, b in zip(trial[sealed_from:sealed_from + 8 + len(payloads[1])], streams[1]))
    assert opened[8:] == payloads[1].replace(old, new)
    assert opened[:8] == page_checksums.duckdb_checksum(opened[8:])
    with pytest.raises(ValueError, match="entries"):  # a log whose entries are not the twin's
        duckdb_wal.changes(twin, bytes(trial[:-tag]) + bytes(tag + 3), twin.index(old), old, new, tag)


class _WalSegment:
    """A pg_wal segment built byte by byte as PostgreSQL lays it out (xlog_internal.h, xlogrecord.h),
    with pages of `page` bytes: the long header on the first, the short on the others, each giving
    its own address and how many bytes of a record it continues; records 8-byte aligned, each with
    its CRC-32C of its data, then its header up to xl_crc. Small pages, so a record crosses them."""

    def __init__(self, page: int = 256, pages: int = 5, start: int = 4 * 1280) -> None:
        self.out, self.page, self.pages, self.start = bytearray(), page, pages, start
        self.lsns: list[int] = []

    def _header(self, left: int, address: int | None = None) -> None:
        first = not self.out
        info = (0x0002 if first else 0) | (0x0001 if left else 0)
        self.out += struct.pack("<HHIQI", 0xD110, info, 1, self.start + len(self.out) if address is None else address,
                                left) + bytes(4)
        if first:
            self.out += struct.pack("<QII", 42, self.page * self.pages, self.page)

    def write(self, raw: bytes, in_record: bool = True) -> list[int]:
        """`raw` written on, a page header before each page it reaches; the file offset of each byte."""
        offsets = []
        for index, byte in enumerate(raw):
            if len(self.out) % self.page == 0:
                self._header(len(raw) - index if in_record else 0)
            offsets.append(len(self.out))
            self.out.append(byte)
        return offsets

    def record(self, payload: bytes, prev: int | None = None, crc: bool = True) -> list[int]:
        """A record of `payload`, chained to the last one (or to `prev`), padded: its bytes' offsets."""
        if len(self.out) % self.page == 0:
            self._header(0)
        previous = prev if prev is not None else (self.lsns[-1] if self.lsns else 0x1234)
        header = struct.pack("<IIQBBxx", 24 + len(payload), 7, previous, 0, 10)
        checksum = page_checksums.crc32c(payload + header) if crc else 0
        self.lsns.append(self.start + len(self.out))
        offsets = self.write(header + checksum.to_bytes(4, "little") + payload)
        self.write(bytes(-len(offsets) % 8), in_record=False)
        return offsets

    def rest(self, stale: bytes) -> bytes:
        """The segment: its last page filled with zeros (the log's end), then pages of an older
        segment (a recycled one: their address is not theirs) holding `stale`."""
        self.out += bytes(-len(self.out) % self.page)
        while len(self.out) < self.page * self.pages:
            self._header(0, address=len(self.out))
            self.out += stale[:self.page - 24].ljust(self.page - 24, b"\0")
        return bytes(self.out)


def _crcs_zeroed(segment: bytes, records: Sequence[Sequence[int]]) -> bytes:
    zeroed = bytearray(segment)
    for offsets in records:
        for at in offsets[20:24]:
            zeroed[at] = 0
    return bytes(zeroed)


def test_pg_wal_crcs_are_recomputed_across_page_headers() -> None:
    """A segment that opens with the tail of a record begun in the segment before, then three records,
    the second across two page boundaries, its header cut by one: every CRC zeroed and recomputed is
    the one the records were written with. A record whose xl_prev is not the record before it, and
    an older segment's page after the log's end, are left as they are (recovery stops there)."""
    from tdebench.engines import pg_wal

    wal = _WalSegment()
    wal.write(b"\x05" * 70)  # the tail of a record of the segment before, continued here
    wal.write(bytes(2), in_record=False)
    first = wal.record(b"\x01" * 112)  # to 248: the next record's header cut by the first page's end
    second = wal.record(bytes(range(256)) * 2)
    third = wal.record(b"\x03" * 17)
    unchained = wal.record(b"\x04" * 9, prev=0x99, crc=False)  # stale: its prev is not the third
    stale = struct.pack("<IIQBBxxI", 40, 7, wal.lsns[-1], 0, 10, 0) + b"\x06" * 16
    segment = wal.rest(stale)
    assert second[0] == 248 and second[8] - second[7] == 25  # its header cut by the second page's header
    assert second[-1] > 2 * wal.page  # and its data by the third's
    assert pg_wal.recompute(_crcs_zeroed(segment, [first, second, third])) == segment
    assert pg_wal.recompute(segment) == segment  # nothing else given a CRC: not the unchained, not the stale
    assert all(segment[at] == 0 for at in unchained[20:24])


def test_pg_wal_changes_reach_every_copy_of_a_value_cut_by_a_page_header() -> None:
    """A value in two records, once cut in two by a page header: the changes XOR the mask into each
    byte of both copies (three pieces), and the records' CRCs recomputed are those of the new data."""
    from tdebench.engines import pg_wal

    old = data.value(SEED, 9).encode()
    new = forgery.forged(old.decode()).encode()
    wal = _WalSegment()
    first = wal.record(b"\x01" * 8 + old + b"\x02" * 8)
    second = wal.record(b"\x03" * (230 - len(wal.out)) + old + b"\x04" * 12)
    segment = wal.rest(b"")
    copies = [first[32:32 + len(old)], second[24 + 230 - (wal.lsns[1] - wal.start):][:len(old)]]
    assert [bytes(segment[at] for at in offsets) for offsets in copies] == [old, old]
    assert copies[1][-1] - copies[1][0] > len(old)  # the second copy is cut by a page header
    changes = pg_wal.changes(segment, old, 0, forgery.difference(old.decode(), new.decode()))
    assert len(changes) == 3
    changed = bytearray(segment)
    for at, mask in changes:
        changed[at:at + len(mask)] = bytes(a ^ b for a, b in zip(changed[at:at + len(mask)], mask))
    assert [bytes(changed[at] for at in offsets) for offsets in copies] == [new, new]
    resealed = pg_wal.recompute(bytes(changed))
    for offsets in (first, second):
        record = bytes(resealed[at] for at in offsets)
        assert record[20:24] == page_checksums.crc32c(record[24:] + record[:20]).to_bytes(4, "little")
    with pytest.raises(ValueError, match="no record"):
        pg_wal.changes(segment, b"not in the log", 0, b"\x01")


class _Statements:
    """A connection that keeps the statements it is given, and answers none."""

    def __init__(self) -> None:
        self.run: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.run.append((sql.split()[0], tuple(params)))
        return []


@pytest.mark.parametrize("changes_only", [False, True])
def test_the_rewrite_puts_every_byte_of_the_value_in_a_log_of_changes_only(changes_only: bool) -> None:
    """InnoDB logs only the bytes a change alters: its row goes through a value unlike it in every
    byte and back; the others' is deleted and inserted again. One transaction, the value last."""
    conn = _Statements()
    data.rewrite(cast(Connection, conn), SEED, 7, changes_only)
    value = data.value(SEED, 7)
    expected = ([("UPDATE", (data.OTHER_VALUE, 7)), ("UPDATE", (value, 7))] if changes_only else
                [("DELETE", (7,)), ("INSERT", (7, value))])
    assert conn.run == [("BEGIN", ()), *expected, ("COMMIT", ())]
    assert len(data.OTHER_VALUE) == data.VALUE_BYTES and not re.search(rb"[0-9a-f]", data.OTHER_VALUE.encode())


def test_the_twins_log_says_which_copy_of_the_value_replays(tmp_path: Path) -> None:
    """A log with copies that never replay (`LogFile.value_in`: InnoDB's undo log, the area before
    its checkpoint) is not refused for holding the value more than once; without it, it is."""
    log = tmp_path / "log"
    value = data.value(SEED, 7)
    log.write_bytes(b"undo " + value.encode() + b" page " + value.encode() + b" end")
    assert _value_in_log(LogFile(log), value) is None
    found = _value_in_log(LogFile(log, value_in=lambda raw, needle: raw.rfind(needle)), value)
    assert found is not None and found.offset == 75 and found.around.endswith(value.encode() + b" end")


@dataclass
class _UnencryptedLog(_CopiedFile):
    """Keeps a log it never encrypts itself, as PostgreSQL's pg_wal: here its own file (what it
    commits is there verbatim, each page's CRC-32 recomputed as the log's), forged by what it holds,
    in a copy of the stopped database (a backup) restored to be read back."""

    keeps_log: ClassVar[bool] = True
    log_needs_twin: ClassVar[bool] = False
    kept: list[Path] = field(default_factory=list)  # the workspace of each database asked to keep its log

    def keep_log(self, conn: Connection) -> LogFile:
        self.kept.append(self.workspace)

        def changes_in(raw: bytes, needle: bytes, at: int, mask: bytes) -> list[tuple[int, bytes]]:
            hits = [index for index in range(len(raw)) if raw.startswith(needle, index)]
            if not hits:
                raise ValueError("no record holds it")
            return [(hit + at, mask) for hit in hits]

        def copied(target: Path) -> tuple[Backup, Path]:
            return self.backup(self.backup_method(BACKUP_FULL), target), target / "copy" / "db.bak"

        def recompute(raw: bytes) -> bytes:
            return b"".join(_recomputed(raw[at:at + PAGE]) for at in range(0, len(raw), PAGE))

        return LogFile(self.path, recompute=recompute, changes_in=changes_in, copied=copied)


def test_a_log_the_engine_never_encrypts_is_forged_in_a_copy_without_a_twin(tmp_path: Path) -> None:
    """Step wal of an engine whose log holds what it commits as stored (`log_needs_twin` False): the
    value forged in the copy's log where it holds it, its checksum recomputed, read back from the
    copy restored; the trial's own file never changed, and no twin asked to keep a log."""
    kept: list[Path] = []
    database = _UnencryptedLog(workspace=tmp_path, encryption=NONE, key=None, checked=True, kept=kept)
    database.create()
    original = database.path.read_bytes()
    records = _Records()

    def scratch(workspace: Path, enc: Encryption, key: Secret | None) -> Database:
        return _UnencryptedLog(workspace=workspace, encryption=enc, key=key, checked=True, kept=kept)

    ctx = RunContext(database=database, dialect="duckdb", scale=ROWS, streams=1, data_dir=tmp_path, seed=SEED,
                     recorder=Recorder(records, TrialKey("fake", "none", "strength", ROWS, 1), FakeClock()),
                     scratch_database=scratch)
    StrengthWorkload().run("forgery", ctx, ctx.session.connection(), warmup=False)
    logged = {m.step: m for m in records.records}["wal"]
    assert logged.answer == tamper.FORGEABLE and logged.metrics["checksum_recomputed"] == 1.0
    assert logged.metrics["row"] == ROWS * 3 // 4 and logged.note == "its records' checksum recomputed"
    assert database.path.read_bytes() == original and kept == [tmp_path]
    assert not (tmp_path / forgery.DIRECTORY).exists()  # the copy removed
