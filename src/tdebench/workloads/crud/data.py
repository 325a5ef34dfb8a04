"""The `persons` rows: generated from the plan's seed, vectorised in DuckDB, cached as Parquet.

Row `id` is a pure function of (seed, id): every column is drawn by DuckDB's `hash(id, seed,
column)`, a deterministic function of its arguments (for the pinned DuckDB version), so the
same seed gives the same rows on every run and machine, another seed other rows, and rows
N+1..N+k (the staging rows the insert test adds) are the same whatever N is. No random
state, so DuckDB may generate in parallel without changing a byte. Ten million rows take
about a second.

Files live in `<data_dir>/crud/v<GENERATOR>/seed<seed>/persons-<first>-<count>.parquet`;
`GENERATOR` changes whenever the rows would, so a stale cache is never read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from tdebench.workloads.crud import names
from tdebench.workloads.parquet import write_once

GENERATOR = 1
COLUMNS: tuple[str, ...] = ("id", "first_name", "last_name", "age", "credit_card_no", "address",
                            "city_of_birth", "gender")
"""The table of Moulianitakis & Asimakopoulos (2019) (ID, FirstName, LastName, Age,
CreditCardNo, Address, CityOfBirth, Gender) in snake case, which every engine keeps as written
(PostgreSQL folds unquoted CamelCase to lower case)."""
TEXT_COLUMNS: tuple[str, ...] = ("first_name", "last_name", "address", "city_of_birth", "gender")
FIXED_BYTES = 4 + 4 + 8
"""The logical size of a row's numbers: id and age are 32-bit, credit_card_no 64-bit."""
AGE_MIN, AGE_MAX = 18, 90


def _choice(words: tuple[str, ...], column: int) -> str:
    """SQL picking one of `words` per row, by the row's hash for `column`."""
    listed = ", ".join("'" + word.replace("'", "''") + "'" for word in words)
    return f"[{listed}][1 + (hash(i, $seed, {column}) % {len(words)})::BIGINT]"


def _select(first: int, count: int) -> str:
    """The rows `first`..`first + count - 1` as one SELECT; `$seed` is bound by DuckDB."""
    return f"""
SELECT i::INTEGER AS id,
       {_choice(names.FIRST_NAMES, 1)} AS first_name,
       {_choice(names.LAST_NAMES, 2)} AS last_name,
       ({AGE_MIN} + hash(i, $seed, 3) % {AGE_MAX - AGE_MIN + 1})::INTEGER AS age,
       (4000000000000000 + hash(i, $seed, 4) % 1000000000000000)::BIGINT AS credit_card_no,
       (1 + hash(i, $seed, 5) % 9999)::VARCHAR || ' ' || {_choice(names.STREETS, 6)} || ' '
           || {_choice(names.STREET_SUFFIXES, 7)} AS address,
       {_choice(names.CITIES, 8)} AS city_of_birth,
       {_choice(names.GENDERS, 9)} AS gender
FROM range({first}, {first + count}) AS rows(i)
ORDER BY i"""


def path(data_dir: Path, seed: int, first: int, count: int) -> Path:
    return Path(data_dir) / "crud" / f"v{GENERATOR}" / f"seed{seed}" / f"persons-{first}-{count}.parquet"


def generate(data_dir: Path, seed: int, first: int, count: int) -> Path:
    """The Parquet file of rows with ids `first`..`first + count - 1`, made if missing.

    Written under a temporary name and renamed into place, so an interrupted run never
    leaves a truncated file that a later run would take for a finished one.
    """
    if first < 1 or count < 1:
        raise ValueError(f"persons rows start at id 1 and need at least one row, not {first}+{count}")
    return write_once(path(data_dir, seed, first, count), _select(first, count), {"seed": seed})


@dataclass(frozen=True)
class Facts:
    """What a table loaded from one Parquet file must answer, and how big its rows are."""

    rows: int
    id_sum: int
    age_sum: int
    address_chars: int  # sum of the addresses' lengths (ASCII: characters = bytes)
    logical_bytes: int  # FIXED_BYTES per row plus the length of every text value

    @property
    def row_bytes(self) -> float:
        """Average logical bytes per row: what the throughput of Moulianitakis & Asimakopoulos
        (2019) counts as processed."""
        return self.logical_bytes / self.rows


@functools.lru_cache(maxsize=16)
def facts(parquet: Path) -> Facts:
    """The expected answers of a generated file, read back from the file itself."""
    import duckdb

    lengths = " + ".join(f"length({column})" for column in TEXT_COLUMNS)
    con = duckdb.connect(":memory:")
    try:
        ((rows, id_sum, age_sum, address_chars, text_bytes),) = con.execute(
            f"SELECT count(*), sum(id), sum(age), sum(length(address)), sum({lengths}) "
            "FROM read_parquet(?)", [str(parquet)]).fetchall()
    finally:
        con.close()
    return Facts(rows=int(rows), id_sum=int(id_sum), age_sum=int(age_sum),
                 address_chars=int(address_chars), logical_bytes=int(text_bytes) + FIXED_BYTES * int(rows))
