"""PostgreSQL's write-ahead log, as the strength workload forges a committed value in one of its
segments (PostgreSQL 15's src/include/access/xlog_internal.h and xlogrecord.h,
src/backend/access/transam/xlogreader.c).

A segment (16 MiB by default) is XLOG pages (8 KiB), each starting with a header: on the
segment's first page the long one (40 bytes: magic, flags, timeline, the page's own address
`xlp_pageaddr`, `xlp_rem_len`, then the system identifier, the segment's and the page's size),
on the others the short one (24 bytes, its first five fields). Without the headers the pages'
bytes are one stream of records, each 8-byte aligned, any of them continued across page
boundaries (its header too): a 24-byte XLogRecord (`xl_tot_len`, `xl_xid`, `xl_prev` — the
previous record's address —, `xl_info`, `xl_rmid`, 2 bytes of padding, `xl_crc`), then its data
(block references, full-page images, the record's main data). A page continuing a record says so
(`XLP_FIRST_IS_CONTRECORD`) and how many of its bytes remain (`xlp_rem_len`).

`xl_crc` is an unkeyed CRC-32C (the one InnoDB's pages use) of the record's bytes after its
header, then of the header up to `xl_crc` (`ValidXLogRecord`): anyone holding the segment can
recompute it. Recovery reads records in order from its checkpoint's redo point and stops at the
first that fails a check: a page whose address is not its own (a recycled segment keeps the older
pages it held), a record whose `xl_prev` is not the record before it, or a wrong CRC. The records
here are those recovery would read (`_records`): recycled pages and what follows the log's end are
left as they are, never given a valid CRC.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from tdebench.engines.page_checksums import crc32c

_PAGE_HEADER = struct.Struct("<HHIQI")  # xlp_magic, xlp_info, xlp_tli, xlp_pageaddr, xlp_rem_len
_LONG_HEADER = struct.Struct("<QII")  # after the short one: xlp_sysid, xlp_seg_size, xlp_xlog_blcksz
SHORT_HEADER_BYTES, LONG_HEADER_BYTES = 24, 40  # both MAXALIGNed
_FIRST_IS_CONTRECORD, _LONG = 0x0001, 0x0002
_RECORD = struct.Struct("<IIQBBxxI")  # xl_tot_len, xl_xid, xl_prev, xl_info, xl_rmid, padding, xl_crc
RECORD_HEADER_BYTES = _RECORD.size  # 24
_CRC_AT = 20  # offsetof(XLogRecord, xl_crc)
_ALIGN = 8  # MAXALIGN
_RM_XLOG, _XLOG_SWITCH = 0, 0x40  # a switch record: the rest of the segment is unused


def _aligned(position: int) -> int:
    return -(-position // _ALIGN) * _ALIGN


@dataclass(frozen=True)
class _Stream:
    """A segment's valid pages without their headers (`data`), from its first page on to the
    first page that is not this segment's (a recycled one, or never written)."""

    data: bytes
    start_lsn: int  # the segment's first byte's address
    page_bytes: int
    first_rem_len: int  # bytes of a record begun in the segment before (0: none)

    def offset(self, position: int) -> int:
        """The file offset of the stream's byte `position`."""
        first = self.page_bytes - LONG_HEADER_BYTES
        if position < first:
            return LONG_HEADER_BYTES + position
        page, within = divmod(position - first, self.page_bytes - SHORT_HEADER_BYTES)
        return (page + 1) * self.page_bytes + SHORT_HEADER_BYTES + within

    def lsn(self, position: int) -> int:
        return self.start_lsn + self.offset(position)

    def runs(self, position: int, length: int) -> list[tuple[int, int]]:
        """The (file offset, length) pieces of the stream's bytes from `position` on: one, or
        more where page headers cut them."""
        pieces: list[tuple[int, int]] = []
        for at in range(position, position + length):
            offset = self.offset(at)
            if pieces and pieces[-1][0] + pieces[-1][1] == offset:
                pieces[-1] = (pieces[-1][0], pieces[-1][1] + 1)
            else:
                pieces.append((offset, 1))
        return pieces


def _stream(segment: bytes) -> _Stream | None:
    """The segment's records as one stream; None where its first page has no valid long header."""
    if len(segment) < LONG_HEADER_BYTES:
        return None
    magic, info, _, start, rem_len = _PAGE_HEADER.unpack_from(segment)
    _, segment_bytes, page_bytes = _LONG_HEADER.unpack_from(segment, SHORT_HEADER_BYTES)
    if not info & _LONG or page_bytes < LONG_HEADER_BYTES or page_bytes % _ALIGN or start % max(1, segment_bytes):
        return None
    parts = [segment[LONG_HEADER_BYTES:page_bytes]]
    for page in range(page_bytes, min(len(segment), segment_bytes) - page_bytes + 1, page_bytes):
        other_magic, other_info, _, address, _ = _PAGE_HEADER.unpack_from(segment, page)
        if other_magic != magic or address != start + page or other_info & _LONG:
            break
        parts.append(segment[page + SHORT_HEADER_BYTES:page + page_bytes])
    return _Stream(b"".join(parts), start, page_bytes, rem_len if info & _FIRST_IS_CONTRECORD else 0)


def _records(stream: _Stream) -> list[tuple[int, int]]:
    """(stream position, length) of every whole record recovery would read in the segment: from
    the first that begins in it, each chained to the one before by `xl_prev`, up to the log's end
    (a record of length 0), a switch record, or one that goes on in the next segment."""
    found: list[tuple[int, int]] = []
    position = _aligned(stream.first_rem_len)
    while position + RECORD_HEADER_BYTES <= len(stream.data):
        length, _, previous, info, rmid, _ = _RECORD.unpack_from(stream.data, position)
        if length < RECORD_HEADER_BYTES or position + length > len(stream.data):
            break
        if found and previous != stream.lsn(found[-1][0]):
            break
        found.append((position, length))
        if rmid == _RM_XLOG and info & 0xF0 == _XLOG_SWITCH:
            break
        position = _aligned(position + length)
    return found


def record_crc(record: bytes) -> int:
    """A record's `xl_crc`: CRC-32C of its data after the header, then of the header up to xl_crc."""
    return crc32c(record[RECORD_HEADER_BYTES:] + record[:_CRC_AT])


def recompute(segment: bytes) -> bytes:
    """`segment` (a whole pg_wal segment file) with the CRC of every record recovery would read in
    it recomputed, as anyone can: what a change to a record's bytes needs for recovery to replay
    it, and every record after it."""
    stream = _stream(segment)
    if stream is None:
        return segment
    out = bytearray(segment)
    for position, length in _records(stream):
        crc = record_crc(stream.data[position:position + length]).to_bytes(4, "little")
        for index, byte in enumerate(crc):
            out[stream.offset(position + _CRC_AT + index)] = byte
    return bytes(out)


def changes(segment: bytes, needle: bytes, at: int, mask: bytes) -> list[tuple[int, bytes]]:
    """The (file offset, XOR mask) pairs that XOR `mask` into every copy of `needle`, `at` bytes
    into it, among the records recovery would read in `segment` (a value's tuple is in a record's
    data, or in the full-page image of its page, or both; a page header may cut it in two); their
    CRCs are left to `recompute`. ValueError where no record holds `needle`."""
    stream = _stream(segment)
    found = [] if stream is None else _records(stream)
    if stream is None or not found:
        raise ValueError("the log's segment holds no record recovery would read")
    first, (last, length) = found[0][0], found[-1]
    data = stream.data[:last + length]
    result: list[tuple[int, bytes]] = []
    hit = data.find(needle, first)
    while hit >= 0:
        done = 0
        for offset, size in stream.runs(hit + at, len(mask)):
            result.append((offset, mask[done:done + size]))
            done += size
        hit = data.find(needle, hit + 1)
    if not result:
        raise ValueError("no record of the log's segment holds the value")
    return result
