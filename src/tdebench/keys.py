"""Encryption keys: random per trial, or derived from the user's key file.

A key is held in a `Secret`, whose repr and str never show the bytes, so a key cannot leak
into logs, results, reports or exception messages by accident. Engines that must pass a
key to a library call `Secret.hex()`; `scrub()` removes it again from any error text.
"""

from __future__ import annotations

import hmac
import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tdebench.errors import InputError

KEY_BYTES = 32
FINGERPRINT_LABEL = b"tdebench key source fingerprint v1"


class KeyFileError(InputError, ValueError):
    """The user's key file is missing, unreadable, too short or readable by others."""


class Secret:
    """Key bytes that refuse to be printed."""

    __slots__ = ("_value",)

    def __init__(self, value: bytes) -> None:
        if len(value) < 16:
            raise ValueError("a key needs at least 16 bytes")
        self._value = bytes(value)

    def hex(self) -> str:
        return self._value.hex()

    def raw(self) -> bytes:
        return self._value

    def derive(self, purpose: str, length: int) -> "Secret":
        """A key of `length` bytes for `purpose` (HKDF-SHA256 of this one): e.g. the raw key an
        engine takes instead of a passphrase (engines/sqlite.py), as long as its cipher's key, so
        no part of this key's own spelling is ever handed out."""
        hkdf = HKDF(algorithm=hashes.SHA256(), length=length, salt=b"tdebench-derive-v1", info=purpose.encode())
        return Secret(hkdf.derive(self._value))

    def scrub(self, text: str) -> str:
        """`text` with every spelling of this key replaced by ***."""
        for spelling in (self._value.hex(), self._value.hex().upper()):
            text = text.replace(spelling, "***")
        return text

    def __repr__(self) -> str:
        return "Secret(***)"

    __str__ = __repr__

    def __reduce__(self):  # never pickled into a worker's or a report's data
        raise TypeError("a Secret cannot be pickled")


class KeySource:
    """Hands out one key per trial.

    Without a key file every trial gets fresh random bytes. With one, keys are derived by
    HKDF-SHA256 from the file's contents and the trial's identity, so a run is repeatable
    with the same file and no key is ever stored.
    """

    def __init__(self, key_file: Path | None = None) -> None:
        self._master = read_key_file(key_file) if key_file is not None else None

    @property
    def derived(self) -> bool:
        return self._master is not None

    def describe(self) -> dict[str, str]:
        """What a run records of its key source, so that a resume can refuse another: the kind,
        and for a key file a fingerprint (HMAC-SHA256 of a fixed label under the file's secret,
        cut to 64 bits) that tells two files apart and reveals nothing of either."""
        if self._master is None:
            return {"kind": "random"}
        fingerprint = hmac.new(self._master, FINGERPRINT_LABEL, "sha256").hexdigest()[:16]
        return {"kind": "key file", "fingerprint": fingerprint}

    def key_for(self, trial_id: str) -> Secret:
        if self._master is None:
            return Secret(os.urandom(KEY_BYTES))
        hkdf = HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=b"tdebench-v1",
                    info=trial_id.encode())
        return Secret(hkdf.derive(self._master))


def read_key_file(path: Path) -> bytes:
    """The secret in `path`, which must be a regular file of 16+ bytes that only its owner can read."""
    try:
        info = path.stat()
    except OSError as exc:
        raise KeyFileError(f"key file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise KeyFileError(f"key file {path}: not a regular file")
    if info.st_mode & 0o077:
        raise KeyFileError(
            f"key file {path}: readable by group or others (mode {stat.S_IMODE(info.st_mode):04o}); "
            f"fix with: chmod 600 {path}")
    data = path.read_bytes().strip()
    if len(data) < 16:
        raise KeyFileError(f"key file {path}: holds {len(data)} bytes; it needs at least 16 "
                           "(e.g. head -c 32 /dev/urandom | base64 > FILE)")
    return data
