"""The physical limit: how fast this machine encrypts, before any database is involved.

An engine's encryption overhead can only be judged against what the cipher itself costs
here: if AES-256-GCM runs at 4 GiB/s, a 30% slowdown of a query that reads 100 MiB/s is not
the cipher. Each cipher encrypts a random page again and again, at every page size an engine
uses (SQLite and gocryptfs 4 KiB, PostgreSQL 8 KiB, InnoDB 16 KiB, DuckDB 256 KiB) and at
1 MiB, the way an engine does it: one context per key, its key schedule done once, only the
nonce/IV changing from page to page, on one core (one thread).

How, per cipher and page size: a short warm-up calibrates how many pages fill one timing
(`seconds` / `REPEATS`); the nonces are made before the clock starts; the pages are encrypted
in a tight loop that reuses one output buffer (`update_into`, `encrypt_into`, libsodium
writing into it); each timing is the CPU time of the measuring thread (as `openssl speed`
measures by default), so the time slices a busy machine gives to other processes do not
count; the figure is the best of `REPEATS` timings, as the CPU's limit is what the fastest
one shows and whatever shares the core or its caches only slows timings down.

What remains of call overhead in the figure: one loop step and one or two calls per page
(the nonce reset and the encryption) plus the library's own per-call work (IV reset, tag),
0.15 µs per page (CBC) to 0.8 µs (ChaCha20-Poly1305) on this project's machine
(`bench/cipher_agreement.py`). A fixed cost per page: at 4 KiB AES-256-CTR reads about half
its 1 MiB figure, from 256 KiB on it vanishes; an engine's C code pays the library's part
too. The figures are therefore lower bounds at small pages, close to the real limit from
16 KiB.

Per cipher:
- AES-CTR: one `CipherContext`, `reset_nonce` per page (OpenSSL re-initialises the IV, as
  an engine calling `EVP_EncryptInit_ex` with a new IV does).
- AES-GCM, ChaCha20-Poly1305: one `AESGCM`/`ChaCha20Poly1305` object, `encrypt_into` per
  page with its own nonce (init, encrypt, tag).
- AES-CBC, 3DES-CBC: one encryptor streamed across pages. CBC chains each page's first block
  to the previous ciphertext block instead of a fresh IV; the XOR is the same work, so the
  figure equals a per-page IV minus the IV reset (`reset_nonce` does not exist for CBC).
- AES-128/192/256, 3DES, Blowfish and CAST5 in CFB: the ciphers of PostgreSQL's column layer
  (pgcrypto's OpenPGP messages are CFB), streamed the same way. A sealed value is a short
  message of its own, with a key derived (S2K) and a session key packet per value, which the
  figure leaves out: it is the cipher's speed, not pgcrypto's.
- RC4: one keystream across pages (RC4 has no nonce; SQLite3MC re-keys it per page, which
  this leaves out, as the record's note says).
- XChaCha20-Poly1305 (gocryptfs -xchacha) and AEGIS: libsodium (bundled with PyNaCl), called
  through PyNaCl's own cffi module with one output buffer, because PyNaCl's public wrappers
  allocate and copy every output (which cut the 4 KiB figure to a half for XChaCha20 and
  to a fifth for AEGIS-256 here).
- Ascon (SQLite3MC's ascon-128): no installed library implements it in C, so it is recorded
  as unavailable, with no number.

Keys are random per measurement and never leave this module.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import cryptography
import nacl
import nacl.bindings  # initialises libsodium (sodium_init) before its functions are called
from cryptography.hazmat.backends.openssl import backend
from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4, CAST5, Blowfish, TripleDES
from cryptography.hazmat.decrepit.ciphers.modes import CFB
from cryptography.hazmat.primitives.ciphers import BlockCipherAlgorithm, Cipher, CipherAlgorithm, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from nacl._sodium import ffi, lib

from tdebench.results import CipherSpeed

PAGE_SIZES = (4096, 8192, 16384, 256 * 1024, 1 << 20)
"""SQLite/gocryptfs, PostgreSQL, InnoDB, DuckDB (its block) and a bulk size."""
REPEATS = 5
MIB = 1024 * 1024

PageLoop = Callable[[bytes, Sequence[bytes]], bytes]
"""Encrypts one page once per nonce, with one context and one output buffer; returns the
last page's ciphertext (and tag), so tests can check that the loop really encrypts."""
Start = Callable[[bytes, int], PageLoop]
"""(key, page size) -> a PageLoop with its context set up under that key."""


@dataclass(frozen=True)
class RawCipher:
    name: str  # as `Encryption.cipher` names an engine's cipher
    key_bytes: int
    nonce_bytes: int  # per page; 0 for the chained and stream ciphers, which take none
    start: Start | None  # None: no installed library implements it
    library: str  # "cryptography", "libsodium" or "" (unavailable)
    note: str = ""


def _ctr(key: bytes, page_bytes: int) -> PageLoop:
    """AES-CTR: one context, `reset_nonce` per page."""
    context = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor()
    out = bytearray(page_bytes + 15)  # update_into wants room for a block more

    def run(page: bytes, nonces: Sequence[bytes]) -> bytes:
        reset, update = context.reset_nonce, context.update_into
        for n in nonces:
            reset(n)
            update(page, out)
        return bytes(out[:page_bytes])

    return run


def _chained(algorithm: Callable[[bytes], CipherAlgorithm],
             mode: Callable[[bytes], modes.ModeWithInitializationVector] | None) -> Start:
    """CBC (a mode, of a block cipher) or a stream cipher (None): one encryptor, page after page."""

    def start(key: bytes, page_bytes: int) -> PageLoop:
        made = algorithm(key)
        iv = mode(bytes(cast(BlockCipherAlgorithm, made).block_size // 8)) if mode else None
        context = Cipher(made, iv).encryptor()
        out = bytearray(page_bytes + 15)

        def run(page: bytes, nonces: Sequence[bytes]) -> bytes:
            update = context.update_into
            for _ in nonces:
                update(page, out)
            return bytes(out[:page_bytes])

        return run

    return start


def _aead(factory: Callable[[bytes], AESGCM | ChaCha20Poly1305]) -> Start:
    """One AEAD object (key schedule once), `encrypt_into` with each page's nonce."""

    def start(key: bytes, page_bytes: int) -> PageLoop:
        aead, out = factory(key), memoryview(bytearray(page_bytes + 16))

        def run(page: bytes, nonces: Sequence[bytes]) -> bytes:
            encrypt = aead.encrypt_into
            for n in nonces:
                encrypt(n, page, None, out)
            return bytes(out)

        return run

    return start


def _sodium(function: str, tag_bytes: int) -> Start:
    """A libsodium AEAD (`crypto_aead_*_encrypt`) writing into one reused buffer."""
    encrypt = getattr(lib, function)

    def start(key: bytes, page_bytes: int) -> PageLoop:
        out, out_len = ffi.new("unsigned char[]", page_bytes + tag_bytes), ffi.new("unsigned long long *")

        def run(page: bytes, nonces: Sequence[bytes]) -> bytes:
            size, null = len(page), ffi.NULL
            for n in nonces:
                encrypt(out, out_len, page, size, null, 0, null, n, key)
            return ffi.buffer(out, out_len[0])[:]

        return run

    return start


_OPENPGP = "OpenPGP CFB as pgcrypto seals a value; one stream across pages"


def _aes(bits: int) -> list[RawCipher]:
    return [RawCipher(f"aes-{bits}-gcm", bits // 8, 12, _aead(AESGCM), "cryptography"),
            RawCipher(f"aes-{bits}-ctr", bits // 8, 16, _ctr, "cryptography"),
            RawCipher(f"aes-{bits}-cbc", bits // 8, 0, _chained(algorithms.AES, modes.CBC), "cryptography",
                      "IV chained across pages"),
            RawCipher(f"aes-{bits}-cfb", bits // 8, 0, _chained(algorithms.AES, CFB), "cryptography", _OPENPGP)]


CIPHERS: tuple[RawCipher, ...] = (
    *_aes(128), *_aes(192), *_aes(256),
    RawCipher("chacha20-poly1305", 32, 12, _aead(ChaCha20Poly1305), "cryptography"),
    RawCipher("xchacha20-poly1305", 32, 24, _sodium("crypto_aead_xchacha20poly1305_ietf_encrypt", 16),
              "libsodium", "gocryptfs uses Go's implementation"),
    RawCipher("aegis-128l", 16, 16, _sodium("crypto_aead_aegis128l_encrypt", 32), "libsodium"),
    RawCipher("aegis-256", 32, 32, _sodium("crypto_aead_aegis256_encrypt", 32), "libsodium"),
    RawCipher("ascon-128", 16, 16, None, "",
              "unavailable: no installed library (OpenSSL, libsodium) implements Ascon"),
    RawCipher("3des-168-cbc", 24, 0, _chained(TripleDES, modes.CBC), "cryptography", "IV chained across pages"),
    RawCipher("3des-168-cfb", 24, 0, _chained(TripleDES, CFB), "cryptography", _OPENPGP),
    RawCipher("blowfish-128-cfb", 16, 0, _chained(Blowfish, CFB), "cryptography", _OPENPGP),
    RawCipher("cast5-128-cfb", 16, 0, _chained(CAST5, CFB), "cryptography", _OPENPGP),
    RawCipher("rc4", 16, 0, _chained(ARC4, None), "cryptography", "one keystream; SQLite3MC re-keys per page"),
)
"""Every cipher an engine's encryption uses, and what the libraries offer beside them."""


def library(name: str = "cryptography") -> str:
    """A RawCipher's library with its version, e.g. "cryptography 48.0.0, OpenSSL 3.5.0" or
    "PyNaCl 1.6.2, libsodium"; "" for none."""
    if name == "cryptography":
        openssl = " ".join(backend.openssl_version_text().split()[:2])
        return f"cryptography {cryptography.__version__}, {openssl}"
    return f"PyNaCl {nacl.__version__}, libsodium" if name == "libsodium" else ""


def _nonces(count: int, size: int) -> list[bytes]:
    return [i.to_bytes(size, "big") for i in range(count)] if size else [b""] * count


def _timed(run: PageLoop, page: bytes, nonces: Sequence[bytes]) -> int:
    """CPU nanoseconds of this thread spent in `run`."""
    start = time.thread_time_ns()
    run(page, nonces)
    return time.thread_time_ns() - start


def page_speed(raw: RawCipher, page_bytes: int, seconds: float, repeats: int = REPEATS) -> float:
    """MiB/s of `raw` encrypting `page_bytes` pages: the best of `repeats` timings of about
    `seconds / repeats` each, every page with its own nonce."""
    assert raw.start is not None, raw.name
    run, page = raw.start(os.urandom(raw.key_bytes), page_bytes), os.urandom(page_bytes)
    run(page, _nonces(1, raw.nonce_bytes))  # warm-up: first-call setup is not throughput
    budget_ns, probe = seconds / repeats * 1e9, 1
    while (elapsed := _timed(run, page, _nonces(probe, raw.nonce_bytes))) < budget_ns / 10:
        probe *= 2  # calibration: doubling until a probe takes a tenth of one timing
    count = max(1, round(probe * budget_ns / max(elapsed, 1)))
    nonces = _nonces(count, raw.nonce_bytes)
    best_ns = min(_timed(run, page, nonces) for _ in range(repeats))
    return count * page_bytes / (best_ns / 1e9) / MIB


def used_by(names: Iterable[str]) -> tuple[RawCipher, ...]:
    """The raw ciphers named (`Encryption.cipher` of a plan's encryptions), in CIPHERS' order;
    names no cipher here measures are left out (the report says "not measured")."""
    wanted = set(names)
    return tuple(raw for raw in CIPHERS if raw.name in wanted)


def measure_ciphers(seconds: float = 0.1, page_sizes: Sequence[int] = PAGE_SIZES,
                    ciphers: Sequence[RawCipher] = CIPHERS) -> list[CipherSpeed]:
    """Raw throughput of every cipher at every page size, about `seconds` each; an
    unavailable cipher gets records with no figure and a note saying why."""
    return [CipherSpeed(cipher=raw.name, chunk_bytes=size,
                        mib_per_s=round(page_speed(raw, size, seconds), 1) if raw.start else None,
                        library=library(raw.library), note=raw.note, reused_context=True)
            for raw in ciphers for size in page_sizes]


_OPENSSL_FIGURE = re.compile(r"^\+F:\d+:([^:]+):([0-9.]+)\s*$", re.MULTILINE)


def openssl_speed(cipher: str, page_bytes: int, seconds: int = 1) -> float:
    """MiB/s of `openssl speed -evp CIPHER -bytes PAGE -seconds N` (the system's OpenSSL
    command, its own C loop: the check of our figures), read from its machine-readable
    `-mr` output ("+F:<n>:<name>:<bytes per second>"). Like ours, a CPU-time figure."""
    command = ["openssl", "speed", "-mr", "-evp", cipher, "-bytes", str(page_bytes), "-seconds", str(seconds)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60 + 10 * seconds, check=True)
    figures = [(name, float(value)) for name, value in _OPENSSL_FIGURE.findall(done.stdout)]
    matching = [value for name, value in figures if name.lower() == cipher.lower()]
    if len(matching) != 1:
        raise ValueError(f"no single figure for {cipher} in the output of {' '.join(command)}:\n{done.stdout}")
    return matching[0] / MIB
