"""What the server engines' DB-API connections share: the placeholder style the workloads
write, turned into the drivers', and Parquet data turned into CSV for a server's bulk loader."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path


def parquet_to_csv(parquet: Path, columns: Sequence[str], target: Path, delimiter: str = ",") -> int:
    """Write `columns` of a Parquet file as headerless CSV (quote and escape `"`), for a
    server's own bulk loader (LOAD DATA, COPY); returns the number of rows written."""
    import duckdb

    reader = duckdb.connect(":memory:")
    try:
        quoted = str(target).replace("'", "''")
        ((written,),) = reader.execute(
            f"COPY (SELECT {', '.join(columns)} FROM read_parquet(?)) TO '{quoted}' "
            f"(FORMAT csv, HEADER false, DELIMITER '{delimiter}', QUOTE '\"', ESCAPE '\"')",
            [str(parquet)]).fetchall()
    finally:
        reader.close()
    return written


@functools.lru_cache(maxsize=4096)
def qmark_to_format(sql: str) -> str:
    """Workloads write DB-API `?` placeholders; PyMySQL and psycopg take `%s`, with a literal `%`
    written `%%`. A `?` inside quotes ('…', "…", `…`) is text and stays. Cached: a workload runs
    the same few statements again and again (oltp's client-side transactions spent a fifth of
    their Python time here, character by character)."""
    out, quote = [], ""
    for char in sql:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append("%%" if char == "%" else char)
    return "".join(out)
