"""`tdebench verify`'s entropy verdict from a sample of the blocks (verify._sample_verdict): the
same verdict as every block gives on real files, every block where the sample cannot tell, and
the bound the sample's decision rests on checked against the binomial's own tail."""

import math
import os
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import tdebench.verify as verify
from tdebench.verify import VERDICT_SAMPLE, describe, verify_paths

CANARY = "TDEBENCH-CANARY-5e1c"
MIB = 1 << 20
BLOCKS = 3072  # 12 MiB: sampled (one block in 2 first), and counted whole by bincount where it cannot tell
TEXT = ("plain words, not secret " * 200).encode()[:4096]


def _exact(paths: list[Path], monkeypatch: pytest.MonkeyPatch, by_scan: bool) -> tuple[str, tuple, str]:
    """verify_paths with every block measured: counted by bincount, or (`by_scan`) by the scan's
    compiled loop, as for files larger than VERDICT_COUNTED_BLOCKS."""
    with monkeypatch.context() as patched:
        patched.setattr(verify, "VERDICT_SAMPLE", 1 << 40)  # no sample: every block at once
        if by_scan:
            patched.setattr(verify, "VERDICT_COUNTED_BLOCKS", 0)
        return verify_paths(paths, [CANARY])


def _sqlite(path: Path, rows: int, key: str | None = None) -> Path:
    """A SQLite database of text rows (`key`: encrypted by SQLite3MC's default cipher, through apsw)."""
    import apsw

    conn = apsw.Connection(str(path))
    if key is not None:
        conn.execute(f"PRAGMA key = '{key}'")
    conn.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, comment TEXT)")
    rng = random.Random(5)
    words = "regular accounts ironic deposits furiously special packages sleep quickly pending".split()
    with conn:
        conn.executemany("INSERT INTO customer VALUES (?, ?, ?)",
                         ((i, f"Customer#{i:09d}", " ".join(rng.choices(words, k=12))) for i in range(rows)))
    conn.close()
    return path


def test_rates_start_at_about_the_sample_and_end_at_every_block():
    assert verify._rates(100) == verify._rates(2 * VERDICT_SAMPLE - 1) == [1]
    assert verify._rates(2 * VERDICT_SAMPLE) == [2, 1]
    assert verify._rates(BLOCKS) == [2, 1]
    assert verify._rates(512 * MIB // 4096) == [128, 16, 2, 1]
    for blocks in (2048, 5000, 131072, 10**9):
        first = verify._rates(blocks)[0]
        assert VERDICT_SAMPLE <= blocks // first < 2 * VERDICT_SAMPLE


def test_the_picks_at_a_rate_are_among_those_at_half_of_it():
    index = np.arange(1 << 16, dtype="uint64")
    for every in (2, 16, 128):
        fine, coarse = verify._hashed(index, every // 2), verify._hashed(index, every)
        assert not (coarse & ~fine).any()
        assert abs(int(coarse.sum()) - len(index) / every) < 0.05 * len(index) / every


@pytest.mark.parametrize("picked", [50, 400, 2000])
def test_the_bound_holds_against_the_binomial_tail(picked):
    """Beyond each bound, a sample shows what it showed with a chance of at most exp(-log_odds):
    the exact binomial tail at the bound, for counts from none to all."""
    log_odds = math.log(1e4)

    def tail(counts: range, p: float) -> float:
        ways = [math.lgamma(picked + 1) - math.lgamma(i + 1) - math.lgamma(picked - i + 1) for i in counts]
        return sum(math.exp(w + i * math.log(p) + (picked - i) * math.log1p(-p)) for w, i in zip(ways, counts))

    chance = math.exp(-log_odds) * (1 + 1e-9)  # at a count of none or all, Chernoff's bound is the tail itself
    for count in sorted({0, 1, picked // 50, picked // 20, picked // 2, picked - 1, picked}):
        upper, lower = (verify._bound(count, picked, log_odds, upper) for upper in (True, False))
        assert lower <= count / picked <= upper
        if count < picked:
            assert tail(range(count + 1), upper) <= chance
        if count > 0:
            assert tail(range(count, picked + 1), lower) <= chance


@pytest.mark.parametrize("kind", ["random", "plaintext sqlite", "encrypted sqlite", "sparse ciphertext", "text"])
def test_the_sample_gives_every_blocks_verdict_on_real_files(tmp_path, monkeypatch, kind):
    """A plaintext SQLite database, one SQLite3MC encrypted, random bytes, ciphertext with half of
    its blocks free pages, text: the sample decides (its reason says so), and as every block does."""
    path = tmp_path / "db"
    if kind.endswith("sqlite"):
        _sqlite(path, 80_000, key="not the canary" if kind.startswith("encrypted") else None)
        assert path.stat().st_size > 2 * VERDICT_SAMPLE * 4096
    else:
        block = {"random": lambda i: os.urandom(4096), "text": lambda i: TEXT,
                 "sparse ciphertext": lambda i: os.urandom(4096) if i % 2 else bytes(4096)}[kind]
        path.write_bytes(b"".join(block(i) for i in range(BLOCKS)))
    state, scans, why = verify_paths([path], [CANARY])
    assert "in a sample of one block in 2 of" in why
    expected = {"random": "encrypted", "encrypted sqlite": "encrypted", "sparse ciphertext": "encrypted",
                "plaintext sqlite": "inconclusive", "text": "inconclusive"}[kind]
    exact, by_scan = _exact([path], monkeypatch, by_scan=False), _exact([path], monkeypatch, by_scan=True)
    assert state == exact[0] == by_scan[0] == expected
    assert exact[1] == by_scan[1]  # bincount and the compiled loop: the same bits
    assert scans[0].entropy_blocks < exact[1][0].entropy_blocks and "in a sample" not in exact[2]


@pytest.mark.parametrize("low", [153, 154])
def test_near_the_line_every_block_decides(tmp_path, monkeypatch, low):
    """5% of 3072 is 153.6: 153 text blocks among ciphertext are "encrypted", 154 are not. No
    sample can tell, so every block is measured, and the verdict is every block's."""
    places = set(random.Random(low).sample(range(BLOCKS), low))
    path = tmp_path / "db"
    path.write_bytes(b"".join(TEXT if i in places else os.urandom(4096) for i in range(BLOCKS)))
    state, scans, why = verify_paths([path], [CANARY])
    assert state == ("encrypted" if low == 153 else "inconclusive")
    assert "in a sample" not in why and f"{low:,}/{BLOCKS:,} blocks below 7 bits/byte" in why
    assert (scans[0].entropy_blocks, scans[0].low_entropy_blocks) == (BLOCKS, low)
    assert (state, scans) == _exact([path], monkeypatch, by_scan=True)[:2]


def test_a_file_the_sample_misses_is_described_by_its_first_block(tmp_path):
    """A small file beside a large one may have none of its blocks picked: its first block is
    measured to describe it, and left out of the sample the verdict rests on."""
    # the small file's blocks follow the big one's in the sequence: a size after which the next is not picked
    big = next(n for n in range(BLOCKS, 2 * BLOCKS) if not verify._hashed(np.arange(n, n + 2, dtype="uint64"), 2).any())
    (tmp_path / "big").write_bytes(os.urandom(big * 4096))
    (tmp_path / "small").write_bytes(TEXT * 2)
    state, scans, why = verify_paths([tmp_path], [CANARY])
    assert state == "encrypted" and "in a sample" in why
    small = scans[1]
    assert (small.path, small.entropy_blocks, small.low_entropy_blocks) == ("small", 1, 1)
    assert describe(scans)[1].endswith(" bits/byte, 1/1 blocks low (2 in all)")


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16-be"])
def test_verify_finds_a_canary_across_each_read_border(tmp_path, encoding):
    """`tdebench verify` on a file of three 4 MiB reads (one memory map): the canary across each
    border between two reads, in each encoding, is found once; the entropy is sampled all the same."""
    data = bytearray(os.urandom(12 * MIB).replace(b"\0", b"\1"))
    pattern = CANARY.encode(encoding)
    offsets = [4 * MIB - 7, 8 * MIB - len(pattern) + 1]
    for at in offsets:
        data[at:at + len(pattern)] = pattern
    path = tmp_path / "db"
    path.write_bytes(bytes(data))
    state, (scanned,), why = verify_paths([path], [CANARY])
    assert (state, why) == ("plaintext", "a canary found 2 times in 1 file")
    assert (scanned.hits, scanned.first_hit_offset) == (2, offsets[0])
    assert 0 < scanned.entropy_blocks < BLOCKS and scanned.low_entropy_blocks == 0


def test_a_plaintext_sqlite_database_with_its_canary_is_plaintext(tmp_path):
    db = tmp_path / "plain.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (v TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [(f"row {i} " * 20,) for i in range(40_000)])
        conn.execute("INSERT INTO t VALUES (?)", (CANARY,))
    conn.close()
    state, (scanned,), _ = verify_paths([db], [CANARY])
    assert state == "plaintext" and scanned.hits == 1 and scanned.entropy_blocks > 0
