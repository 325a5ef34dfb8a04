"""The physical limit: how fast this machine encrypts, before any database is involved.

An engine's encryption overhead can only be judged against what the cipher itself costs
here: if AES-256-GCM runs at 4 GiB/s, a 30% slowdown of a query that reads 100 MiB/s is not
the cipher. Each cipher encrypts the same random buffer again and again for a fixed time, at
a database page size (where per-call setup dominates) and at bulk size (where the cipher
does). Every chunk gets a fresh nonce/IV from a counter, as an engine gives each page its
own. Keys are random per measurement and never leave this module.

At page size each figure includes the Python call and context setup (a few microseconds),
so it is a lower bound of what an engine's C code reaches, and CTR/CBC (a new context per
page) pay more of it than the one-shot AEAD calls.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

import cryptography
from cryptography.hazmat.backends.openssl import backend
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from tdebench.store import CipherSpeed

CHUNK_SIZES = (4096, 1 << 20)
MIB = 1024 * 1024

Encrypt = Callable[[bytes, int], bytes]  # (plaintext, chunk number) -> ciphertext


def _aead(factory: Callable[[bytes], AESGCM | ChaCha20Poly1305], key_bytes: int) -> Encrypt:
    aead = factory(os.urandom(key_bytes))

    def encrypt(data: bytes, n: int) -> bytes:
        return aead.encrypt(n.to_bytes(12, "big"), data, None)

    return encrypt


def _block(mode: Callable[[bytes], modes.Mode], key_bytes: int) -> Encrypt:
    aes = algorithms.AES(os.urandom(key_bytes))

    def encrypt(data: bytes, n: int) -> bytes:
        encryptor = Cipher(aes, mode(n.to_bytes(16, "big"))).encryptor()
        return encryptor.update(data) + encryptor.finalize()

    return encrypt


CIPHERS: dict[str, Callable[[], Encrypt]] = {
    "aes-128-gcm": lambda: _aead(AESGCM, 16),
    "aes-256-gcm": lambda: _aead(AESGCM, 32),
    "aes-128-ctr": lambda: _block(modes.CTR, 16),
    "aes-256-ctr": lambda: _block(modes.CTR, 32),
    "aes-128-cbc": lambda: _block(modes.CBC, 16),
    "aes-256-cbc": lambda: _block(modes.CBC, 32),
    "chacha20-poly1305": lambda: _aead(ChaCha20Poly1305, 32),
}


def library() -> str:
    """e.g. "cryptography 44.0.0 (OpenSSL 3.0.15 3 Sep 2024)"."""
    return f"cryptography {cryptography.__version__} ({backend.openssl_version_text()})"


def _speed(encrypt: Encrypt, chunk_bytes: int, seconds: float) -> float:
    """MiB/s of `encrypt` on a random chunk, repeated until `seconds` have passed."""
    data = os.urandom(chunk_bytes)
    encrypt(data, 0)  # warm-up: first-call setup is not throughput
    budget = int(seconds * 1e9)
    calls = 0
    start = time.perf_counter_ns()
    while True:
        calls += 1
        encrypt(data, calls)
        elapsed = time.perf_counter_ns() - start
        if elapsed >= budget:
            return calls * chunk_bytes / (elapsed / 1e9) / MIB


def measure_ciphers(seconds: float = 0.2, chunk_sizes: Sequence[int] = CHUNK_SIZES) -> list[CipherSpeed]:
    """Raw throughput of every cipher at every chunk size, `seconds` each."""
    lib = library()
    return [CipherSpeed(cipher=name, chunk_bytes=size, mib_per_s=round(_speed(make(), size, seconds), 1),
                        library=lib)
            for name, make in CIPHERS.items() for size in chunk_sizes]
