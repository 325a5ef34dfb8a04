"""measure/oscache.py: the eviction of one tree's pages from the OS page cache, checked with mincore."""

from __future__ import annotations

import os
from pathlib import Path

from tdebench.measure import oscache


def _cached_file(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    path.read_bytes()  # written and read: its pages are in the page cache


def test_evicting_a_tree_empties_its_pages_and_leaves_other_files_cached(tmp_path: Path) -> None:
    _cached_file(tmp_path / "db" / "data" / "main.db", 1 << 20)
    _cached_file(tmp_path / "db" / "wal", 64 << 10)
    _cached_file(tmp_path / "other" / "keep.bin", 256 << 10)
    (tmp_path / "db" / "link").symlink_to(tmp_path / "other" / "keep.bin")  # not followed
    assert oscache.resident_pages(tmp_path / "db") > 0
    assert oscache.evict_files(tmp_path / "db") is True
    assert oscache.resident_pages(tmp_path / "db") == 0
    assert oscache.resident_pages(tmp_path / "other") > 0


def test_a_file_still_mapped_by_a_process_is_reported_not_evicted(tmp_path: Path) -> None:
    import mmap
    _cached_file(tmp_path / "db" / "main.db", 256 << 10)
    with open(tmp_path / "db" / "main.db", "rb") as handle, \
            mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ) as mapped:
        assert sum(mapped[i] for i in range(0, len(mapped), mmap.PAGESIZE)) >= 0  # every page faulted in
        assert oscache.evict_files(tmp_path / "db") is False  # mapped pages stay: the check says so
    assert oscache.evict_files(tmp_path / "db") is True


def test_empty_follows_the_plans_evict(tmp_path: Path, monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(oscache, "drop_all", lambda: calls.append("os") or True)
    monkeypatch.setattr(oscache, "evict_files", lambda root: calls.append(f"files {root.name}") or True)
    assert oscache.empty("files", tmp_path / "ws") and oscache.empty("os", tmp_path / "ws")
    assert calls == ["files ws", "os"]
