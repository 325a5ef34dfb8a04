from tdebench.measure.ciphers import CIPHERS, library, measure_ciphers

NAMES = ["aes-128-gcm", "aes-256-gcm", "aes-128-ctr", "aes-256-ctr", "aes-128-cbc", "aes-256-cbc",
         "chacha20-poly1305"]


def test_every_cipher_at_every_chunk_size_is_positive():
    speeds = measure_ciphers(seconds=0.005, chunk_sizes=(4096, 65536))
    assert [(s.cipher, s.chunk_bytes) for s in speeds] == [(n, c) for n in NAMES for c in (4096, 65536)]
    assert all(s.mib_per_s > 0 for s in speeds)
    assert all(s.library == library() for s in speeds)


def test_library_names_cryptography_and_openssl():
    assert library().startswith("cryptography ") and "OpenSSL" in library()


def test_ciphers_encrypt_and_vary_the_nonce():
    data = bytes(4096)
    for name, make in CIPHERS.items():
        encrypt = make()
        first, second = encrypt(data, 1), encrypt(data, 2)
        assert len(first) >= len(data), name
        assert first != second, name  # a fresh nonce/IV per chunk, as engines use per page
        assert first[:16] != data[:16], name
