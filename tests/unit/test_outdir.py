"""The --out directory: a user's files are never removed, --force removes only what a run
wrote, and one run at a time holds the directory (run/outdir.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tdebench.run import outdir
from tdebench.store import MANIFEST, RAW_FILES, ResultStore, manifest, record_written


def a_run(directory: Path) -> None:
    """The raw files of a run, as `tdebench run` starts one, and a plot its report wrote."""
    ResultStore(directory).start("name = 'x'\n", {})
    (directory / "plots").mkdir()
    (directory / "plots" / "power.png").write_bytes(b"png")
    (directory / "report.md").write_text("![power](plots/power.png)\n")
    record_written(directory, [directory / "plots" / "power.png", directory / "report.md"])


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_new_or_empty_directory_is_taken_and_locked(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for directory in (tmp_path / "new" / "deeper", tmp_path / "empty"):
        handle = outdir.prepare(directory, force=False)
        assert (directory / outdir.LOCK).read_text().strip() == str(os.getpid())
        outdir.unlock(directory, handle)
        assert not (directory / outdir.LOCK).exists()


def test_a_directory_of_user_files_is_refused_even_with_force(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("my own notes")
    (tmp_path / "summary.csv").write_text("a,b\n")
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "mine.png").write_bytes(b"mine")
    before = snapshot(tmp_path)
    for force in (False, True):
        with pytest.raises(outdir.OutDirError, match="not empty .* holds no tdebench run"):
            outdir.prepare(tmp_path, force=force)
    assert snapshot(tmp_path) == before
    assert not (tmp_path / outdir.LOCK).exists()


def test_a_run_is_replaced_only_with_force_and_only_its_files_go(tmp_path: Path) -> None:
    a_run(tmp_path)
    (tmp_path / "plots" / "mine.png").write_bytes(b"the user's")
    (tmp_path / "notes.txt").write_text("the user's")
    with pytest.raises(outdir.OutDirError, match="already holds a run.*--force"):
        outdir.prepare(tmp_path, force=False)
    assert (tmp_path / "results.jsonl").exists() and not (tmp_path / outdir.LOCK).exists()
    handle = outdir.prepare(tmp_path, force=True)
    outdir.unlock(tmp_path, handle)
    assert snapshot(tmp_path) == {"notes.txt": b"the user's", "plots/mine.png": b"the user's"}


def test_force_removes_the_directories_a_run_leaves_empty(tmp_path: Path) -> None:
    a_run(tmp_path)
    outdir.unlock(tmp_path, outdir.prepare(tmp_path, force=True))
    assert list(tmp_path.iterdir()) == []


def test_a_manifest_cannot_lead_force_out_of_the_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    run = tmp_path / "run"
    run.mkdir()
    a_run(run)
    (run / "linked").symlink_to(tmp_path)
    (run / MANIFEST).write_text('{"files": ["../outside.txt", "%s", "linked/outside.txt", "results.jsonl"]}'
                                % outside)
    outdir.unlock(run, outdir.prepare(run, force=True))
    assert outside.read_text() == "keep"
    assert not (run / "results.jsonl").exists()


def test_a_run_from_before_manifests_loses_only_its_known_files(tmp_path: Path) -> None:
    a_run(tmp_path)
    (tmp_path / MANIFEST).unlink()
    (tmp_path / "summary.csv").write_text("derived\n")
    (tmp_path / "plots" / "mine.png").write_bytes(b"not shown by report.md")
    assert outdir.written_files(tmp_path) == [*RAW_FILES, "summary.csv", "report.md", "plots/power.png"]
    outdir.unlock(tmp_path, outdir.prepare(tmp_path, force=True))
    assert snapshot(tmp_path) == {"plots/mine.png": b"not shown by report.md"}


def test_a_second_run_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from tdebench.run import outdir\n"
        f"held = outdir.prepare(Path({str(tmp_path)!r}), force=False); print('locked', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for force in (False, True):
            with pytest.raises(outdir.OutDirError, match=f"in use by another tdebench run \\(pid {holder.pid}\\)"):
                outdir.prepare(tmp_path, force=force)
    finally:
        holder.kill()
        holder.wait()
    # the kernel dropped the killed run's lock: its lock file is no obstacle
    outdir.unlock(tmp_path, outdir.prepare(tmp_path, force=False))


def test_the_manifest_lists_what_the_store_wrote(tmp_path: Path) -> None:
    ResultStore(tmp_path).start("", {})
    assert manifest(tmp_path) == sorted([*RAW_FILES, MANIFEST])
