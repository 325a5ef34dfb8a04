"""Reference answers of the 22 queries and the spec's rules for comparing against them.

A benchmark that times a wrong query is worse than none, so every query result is checked.
The reference answers ship with DuckDB's tpch extension for SF 0.01, 0.1 and 1; other scales
are reported as `unchecked`, never as `ok`.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Literal

from tdebench.engines.base import Connection
from tdebench.engines.duckdb_extensions import duckdb_with_tpch
from tdebench.workloads.tpch.queries import query

# Spec 2.1.3.5 names rules per aggregate; the reference header names each column, so the
# rule is chosen by column name. Every other column (keys, strings, dates, counts,
# singleton decimals) must match exactly, decimals after rounding to 1/100.
SUM_COLUMNS = frozenset({
    "sum_qty", "sum_base_price", "sum_disc_price", "sum_charge", "revenue", "sum_profit",
    "value", "total_revenue", "totacctbal", "sum",
})
AVG_OR_RATIO_COLUMNS = frozenset({
    "avg_qty", "avg_price", "avg_disc", "mkt_share", "promo_revenue", "avg_yearly",
})
SUM_TOLERANCE = Decimal(100)  # dollars
RELATIVE_TOLERANCE = Decimal("0.01")  # 1 %
CENT = Decimal("0.01")


@dataclass(frozen=True)
class Answer:
    """A reference result as the extension prints it: text values, "" for NULL."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class CheckResult:
    status: Literal["ok", "failed", "unchecked"]
    message: str = ""


def reference(number: int, scale: float) -> Answer | None:
    """The reference answer of query `number` at `scale`, or None if none ships for it."""
    if not 1 <= number <= 22:
        raise ValueError(f"TPC-H has queries 1..22, not {number}")
    return _answers().get((number, _scale_key(scale)))


def check(number: int, scale: float, rows: Sequence[Sequence[Any]]) -> CheckResult:
    """Compare an engine's result rows with the reference answer under the spec's tolerances.

    The failure message names query, row, column, expected and got value and nothing else,
    so it can be stored and shown without leaking more of the data set.
    """
    answer = reference(number, scale)
    if answer is None:
        return CheckResult("unchecked", f"q{number}: no reference answer at scale {scale:g} "
                                        f"(only {', '.join(f'{s:g}' for s in _scales())})")
    if len(rows) != len(answer.rows):
        return CheckResult("failed", f"q{number}: expected {len(answer.rows)} rows, got {len(rows)}")
    for index, (expected_row, got_row) in enumerate(zip(answer.rows, rows, strict=True), start=1):
        if len(got_row) != len(answer.columns):
            return CheckResult("failed", f"q{number} row {index}: expected {len(answer.columns)} "
                                         f"columns, got {len(got_row)}")
        for column, expected, got in zip(answer.columns, expected_row, got_row, strict=True):
            if not _matches(column, expected, got):
                return CheckResult("failed", f"q{number} row {index} column {column}: "
                                             f"expected {expected!r}, got {got!r}")
    return CheckResult("ok")


def _matches(column: str, expected: str, got: Any) -> bool:
    if got is None or expected == "":
        return got is None and expected == ""
    expected_number, got_number = _number(expected), _engine_number(got)
    if expected_number is None or got_number is None:
        return _text(got) == expected.rstrip(" ")
    if column in SUM_COLUMNS:
        return abs(got_number - expected_number) <= SUM_TOLERANCE
    expected_cents, got_cents = _cents(expected_number), _cents(got_number)
    if column in AVG_OR_RATIO_COLUMNS:
        return abs(got_cents - expected_cents) <= RELATIVE_TOLERANCE * abs(expected_cents)
    return got_cents == expected_cents


def _number(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _engine_number(value: Any) -> Decimal | None:
    """Numbers as Decimal; strings (SQLite years, keys as text) are compared as text instead."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _text(value: Any) -> str:
    """Engine values as the reference prints them: ISO dates, strings without CHAR padding."""
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value).rstrip(" ")


def _cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def _scale_key(scale: float) -> float:
    return round(float(scale), 6)


def _scales() -> list[float]:
    return sorted({scale for _, scale in _answers()})


@functools.cache
def _answers() -> dict[tuple[int, float], Answer]:
    """Every reference answer, parsed once per process (the extension holds them as text)."""
    con = duckdb_with_tpch()
    try:
        found = con.execute("SELECT query_nr, scale_factor, answer FROM tpch_answers()").fetchall()
    finally:
        con.close()
    return {(int(n), _scale_key(scale)): _parse(text) for n, scale, text in found}


def _parse(text: str) -> Answer:
    """Pipe-separated text with a header line; one final newline ends the last row (so a
    single NULL row, as Q17 has at SF 0.01, is an empty line before it)."""
    header, *lines = text.removesuffix("\n").split("\n")
    return Answer(tuple(header.split("|")), tuple(tuple(line.split("|")) for line in lines))


def answer_problem(conn: Connection, number: int, dialect: str, scale: float) -> str | None:
    """Query `number` run on `conn` and its answer checked against the reference: what is wrong,
    or None when it is right or cannot be checked (another workload's check of TPC-H's data)."""
    result = check(number, scale, conn.execute(query(number, dialect)))
    return result.message if result.status == "failed" else None
