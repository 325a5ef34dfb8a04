"""InnoDB's redo log (engines/innodb_redo.py) on logs built byte by byte as MariaDB 10.11 lays them
out (log0log.h, mtr0log.h, log0crypt.cc): the mini-transactions crash recovery would read, the one
copy of a value a page write replays, and the forgery of an "encrypted" trial log found by the shape
of the twin's mini-transaction (its content XORed with a random key stream, as AES-CTR does)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from tdebench.engines import innodb_redo
from tdebench.engines.page_checksums import crc32c

VALUE = b"32a56bdfdce84a053505c3a32389b97a8f19e76d838d370c1e3df35294aa41e1"
NEW = b"forged" + VALUE[6:]
_BASES = (0, 0x80, 0x4080, 0x204080, 0x10204080)


def _varint(value: int) -> bytes:
    """mlog_encode_varint: 1 to 5 bytes, their count in the first byte's leading 1 bits."""
    for count, (base, top) in enumerate(zip(_BASES, (0, 0x80, 0xC0, 0xE0, 0xF0), strict=True), start=1):
        if count == 5 or value - base < _BASES[count] - base:
            rest = value - base
            return bytes([0xF0]) + rest.to_bytes(4, "big") if count == 5 else (
                (top << (8 * (count - 1))) | rest).to_bytes(count, "big")
    raise AssertionError("unreachable")


@pytest.mark.parametrize("value", [0, 0x7F, 0x80, 0x407F, 0x4080, 0x20407F, 0x204080, 0x1020407F, 0x10204080,
                                   0xFFFFFFFF])
def test_varints_read_as_mariadb_writes_them(value: int) -> None:
    encoded = _varint(value)
    assert innodb_redo.varint_bytes(encoded[0]) == len(encoded) and innodb_redo.varint(encoded) == value


def _record(kind: int, content: bytes, page: tuple[int, int] | None) -> bytes:
    """A record: `kind` (flag and type), its length (in the first byte up to 15, else a varint
    after it) and its content, led by the page id unless `page` is None (same_page)."""
    body = (_varint(page[0]) + _varint(page[1]) if page is not None else b"") + content
    if len(body) <= 15:
        return bytes([kind | len(body)]) + body
    size = len(_varint(len(body) - 14))  # rlen = addlen + 15 - lenlen
    return bytes([kind]) + _varint(len(body) - 15 + size) + body


def _write(page: tuple[int, int] | None, data: bytes) -> bytes:
    return _record(innodb_redo.WRITE | (0x80 if page is None else 0), b"\x00" + data, page)


UNDO = _record(0x20, b"\x03" + VALUE, (0, 301))  # EXTENDED UNDO_APPEND: the row's old value for the undo log
ROW = [_write((6, 13), b"\x86\xda"), _write(None, VALUE)]  # the row's page: its header, then the value


def _checkpoint_mtr(lsn: int) -> list[bytes]:
    return [bytes([0xF0 | 10, 0, 0]) + lsn.to_bytes(8, "big")]  # FILE_CHECKPOINT (0:0) and its LSN


@dataclass
class _Built:
    raw: bytearray
    stream: dict[int, int]  # the key stream XORed into each file offset (an "encrypted" log)


def _log(mtrs: list[list[bytes]], encrypted: bool = False, size: int = 1 << 16, first_lsn: int = 12288,
         checkpoint_lsn: int | None = None, stale: bytes = b"") -> _Built:
    """A log with these mtrs from `checkpoint_lsn` (default: the area's first byte) on, then `stale`
    bytes (an older pass's). Encrypted: each mtr's content (not its records' first bytes and lengths)
    XORed with a random key stream, an 8-byte nonce after its marker."""
    raw = bytearray(size)
    raw[:4] = innodb_redo.ENCRYPTED if encrypted else innodb_redo.PLAIN
    raw[8:16] = first_lsn.to_bytes(8, "big")
    lsn = first_lsn if checkpoint_lsn is None else checkpoint_lsn
    block = lsn.to_bytes(8, "big") * 2 + bytes(44)
    raw[4096:4160] = block + crc32c(block).to_bytes(4, "big")
    capacity = size - innodb_redo.START
    stream: dict[int, int] = {}

    def put(at: int, data: bytes) -> None:
        for i, byte in enumerate(data):
            raw[innodb_redo.START + (at + i - first_lsn) % capacity] = byte

    for records in mtrs:
        start, body = lsn, bytearray()
        for record in records:
            plain = 1 + (innodb_redo.varint_bytes(record[1]) if not record[0] & 0x0F else 0)
            for i, byte in enumerate(record):
                if encrypted and i >= plain:
                    key = os.urandom(1)[0]
                    stream[innodb_redo.START + (start + len(body) - first_lsn) % capacity] = key
                    byte ^= key
                body.append(byte)
        nonce = os.urandom(8) if encrypted else b""
        marker = b"\x00" if (start + len(body) - first_lsn) // capacity % 2 else b"\x01"  # flips at each wrap
        put(start, bytes(body) + marker + nonce + crc32c(bytes(body) + nonce).to_bytes(4, "big"))
        lsn = start + len(body) + 1 + len(nonce) + 4
    put(lsn, stale)
    return _Built(raw, stream)


def test_recovery_reads_from_the_checkpoint_to_the_first_mtr_that_fails_its_crc() -> None:
    stale = _write((6, 13), b"old") + b"\x01" + bytes(4)  # an older pass's mtr: its CRC wrong now
    built = _log([_checkpoint_mtr(12288), [UNDO], ROW], stale=stale)
    log = innodb_redo.parse(bytes(built.raw))
    found = innodb_redo.mtrs(log)
    assert [len(mtr.records) for mtr in found] == [1, 1, 2]
    assert [record.of_page for record in found[0].records] == [False]  # FILE_CHECKPOINT: a file-level record
    assert found[2].shape == (ROW[0][:1], ROW[1][:2])  # the long write's length is a varint after its first byte
    built.raw[log.offset(found[2].crc)] ^= 1
    assert len(innodb_redo.mtrs(innodb_redo.parse(bytes(built.raw)))) == 2
    with pytest.raises(ValueError, match="unknown format"):
        innodb_redo.parse(bytes(20000))


def test_the_value_is_the_one_copy_a_page_write_replays() -> None:
    """The undo log's copy and one before the checkpoint are not it; two page writes are one too many."""
    before = _log([[UNDO], ROW])  # an earlier pass, then a checkpoint after it
    built = _log([_checkpoint_mtr(13000), [UNDO], ROW], checkpoint_lsn=13000)
    built.raw[innodb_redo.START:innodb_redo.START + 200] = before.raw[innodb_redo.START:innodb_redo.START + 200]
    raw = bytes(built.raw)
    at = innodb_redo.value_in(raw, VALUE)
    assert at is not None and raw[at:at + len(VALUE)] == VALUE and at > innodb_redo.START + 13000 - 12288
    assert raw.count(VALUE) == 4  # and three copies that are not it
    twice = bytes(_log([_checkpoint_mtr(12288), ROW, ROW]).raw)
    assert innodb_redo.value_in(twice, VALUE) is None


def _forged(twin: bytes, trial: _Built) -> tuple[list[tuple[int, bytes]], bytearray]:
    offset = innodb_redo.value_in(twin, VALUE)
    assert offset is not None
    changes = innodb_redo.changes(twin, bytes(trial.raw), offset, VALUE, NEW)
    forged = bytearray(trial.raw)
    for at, mask in changes:
        for i, flip in enumerate(mask):
            forged[at + i] ^= flip
    return changes, forged


@pytest.mark.parametrize("wraps", [False, True])  # True: the trial's area wraps inside the value
def test_the_encrypted_trials_value_is_forged_at_the_twins_place_with_its_crc(wraps: bool) -> None:
    size, first_lsn = innodb_redo.START + 1024, 20000  # the trial's LSNs are not the twin's
    twin = bytes(_log([_checkpoint_mtr(12288), [UNDO], ROW], size=size).raw)

    def trial(checkpoint: int) -> _Built:
        lsn = first_lsn + checkpoint
        return _log([_checkpoint_mtr(lsn), [_write((0, 5), b"noise")], [UNDO], ROW], encrypted=True, size=size,
                    first_lsn=first_lsn, checkpoint_lsn=lsn)

    value_at = _forged(twin, trial(0))[0][0][0] - innodb_redo.START  # where the value is in an unwrapped trial
    built = trial(1024 - 20 - value_at if wraps else 0)  # wrapped: its first 20 bytes before the area's end
    changes, forged = _forged(twin, built)
    assert len(changes) == (3 if wraps else 2)  # the value (in two pieces when wrapped), then its mtr's CRC
    assert len(innodb_redo.mtrs(innodb_redo.parse(bytes(forged)))) == 4  # every mtr still replays: its CRC followed
    decrypted = bytes(byte ^ built.stream.get(at, 0) for at, byte in enumerate(forged))
    assert b"".join(decrypted[at:at + len(mask)] for at, mask in changes[:-1]) == NEW
    assert VALUE not in decrypted.replace(UNDO, b"")  # the undo log's copy left as it was


def test_the_trials_mtr_must_be_the_one_of_the_twins_shape() -> None:
    twin = bytes(_log([_checkpoint_mtr(12288), ROW]).raw)
    offset = innodb_redo.value_in(twin, VALUE)
    assert offset is not None
    trial = bytes(_log([_checkpoint_mtr(12288), ROW, ROW], encrypted=True).raw)
    with pytest.raises(ValueError, match="2 mini-transactions"):
        innodb_redo.changes(twin, trial, offset, VALUE, NEW)
    with pytest.raises(ValueError, match="not inside one record"):
        innodb_redo.changes(twin, trial, innodb_redo.START + 3, VALUE, NEW)
