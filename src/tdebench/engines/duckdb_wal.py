"""DuckDB's write-ahead log, as the strength workload forges a committed value in it (DuckDB 1.5's
src/storage/write_ahead_log.cpp): a header — a BinarySerializer object of field ids (u16) and
LEB128 values, the database identifier a list of 16 of them, ended by 0xFFFF, not checksummed —
then one entry per record: its payload's size (u64), then, plain, the payload's checksum (u64,
the block checksum's formula: page_checksums.duckdb_checksum) and the payload; encrypted
(`FlushEncrypted`), a nonce, the checksum and the payload encrypted together, and the tag (GCM
only). An encrypted log's entries are longer than an unencrypted twin's by the nonce and tag, so a
value's offset is found by structure: the twin's entry holding it and the value's place in its
payload, the trial's entry of the same index (the sizes must agree), and the checksum changed by
XOR beside the value, where it lies encrypted under CTR as in plaintext."""

from __future__ import annotations

from tdebench.engines.page_checksums import duckdb_checksum_change

_END = 0xFFFF  # a serialized object's end
_LIST_FIELD = 102  # the header's db_identifier: a count, then that many values
_SIZE_BYTES = _CHECKSUM_BYTES = _WORD_BYTES = 8


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = raw[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, at
        shift += 7


def header_bytes(wal: bytes) -> int:
    """How many bytes the log's header takes (its values are varints: not the same in every log)."""
    at = 0
    while True:
        field = int.from_bytes(wal[at:at + 2], "little")
        at += 2
        if field == _END:
            return at
        value, at = _varint(wal, at)
        if field == _LIST_FIELD:
            for _ in range(value):
                _, at = _varint(wal, at)


def entries(wal: bytes, overhead: int) -> list[tuple[int, int]]:
    """(start, payload size) of every entry, each `overhead` bytes longer than a plain one (a nonce
    and a tag); ValueError where they do not end with the file."""
    at, found = header_bytes(wal), []
    while at + _SIZE_BYTES <= len(wal):
        size = int.from_bytes(wal[at:at + _SIZE_BYTES], "little")
        found.append((at, size))
        at += _SIZE_BYTES + _CHECKSUM_BYTES + size + overhead
    if at != len(wal) or not found:
        raise ValueError("the log's entries do not end where the file does")
    return found


def changes(twin: bytes, trial: bytes, offset: int, old: bytes, new: bytes, tag_bytes: int) -> list[tuple[int, bytes]]:
    """The (offset, XOR mask) pairs that turn `old` (at `offset` in the unencrypted `twin` log)
    into `new` in the `trial` log, whose entries carry a nonce and `tag_bytes` of tag more: the
    value's and its entry checksum's. ValueError where the two logs' entries differ."""
    plain = entries(twin, 0)
    hits = [(index, start, size) for index, (start, size) in enumerate(plain)
            if start + 16 <= offset and offset + len(old) <= start + 16 + size]
    if len(hits) != 1:
        raise ValueError("the value is not inside one entry of the twin's log")
    index, start, size = hits[0]
    extra = len(trial) - header_bytes(trial) - sum(16 + s for _, s in plain)
    if extra < 0 or extra % len(plain):
        raise ValueError("the trial's log is not the twin's entries with a nonce and tag each")
    overhead = extra // len(plain)
    if [s for _, s in entries(trial, overhead)] != [s for _, s in plain]:
        raise ValueError("the trial's log holds other entries than the twin's")
    checksum_at = entries(trial, overhead)[index][0] + _SIZE_BYTES + overhead - tag_bytes
    within = offset - (start + 16)
    low, high = within // _WORD_BYTES * _WORD_BYTES, -(-(within + len(old)) // _WORD_BYTES) * _WORD_BYTES
    if high > size // _WORD_BYTES * _WORD_BYTES:
        raise ValueError("the value reaches the entry's last partial word, which the checksum hashes apart")
    before = twin[start + 16 + low:start + 16 + high]
    after = before[:within - low] + new + before[within - low + len(new):]
    mask = bytes(a ^ b for a, b in zip(old, new, strict=True))
    return [(checksum_at + _CHECKSUM_BYTES + within, mask), (checksum_at, duckdb_checksum_change(before, after))]
