"""A workload's SQL per dialect: `sql/<dialect>/<name>.sql` beside its modules (package data).

SQL that is one workload's alone and differs by dialect (TPC-H's query overrides and spill
query, backup's checksums, TPC-C's stored procedures, maintenance's index rebuilds) lives in
these files, so an engine with a dialect of its own adds files, not branches; which dialects a
workload has it for is which files exist. Facts of a dialect that every workload shares are
engines/dialects.py's."""

from __future__ import annotations

from importlib import resources

from tdebench.engines import dialects


def read(package: str, dialect: str, name: str) -> str | None:
    """The text of `package`'s `sql/<dialect>/<name>.sql`, or None if it has no such file."""
    path = resources.files(package).joinpath("sql", dialect, f"{name}.sql")
    return path.read_text(encoding="utf-8") if path.is_file() else None


def dialects_with(package: str, name: str) -> tuple[str, ...]:
    """The dialects (in engines/dialects.py's order) for which `package` has `sql/<dialect>/<name>.sql`."""
    return tuple(d for d in dialects.DIALECTS if resources.files(package).joinpath("sql", d, f"{name}.sql").is_file())
