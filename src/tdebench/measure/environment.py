"""The machine a run was measured on, stored with the results so numbers can be compared
(and distrusted) later: encryption speed depends above all on the CPU's AES instructions,
so their presence is recorded explicitly.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

# Instructions that decide cipher speed: AES rounds (aes, vaes), GCM's carry-less multiply
# (pclmulqdq, vpclmulqdq), SHA (sha_ni, for SQLCipher's HMAC and key derivation) and the
# vector widths ChaCha20 and wide AES use (avx2, avx512f).
CRYPTO_FLAGS = ("aes", "vaes", "pclmulqdq", "vpclmulqdq", "sha_ni", "avx2", "avx512f")
PACKAGES = ("tdebench", "duckdb", "apsw-sqlite3mc", "sqlglot", "numpy", "scipy", "cryptography", "psutil")
CPUINFO = Path("/proc/cpuinfo")
OS_RELEASE = Path("/etc/os-release")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _cpuinfo_field(cpuinfo: str, *names: str) -> str | None:
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in names:
            return value.strip()
    return None


def cpu_model(cpuinfo: str | None = None) -> str:
    text = _read(CPUINFO) if cpuinfo is None else cpuinfo
    return _cpuinfo_field(text, "model name") or platform.processor() or "unknown"


def cpu_flags(cpuinfo: str | None = None) -> dict[str, bool]:
    """Which of `CRYPTO_FLAGS` the CPU has (x86 "flags" or ARM "Features" of /proc/cpuinfo)."""
    text = _read(CPUINFO) if cpuinfo is None else cpuinfo
    present = set((_cpuinfo_field(text, "flags", "Features") or "").split())
    return {flag: flag in present for flag in CRYPTO_FLAGS}


def os_name() -> str:
    for line in _read(OS_RELEASE).splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"')
    return platform.platform()


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages results depend on (None: not installed)."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def filesystem(directory: Path) -> str | None:
    """File system type holding `directory` (its longest mount point), e.g. "ext4"."""
    target = os.path.realpath(directory)
    best: tuple[int, str] | None = None
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) > best[0]):
            best = (len(mount), part.fstype)
    return best[1] if best else None


def snapshot(engine_versions: dict[str, str], directory: Path | None = None) -> dict[str, Any]:
    """Everything about this machine that a result depends on, JSON-serialisable.

    `directory` is the run's output directory; when given, its file system type is recorded.
    """
    return {
        "hostname": socket.gethostname(),
        "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu_model": cpu_model(),
        "cpu_flags": cpu_flags(),
        "machine": platform.machine(),
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_bytes": psutil.virtual_memory().total,
        "kernel": platform.release(),
        "os": os_name(),
        "python": sys.version.split()[0],
        "packages": package_versions(),
        "engines": dict(engine_versions),
        "filesystem": filesystem(directory) if directory is not None else None,
    }
