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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psutil

# Instructions that decide cipher speed: AES rounds (aes, vaes), GCM's carry-less multiply
# (pclmulqdq, vpclmulqdq), SHA (sha_ni, for SQLCipher's HMAC and key derivation) and the
# vector widths ChaCha20 and wide AES use (avx2, avx512f).
CRYPTO_FLAGS = ("aes", "vaes", "pclmulqdq", "vpclmulqdq", "sha_ni", "avx2", "avx512f")
PACKAGES = ("tdebench", "duckdb", "apsw-sqlite3mc", "sqlcipher3-binary", "sqlglot", "numpy", "scipy", "cryptography",
            "psutil")
CPUINFO = Path("/proc/cpuinfo")
OS_RELEASE = Path("/etc/os-release")
CPU_ROOT = Path("/sys/devices/system/cpu")
UNKNOWN = "unknown"
"""What the environment says of a setting this machine does not expose (no cpufreq in most
containers and VMs): never None, so a report never prints "None"."""
CONTAINER_MARKERS = {Path("/.dockerenv"): "docker", Path("/run/.containerenv"): "podman"}
CGROUP_MARKERS = ("docker", "kubepods", "containerd", "lxc", "libpod")


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


def cpu_governor(cpu_root: Path = CPU_ROOT) -> str:
    """The CPU frequency governor of every core, e.g. "performance", or "powersave,
    performance" when cores differ; "unknown" without cpufreq. A governor that lowers the clock
    when idle makes the first seconds of a measurement slower than the rest."""
    found = {_read(path).strip() for path in cpu_root.glob("cpu[0-9]*/cpufreq/scaling_governor")}
    found.discard("")
    return ", ".join(sorted(found)) or UNKNOWN


def cpu_turbo(cpu_root: Path = CPU_ROOT) -> str:
    """Whether the CPU may boost above its base clock: "on", "off" or "unknown". Intel's
    intel_pstate says it as no_turbo (1 = off), other drivers as cpufreq/boost (1 = on). With
    turbo on, the clock depends on temperature and on what the other cores do."""
    no_turbo = _read(cpu_root / "intel_pstate" / "no_turbo").strip()
    if no_turbo in ("0", "1"):
        return "off" if no_turbo == "1" else "on"
    boost = _read(cpu_root / "cpufreq" / "boost").strip()
    if boost in ("0", "1"):
        return "on" if boost == "1" else "off"
    return UNKNOWN


def load_average() -> list[float] | str:
    """The 1, 5 and 15 minute load averages when the run starts, or "unknown"."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return UNKNOWN


def virtualization(cpuinfo: str | None = None, markers: dict[Path, str] | None = None,
                   cgroup: Path = Path("/proc/1/cgroup")) -> str:
    """What the machine is, as far as is cheaply known: "virtual machine" (the CPU's
    hypervisor flag), "container (docker)" (a runtime's marker file or cgroup), both joined
    by ", ", "none found" when neither shows, or "unknown" when the CPU flags cannot be read.
    Neighbours on a shared host are the commonest source of noise a run cannot see itself."""
    text = _read(CPUINFO) if cpuinfo is None else cpuinfo
    flags = _cpuinfo_field(text, "flags", "Features")
    found = []
    if flags is not None and "hypervisor" in flags.split():
        found.append("virtual machine")
    runtime = next((name for path, name in (CONTAINER_MARKERS if markers is None else markers).items()
                    if path.exists()), None)
    if runtime is None:
        groups = _read(cgroup)
        runtime = next((name for name in CGROUP_MARKERS if name in groups), None)
    if runtime is not None:
        found.append(f"container ({runtime})")
    if found:
        return ", ".join(found)
    return "none found" if flags is not None else UNKNOWN


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
        "cpu_governor": cpu_governor(),
        "cpu_turbo": cpu_turbo(),
        "load_average": load_average(),
        "virtualization": virtualization(),
    }


def flatten(value: Any, prefix: str = "") -> Iterable[tuple[str, str]]:
    """A snapshot as (key, text) pairs: nested keys joined by dots ("engines.duckdb"), lists
    by commas, sizes in bytes with their GiB."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, (list, tuple)):
        yield prefix, ", ".join(str(item) for item in value)
    elif value is None:  # a setting this machine does not expose, or an older run's missing key
        yield prefix, UNKNOWN
    elif prefix.endswith("_bytes") and isinstance(value, int):
        yield prefix, f"{value:,} ({value / 1024 ** 3:.1f} GiB)"
    else:
        yield prefix, str(value)


def cpu_text(snapshot: dict[str, Any]) -> str:
    """The CPU a snapshot records, in one line: its model and which of `CRYPTO_FLAGS` it has
    and lacks ("AMD EPYC with aes, vaes, pclmulqdq, vpclmulqdq, sha_ni, avx2, without avx512f");
    a cluster run's hosts' CPUs where they differ (`hosts`, their distinct texts joined by " / ");
    "CPU not recorded" for a snapshot without a model."""
    hosts = snapshot.get("hosts")
    if "cpu_model" not in snapshot and isinstance(hosts, dict) and hosts:
        return " / ".join(dict.fromkeys(cpu_text(host) for host in hosts.values()))
    model = snapshot.get("cpu_model")
    if not model:
        return "CPU not recorded"
    flags = snapshot.get("cpu_flags")
    if not isinstance(flags, dict) or not flags:
        return str(model)
    named = [flag for flag in CRYPTO_FLAGS if flag in flags] + sorted(set(flags) - set(CRYPTO_FLAGS))
    has, lacks = [flag for flag in named if flags[flag]], [flag for flag in named if not flags[flag]]
    return f"{model}" + (f" with {', '.join(has)}" if has else "") + (f", without {', '.join(lacks)}" if lacks else "")


MOMENTARY = ("timestamp_utc", "load_average", "filesystem")
"""What a snapshot takes of the moment (or of the output directory), not of the machine."""


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What a result depends on that differs between two snapshots, e.g. "kernel:
    6.1.0-17-amd64 → 6.1.0-18-amd64" or "engines.duckdb: 1.1.0 → 1.1.3"; only settings both
    recorded (an older tdebench recorded fewer), and nothing of the moment (`MOMENTARY`, also
    within a cluster run's `hosts`)."""
    old, new = ({key: text for key, text in flatten(snapshot) if not set(key.split(".")) & set(MOMENTARY)}
                for snapshot in (before, after))
    return [f"{key}: {old[key]} → {new[key]}" for key in sorted(old.keys() & new.keys()) if old[key] != new[key]]
