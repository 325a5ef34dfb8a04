"""results.jsonl cut by a crash (store._records, through read_run and keep_complete): a last line
cut anywhere inside its record is a torn line, read without it; the same cut on any other line
is an error naming the file and the line, and keep_complete then leaves the file as it was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tdebench.results import Measurement, TrialKey, TrialOutcome, Verdict
from tdebench.store import RESULTS, ResultStore, keep_complete, read_run, read_run_torn

KEY = TrialKey("duckdb", "none", "tpch", 0.01, 1)
RECORDS = [
    Measurement(KEY, "power", "q1", {"elapsed_s": 0.25, "cpu_s": 0.125}, stream=0, answer="ok"),
    Measurement(KEY, "power", "q2", {"elapsed_s": 0.5}, stream=0, answer="ok"),
    Verdict(KEY, "plaintext", "plaintext", files_scanned=1, bytes_scanned=4096, first_hit="db@7 (utf-8)"),
    TrialOutcome(KEY, "ok", "warm", cache_dropped=False, elapsed_s=1.5),
]


def _run(directory: Path) -> list[bytes]:
    """A run directory holding RECORDS; its results.jsonl's lines."""
    store = ResultStore(directory)
    store.start('name = "torn"\n', {"cpu_model": "test"})
    for record in RECORDS:
        store.append(record)
    return (directory / RESULTS).read_bytes().splitlines(keepends=True)


def _everything(directory: Path) -> list[object]:
    run = read_run(directory)
    return [*run.measurements, *run.verdicts, *run.trials]


def test_a_last_line_cut_anywhere_is_read_without_it(tmp_path: Path) -> None:
    lines = _run(tmp_path)
    whole, last = b"".join(lines[:-1]), lines[-1]
    for cut in range(1, len(last) - 1):  # from its first byte to all of it but the closing brace
        (tmp_path / RESULTS).write_bytes(whole + last[:cut])
        assert _everything(tmp_path) == RECORDS[:-1], last[:cut]


def test_a_last_line_missing_only_its_newline_is_a_whole_record(tmp_path: Path) -> None:
    lines = _run(tmp_path)
    (tmp_path / RESULTS).write_bytes(b"".join(lines)[:-1])
    assert _everything(tmp_path) == RECORDS
    cut = keep_complete(tmp_path)
    assert not cut.torn_line and (tmp_path / RESULTS).read_bytes() == b"".join(lines)  # the newline is back


def test_keep_complete_drops_a_torn_last_line_and_says_so(tmp_path: Path) -> None:
    lines = _run(tmp_path)
    (tmp_path / RESULTS).write_bytes(b"".join(lines) + lines[0][:30])  # the next record, cut mid-write
    cut = keep_complete(tmp_path)
    assert (cut.kept, cut.dropped, cut.torn_line) == (1, 0, True)
    assert (tmp_path / RESULTS).read_bytes() == b"".join(lines)


@pytest.mark.parametrize("torn", [0, 1, 2])
def test_a_line_cut_anywhere_else_is_an_error_naming_its_line(tmp_path: Path, torn: int) -> None:
    lines = _run(tmp_path)
    damaged = [*lines[:torn], lines[torn][:40] + b"\n", *lines[torn + 1:]]  # a line cut, the next ones whole
    (tmp_path / RESULTS).write_bytes(b"".join(damaged))
    where = re.escape(f"{tmp_path / RESULTS}:{torn + 1}: not valid JSON")
    with pytest.raises(ValueError, match=where):
        read_run(tmp_path)
    with pytest.raises(ValueError, match=where):
        keep_complete(tmp_path)
    assert (tmp_path / RESULTS).read_bytes() == b"".join(damaged)  # left as it was


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    lines = _run(tmp_path)
    (tmp_path / RESULTS).write_bytes(b"".join([lines[0], b"\n", *lines[1:], b"\n"]))
    assert _everything(tmp_path) == RECORDS


def test_a_line_of_invalid_utf8_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    """It used to be exit 2 without file or line (a UnicodeDecodeError's own message)."""
    lines = _run(tmp_path)
    (tmp_path / RESULTS).write_bytes(b"".join([lines[0], b'{"kind": "\xff\xfe"}\n', *lines[1:]]))
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / RESULTS}:2: not valid UTF-8")):
        read_run(tmp_path)


def test_the_torn_line_is_named(tmp_path: Path) -> None:
    lines = _run(tmp_path)
    assert read_run_torn(tmp_path)[1] is None
    (tmp_path / RESULTS).write_bytes(b"".join(lines[:-1]) + lines[-1][:20])
    run, torn = read_run_torn(tmp_path)
    assert torn == len(lines) and len(run.trials) == len(read_run(tmp_path).trials)
