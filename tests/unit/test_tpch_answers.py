"""The answer check follows TPC-H 2.1.3.5: exact keys, strings, dates and counts; SUM within
$100; AVG and ratios within 1 % after rounding to cents; no reference means `unchecked`."""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from typing import Any

import pytest

from tdebench.workloads.tpch import answers

SCALE = 0.01


def engine_rows(number: int) -> list[list[Any]]:
    """The reference answer as DuckDB's driver would return it (int, Decimal, date, str)."""
    reference = answers.reference(number, SCALE)
    assert reference is not None
    return [[_typed(value) for value in row] for row in reference.rows]


def _typed(text: str) -> Any:
    if text == "":
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return Decimal(text)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return datetime.date.fromisoformat(text)
    return text


def column(number: int, name: str) -> int:
    reference = answers.reference(number, SCALE)
    assert reference is not None
    return reference.columns.index(name)


@pytest.mark.parametrize("number", range(1, 23))
def test_the_reference_itself_passes(number: int) -> None:
    assert answers.check(number, SCALE, engine_rows(number)) == answers.CheckResult("ok")


def test_reference_parses_header_and_rows() -> None:
    q1 = answers.reference(1, SCALE)
    assert q1 is not None
    assert q1.columns[:2] == ("l_returnflag", "l_linestatus")
    assert [row[:2] for row in q1.rows] == [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")]


def test_sum_50_dollars_off_passes_200_off_fails() -> None:
    rows = engine_rows(6)
    revenue = rows[0][0]
    assert answers.check(6, SCALE, [[revenue + 50]]).status == "ok"
    assert answers.check(6, SCALE, [[revenue - 50]]).status == "ok"
    result = answers.check(6, SCALE, [[revenue + 200]])
    assert result.status == "failed"
    assert result.message == f"q6 row 1 column revenue: expected '{revenue}', got {revenue + 200!r}"


def test_avg_within_one_percent_passes_beyond_fails() -> None:
    rows = engine_rows(1)
    index = column(1, "avg_qty")
    rows[0][index] = rows[0][index] * Decimal("1.005")
    assert answers.check(1, SCALE, rows).status == "ok"
    rows[0][index] = rows[0][index] * Decimal("1.02")
    assert answers.check(1, SCALE, rows).status == "failed"


def test_counts_must_be_exact() -> None:
    rows = engine_rows(1)
    rows[2][column(1, "count_order")] += 1
    result = answers.check(1, SCALE, rows)
    assert result.status == "failed"
    assert result.message.startswith("q1 row 3 column count_order:")


def test_wrong_string_fails() -> None:
    rows = engine_rows(2)
    rows[3][column(2, "s_name")] = "Supplier#999999999"
    result = answers.check(2, SCALE, rows)
    assert result.status == "failed"
    assert "q2 row 4 column s_name" in result.message
    assert "Supplier#999999999" in result.message


def test_missing_row_fails() -> None:
    result = answers.check(1, SCALE, engine_rows(1)[:-1])
    assert result == answers.CheckResult("failed", "q1: expected 4 rows, got 3")


def test_missing_column_fails() -> None:
    result = answers.check(6, SCALE, [[]])
    assert result.status == "failed"


def test_scale_without_reference_is_unchecked() -> None:
    assert answers.reference(1, 0.05) is None
    result = answers.check(1, 0.05, engine_rows(1))
    assert result.status == "unchecked"
    assert "0.05" in result.message


def test_sqlite_types_pass() -> None:
    """SQLite returns dates as text and decimals as binary floats."""
    rows = [[float(v) if isinstance(v, Decimal) else v.isoformat() if isinstance(v, datetime.date) else v
             for v in row] for row in engine_rows(3)]
    assert answers.check(3, SCALE, rows).status == "ok"


def test_a_date_off_by_a_day_fails() -> None:
    rows = engine_rows(3)
    index = column(3, "o_orderdate")
    rows[0][index] += datetime.timedelta(days=1)
    assert answers.check(3, SCALE, rows).status == "failed"


def test_trailing_spaces_are_ignored_other_text_is_not() -> None:
    rows = engine_rows(15)
    index = column(15, "s_address")
    assert rows[0][index].endswith(" ")  # the reference keeps dbgen's trailing space
    rows[0][index] = rows[0][index].rstrip()
    assert answers.check(15, SCALE, rows).status == "ok"
    rows[0][index] = " " + rows[0][index]
    assert answers.check(15, SCALE, rows).status == "failed"


def test_null_answer_needs_null() -> None:
    """Q17 returns a single NULL at SF 0.01 (no part qualifies)."""
    assert answers.check(17, SCALE, [(None,)]).status == "ok"
    assert answers.check(17, SCALE, [(0,)]).status == "failed"


def test_query_number_out_of_range() -> None:
    with pytest.raises(ValueError, match="1..22"):
        answers.reference(23, SCALE)
