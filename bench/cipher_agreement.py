"""Do tdebench's raw cipher figures agree with `openssl speed`, and how much Python is in them?

For each cipher and page size, close together on this machine: tdebench's figure
(`measure.ciphers.page_speed`: one context per key, a new nonce per page, CPU time, best of
5) and `openssl speed -evp CIPHER -bytes PAGE -seconds 1` (the system's openssl command: its
own C loop, one update per chunk, also CPU time), and their ratio. The last column is the
fixed cost per page left in tdebench's figure, read from a 16-byte page: the Python loop
step and calls, plus the library's own per-call work (nonce reset, tag), which an engine
pays too.

Where the ratio is far from 1, the two sides may run different OpenSSL versions (the
cryptography wheel bundles its own; Debian 12's openssl command is 3.0). The last lines
therefore time AES-256-GCM through the system's libcrypto, the library of the openssl
command, in the same kind of Python loop (ctypes, EVP calls: new IV, update, final, tag
per page): if that agrees with `openssl speed`, the gap is the library, not the method.

    .venv/bin/python bench/cipher_agreement.py [--seconds 0.3] [--pages 4096 16384 1048576]
                                               [--ciphers aes-256-ctr ...]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import time

from tdebench.measure.ciphers import CIPHERS, MIB, openssl_speed, page_speed

CIPHER_NAMES = ("aes-128-gcm", "aes-256-gcm", "aes-128-ctr", "aes-256-ctr", "aes-128-cbc", "aes-256-cbc",
                "chacha20-poly1305")
TINY = 16


def system_gcm_speed(page_bytes: int, seconds: float) -> float:
    """MiB/s of AES-256-GCM via the system libcrypto, a new nonce and tag per page, CPU time."""
    crypto = ctypes.CDLL(ctypes.util.find_library("crypto"))
    crypto.EVP_CIPHER_CTX_new.restype = ctypes.c_void_p
    crypto.EVP_aes_256_gcm.restype = ctypes.c_void_p
    context = ctypes.c_void_p(crypto.EVP_CIPHER_CTX_new())
    crypto.EVP_EncryptInit_ex(context, ctypes.c_void_p(crypto.EVP_aes_256_gcm()), None, os.urandom(32), bytes(12))
    page, tag = os.urandom(page_bytes), ctypes.create_string_buffer(16)
    out = ctypes.create_string_buffer(page_bytes + 16)
    written = ctypes.byref(ctypes.c_int())
    init, update, final, control = (crypto.EVP_EncryptInit_ex, crypto.EVP_EncryptUpdate, crypto.EVP_EncryptFinal_ex,
                                    crypto.EVP_CIPHER_CTX_ctrl)
    count = max(1, int(seconds / 5 * 3e9 / page_bytes))  # about seconds / 5 at 3 GB/s
    nonces = [i.to_bytes(12, "big") for i in range(count)]
    best = float("inf")
    for _ in range(5):
        start = time.thread_time_ns()
        for nonce in nonces:
            init(context, None, None, None, nonce)
            update(context, out, written, page, page_bytes)
            final(context, out, written)
            control(context, 0x10, 16, tag)  # EVP_CTRL_GCM_GET_TAG
        best = min(best, time.thread_time_ns() - start)
    return count * page_bytes / (best / 1e9) / MIB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="CPU seconds of tdebench's figure per cell")
    parser.add_argument("--pages", type=int, nargs="+", default=[4096, 16384, 1 << 20])
    parser.add_argument("--openssl-seconds", type=int, default=1)
    parser.add_argument("--ciphers", nargs="+", default=list(CIPHER_NAMES), choices=CIPHER_NAMES)
    args = parser.parse_args()
    raws = {raw.name: raw for raw in CIPHERS}
    print(f"{'cipher':<18} {'page':>8} {'tdebench MiB/s':>15} {'openssl MiB/s':>14} {'ratio':>6} "
          f"{'fixed µs/page':>14}")
    for name in args.ciphers:
        raw = raws[name]
        fixed_us = TINY / (page_speed(raw, TINY, args.seconds) * MIB) * 1e6
        for page in args.pages:
            ours = page_speed(raw, page, args.seconds)
            theirs = openssl_speed(name, page, args.openssl_seconds)
            print(f"{name:<18} {page:>8,} {ours:>15,.0f} {theirs:>14,.0f} {ours / theirs:>6.2f} {fixed_us:>14.2f}")
    print("\naes-256-gcm through the system libcrypto (the openssl command's library), same loop:")
    for page in args.pages:
        ours = system_gcm_speed(page, args.seconds)
        theirs = openssl_speed("aes-256-gcm", page, args.openssl_seconds)
        print(f"{'aes-256-gcm':<18} {page:>8,} {ours:>15,.0f} {theirs:>14,.0f} {ours / theirs:>6.2f}")


if __name__ == "__main__":
    main()
