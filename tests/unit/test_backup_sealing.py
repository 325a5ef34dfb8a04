"""The backup workload's own encryption: every cipher round-trips a backup tree exactly, its
sealed file holds no plaintext, no packing magic and no key, and anything but the right key on
the unchanged file is refused before a byte is unpacked."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from tdebench.keys import Secret
from tdebench.workloads.backup import artifact, sealing

PLAIN = b"TDEBENCH-CANARY-sealed-0123456789 " * 40_000  # ~1.3 MB: more than one CHUNK_BYTES
CIPHERS = list(sealing.CIPHERS)


@pytest.fixture()
def backup(tmp_path: Path) -> Path:
    """A backup tree as an engine's tool leaves one: a large file, a nested one, an empty one."""
    tree = tmp_path / "artifact"
    (tree / "nested").mkdir(parents=True)
    (tree / "data.bin").write_bytes(PLAIN)
    (tree / "nested" / "wal").write_bytes(b"\x1f\x8b\x08 not really gzip")
    (tree / "nested" / "wal").chmod(0o640)
    (tree / "empty").write_bytes(b"")
    tree.chmod(0o750)  # as a server's tool may leave it, for the server's user to read back
    return tree


def sealed_file(backup: Path, tmp_path: Path, name: str, key: Secret) -> Path:
    return sealing.seal(backup, sealing.CIPHERS[name], key, tmp_path / f"sealed-{name}")


@pytest.mark.parametrize("name", CIPHERS)
def test_every_cipher_round_trips_the_tree_exactly(backup: Path, tmp_path: Path, name: str) -> None:
    key = Secret(os.urandom(32))
    sealed = sealed_file(backup, tmp_path, name, key)
    opened = sealing.open_sealed(sealed, key, tmp_path / "opened")
    assert (opened / "data.bin").read_bytes() == PLAIN
    assert (opened / "nested" / "wal").read_bytes() == (backup / "nested" / "wal").read_bytes()
    assert stat.S_IMODE((opened / "nested" / "wal").stat().st_mode) == 0o640
    assert stat.S_IMODE(opened.stat().st_mode) == 0o750  # the directory's own mode comes back too
    assert (opened / "empty").read_bytes() == b""
    assert stat.S_IMODE(sealed.stat().st_mode) == 0o600
    assert not list(tmp_path.glob("*.tar")), "the scratch tar is removed"


@pytest.mark.parametrize("name", CIPHERS)
def test_the_sealed_file_holds_no_plaintext_no_magic_and_no_key(backup: Path, tmp_path: Path, name: str) -> None:
    key = Secret(os.urandom(32))
    sealed = sealed_file(backup, tmp_path, name, key)
    body = sealed.read_bytes()
    assert b"TDEBENCH-CANARY" not in body and b"ustar" not in body
    assert key.raw() not in body and key.hex().encode() not in body
    assert len(body) >= len(PLAIN)  # nothing was compressed away: the packing is tar only
    assert artifact.magic_found(sealed, sealing.payload_offset(sealed)) == []


def test_the_magic_check_finds_an_unsealed_tar(backup: Path, tmp_path: Path) -> None:
    """The control of the check above: the same packing without the cipher is caught."""
    packed = tmp_path / "plain.tar"
    with tarfile.open(packed, "w") as tar:
        tar.add(backup / "nested", arcname="nested")
    assert artifact.magic_found(packed, 0) == ["tar"]
    assert artifact.magic_found(backup / "nested" / "wal", 0) == ["gzip"]


@pytest.mark.parametrize("name", CIPHERS)
def test_a_wrong_key_is_refused_and_leaves_nothing(backup: Path, tmp_path: Path, name: str) -> None:
    sealed = sealed_file(backup, tmp_path, name, Secret(os.urandom(32)))
    with pytest.raises(sealing.SealBroken, match="did not authenticate"):
        sealing.open_sealed(sealed, Secret(os.urandom(32)), tmp_path / "opened")
    assert not (tmp_path / "opened").exists() and not (tmp_path / "opened.tar").exists()


@pytest.mark.parametrize("name", CIPHERS)
@pytest.mark.parametrize("where", ["first ciphertext byte", "middle", "tag"])
def test_a_changed_byte_is_refused(backup: Path, tmp_path: Path, name: str, where: str) -> None:
    key = Secret(os.urandom(32))
    sealed = sealed_file(backup, tmp_path, name, key)
    body = bytearray(sealed.read_bytes())
    at = {"first ciphertext byte": sealing.payload_offset(sealed), "middle": len(body) // 2, "tag": len(body) - 1}
    body[at[where]] ^= 0x01
    sealed.write_bytes(bytes(body))
    with pytest.raises(sealing.SealBroken):
        sealing.open_sealed(sealed, key, tmp_path / "opened")


def test_a_header_naming_another_cipher_is_refused(backup: Path, tmp_path: Path) -> None:
    """The header is authenticated: relabelled aes-128 → aes-192 (same nonce size) it fails."""
    key = Secret(os.urandom(32))
    sealed = sealed_file(backup, tmp_path, "aes-128", key)
    sealed.write_bytes(sealed.read_bytes().replace(b"aes-128", b"aes-192", 1))
    with pytest.raises(sealing.SealBroken):
        sealing.open_sealed(sealed, key, tmp_path / "opened")


@pytest.mark.parametrize("cut", [1, 40])
def test_a_truncated_or_foreign_file_is_refused(backup: Path, tmp_path: Path, cut: int) -> None:
    key = Secret(os.urandom(32))
    sealed = sealed_file(backup, tmp_path, "aes-256", key)
    sealed.write_bytes(sealed.read_bytes()[:-cut])
    with pytest.raises(sealing.SealBroken):
        sealing.open_sealed(sealed, key, tmp_path / "opened")
    foreign = tmp_path / "foreign"
    foreign.write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(sealing.SealBroken, match="not a sealed tdebench backup"):
        sealing.open_sealed(foreign, key, tmp_path / "opened-foreign")


def test_one_secret_keys_each_cipher_differently() -> None:
    secret = Secret(os.urandom(32))
    keys = {name: sealing._keys(cipher, secret) for name, cipher in sealing.CIPHERS.items()}
    assert {name: len(k) for name, (k, _) in keys.items()} == {"aes-128": 16, "aes-192": 24, "aes-256": 32,
                                                               "3des": 24}
    assert keys["aes-192"][0] != keys["3des"][0]  # same length, other context
    assert len(keys["3des"][1]) == 32 and keys["aes-256"][1] == b""  # a MAC key for encrypt-then-MAC only


@pytest.mark.parametrize("name", ["aes-256", "3des"])
def test_a_stream_written_in_small_pieces_decrypts_like_one_written_at_once(tmp_path: Path, name: str) -> None:
    """tarfile writes 10 KiB records: the writer's buffering must not change what comes out."""
    secret = Secret(os.urandom(32))
    cipher = sealing.CIPHERS[name]
    for piece in (10240, 3, len(PLAIN)):
        out = io.BytesIO()
        writer = sealing._SealingWriter(cipher, secret, out)
        for start in range(0, len(PLAIN), piece):
            writer.write(PLAIN[start:start + piece])
        writer.close()
        sealed = tmp_path / f"pieces-{piece}"
        sealed.write_bytes(out.getvalue())
        plain = io.BytesIO()
        sealing._decrypt(sealed, secret, plain)
        assert plain.getvalue() == PLAIN


def test_test_names_round_trip() -> None:
    assert sealing.sealed_test("full", "none") == "full"
    assert sealing.sealed_test("full-compressed", "3des") == "full-compressed+3des"
    assert sealing.split_test("full-compressed+3des") == ("full-compressed", "3des")
    assert sealing.split_test("logical") == ("logical", "none")


def test_zero_share_counts_the_bytes_in_whole_blocks_of_zeros_in_every_file(tmp_path: Path) -> None:
    """Blocks of 4 KiB from each file's start: a block with one byte set is not zeros, a file's
    shorter last block is when it is all zeros, and every file of a directory counts."""
    block = artifact.ZERO_BLOCK
    one_set = bytearray(block)
    one_set[block // 2] = 1
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ibdata1").write_bytes(bytes(3 * block) + bytes(one_set) + bytes(100))
    (tmp_path / "data" / "redo").write_bytes(os.urandom(block) + b"\x00" * 10 + b"\x01")
    assert artifact.zero_share(tmp_path / "data" / "ibdata1") == (3 * block + 100) / (4 * block + 100)
    assert artifact.zero_share(tmp_path / "data") == (3 * block + 100) / (4 * block + 100 + block + 11)
    (tmp_path / "large").write_bytes(bytes(9 << 20) + os.urandom(block))  # read in more than one piece
    assert artifact.zero_share(tmp_path / "large") == (9 << 20) / ((9 << 20) + block)
    (tmp_path / "empty").mkdir()
    assert artifact.zero_share(tmp_path / "empty") != artifact.zero_share(tmp_path / "empty")  # NaN: no bytes
