"""Unkeyed page checksums an engine checks on reading, recomputed as anyone holding the file can
(`PageLayout.recompute`): what the strength workload's forgery applies after changing a value, so
that what is tested is the encryption, not a checksum whose formula is public.

- InnoDB's `full_crc32` (MariaDB's default since 10.5): the page's last 4 bytes are the CRC-32C
  (big-endian) of every byte before them, computed over the page as written, encrypted or not
  (as measured on MariaDB 10.11: every page of an AES-CTR tablespace carries the CRC-32C of its
  ciphertext; MariaDB's storage/innobase/buf/buf0buf.cc, `buf_page_is_corrupted`).
- DuckDB's block checksum (DuckDB 1.5's src/common/checksum.cpp, `Checksum`): 5381 XORed with
  every 8-byte word of the block's data (little-endian) times 0xbf58476d1ce4e5b9 (mod 2^64),
  stored in the 8 bytes before the data. Encrypted, it is computed of the plaintext and encrypted
  with the data (src/storage/single_file_block_manager.cpp, `ChecksumAndWrite`;
  src/common/encryption_functions.cpp, `EncryptBlock`: "encrypt the data including the
  checksum"): under CTR, its change can be XORed into its ciphertext as the data's can
  (`duckdb_checksum_change`); under GCM the tag refuses it.
- SQLite's WAL frame checksums (sqlite.org/fileformat2.html, "Checksum Algorithm"): each frame's
  two 32-bit sums run over its header's first 8 bytes and its page, seeded with the previous
  frame's (the first with the WAL header's), words big-endian when the magic's low bit is set;
  recovery stops at the first frame whose sums differ, dropping it and every frame after.
  SQLite3MC encrypts the page before SQLite sums it (its `sqlite3mcPagerCodec`, called by the WAL
  module), so the sums are of the ciphertext: recomputed over the whole log
  (`sqlite_wal_checksums`).
"""

from __future__ import annotations

import struct

_CASTAGNOLI = 0x82F63B78  # CRC-32C's polynomial, reflected
_DUCKDB_MULTIPLIER = 0xBF58476D1CE4E5B9
_WORD_BYTES = 8


def _table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CASTAGNOLI if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as SSE4.2's crc32 instruction and InnoDB compute it."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def innodb_full_crc32(page: bytes) -> bytes:
    """`page` with its full_crc32 trailer recomputed."""
    return page[:-4] + crc32c(page[:-4]).to_bytes(4, "big")


def _duckdb_words(data: bytes) -> int:
    """The XOR of DuckDB's hash of each 8-byte word of `data` (a whole number of words)."""
    result = 0
    for start in range(0, len(data), _WORD_BYTES):
        word = int.from_bytes(data[start:start + _WORD_BYTES], "little")
        result ^= (word * _DUCKDB_MULTIPLIER) & 0xFFFFFFFFFFFFFFFF
    return result


def duckdb_checksum(data: bytes) -> bytes:
    """DuckDB's checksum of a block's data (a whole number of words), as stored: 8 bytes, little-endian."""
    return (5381 ^ _duckdb_words(data)).to_bytes(_WORD_BYTES, "little")


def duckdb_checksum_change(before: bytes, after: bytes) -> bytes:
    """What to XOR into a stored DuckDB checksum when the words `before` of its data become `after`
    (the same 8-byte-aligned span): every other word's hash cancels out, so only the changed
    words' plaintext must be known."""
    if len(before) != len(after) or len(before) % _WORD_BYTES:
        raise ValueError("the span must be whole 8-byte words, the same before and after")
    return (_duckdb_words(before) ^ _duckdb_words(after)).to_bytes(_WORD_BYTES, "little")


# a -wal file's header, and each frame's before its page
SQLITE_WAL_HEADER_BYTES, SQLITE_FRAME_HEADER_BYTES = 32, 24
_MASK32 = 0xFFFFFFFF


def _wal_sums(data: bytes, big_endian: bool, seed: tuple[int, int]) -> tuple[int, int]:
    s1, s2 = seed
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    for first, second in zip(words[::2], words[1::2]):
        s1 = (s1 + first + s2) & _MASK32
        s2 = (s2 + second + s1) & _MASK32
    return s1, s2


def sqlite_wal_checksums(wal: bytes) -> bytes:
    """`wal` (a whole SQLite WAL file) with the sums of its header and of every frame of its
    current generation (the header's salts) recomputed, in order: what a change to a frame's page
    needs for recovery to keep that frame and the ones after it."""
    if len(wal) < SQLITE_WAL_HEADER_BYTES:
        return wal
    out = bytearray(wal)
    big_endian = bool(struct.unpack(">I", wal[:4])[0] & 1)
    page_bytes = struct.unpack(">I", wal[8:12])[0]
    sums = _wal_sums(wal[:24], big_endian, (0, 0))
    out[24:32] = struct.pack(">2I", *sums)
    salts = wal[16:24]
    at = SQLITE_WAL_HEADER_BYTES
    while at + SQLITE_FRAME_HEADER_BYTES + page_bytes <= len(wal) and wal[at + 8:at + 16] == salts:
        sums = _wal_sums(wal[at:at + 8], big_endian, sums)
        page = at + SQLITE_FRAME_HEADER_BYTES
        sums = _wal_sums(wal[page:page + page_bytes], big_endian, sums)
        out[at + 16:at + 24] = struct.pack(">2I", *sums)
        at += SQLITE_FRAME_HEADER_BYTES + page_bytes
    return bytes(out)
