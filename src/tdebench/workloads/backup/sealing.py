"""Backup encryption: a finished backup sealed into one file with a key of its own, and opened again.

None of the engines here encrypts its backups itself (SQL Server's `BACKUP … WITH ENCRYPTION`,
which Aydın (2022) measured, has no counterpart in mariadb-backup, pg_basebackup, pg_dump or
DuckDB's EXPORT), so the backup workload does what a DBA's backup job would do: the artifact,
compressed or not as its method makes it, is packed into a tar stream and encrypted on the way
to one file. The plan key `backup_encryptions` picks the algorithms:

| name      | key      | construction                                                          |
|-----------|----------|-----------------------------------------------------------------------|
| `aes-128` | 128 bits | AES-128-GCM: authenticated encryption, one 96-bit random nonce per file |
| `aes-192` | 192 bits | AES-192-GCM                                                           |
| `aes-256` | 256 bits | AES-256-GCM                                                           |
| `3des`    | 168 bits | 3DES-CBC (three keys, PKCS#7 padding), then HMAC-SHA256 over all of it (encrypt-then-MAC: 3DES has no authenticated mode) |

The sealed file is `MAGIC`, the algorithm's name, the nonce or IV, the ciphertext and the tag
(GCM's 16 bytes, or the HMAC's 32). The header is authenticated with the rest (GCM's associated
data, or inside the HMAC), so a file whose algorithm was changed is refused like one whose
ciphertext was. `open_sealed` writes nothing usable before the tag is checked: the plaintext
goes to a scratch tar that is unpacked only after the whole file authenticated; a wrong key or
a changed byte raises `SealBroken`.

Keys: one `Secret` per backup, from `RunContext.new_key` (random, or derived from the user's key
file like every trial key). The cipher's key (and the MAC's) are expanded from it by HKDF-SHA256
with the algorithm's name as context, so one secret never keys two algorithms. No key is
written anywhere: the sealed file holds none, and the caller keeps the `Secret` in memory.
"""  # noqa: E501 (a Markdown table, read as one)

from __future__ import annotations

import hmac
import os
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import AEADEncryptionContext, Cipher, CipherContext, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tdebench.keys import Secret

NONE = "none"
MAGIC = b"TDEBENCH-SEALED-BACKUP-1\n"
CHUNK_BYTES = 1 << 20  # what is encrypted or decrypted at once (tarfile writes 10 KiB records)
SEALED_NAME = "backup.tar.sealed"


class SealBroken(ValueError):
    """The sealed backup did not authenticate: a wrong key, or a changed or truncated file."""


@dataclass(frozen=True)
class BackupCipher:
    name: str  # as the plan names it
    key_bits: int
    construction: str  # how the file is sealed, as the report states it
    block_bytes: int  # the cipher's block: 16 for AES, 8 for 3DES

    @property
    def key_bytes(self) -> int:
        return 24 if self.name == "3des" else self.key_bits // 8  # 3DES: 3 × 56 bits, held in 24 bytes

    @property
    def authenticated(self) -> bool:
        """An AEAD (GCM); else encrypt-then-MAC with HMAC-SHA256."""
        return self.block_bytes == 16


CIPHERS: dict[str, BackupCipher] = {c.name: c for c in (
    BackupCipher("aes-128", 128, "AES-128-GCM", 16),
    BackupCipher("aes-192", 192, "AES-192-GCM", 16),
    BackupCipher("aes-256", 256, "AES-256-GCM", 16),
    BackupCipher("3des", 168, "3DES-CBC + HMAC-SHA256 (encrypt-then-MAC)", 8),
)}
BACKUP_ENCRYPTIONS = (NONE, *CIPHERS)
"""Every value of the plan key `backup_encryptions`, in the report's order."""

def sealed_test(method: str, encryption: str) -> str:
    """The name a backup's results are recorded under: the method's, or "<method>+<cipher>" for
    a backup sealed by the backup workload's own encryption (`sealing`)."""
    return method if encryption == NONE else f"{method}+{encryption}"


def split_test(test: str) -> tuple[str, str]:
    """(method, backup encryption) of a recorded test name: `sealed_test` undone."""
    method, _, encryption = test.partition("+")
    return method, encryption or NONE


_GCM_NONCE, _GCM_TAG, _MAC_KEY, _MAC_TAG = 12, 16, 32, 32


def _keys(cipher: BackupCipher, secret: Secret) -> tuple[bytes, bytes]:
    """The cipher key and (encrypt-then-MAC only) the MAC key, expanded from one secret."""
    mac_bytes = 0 if cipher.authenticated else _MAC_KEY
    hkdf = HKDF(algorithm=hashes.SHA256(), length=cipher.key_bytes + mac_bytes, salt=b"tdebench-backup-v1",
                info=cipher.name.encode())
    material = hkdf.derive(secret.raw())
    return material[:cipher.key_bytes], material[cipher.key_bytes:]


def _header(cipher: BackupCipher, iv: bytes) -> bytes:
    name = cipher.name.encode()
    return MAGIC + bytes([len(name)]) + name + iv


class _SealingWriter:
    """A write-only file object that encrypts everything written to it into `out`, a chunk at a
    time; `close()` writes the tag. What tarfile writes into when it packs a backup."""

    def __init__(self, cipher: BackupCipher, secret: Secret, out: BinaryIO) -> None:
        key, mac_key = _keys(cipher, secret)
        iv = os.urandom(_GCM_NONCE if cipher.authenticated else cipher.block_bytes)
        header = _header(cipher, iv)
        self._gcm: AEADEncryptionContext | None = None
        self._cbc: CipherContext | None = None
        if cipher.authenticated:
            self._gcm = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
            self._gcm.authenticate_additional_data(header)
        else:
            self._cbc = Cipher(TripleDES(key), modes.CBC(iv)).encryptor()
        self._mac = hmac.new(mac_key, header, "sha256")  # used by encrypt-then-MAC only
        self._padder = padding.PKCS7(64).padder()  # likewise: CBC needs whole blocks
        self._out = out
        self._pending = bytearray()
        out.write(header)

    def write(self, data: bytes) -> int:
        self._pending += data
        if len(self._pending) >= CHUNK_BYTES:
            self._emit(bytes(self._pending))
            self._pending.clear()
        return len(data)

    def _emit(self, plain: bytes) -> None:
        if self._gcm is not None:
            self._out.write(self._gcm.update(plain))
        elif self._cbc is not None:
            sealed = self._cbc.update(self._padder.update(plain))
            self._mac.update(sealed)
            self._out.write(sealed)

    def close(self) -> None:
        self._emit(bytes(self._pending))
        self._pending.clear()
        if self._gcm is not None:
            self._out.write(self._gcm.finalize() + self._gcm.tag)
        elif self._cbc is not None:  # the padding block, then the MAC over everything
            last = self._cbc.update(self._padder.finalize()) + self._cbc.finalize()
            self._mac.update(last)
            self._out.write(last + self._mac.digest())


def seal(contents: Path, cipher: BackupCipher, secret: Secret, target: Path) -> Path:
    """Pack the backup in `contents` (a directory, with its owner and mode: a server's tool may
    read it as the server's user) into a tar stream and encrypt it into `target`/SEALED_NAME,
    created 0600; returns that file."""
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    sealed = target / SEALED_NAME
    with open(os.open(sealed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
        writer = _SealingWriter(cipher, secret, out)
        with tarfile.open(fileobj=writer, mode="w|") as tar:  # type: ignore[call-overload]
            tar.add(contents, arcname=".")  # the directory itself too: its owner and mode come back
        writer.close()
    return sealed


def _read_header(fh: BinaryIO) -> tuple[BackupCipher, bytes, bytes]:
    """The sealed file's cipher, IV or nonce, and the header's bytes as authenticated."""
    magic = fh.read(len(MAGIC))
    if magic != MAGIC:
        raise SealBroken("not a sealed tdebench backup (its first bytes are not the format's)")
    length = fh.read(1)
    name = fh.read(length[0]).decode(errors="replace") if length else ""
    cipher = CIPHERS.get(name)
    if cipher is None:
        raise SealBroken(f"sealed with an unknown algorithm {name!r}; known: {', '.join(CIPHERS)}")
    iv = fh.read(_GCM_NONCE if cipher.authenticated else cipher.block_bytes)
    return cipher, iv, _header(cipher, iv)


def payload_offset(sealed: Path) -> int:
    """Where the ciphertext begins in a sealed file: the length of its header."""
    with sealed.open("rb") as fh:
        return len(_read_header(fh)[2])


def _chunks(fh: BinaryIO, count: int) -> Callable[[], bytes]:
    """Read the next chunk of at most CHUNK_BYTES, never past `count` bytes in all."""
    left = [count]

    def read() -> bytes:
        data = fh.read(min(CHUNK_BYTES, left[0]))
        left[0] -= len(data)
        return data

    return read


def _refused() -> SealBroken:
    return SealBroken("the sealed backup did not authenticate: wrong key or changed file")


def _open_gcm(sealed: BinaryIO, key: bytes, iv: bytes, header: bytes, body: int, out: BinaryIO) -> None:
    """AES-GCM: decrypt into `out` (plaintext a caller must not use before this returns), then
    check the tag, which stands after the `body` bytes of ciphertext."""
    start = sealed.tell()
    sealed.seek(start + body)
    tag = sealed.read(_GCM_TAG)
    sealed.seek(start)
    decryptor = Cipher(algorithms.AES(key), modes.GCM(iv, tag)).decryptor()
    decryptor.authenticate_additional_data(header)
    for chunk in iter(_chunks(sealed, body), b""):
        out.write(decryptor.update(chunk))
    try:
        out.write(decryptor.finalize())
    except InvalidTag:
        raise _refused() from None


def _open_then_mac(sealed: BinaryIO, key: bytes, mac_key: bytes, iv: bytes, header: bytes, body: int,
                   out: BinaryIO) -> None:
    """3DES-CBC + HMAC-SHA256: check the MAC over header and ciphertext first (encrypt-then-MAC:
    nothing is decrypted from a file that does not authenticate), then decrypt into `out`."""
    start = sealed.tell()
    mac = hmac.new(mac_key, header, "sha256")
    for chunk in iter(_chunks(sealed, body), b""):
        mac.update(chunk)
    if not hmac.compare_digest(mac.digest(), sealed.read(_MAC_TAG)):
        raise _refused()
    sealed.seek(start)
    decryptor = Cipher(TripleDES(key), modes.CBC(iv)).decryptor()
    unpadder = padding.PKCS7(64).unpadder()
    for chunk in iter(_chunks(sealed, body), b""):
        out.write(unpadder.update(decryptor.update(chunk)))
    out.write(unpadder.update(decryptor.finalize()) + unpadder.finalize())


def _decrypt(sealed: Path, secret: Secret, out: BinaryIO) -> BackupCipher:
    """Decrypt `sealed` into `out`; raises SealBroken unless it authenticates with `secret`."""
    size = sealed.stat().st_size
    with sealed.open("rb") as fh:
        cipher, iv, header = _read_header(fh)
        body = size - len(header) - (_GCM_TAG if cipher.authenticated else _MAC_TAG)
        if body < 0:
            raise SealBroken("the sealed backup is truncated")
        key, mac_key = _keys(cipher, secret)
        if cipher.authenticated:
            _open_gcm(fh, key, iv, header, body, out)
        else:
            _open_then_mac(fh, key, mac_key, iv, header, body, out)
    return cipher


def open_sealed(sealed: Path, secret: Secret, target: Path) -> Path:
    """Decrypt and unpack the sealed backup into the directory `target` (made here, 0700);
    returns it. Raises SealBroken, leaving neither `target` nor any plaintext, when it does
    not authenticate."""
    target.mkdir(mode=0o700, parents=True)
    scratch = target.with_name(target.name + ".tar")
    try:
        with open(os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            _decrypt(sealed, secret, out)
        with tarfile.open(scratch, mode="r:") as tar:
            tar.extractall(target, filter="tar")  # owners and modes as packed, `target`'s own included
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    finally:
        scratch.unlink(missing_ok=True)
    return target
