"""Unkeyed page checksums an engine checks on reading, recomputed as anyone holding the file can
(`PageLayout.recompute`): what the strength workload's forgery applies after changing a value, so
that what is tested is the encryption, not a checksum whose formula is public.

- InnoDB's `full_crc32` (MariaDB's default since 10.5): the page's last 4 bytes are the CRC-32C
  (big-endian) of every byte before them, computed over the page as written, encrypted or not
  (as measured on MariaDB 10.11: every page of an AES-CTR tablespace carries the CRC-32C of its
  ciphertext; MariaDB's storage/innobase/buf/buf0buf.cc, `buf_page_is_corrupted`).
"""

from __future__ import annotations

_CASTAGNOLI = 0x82F63B78  # CRC-32C's polynomial, reflected


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
