"""Raw cipher throughput: every loop really encrypts, every engine encryption finds its cipher
and page size, old records still load, and the figures agree with `openssl speed`."""

import os
import subprocess
import sys
from pathlib import Path

import nacl.bindings
import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4, CAST5, Blowfish, TripleDES
from cryptography.hazmat.decrepit.ciphers.modes import CFB
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from tdebench.engines import PROVISIONED
from tdebench.measure.ciphers import (CIPHERS, PAGE_SIZES, RawCipher, library, measure_ciphers, openssl_speed,
                                     page_speed)
from tdebench.report.summaries.cipher_cost import raw_speed
from tdebench.report.summaries.tables import UNAVAILABLE, size_text, speeds_table
from tdebench.results import AT_MOUNT, AT_START, ON_OPEN, PER_VALUE, CipherSpeed, EncryptionFacts, from_json, to_json

PAGE = 4096
NAMES = [f"aes-{bits}-{mode}" for bits in (128, 192, 256) for mode in ("gcm", "ctr", "cbc", "cfb")] + [
    "chacha20-poly1305", "xchacha20-poly1305", "aegis-128l", "aegis-256", "ascon-128", "3des-168-cbc",
    "3des-168-cfb", "blowfish-128-cfb", "cast5-128-cfb", "rc4"]
CFB_ALGORITHMS = {"aes": algorithms.AES, "3des": TripleDES, "blowfish": Blowfish, "cast5": CAST5}


def _chained(algorithm, mode):
    """The second of two pages encrypted one after the other by one encryptor."""
    def encrypt(key: bytes, nonce: bytes, page: bytes) -> bytes:
        made = algorithm(key)
        cipher = Cipher(made, mode(bytes(made.block_size // 8)) if mode else None)
        return cipher.encryptor().update(page + page)[len(page):]
    return encrypt


def _reference(name: str):
    """A one-shot encryption of one page by the libraries' plain public API."""
    if name.endswith("-gcm"):
        return lambda key, nonce, page: AESGCM(key).encrypt(nonce, page, None)
    if name.endswith("-ctr"):
        return lambda key, nonce, page: Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor().update(page)
    if name.endswith("-cbc"):
        return _chained(TripleDES if name.startswith("3des") else algorithms.AES, modes.CBC)
    if name.endswith("-cfb"):
        return _chained(CFB_ALGORITHMS[name.partition("-")[0]], CFB)
    return {"chacha20-poly1305": lambda key, nonce, page: ChaCha20Poly1305(key).encrypt(nonce, page, None),
            "xchacha20-poly1305": lambda key, nonce, page: nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
                page, None, nonce, key),
            "aegis-128l": lambda key, nonce, page: nacl.bindings.crypto_aead_aegis128l_encrypt(page, None, nonce, key),
            "aegis-256": lambda key, nonce, page: nacl.bindings.crypto_aead_aegis256_encrypt(page, None, nonce, key),
            "rc4": _chained(ARC4, None)}[name]


def _available() -> list[RawCipher]:
    return [raw for raw in CIPHERS if raw.start is not None]


def test_the_ciphers_of_every_engine_and_what_the_libraries_offer():
    assert [raw.name for raw in CIPHERS] == NAMES
    assert [raw.name for raw in CIPHERS if raw.start is None] == ["ascon-128"]


@pytest.mark.parametrize("raw", _available(), ids=lambda raw: raw.name)
def test_every_loop_encrypts_as_the_public_api_does(raw: RawCipher):
    key, page = os.urandom(raw.key_bytes), os.urandom(PAGE)
    nonces = [os.urandom(raw.nonce_bytes) for _ in range(2)]
    last = raw.start(key, PAGE)(page, nonces)
    assert last == _reference(raw.name)(key, nonces[-1], page)
    if raw.nonce_bytes:  # a fresh nonce per page, as an engine gives each page its own
        assert raw.start(key, PAGE)(page, nonces[:1]) != last


def test_every_cipher_at_every_page_size():
    speeds = measure_ciphers(seconds=0.002, page_sizes=(4096, 16384))
    assert [(s.cipher, s.chunk_bytes) for s in speeds] == [(n, size) for n in NAMES for size in (4096, 16384)]
    for s in speeds:
        if s.cipher == "ascon-128":  # a record that says so, never a number
            assert (s.mib_per_s, s.available, s.library) == (None, False, "")
            assert s.note.startswith("unavailable:")
        else:
            assert s.available and s.mib_per_s > 0, s
            assert s.library in (library("cryptography"), library("libsodium"))


def test_library_names_the_versions():
    assert library().startswith("cryptography ") and ", OpenSSL " in library()
    assert library("libsodium").startswith("PyNaCl ") and library("libsodium").endswith(", libsodium")
    assert library("") == ""


def test_a_speed_is_pages_over_cpu_time():
    calls = []

    def start(key: bytes, page_bytes: int):
        def run(page: bytes, nonces) -> bytes:
            calls.append((len(page), len(nonces), len(set(nonces))))
            sum(range(20_000))  # some CPU time to measure
            return page
        return run

    fake = RawCipher("fake", 16, 12, start, "cryptography")
    assert page_speed(fake, 1024, seconds=0.01, repeats=3) > 0
    assert all(page == 1024 and distinct == count for page, count, distinct in calls)  # one nonce per page
    assert calls[-1][1] == calls[-2][1] == calls[-3][1]  # the timed repeats are alike


def test_every_engine_encryption_maps_to_a_cipher_and_its_page_size():
    pages = {"duckdb": 256 * 1024, "sqlite": 4096, "sqlcipher": 4096, "mariadb": 16 * 1024}
    pages_of = {("sqlcipher", "aes-256-cbc-hmac-sha1"): 1024}  # cipher_compatibility = 3: SQLCipher 3's pages
    measured = {raw.name for raw in CIPHERS}
    unmatched = set()
    for name, engine in PROVISIONED.items():
        for encryption in engine.encryptions:
            facts = engine.encryption_facts()[encryption.name]  # what a run records (results.ENCRYPTIONS)
            if not encryption.encrypts:  # none, and a layer with no cipher (fs-passthrough)
                assert not facts.encrypts and facts.cipher == "" and facts.key_taken == ""
                continue
            cipher, page = facts.cipher, facts.page_bytes
            if encryption.layer == "fs":
                assert page == 4096  # gocryptfs blocks
            elif encryption.layer == "native":
                assert page == pages_of.get((name, encryption.name), pages[name]), (name, encryption.name)
            # SQLCipher 3's 1 KiB pages are not among the sizes measured (each size adds to every run's start)
            assert page == 0 or page in PAGE_SIZES or (name, encryption.name) in pages_of
            if cipher not in measured:
                unmatched.add((name, encryption.name, cipher))
    assert not unmatched  # pgcrypto's column ciphers too: their CFB (OpenPGP) figures
    facts = {name: engine.encryption_facts() for name, engine in PROVISIONED.items()}
    assert facts["postgres"]["column-3des"] == EncryptionFacts("column", "3des-168-cfb", "", 0, PER_VALUE)
    assert facts["sqlite"]["sqlcipher"] == EncryptionFacts("native", "aes-256-cbc", "HMAC-SHA512", 4096, ON_OPEN)
    assert facts["duckdb"]["fs-xchacha20-poly1305"] == EncryptionFacts("fs", "xchacha20-poly1305", "", 4096, AT_MOUNT)
    assert facts["mariadb"]["aes-256-ctr"].key_taken == AT_START


def test_the_nearest_measured_page_size_is_used():
    speeds = [CipherSpeed("aes-256-gcm", 4096, 1.0), CipherSpeed("aes-256-gcm", 1 << 20, 2.0),
              CipherSpeed("ascon-128", 4096, None, note="unavailable: …")]
    assert raw_speed(speeds, "aes-256-gcm", 4096).mib_per_s == 1.0
    assert raw_speed(speeds, "aes-256-gcm", 262144).mib_per_s == 2.0  # 2 doublings from 1 MiB, 6 from 4 KiB
    assert raw_speed(speeds, "aes-256-gcm", 0).mib_per_s == 1.0
    assert raw_speed(speeds, "ascon-128", 4096) is None
    assert raw_speed(speeds, "rc4", 4096) is None


def test_speeds_table_one_row_per_cipher_a_column_per_page_size():
    speeds = [CipherSpeed("aes-256-gcm", 4096, 3000.0, "lib"), CipherSpeed("aes-256-gcm", 1 << 20, 9000.0, "lib"),
              CipherSpeed("ascon-128", 4096, None, note="unavailable: no library"),
              CipherSpeed("ascon-128", 1 << 20, None, note="unavailable: no library")]
    table = speeds_table(speeds)
    assert table.headers == ["cipher", "4 KiB", "1 MiB", "library", "note"]
    assert table.formatted() == [["aes-256-gcm", "3,000", "9,000", "lib", ""],
                                 ["ascon-128", UNAVAILABLE, UNAVAILABLE, "", "unavailable: no library"]]
    assert [size_text(n) for n in (4096, 8192, 262144, 1 << 20, 1000)] == ["4 KiB", "8 KiB", "256 KiB", "1 MiB",
                                                                           "1,000 B"]


def test_old_cipher_records_still_load():
    old = {"kind": "cipher", "cipher": "aes-256-ctr", "chunk_bytes": 4096, "mib_per_s": 718.0,
           "library": "cryptography 44.0.0 (OpenSSL 3.0.15 3 Sep 2024)"}
    record = from_json(old)
    assert record == CipherSpeed("aes-256-ctr", 4096, 718.0, old["library"]) and record.available
    assert not record.reused_context and "older tdebench" in speeds_table([record]).note
    assert all(s.reused_context for s in measure_ciphers(seconds=0.001, page_sizes=(4096,), ciphers=CIPHERS[:1]))
    unavailable = CipherSpeed("ascon-128", 4096, None, note="unavailable: x")
    assert from_json(to_json(unavailable)) == unavailable


def test_openssl_is_3_or_later():
    version = subprocess.run(["openssl", "version"], capture_output=True, text=True, check=True).stdout
    assert int(version.split()[1].split(".")[0]) >= 3, version  # -mr figures, EVP ciphers by name


def test_openssl_speed_is_read_from_its_machine_readable_output(monkeypatch):
    output = "+DT:AES-256-CTR:1:16384\n+R:252363:AES-256-CTR:0.670000\n+H:16384\n+F:25:AES-256-CTR:6171217002.99\n"

    def fake_run(command, **kwargs):
        assert command[:5] == ["openssl", "speed", "-mr", "-evp", "aes-256-ctr"]
        return subprocess.CompletedProcess(command, 0, stdout=output, stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert openssl_speed("aes-256-ctr", 16384) == pytest.approx(6171217002.99 / 2**20)
    output = "+H:16384\n"
    with pytest.raises(ValueError, match="no single figure for aes-256-ctr"):
        openssl_speed("aes-256-ctr", 16384)


def test_the_agreement_bench_runs():
    """bench/cipher_agreement.py (docs/method/cipher-limit.md's table) on tiny settings, so it cannot rot."""
    bench = Path(__file__).parents[2] / "bench" / "cipher_agreement.py"
    done = subprocess.run([sys.executable, str(bench), "--seconds", "0.005", "--pages", "4096",
                           "--ciphers", "aes-128-cbc"], capture_output=True, text=True, timeout=120, check=True)
    rows = [line.split()[:2] for line in done.stdout.splitlines() if " 4,096 " in line]
    assert rows == [["aes-128-cbc", "4,096"], ["aes-256-gcm", "4,096"]], done.stdout  # ours, then system GCM


def test_triple_des_is_far_slower_than_aes_as_the_column_layer_uses_them():
    """The framework study's point about 3DES, measured side by side at 4 KiB in CFB: a
    64-bit-block cipher with three DES passes against AES with its instructions (here about
    40x; at least 3x on any machine with AES instructions)."""
    aes, triple = (next(raw for raw in CIPHERS if raw.name == name) for name in ("aes-256-cfb", "3des-168-cfb"))
    assert page_speed(triple, PAGE, seconds=0.02) * 3 < page_speed(aes, PAGE, seconds=0.02)
