"""InnoDB's redo log as MariaDB 10.11 writes it (one `ib_logfile0`), as the strength workload
forges a committed value in it (MariaDB's storage/innobase/log/log0recv.cc `recv_sys_t::parse_tail`,
log0crypt.cc `mtr_t::encrypt` and `log_decrypt_mtr`, include/log0log.h, mtr0log.h; the layout
checked on MariaDB 10.11.19's files).

The file: a 12 KiB header — the format (`Phys`, FORMAT_10_8; encrypted, FORMAT_ENC_11: the UTF-8
of U+1F5DD, then at 48 the key id, key version, a random message and nonce), the LSN of the first
byte after the header (`first_lsn`, at 8), two checkpoint blocks (at 4096 and 8192: the checkpoint's
LSN, the end LSN, a CRC-32C of the block's first 60 bytes at 60) — and a circular area of
mini-transactions (mtrs) from offset 12288 on: LSN `lsn` is at 12288 + (lsn - first_lsn) modulo the
area's size. An mtr is its records, a termination marker (one byte, 0 or 1: the sequence bit, which
flips each time the area wraps), in an encrypted log an 8-byte nonce, then a CRC-32C (big-endian)
of the records and the nonce: unkeyed, anyone holding the file can recompute it.

A record: a first byte (a flag in its top bit, the type in the next three, its length in the low
four, 0 for a varint length after it), then its content: a page id (two varints: tablespace, page)
unless it is of the page before (`same_page`), then its body (a WRITE's: an offset varint, then the
bytes it writes into the page). Encrypted (FORMAT_ENC_11), each record's first byte and length are
left plain and everything else of the mtr — page ids and bodies — is one AES-CTR stream (its IV the
nonce and the first record's type and length): the ciphertext of a content byte is that byte XOR
the key stream at its place among the mtr's content bytes. An unencrypted twin's mtr with the same
record types and lengths puts a known byte at the same place, so XORing the difference of two
plaintexts there changes the trial's, without the key. Crash recovery reads the mtrs from the newer
checkpoint's LSN on, up to the first whose marker is not the area's current sequence bit or whose
CRC is wrong (`mtrs`): only those replay.
"""

from __future__ import annotations

from dataclasses import dataclass

from tdebench.engines.page_checksums import crc32c

START = 12288  # log_t::START_OFFSET: the circular area's first byte
PLAIN, ENCRYPTED = b"Phys", "\U0001F5DD".encode()  # the header's format: FORMAT_10_8, FORMAT_ENC_11
_FIRST_LSN_AT = 8
_CHECKPOINTS = (4096, 8192)
_CHECKPOINT_CRC_AT = 60
_NONCE_BYTES = 8
_CRC_BYTES = 4
_FLAG, _TYPE, _LENGTH = 0x80, 0x70, 0x0F
WRITE = 0x30  # a page record that writes its body's bytes into the page
_MTR_MAX = 1 << 20  # mtr_t's largest: past it the bytes are not an mtr


def varint_bytes(first: int) -> int:
    """How many bytes the varint starting with `first` takes (mtr0log.h: 1 to 5)."""
    count = 1
    while count < 5 and first & (0x80 >> (count - 1)):
        count += 1
    return count


_VARINT_BASE = (0, 0x80, 0x4080, 0x204080, 0x10204080)  # what each longer form adds


def varint(data: bytes) -> int:
    """The value of the varint `data` (its whole length, `varint_bytes` of its first byte)."""
    count = len(data)
    bits = 32 if count == 5 else 7 * count
    return (int.from_bytes(data, "big") & ((1 << bits) - 1)) + _VARINT_BASE[count - 1]


@dataclass(frozen=True)
class Record:
    """One record of an mtr: its LSN, its first byte and length as stored (never encrypted), where
    its content begins and ends (LSNs), and whether it is of a page (else a file-level record:
    FILE_CHECKPOINT, FILE_MODIFY, …)."""

    lsn: int
    header: bytes
    content: int
    end: int
    of_page: bool

    @property
    def writes(self) -> bool:
        return self.of_page and self.header[0] & _TYPE == WRITE


@dataclass(frozen=True)
class Mtr:
    """One mini-transaction recovery would read: its records, its marker's LSN (what its CRC covers:
    the bytes before, and the nonce after in an encrypted log) and its CRC's LSN."""

    lsn: int
    records: tuple[Record, ...]
    marker: int
    crc: int

    @property
    def shape(self) -> tuple[bytes, ...]:
        """Its records' types and lengths: what an unencrypted twin's mtr shares with the trial's."""
        return tuple(record.header for record in self.records)


@dataclass(frozen=True)
class Log:
    """An ib_logfile0 as bytes, read by LSN."""

    raw: bytes
    first_lsn: int
    encrypted: bool

    @property
    def capacity(self) -> int:
        return len(self.raw) - START

    def offset(self, lsn: int) -> int:
        return START + (lsn - self.first_lsn) % self.capacity

    def read(self, lsn: int, length: int) -> bytes:
        """`length` bytes from `lsn` on, across the area's end."""
        at = self.offset(lsn)
        part = self.raw[at:at + length]
        return part + self.raw[START:START + length - len(part)]

    def pieces(self, lsn: int, mask: bytes) -> list[tuple[int, bytes]]:
        """`mask` placed at `lsn`, as (file offset, mask) pairs: cut in two where the area wraps."""
        at = self.offset(lsn)
        first = min(len(mask), len(self.raw) - at)
        return [(at, mask[:first])] + ([(START, mask[first:])] if len(mask) > first else [])

    def sequence_bit(self, lsn: int) -> int:
        return 0 if (lsn - self.first_lsn) // self.capacity & 1 else 1


def parse(raw: bytes) -> Log:
    """The log's header; ValueError where the file is not a MariaDB 10.8+ redo log."""
    if len(raw) <= START or raw[:4] not in (PLAIN, ENCRYPTED):
        raise ValueError("not a redo log of MariaDB 10.8 or later (ib_logfile0): unknown format")
    return Log(raw, int.from_bytes(raw[_FIRST_LSN_AT:_FIRST_LSN_AT + 8], "big"), raw[:4] == ENCRYPTED)


def checkpoint(log: Log) -> int:
    """The LSN recovery starts at: the newer of the two checkpoints whose CRC holds."""
    found = []
    for at in _CHECKPOINTS:
        block = log.raw[at:at + _CHECKPOINT_CRC_AT + _CRC_BYTES]
        if crc32c(block[:_CHECKPOINT_CRC_AT]) == int.from_bytes(block[_CHECKPOINT_CRC_AT:], "big"):
            found.append(int.from_bytes(block[:8], "big"))
    if not found:
        raise ValueError("the redo log has no valid checkpoint")
    return max(found)


def _record(log: Log, lsn: int, of_page: bool) -> Record:
    """The record at `lsn`: its first byte, its varint length where the low four bits are 0."""
    first = log.read(lsn, 1)[0]
    content = lsn + 1
    length = first & _LENGTH
    if not length:
        size = varint_bytes(log.read(content, 1)[0])
        length = varint(log.read(content, size)) + 15 - size
        content += size
    return Record(lsn, log.read(lsn, content - lsn), content, content + length, of_page)


def _mtr(log: Log, lsn: int) -> Mtr | None:
    """The mtr at `lsn` if recovery would replay it: its marker the sequence bit, its CRC right.
    A record with the top bit set is of the page before once a page record has come, else a
    file-level one (`got_page_op` in `recv_sys_t::parse_tail`)."""
    records: list[Record] = []
    at, page_op = lsn, False
    while (first := log.read(at, 1)[0]) > 1:
        same_page = bool(first & _FLAG) and page_op
        if not same_page:
            page_op = not first & _FLAG
        record = _record(log, at, page_op)
        if record.end - lsn > _MTR_MAX:
            return None
        records.append(record)
        at = record.end
    if not records or first != log.sequence_bit(at):
        return None
    mtr = Mtr(lsn, tuple(records), at, at + 1 + (_NONCE_BYTES if log.encrypted else 0))
    if crc32c(_covered(log, mtr)) != int.from_bytes(log.read(mtr.crc, _CRC_BYTES), "big"):
        return None
    return mtr


def _covered(log: Log, mtr: Mtr) -> bytes:
    """What an mtr's CRC covers: its records, and in an encrypted log the nonce after the marker."""
    return log.read(mtr.lsn, mtr.marker - mtr.lsn) + log.read(mtr.marker + 1, mtr.crc - mtr.marker - 1)


def mtrs(log: Log) -> list[Mtr]:
    """Every mtr crash recovery would read, in order: from the checkpoint to the log's end."""
    found: list[Mtr] = []
    start = lsn = checkpoint(log)
    while (mtr := _mtr(log, lsn)) is not None and mtr.crc + _CRC_BYTES - start <= log.capacity:
        found.append(mtr)
        lsn = mtr.crc + _CRC_BYTES
    return found


def _writes(log: Log) -> list[tuple[Mtr, int, Record]]:
    """Every WRITE record among the mtrs recovery would read: with its mtr and its index there."""
    return [(mtr, index, record) for mtr in mtrs(log) for index, record in enumerate(mtr.records) if record.writes]


def value_in(raw: bytes, value: bytes) -> int | None:
    """The file offset of the one copy of `value` that replaying the unencrypted log `raw` writes
    into a page: in a WRITE record recovery would read (InnoDB's undo log holds a changed row's old
    value in records of their own, and the area before the checkpoint older copies, never replayed);
    None where there is no such copy, or more than one."""
    log = parse(raw)
    hits = [record.content + at for _, _, record in _writes(log)
            if (at := log.read(record.content, record.end - record.content).find(value)) >= 0]
    return log.offset(hits[0]) if len(hits) == 1 else None


def changes(twin: bytes, trial: bytes, offset: int, old: bytes, new: bytes) -> list[tuple[int, bytes]]:
    """The (file offset, XOR mask) pairs that turn `old` (at file `offset` of the unencrypted `twin`
    log) into `new` in the `trial` log, encrypted or not, and its mtr's CRC with it: the twin's WRITE
    record holding the value, the trial's one mtr of the same shape (the types and lengths of its
    records), the value at the same place of that mtr. ValueError where the twin's record or the
    trial's mtr is not there once."""
    plain, log = parse(twin), parse(trial)
    held = [(mtr, index, offset - plain.offset(record.content)) for mtr, index, record in _writes(plain)
            if 0 <= offset - plain.offset(record.content) <= record.end - record.content - len(old)]
    if len(held) != 1:
        raise ValueError("the value is not inside one record the twin's log replays")
    twin_mtr, index, within = held[0]
    alike = [mtr for mtr in mtrs(log) if mtr.shape == twin_mtr.shape]
    if len(alike) != 1:
        raise ValueError(f"the trial's log replays {len(alike)} mini-transactions of the shape of the twin's that "
                         f"holds the value, not one")
    mtr = alike[0]
    at = mtr.records[index].content + within - mtr.lsn  # in what the CRC covers
    mask = bytes(a ^ b for a, b in zip(old, new, strict=True))
    covered = bytearray(_covered(log, mtr))
    before = crc32c(bytes(covered))
    covered[at:at + len(mask)] = bytes(a ^ b for a, b in zip(covered[at:at + len(mask)], mask, strict=True))
    crc = (before ^ crc32c(bytes(covered))).to_bytes(_CRC_BYTES, "big")
    return [*log.pieces(mtr.lsn + at, mask), *log.pieces(mtr.crc, crc)]
