import os
import sqlite3
from pathlib import Path

import pytest

from tdebench.results import FileScan, TrialKey
from tdebench.verify import (
    canary_encodings, describe, error_verdict, judge, label_first_hit, scan, scan_file, verify_paths,
)

CANARY = "TDEBENCH-CANARY-7f3a"
TRIAL = TrialKey("sqlite", "aes-256-cbc", "crud", 0.01, 1)
SQLITE_MAGIC = (0, b"SQLite format 3\x00")


def _noise(n: int) -> bytes:
    """Random bytes without zeros: a zero next to a UTF-16 canary would match the other byte order too."""
    return os.urandom(n).replace(b"\x00", b"\x01")


def _file(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _scan(name="db", size=8192, hits=0, offset=None, header=None) -> FileScan:
    return FileScan(path=name, bytes=size, hits=hits, first_hit_offset=offset, entropy_mean=7.9,
                    low_entropy_blocks=0, blocks=size // 4096, plaintext_header=header)


def test_canary_encodings():
    enc = canary_encodings("ab")
    assert enc == {"utf-8": b"ab", "utf-16-le": b"a\x00b\x00", "utf-16-be": b"\x00a\x00b"}
    with pytest.raises(ValueError):
        canary_encodings("")


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16-be"])
def test_canary_found_in_every_encoding(tmp_path, encoding):
    data = _noise(5000) + CANARY.encode(encoding) + _noise(3000)
    path = _file(tmp_path, "db", data)
    result = scan_file(path, [CANARY], tmp_path, None)
    assert result.hits == 1
    assert result.first_hit_offset == 5000
    assert result.path == "db"
    assert label_first_hit([result], tmp_path, [CANARY]) == f"db@5000 ({encoding})"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("offset", range(4096 - 45, 4096 + 1))
def test_canary_spanning_a_chunk_border_is_found_once(tmp_path, offset, encoding):
    data = bytearray(_noise(3 * 4096))
    pattern = CANARY.encode(encoding)  # UTF-16: the longest pattern, 40 bytes
    data[offset:offset + len(pattern)] = pattern
    path = _file(tmp_path, "db", bytes(data))
    result = scan_file(path, [CANARY], tmp_path, None, block_size=4096, chunk_size=4096)
    assert (result.hits, result.first_hit_offset) == (1, offset)


def test_short_pattern_in_overlap_counted_once(tmp_path):
    # The UTF-8 pattern (20 bytes) fits inside the 39-byte overlap kept for UTF-16.
    data = bytearray(_noise(2 * 1024))
    data[1024 - 25:1024 - 5] = CANARY.encode()
    path = _file(tmp_path, "db", bytes(data))
    result = scan_file(path, [CANARY], tmp_path, None, block_size=512, chunk_size=1024)
    assert (result.hits, result.first_hit_offset) == (1, 1024 - 25)


def test_chunk_smaller_than_overlap(tmp_path):
    data = b"x" * 100 + CANARY.encode("utf-16-be") + b"y" * 100
    path = _file(tmp_path, "db", data)
    result = scan_file(path, [CANARY], tmp_path, None, block_size=8, chunk_size=16)
    assert (result.hits, result.first_hit_offset) == (1, 100)


def test_many_hits_and_first_offset(tmp_path):
    data = b"a" * 10 + CANARY.encode("utf-16-be") + b"b" * 5000 + CANARY.encode() * 3
    result = scan_file(_file(tmp_path, "db", data), [CANARY, "other-canary"], tmp_path, None,
                       block_size=64, chunk_size=1024)
    assert (result.hits, result.first_hit_offset) == (4, 10)


def test_random_bytes_no_hit_high_entropy(tmp_path):
    result = scan_file(_file(tmp_path, "db", os.urandom(64 * 4096)), [CANARY], tmp_path, None)
    assert result.hits == 0 and result.first_hit_offset is None
    assert result.blocks == 64
    assert 7.9 < result.entropy_mean <= 8.0
    assert result.low_entropy_blocks == 0
    assert result.plaintext_header is None


def test_text_gives_low_entropy_blocks(tmp_path):
    text = ("The quick brown fox jumps over the lazy dog. " * 1000).encode()[: 8 * 4096]
    result = scan_file(_file(tmp_path, "db", text), [CANARY], tmp_path, None)
    assert result.blocks == 8 and result.low_entropy_blocks == 8
    assert result.entropy_mean < 5


def test_zero_blocks_are_excluded(tmp_path):
    data = os.urandom(2 * 4096) + bytes(3 * 4096)
    result = scan_file(_file(tmp_path, "db", data), [CANARY], tmp_path, None)
    assert result.blocks == 5
    assert result.low_entropy_blocks == 0
    assert result.entropy_mean > 7.9


def test_partial_trailing_block_not_in_entropy(tmp_path):
    result = scan_file(_file(tmp_path, "db", os.urandom(4096 + 100)), [CANARY], tmp_path, None)
    assert result.bytes == 4196 and result.blocks == 1 and result.low_entropy_blocks == 0


def test_signature(tmp_path):
    plain = _file(tmp_path, "plain", b"SQLite format 3\x00" + os.urandom(4080))
    cipher = _file(tmp_path, "cipher", os.urandom(4096))
    tiny = _file(tmp_path, "tiny", b"SQL")
    assert scan_file(plain, [CANARY], tmp_path, SQLITE_MAGIC).plaintext_header is True
    assert scan_file(cipher, [CANARY], tmp_path, SQLITE_MAGIC).plaintext_header is False
    assert scan_file(tiny, [CANARY], tmp_path, SQLITE_MAGIC).plaintext_header is False
    offset_sig = scan_file(plain, [CANARY], tmp_path, (7, b"format"))
    assert offset_sig.plaintext_header is True


def test_chunk_size_must_be_whole_blocks(tmp_path):
    with pytest.raises(ValueError):
        scan_file(_file(tmp_path, "db", b"x"), [CANARY], tmp_path, None, block_size=4096, chunk_size=5000)


def test_scan_walks_directories_sorted_without_following_symlinks(tmp_path):
    _file(tmp_path, "data/b.db", os.urandom(100))
    _file(tmp_path, "data/sub/a.wal", os.urandom(100))
    outside = _file(tmp_path, "outside/secret", CANARY.encode())
    (tmp_path / "data" / "link").symlink_to(outside)
    (tmp_path / "data" / "linkdir").symlink_to(tmp_path / "outside")
    single = _file(tmp_path, "single", b"x")
    scans = scan([tmp_path / "data", single, tmp_path / "data" / "b.db"], [CANARY], tmp_path)
    assert [s.path for s in scans] == ["data/b.db", "data/sub/a.wal", "single"]
    assert all(s.hits == 0 for s in scans)


def test_scan_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        scan([tmp_path / "nope"], [CANARY], tmp_path)


# --- judge: one test per rule ---

def test_judge_nothing_scanned_is_inconclusive():
    assert judge(TRIAL, "encrypted", [], True).verdict == "inconclusive"
    empty = judge(TRIAL, "encrypted", [_scan(size=0)], True)
    assert empty.verdict == "inconclusive" and empty.files_scanned == 1 and empty.bytes_scanned == 0


def test_judge_canary_hit_is_plaintext():
    scans = [_scan("a"), _scan("b", hits=2, offset=40)]
    v = judge(TRIAL, "encrypted", scans, canary_readable=False)
    assert v.verdict == "plaintext" and not v.as_expected
    assert v.first_hit == "b@40"
    assert v.files == tuple(scans) and v.files_scanned == 2 and v.bytes_scanned == 16384
    assert "canary found 2 times in 1 files" in v.detail
    labelled = judge(TRIAL, "encrypted", scans, True, first_hit_label="b@40 (utf-8)")
    assert labelled.first_hit == "b@40 (utf-8)"


def test_judge_plaintext_header_is_plaintext():
    v = judge(TRIAL, "encrypted", [_scan(header=False), _scan("wal", header=True)], True)
    assert v.verdict == "plaintext" and v.first_hit == "wal (plaintext header)"
    assert "plaintext header in 1 files" in v.detail


def test_judge_unreadable_canary_is_inconclusive():
    v = judge(TRIAL, "encrypted", [_scan()], canary_readable=False)
    assert v.verdict == "inconclusive" and "read back" in v.detail


def test_judge_baseline_without_hit_fails_positive_control():
    v = judge(TRIAL, "plaintext", [_scan()], True)
    assert v.verdict == "inconclusive"
    assert v.detail.startswith("positive control failed: the baseline's canaries were not found, "
                               "so the scan cannot prove anything")


def test_judge_encrypted_and_baseline_plaintext():
    v = judge(TRIAL, "encrypted", [_scan(header=False), _scan("wal", size=4096)], True)
    assert v.verdict == "encrypted" and v.as_expected and v.first_hit is None
    assert "scanned 2 files, 12,288 bytes, mean entropy 7.90 bits/byte" in v.detail
    baseline = judge(TRIAL, "plaintext", [_scan(hits=1, offset=0)], True)
    assert baseline.verdict == "plaintext" and baseline.as_expected


def test_error_verdict():
    v = error_verdict(TRIAL, "encrypted", "OSError: boom")
    assert (v.verdict, v.detail, v.files_scanned, v.files) == ("error", "OSError: boom", 0, ())


# --- verify_paths / describe ---

def test_verify_paths_directory_tree(tmp_path):
    _file(tmp_path, "db/main.db", os.urandom(8192))
    _file(tmp_path, "db/logs/wal", _noise(100) + CANARY.encode("utf-16-le"))
    result, scans, why = verify_paths([tmp_path / "db"], [CANARY])
    assert result == "plaintext" and why == "a canary found 1 times in 1 file"
    assert [s.path for s in scans] == ["logs/wal", "main.db"]
    lines = describe(scans)
    assert len(lines) == 2
    assert lines[0].startswith("logs/wal: 140 bytes, 1 canary hits (first at byte 100)")
    assert "entropy" in lines[1] and "0/2 blocks low" in lines[1]


def test_verify_paths_encrypted_inconclusive_empty_missing(tmp_path):
    enc = _file(tmp_path, "enc.db", os.urandom(4096))
    state, scans, why = verify_paths([enc], [CANARY])
    assert state == "encrypted" and scans[0].path == "enc.db"
    assert why == "no canary, and the data looks like ciphertext (0/1 blocks below 7 bits/byte)"
    # a plaintext header or two among ciphertext pages (a database's) is still ciphertext
    mixed = _file(tmp_path, "mixed.db", b"header\n" * 585 + os.urandom(39 * 4096 - 4095))
    assert verify_paths([mixed], [CANARY])[0] == "encrypted"
    text = _file(tmp_path, "notes.txt", b"nothing secret here, just words\n" * 1000)
    state, _, why = verify_paths([text], [CANARY])
    assert state == "inconclusive" and why.startswith("no canary, but 7/7 blocks below 7 bits/byte")
    tiny = _file(tmp_path, "tiny", os.urandom(100))
    assert verify_paths([tiny], [CANARY])[0] == "inconclusive"
    (tmp_path / "empty").mkdir()
    assert verify_paths([tmp_path / "empty"], [CANARY]) == ("empty", (), "no bytes to scan")
    with pytest.raises(FileNotFoundError, match="missing"):
        verify_paths([tmp_path / "missing"], [CANARY])


def test_real_sqlite_file_is_plaintext(tmp_path):
    db = tmp_path / "plain.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE persons (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO persons (name) VALUES (?)", [(f"name {i}",) for i in range(2000)])
    conn.execute("INSERT INTO persons (name) VALUES (?)", (CANARY,))
    conn.commit()
    assert conn.execute("SELECT count(*) FROM persons WHERE name = ?", (CANARY,)).fetchone() == (1,)
    conn.close()
    scans = scan([tmp_path], [CANARY], tmp_path, SQLITE_MAGIC)
    assert [s.path for s in scans] == ["plain.db"]
    assert scans[0].plaintext_header is True and scans[0].hits == 1
    v = judge(TRIAL, "plaintext", scans, True, label_first_hit(scans, tmp_path, [CANARY]))
    assert v.verdict == "plaintext" and v.as_expected
    assert v.first_hit == f"plain.db@{scans[0].first_hit_offset} (utf-8)"


def test_judge_baseline_with_only_a_plaintext_header_fails_positive_control():
    v = judge(TRIAL, "plaintext", [_scan(header=True)], True)
    assert v.verdict == "inconclusive" and "positive control failed" in v.detail


def test_judge_fs_layer_needs_canaries_in_its_decrypted_view():
    blind = judge(TRIAL, "encrypted", [_scan()], True, view_hits=0)
    assert blind.verdict == "error" and not blind.as_expected
    assert blind.detail.startswith("no canary found in the decrypted view: the positive control failed")
    gone = judge(TRIAL, "encrypted", [_scan()], True, view_gone="the gocryptfs mount at /w/plain was gone")
    assert gone.verdict == "error" and gone.detail.startswith("the gocryptfs mount at /w/plain was gone: ")
    assert gone.view_hits is None and gone.files_scanned == 1  # the files at rest were still scanned
    leaked = judge(TRIAL, "encrypted", [_scan(hits=2)], True, view_gone="the gocryptfs mount at /w/plain was gone")
    assert leaked.verdict == "plaintext"  # a canary on disk is proof, positive control or not
    seen = judge(TRIAL, "encrypted", [_scan()], True, view_hits=3, engine_state="12 of 12 encrypted")
    assert seen.verdict == "encrypted" and "showed them 3 times" in seen.detail
    assert (seen.view_hits, seen.engine_state) == (3, "12 of 12 encrypted")


def _marked(name: str, marker_hits: int, hits: int = 0) -> FileScan:
    return FileScan(path=name, bytes=8192, hits=hits, first_hit_offset=0 if hits else None, entropy_mean=5.0,
                    low_entropy_blocks=1, blocks=2, plaintext_header=None, marker_hits=marker_hits)


def test_markers_are_counted_apart_from_canaries_in_the_same_reads(tmp_path):
    marker = "TDEBENCH-MARKER-7f3a"
    path = _file(tmp_path, "db", _noise(5000) + marker.encode("utf-16-le") + _noise(5000) + CANARY.encode()
                 + marker.encode() + _noise(100))
    found = scan_file(path, [CANARY], tmp_path, None, chunk_size=4096, markers=[marker])
    assert (found.hits, found.marker_hits, found.first_hit_offset) == (1, 2, 10000 + 2 * len(marker))
    assert scan_file(path, [CANARY], tmp_path, None).marker_hits == 0  # no markers asked for


def test_judge_a_marker_on_disk_is_plaintext_unless_columns_are_sealed():
    scans = [_marked("heap", 1), _marked("wal", 2), _marked("other", 0)]
    whole = judge(TRIAL, "encrypted", scans, True)
    assert whole.verdict == "plaintext" and "marker found 3 times in 2 files" in whole.detail
    assert whole.exposed == ()
    column = judge(TRIAL, "encrypted", scans, True, column_layer=True)
    assert column.verdict == "encrypted" and column.exposed == ("heap", "wal")
    assert "other columns are plaintext in 2 files: heap, wal" in column.detail
    leaked = judge(TRIAL, "encrypted", [_marked("heap", 1, hits=1)], True, column_layer=True)
    assert leaked.verdict == "plaintext"


def test_judge_column_layer_needs_its_markers_found():
    blind = judge(TRIAL, "encrypted", [_marked("heap", 0)], True, column_layer=True)
    assert blind.verdict == "inconclusive" and "marker" in blind.detail and blind.exposed == ()


def test_the_prefix_search_counts_exactly_what_one_count_per_pattern_would():
    import random

    from tdebench.verify import _Matcher

    rng = random.Random(3)
    patterns = [(False, b"TDEBENCH-A1"), (False, b"TDEBENCH-A12"), (True, b"TDEBENCH-B"), (False, b"aa"),
                (True, "TDEBENCH-A1".encode("utf-16-le")), (False, "TDEBENCH-A12".encode("utf-16-le")),
                (False, "TDEBENCH-A1".encode("utf-16-be")), (True, "TDEBENCH-B".encode("utf-16-be"))]
    pieces = [p for _, p in patterns] + [b"TDEBENCH-", b"a", b"x", b"\x00", b"\x00" * 7, "TDEB".encode("utf-16-le")]
    for _ in range(1000):
        buffer = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        tail = rng.randint(0, min(len(buffer), 11))
        found = list(_Matcher(patterns).matches(buffer, tail))
        for is_marker, pattern in patterns:
            expected = buffer.count(pattern, max(0, tail - len(pattern) + 1))
            assert sum(1 for m, at in found if m == is_marker and buffer.startswith(pattern, at)) >= expected
        assert len(found) == sum(buffer.count(p, max(0, tail - len(p) + 1)) for _, p in patterns)


def test_a_live_scan_leaves_out_a_file_deleted_while_it_runs(tmp_path, monkeypatch):
    """An engine still running in an fs layer's decrypted view may delete a file between the
    listing and the read (PostgreSQL's pg_internal.init); a closed database may not."""
    import tdebench.verify as verify

    (tmp_path / "kept").write_bytes(CANARY.encode())
    (tmp_path / "gone").write_bytes(b"x")
    listed = verify._files

    def listing_then_delete(paths):
        files = listed(paths)
        (tmp_path / "gone").unlink()
        return files

    monkeypatch.setattr(verify, "_files", listing_then_delete)
    assert [s.path for s in scan([tmp_path], [CANARY], tmp_path, live=True)] == ["kept"]
    (tmp_path / "gone").write_bytes(b"x")
    with pytest.raises(FileNotFoundError):
        scan([tmp_path], [CANARY], tmp_path)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_found_at_either_alignment_in_free_pages(tmp_path, encoding):
    """The UTF-16 search looks at the read folded in byte pairs: a canary at an even or an odd
    offset, among zeros (free pages), and across a chunk border is found where it is. Beside a
    zero byte it matches the other byte order too (see scan_file), as bytes.count counts."""
    pattern = CANARY.encode(encoding)
    both = [CANARY.encode("utf-16-le"), CANARY.encode("utf-16-be")]
    for offset in (0, 1, 2, 3, 4096 - 21, 4096 - 20, 8192 - len(pattern)):
        data = bytearray(3 * 4096)
        data[offset:offset + len(pattern)] = pattern
        path = _file(tmp_path, f"db{offset}", bytes(data))
        result = scan_file(path, [CANARY], tmp_path, None, block_size=4096, chunk_size=4096)
        first = min(at for at in (data.find(p) for p in both) if at != -1)
        assert (result.hits, result.first_hit_offset) == (sum(data.count(p) for p in both), first), offset
        assert result.hits in (1, 2) and first in (offset - 1, offset)


def test_utf16_letters_split_across_byte_pairs_are_no_hit():
    """Bytes whose pairs OR to the canary's letters look like it in the fold, but are not it:
    every candidate is checked in the read itself."""
    from tdebench.verify import _Matcher

    letters = CANARY.encode()
    lookalike = b"".join(bytes([c & 0xF0, c & 0x0F]) for c in letters)  # (hi, lo) pairs: OR is the letter
    patterns = [(False, CANARY.encode("utf-16-le")), (False, CANARY.encode("utf-16-be"))]
    for shift in (0, 1):
        assert list(_Matcher(patterns).matches(b"\x00" * shift + lookalike + b"\x00" * 8, 0)) == []
    real = b"\x01" + CANARY.encode("utf-16-be") + CANARY.encode("utf-16-le")
    assert sorted(_Matcher(patterns).matches(real, 0)) == [(False, 1), (False, 1 + 2 * len(CANARY))]


def test_reads_are_filled_even_when_the_file_gives_less_per_call():
    """A FUSE file system (gocryptfs) may return less than asked for per read; a short read
    inside a file would shift every later block off its border, so each read is filled."""
    import io

    from tdebench.verify import _fill

    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.data, self.at = data, 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            n = min(len(buffer), 100, len(self.data) - self.at)
            buffer[:n] = self.data[self.at:self.at + n]
            self.at += n
            return n

    data = os.urandom(2500)
    source = Trickle(data)
    target = bytearray(1024)
    assert _fill(source, memoryview(target)) == 1024 and target == data[:1024]
    assert _fill(source, memoryview(target)) == 1024 and target == data[1024:2048]
    assert _fill(source, memoryview(target)) == 452 and target[:452] == data[2048:]
    assert _fill(source, memoryview(target)) == 0


def _shannon(block: bytes) -> float:
    import math
    from collections import Counter

    return -sum(c / len(block) * math.log2(c / len(block)) for c in Counter(block).values())


def test_block_entropy_is_shannons_formula(tmp_path):
    blocks = [bytes(range(16)) * 256, bytes(4096), b"ab" * 2048, os.urandom(4096),
              ("The quick brown fox jumps over the lazy dog. " * 100).encode()[:4096], b"\x07" + bytes(4095)]
    assert [round(_shannon(b), 6) for b in blocks[:3]] == [4.0, 0.0, 1.0]
    result = scan_file(_file(tmp_path, "db", b"".join(blocks)), [CANARY], tmp_path, None)
    measured = [b for b in blocks if any(b)]  # the free page is left out
    assert result.blocks == 6 and result.low_entropy_blocks == 4
    assert result.entropy_mean == round(sum(map(_shannon, measured)) / len(measured), 4)


# --- sampled entropy: a trial's scan measures every block of a file's first MiB, then one in ENTROPY_EVERY ---

def test_sampled_blocks_follow_no_stride():
    from tdebench.verify import ENTROPY_EVERY, ENTROPY_FIRST_BLOCKS, _sampled

    for every in (ENTROPY_EVERY, 4, 8, 16):
        picked = _sampled(0, 1 << 20, every)
        assert picked[:ENTROPY_FIRST_BLOCKS].all() and not picked[ENTROPY_FIRST_BLOCKS:].all()
        for stride in (1, 2, 3, 4, 8, 16, 64, 256, 4096):  # one page type per extent is sampled like the rest
            assert 0.85 / every < picked[ENTROPY_FIRST_BLOCKS::stride].mean() < 1.15 / every, (every, stride)
        assert (_sampled(1000, 500, every) == picked[1000:1500]).all()  # by the block's index in the file
    assert _sampled(5000, 300, 1).all()


def _sampled_count(first: int, count: int) -> int:
    from tdebench.verify import ENTROPY_EVERY, _sampled

    return int(_sampled(first, count, ENTROPY_EVERY).sum())


def test_a_trial_scan_samples_entropy_but_searches_every_byte(tmp_path):
    """3 MiB of text with the canary in a block the entropy sample leaves out: found all the same."""
    from tdebench.verify import ENTROPY_EVERY, _sampled

    text = bytearray(("The quick brown fox jumps over the lazy dog. " * 100_000).encode()[:768 * 4096])
    unsampled = next(i for i in range(256, 768) if not _sampled(i, 1, ENTROPY_EVERY)[0])
    text[unsampled * 4096 + 100:unsampled * 4096 + 120] = CANARY.encode()
    path = _file(tmp_path, "db", bytes(text))
    sampled = scan_file(path, [CANARY], tmp_path, None)
    assert (sampled.hits, sampled.first_hit_offset) == (1, unsampled * 4096 + 100)
    assert sampled.blocks == 768 and sampled.entropy_blocks == 256 + _sampled_count(256, 512) < 768
    assert sampled.low_entropy_blocks == sampled.entropy_blocks  # text: every measured block is low
    whole = scan_file(path, [CANARY], tmp_path, None, entropy_every=1)
    assert (whole.entropy_blocks, whole.low_entropy_blocks, whole.hits) == (768, 768, 1)
    with pytest.raises(ValueError, match="power of two"):
        scan_file(path, [CANARY], tmp_path, None, entropy_every=6)


def test_sampled_entropy_skips_free_pages_and_does_not_depend_on_the_read_size(tmp_path):
    data = os.urandom(256 * 4096) + bytes(256 * 4096) + ("lorem ipsum dolor " * 60_000).encode()[:256 * 4096]
    path = _file(tmp_path, "db", data)
    result = scan_file(path, [CANARY], tmp_path, None)
    assert result.blocks == 768
    assert result.entropy_blocks == 256 + _sampled_count(512, 256)  # the free pages are never measured
    assert result.low_entropy_blocks == _sampled_count(512, 256)
    small_reads = scan_file(path, [CANARY], tmp_path, None, chunk_size=3 * 4096)
    assert small_reads == result


def test_verify_measures_every_block_where_its_verdict_rests_on_them(tmp_path):
    """Text in only the blocks a trial's sample leaves out: the trial's scan sees no low block
    (its verdict never rests on entropy), `tdebench verify` sees them all and is not fooled."""
    from tdebench.verify import ENTROPY_EVERY, _sampled

    picked = _sampled(0, 1024, ENTROPY_EVERY)
    text = ("plain words " * 400).encode()[:4096]
    path = _file(tmp_path, "db", b"".join(os.urandom(4096) if picked[i] else text for i in range(1024)))
    assert scan_file(path, [CANARY], tmp_path, None).low_entropy_blocks == 0
    state, scans, why = verify_paths([path], [CANARY])
    assert scans[0].entropy_blocks == 1024 and scans[0].low_entropy_blocks == 1024 - int(picked.sum())
    assert state == "inconclusive" and "blocks below 7 bits/byte" in why


def test_judge_summary_says_how_many_blocks_were_measured():
    sampled = FileScan(path="db", bytes=64 << 20, hits=0, first_hit_offset=None, entropy_mean=7.95,
                       low_entropy_blocks=2, blocks=16384, plaintext_header=False, entropy_blocks=2300)
    v = judge(TRIAL, "encrypted", [sampled, _scan("wal", size=4096)], True)
    assert v.verdict == "encrypted"
    assert "mean entropy 7.95 bits/byte, 2 of 2301 measured blocks below 7 (16385 in all)" in v.detail


def test_a_file_larger_than_its_size_when_opened_is_scanned_whole(tmp_path):
    """The read buffer is sized by the file (a small file gets no 4 MiB buffer); a file that grows
    meanwhile (a live fs view) is read on in reads of that size. A FIFO's size is 0: one block."""
    import threading

    data = bytearray(_noise(5 * 4096 + 100))
    data[4096 - 7:4096 - 7 + 40] = CANARY.encode("utf-16-be")  # across the first read's end
    fifo = tmp_path / "growing"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(bytes(data),))
    writer.start()
    result = scan_file(fifo, [CANARY], tmp_path, None, entropy_every=1)
    writer.join()
    assert (result.bytes, result.hits, result.first_hit_offset) == (len(data), 1, 4096 - 7)
    assert result.blocks == result.entropy_blocks == 5 and result.low_entropy_blocks == 0


def test_verify_leaves_free_pages_out_of_the_share_of_low_blocks(tmp_path):
    """A file of zeros is not ciphertext, and free pages do not dilute plaintext pages: the 5% share
    is of the blocks that are not all zero (before, a sparse file of text pages was 'encrypted')."""
    zeros = _file(tmp_path, "zeros/sparse", bytes(64 * 4096))
    state, scans, why = verify_paths([zeros], [CANARY])
    assert state == "inconclusive" and why.endswith("the files are too small or all zeros")
    assert describe(scans) == ["sparse: 262,144 bytes, 0 canary hits, all zeros: no entropy"]
    text = ("plain words " * 400).encode()[:4096]
    sparse = _file(tmp_path, "mixed/sparse", bytes(1000 * 4096) + text * 10 + os.urandom(10 * 4096))
    state, scans, why = verify_paths([sparse], [CANARY])
    assert state == "inconclusive" and why.startswith("no canary, but 10/20 blocks below 7 bits/byte")
    assert (scans[0].blocks, scans[0].entropy_blocks) == (1020, 20)
    headers = _file(tmp_path, "db/sparse", bytes(1000 * 4096) + text + os.urandom(30 * 4096))
    assert verify_paths([headers], [CANARY])[0] == "encrypted"  # 1 of 31: a header among ciphertext


def test_the_sieve_finds_exactly_what_find_finds(monkeypatch):
    """`_finds` sieves a piece at a time (pieces of 64 bytes here, so that occurrences straddle
    their borders), falls back to bytes.find where look-alikes crowd a piece, and either way
    returns every occurrence, overlapping ones too, from `start` on."""
    import random

    import tdebench.verify as verify

    def every(haystack: bytes, needle: bytes, start: int) -> list[int]:
        return [i for i in range(start, len(haystack) - len(needle) + 1) if haystack.startswith(needle, i)]

    monkeypatch.setattr(verify, "SIEVE_BYTES", 64)
    rng = random.Random(16)
    needles = [b"TDEBENCH-", b"aaa", b"ab", b"x", b"T\x00D\x00E"]
    pieces = needles + [b"TDEBENCX-", b"T", b"-", b"a", b"\x00", b"E"]
    for round_ in range(300):
        haystack = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 120)))
        if round_ % 3 == 0:
            haystack = bytearray(haystack)  # the scan's own buffer is a bytearray
        for needle in needles:
            start = rng.randint(0, 20)
            assert list(verify._finds(haystack, needle, start)) == every(bytes(haystack), needle, start)
    crowded = b"TDEBENCX-" * 40 + b"TDEBENCH-" + b"TDEBENCX-" * 40  # a candidate every 9 bytes: find serves
    assert list(verify._finds(crowded, b"TDEBENCH-")) == [360]


@pytest.fixture(params=["hyperscan", "sieve"])
def matcher(request, monkeypatch):
    """Each search the scan may use: Hyperscan where its wheel is installed, the numpy sieve elsewhere."""
    import tdebench.verify as verify

    if request.param == "hyperscan" and not verify.HYPERSCAN:
        pytest.skip("Hyperscan has no wheel on this platform")
    chosen = verify._HyperscanMatcher if request.param == "hyperscan" else verify._SieveMatcher
    monkeypatch.setattr(verify, "_Matcher", chosen)
    verify._matcher.cache_clear()  # made once per canaries and markers: made again with this search
    yield chosen
    verify._matcher.cache_clear()


def test_both_searches_find_the_same_matches(matcher):
    """Look-alikes that overlap the patterns, UTF-16 at odd offsets and among zeros, patterns that
    share prefixes, one the prefix of another, one given twice and one that overlaps itself
    (counted without overlap, as bytes.count counts): both searches yield the same
    (is_marker, offset) pairs, whatever the tail."""
    import random

    from tdebench.verify import _HyperscanMatcher, _SieveMatcher

    rng = random.Random(25)
    patterns = [(False, p) for _, p in _patterns_of("TDEBENCH-CANARY-1", "TDEBENCH-CANARY-12")] + [
        (True, p) for _, p in _patterns_of("TDEBENCH-MARKER-1")] + [(True, b"TDEBENCH-CANARY-1"), (False, b"abab")]
    pieces = [p for _, p in patterns] + [b"TDEBENCH-", b"TDEBENCH-CANARY-", b"1", b"2", b"\x00", b"\x00" * 9,
                                         b"x", "TDEBENCH-CAN".encode("utf-16-le"), b"\x00T\x00D", b"ab", b"ab"]
    for _ in range(500):
        buffer = bytearray(b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))))
        tail = rng.randint(0, min(len(buffer), 40))
        found = sorted(matcher(patterns).matches(buffer, tail))
        assert found == sorted(_SieveMatcher(patterns).matches(buffer, tail)), (buffer, tail)
        if matcher is _HyperscanMatcher:
            assert found == sorted(_HyperscanMatcher(patterns).matches(bytes(buffer), tail))


def _patterns_of(*canaries: str) -> list[tuple[str, bytes]]:
    from tdebench.verify import _patterns

    return _patterns(canaries)


def test_scan_counts_what_count_counts_across_read_borders(tmp_path, matcher):
    """Canaries and markers in every encoding, at odd offsets, beside look-alikes and across the
    borders of small reads: the scan counts what bytes.count counts in the whole file (the
    patterns do not overlap themselves) and gives the first canary's offset."""
    import random

    rng = random.Random(6)
    canary, marker = "TDEBENCH-CANARY-0f", "TDEBENCH-MARKER-0f"
    canaries, markers = [p for _, p in _patterns_of(canary)], [p for _, p in _patterns_of(marker)]
    pieces = canaries + markers + [b"TDEBENCH-CANARY-0", b"\x00", b"\x00" * 5, b"x" * 3, os.urandom(7)]
    for round_ in range(40):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 200)))
        path = _file(tmp_path, f"db{round_}", data)
        result = scan_file(path, [canary], tmp_path, None, block_size=16, chunk_size=64, markers=[marker])
        starts = [at for at in (data.find(p) for p in canaries) if at != -1]
        assert result.hits == sum(data.count(p) for p in canaries), round_
        assert result.marker_hits == sum(data.count(p) for p in markers), round_
        assert result.first_hit_offset == (min(starts) if starts else None), round_


def _entropy_fields(scanned: FileScan) -> tuple[object, ...]:
    return (scanned.entropy_mean, scanned.low_entropy_blocks, scanned.blocks, scanned.entropy_blocks)


@pytest.mark.parametrize("block_size", [4096, 64, 12])
def test_compiled_byte_counts_give_the_entropy_bincount_gives(tmp_path, monkeypatch, block_size):
    """A read with many blocks to measure has its bytes counted by numba's loop, one with few by
    one bincount per block: the same figures to the last bit, for ciphertext, text and free pages,
    in blocks of whole 64-bit words or not (12 bytes: the zero test cannot go by 64-bit words)."""
    import tdebench.verify as verify

    text = ("Customer#000000001 regular accounts " * 200).encode()[:block_size]
    data = b"".join(os.urandom(block_size) if i % 3 == 0 else text if i % 3 == 1 else bytes(block_size)
                    for i in range(600)) + b"tail"
    path = _file(tmp_path, "db", data)
    chunk = block_size * 300
    scans = []
    for threshold in (1, 1 << 30):  # the compiled loop for every read; never
        monkeypatch.setattr(verify, "ENTROPY_KERNEL_BLOCKS", threshold)
        scans.append(scan_file(path, [CANARY], tmp_path, None, block_size=block_size, chunk_size=chunk,
                               entropy_every=1))
    compiled, counted = scans
    assert _entropy_fields(compiled) == _entropy_fields(counted)
    assert (compiled.entropy_blocks, compiled.blocks) == (400, 600)
    assert compiled.low_entropy_blocks == (200 if block_size > 256 else 400)  # 64 bytes hold at most 6 bits/byte


def test_compiled_block_bits_match_bincount_for_picked_rows():
    import numpy as np

    from tdebench.byte_counts import block_bits
    from tdebench.verify import _c_log_c

    blocks = np.frombuffer(os.urandom(40 * 4096), dtype=np.uint8).reshape(40, 4096)
    picked = np.arange(40) % 3 != 1
    table = _c_log_c(4096)
    expected = []
    for block in blocks[picked]:  # in plain Python floats: four lanes of one byte value in four, in order
        terms = [float(table[count]) for count in np.bincount(block, minlength=256)]
        lanes = [0.0] * 4
        for value, term in enumerate(terms):
            lanes[value % 4] += term
        expected.append(12 - ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) / 4096)
    for source in (blocks, blocks.copy()):  # read-only (bytes) and writable (a read's bytearray) alike
        assert block_bits(source, picked, table).tolist() == expected
    assert block_bits(blocks, np.zeros(40, dtype=bool), table).shape == (0,)
    zeros = np.zeros((3, 4096), dtype=np.uint8)
    assert block_bits(zeros, np.ones(3, dtype=bool), table).shape == (0,)  # free pages: no histogram
    with pytest.raises(ValueError, match="4-byte words"):
        block_bits(blocks[:, :4095], picked, table)


@pytest.mark.parametrize("helpers", [0, 1, 3])
def test_helper_threads_give_the_entropy_one_thread_gives(tmp_path, monkeypatch, helpers):
    """Reads of many blocks are measured in shares by helper threads and the scan's own thread:
    the same figures to the last bit as one thread, whatever the number of helpers, with a last
    read that leaves shares of unequal size."""
    import tdebench.verify as verify

    text = ("Customer#000000001 regular accounts " * 200).encode()[:4096]
    data = b"".join(os.urandom(4096) if i % 3 == 0 else text if i % 3 == 1 else bytes(4096) for i in range(1700))
    path = _file(tmp_path, "db", data + CANARY.encode("utf-16-be"))
    monkeypatch.setattr(verify, "ENTROPY_HELPERS", helpers)
    mapped = scan_file(path, [CANARY], tmp_path, None, entropy_every=1)  # reads of 1024 and 676 blocks
    read = scan_file(path, [CANARY], tmp_path, None, entropy_every=1, mapped=False)
    monkeypatch.setattr(verify, "ENTROPY_HELPERS", 0)
    assert mapped == read == scan_file(path, [CANARY], tmp_path, None, entropy_every=1)
    assert (mapped.hits, mapped.blocks, mapped.entropy_blocks, mapped.low_entropy_blocks) == (1, 1700, 1134, 567)


def test_shares_are_measured_by_whichever_thread_takes_them():
    """A helper that takes every share, one that takes none (it started late): the same bits in
    order; an error in a helper's share is raised in the scan's thread."""
    import threading

    import numpy as np

    from tdebench.verify import ENTROPY_KERNEL_BLOCKS, _block_bits, _c_log_c, _Shares

    blocks = np.frombuffer(os.urandom(700 * 64), dtype=np.uint8).reshape(700, 64)
    picked = np.arange(700) % 5 != 0
    expected = _block_bits(blocks, picked, _c_log_c(64)).tolist()
    assert len(expected) == 560 and 700 // ENTROPY_KERNEL_BLOCKS == 2  # shares of 256 and 444 blocks
    helped = _Shares(blocks, picked, _c_log_c(64))
    helper = threading.Thread(target=helped.measure)
    helper.start()
    helper.join()
    assert helped.bits().tolist() == expected
    assert _Shares(blocks, picked, _c_log_c(64)).bits().tolist() == expected
    failing = _Shares(blocks, picked, np.zeros(3))  # a table too short for the counts: IndexError
    helper = threading.Thread(target=failing.measure)
    helper.start()
    helper.join()
    with pytest.raises(IndexError):
        failing.bits()


def test_a_file_of_zeros_is_all_free_pages(tmp_path):
    """Zeros everywhere (a preallocated or sparse file): every block counted, none measured, no hit
    in any encoding (the UTF-16 patterns are mostly zeros)."""
    path = tmp_path / "zeros"
    with path.open("wb") as fh:
        fh.truncate(3 << 20)
    result = scan_file(path, [CANARY], tmp_path, None, entropy_every=1, markers=["TDEBENCH-MARKER-1"])
    assert (result.hits, result.marker_hits, result.first_hit_offset) == (0, 0, None)
    assert (result.blocks, result.entropy_blocks, result.entropy_mean) == (768, 0, 0.0)


def _planted(rng, size: int, pieces: list[bytes]) -> bytes:
    """`size` bytes of noise with `pieces` at random places (some across any border)."""
    data = bytearray(rng.randbytes(size))
    for piece in pieces * 6:
        at = rng.randrange(size - len(piece))
        data[at:at + len(piece)] = piece
    return bytes(data)


def test_a_file_at_rest_is_scanned_through_maps_and_finds_what_reads_find(tmp_path, monkeypatch):
    """A file no one writes is mapped (a read lease taken), a map of MAP_BYTES at a time: patterns
    across the maps' borders and the reads' are counted once, as reads count them, with the same
    entropy figures."""
    import mmap
    import random

    import tdebench.verify as verify

    monkeypatch.setattr(verify, "MAP_BYTES", 2 * mmap.PAGESIZE)
    mapped = []
    real_mmap = mmap.mmap
    monkeypatch.setattr(verify.mmap, "mmap", lambda *a, **k: mapped.append(k["offset"]) or real_mmap(*a, **k))
    pieces = [p for _, p in _patterns_of(CANARY)] + [p for _, p in _patterns_of("TDEBENCH-MARKER-7f3a")]
    rng = random.Random(7)
    for round_ in range(12):
        path = _file(tmp_path, f"db{round_}", _planted(rng, rng.randrange(1, 6 * mmap.PAGESIZE), pieces))
        data = path.read_bytes()
        by_map = scan_file(path, [CANARY], tmp_path, None, block_size=64, chunk_size=1024,
                           markers=["TDEBENCH-MARKER-7f3a"], entropy_every=1)
        by_read = scan_file(path, [CANARY], tmp_path, None, block_size=64, chunk_size=1024,
                            markers=["TDEBENCH-MARKER-7f3a"], entropy_every=1, mapped=False)
        assert by_map == by_read, round_
        assert by_map.hits == sum(data.count(p) for p in pieces[:3]), round_
    assert len(mapped) > 12 and max(mapped) > 0  # maps were made, at offsets past the first


def test_a_part_with_a_hole_is_read_never_mapped(tmp_path, monkeypatch):
    """A hole (a sparse file's range never written: an engine's file it extended and could not
    fill on a full disk) is read, not mapped: on a full tmpfs a map's first touch of it ends the
    process with SIGBUS (tests/integration/test_full_disk.py does that for real). The parts
    around it are still mapped, and the findings are what reads find."""
    import mmap

    import tdebench.verify as verify

    page = mmap.PAGESIZE
    monkeypatch.setattr(verify, "MAP_BYTES", 2 * page)
    mapped: list[tuple[int, int]] = []
    real_mmap = mmap.mmap
    monkeypatch.setattr(verify.mmap, "mmap",
                        lambda fd, length, **k: mapped.append((k["offset"], length)) or real_mmap(fd, length, **k))
    pieces = [p for _, p in _patterns_of(CANARY)]
    after = bytearray(_noise(4 * page))
    after[2 * page - 9:2 * page - 9 + len(pieces[0])] = pieces[0]  # across the border of two mapped parts
    after[page:page + len(pieces[1])] = pieces[1]
    path = tmp_path / "sparse"
    with path.open("wb") as fh:
        fh.write(_noise(2 * page))
        fh.seek(6 * page)  # pages 2 to 5: a hole
        fh.write(after)
    with path.open("rb") as fh:
        assert os.lseek(fh.fileno(), 0, os.SEEK_HOLE) == 2 * page, "this file system keeps no holes"
    by_map = scan_file(path, [CANARY], tmp_path, None, block_size=64, chunk_size=1024, entropy_every=1)
    assert by_map == scan_file(path, [CANARY], tmp_path, None, block_size=64, chunk_size=1024, entropy_every=1,
                               mapped=False)
    assert by_map.hits == 2 and by_map.bytes == 10 * page
    assert all(offset + length <= 2 * page or offset >= 6 * page for offset, length in mapped), mapped
    assert {offset < 2 * page for offset, _ in mapped} == {True, False}  # before the hole and after it: maps


def test_a_writer_arriving_between_maps_has_the_rest_read(tmp_path, monkeypatch):
    """Where no read lease can be had for the next map (a writer opened the file meanwhile, or it
    is open for writing from the start), the scan reads the rest from there, the bytes before the
    border kept: the same counts as a scan by reads alone."""
    import contextlib
    import mmap
    import random

    import tdebench.verify as verify

    monkeypatch.setattr(verify, "MAP_BYTES", 2 * mmap.PAGESIZE)
    leases = iter([True, False])

    @contextlib.contextmanager
    def one_lease(_fd):
        yield next(leases, False)

    monkeypatch.setattr(verify, "_read_lease", one_lease)
    pieces = [p for _, p in _patterns_of(CANARY)]
    data = bytearray(_planted(random.Random(8), 5 * mmap.PAGESIZE, pieces))
    border = 2 * mmap.PAGESIZE
    data[border - 11:border - 11 + len(pieces[1])] = pieces[1]  # across the map's end
    path = _file(tmp_path, "db", bytes(data))
    scanned = scan_file(path, [CANARY], tmp_path, None, entropy_every=1, block_size=64, chunk_size=1024)
    assert scanned == scan_file(path, [CANARY], tmp_path, None, entropy_every=1, block_size=64, chunk_size=1024,
                                mapped=False)
    assert scanned.hits == sum(data.count(p) for p in pieces) and scanned.bytes == len(data)


def test_a_file_open_for_writing_gets_no_read_lease(tmp_path):
    """The kernel grants a read lease only while no one has the file open for writing: such a file
    (a live engine's) is read, never mapped, so it cannot shrink under a map."""
    from tdebench.verify import _read_lease

    path = _file(tmp_path, "db", b"x" * 100)
    with path.open("rb") as reader:
        with _read_lease(reader.fileno()) as leased:
            assert leased
        with path.open("r+b"), _read_lease(reader.fileno()) as leased:
            assert not leased


def test_a_file_that_cannot_be_mapped_is_read(tmp_path, monkeypatch):
    """A filesystem may grant the lease and refuse the map (FUSE with direct I/O): the file is
    read instead, with the same findings."""
    import tdebench.verify as verify

    def refuse(*_args, **_kwargs):
        raise OSError(19, "No such device")

    data = _noise(3 * 4096) + CANARY.encode() + _noise(4096)
    path = _file(tmp_path, "db", data)
    by_read = scan_file(path, [CANARY], tmp_path, None, entropy_every=1, mapped=False)
    monkeypatch.setattr(verify.mmap, "mmap", refuse)
    assert scan_file(path, [CANARY], tmp_path, None, entropy_every=1) == by_read
    assert by_read.hits == 1 and by_read.bytes == len(data)
