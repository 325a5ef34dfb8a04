"""How each unit is printed: one function per unit, so a figure reads the same in every table,
sentence and report (report.md, report.html, compare), and its precision is decided once.

A missing value (None, or NaN from a statistic with too few values) is a dash everywhere. A
table shows a raw unit in a friendlier one (`display_unit`: seconds as ms, bytes as MiB);
intervals are printed by `interval` (a table cell) and `change` (an overhead in a sentence).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

MIB = 1024 * 1024
MS = 1000.0
DASH = "–"


def number(value: float | None) -> str:
    """Rounded for reading: enough digits to compare, no false precision."""
    if value is None or math.isnan(value):
        return DASH
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def percent(value: float | None) -> str:
    """A signed change in percent, one decimal: +3.1%."""
    return DASH if value is None or math.isnan(value) else f"{value:+.1f}%"


def p_value(value: float | None) -> str:
    """Two significant digits below 0.1, so 0.047 is not rounded up to a misleading 0.05."""
    if value is None or math.isnan(value):
        return DASH
    return f"{value:.2g}" if value < 0.1 else f"{value:.2f}"


def ratio_percent(value: float | None) -> str:
    """A fraction (e.g. a CV of 0.082) shown as a percentage (8.2%)."""
    return DASH if value is None or math.isnan(value) else f"{value * 100:.1f}%"


def general(value: float | None) -> str:
    """A number as Python's general format writes it: 1, 2.5, 1e+06 (warehouses, users, a target)."""
    return DASH if value is None or math.isnan(value) else f"{value:g}"


def whole(value: float | None) -> str:
    """A count, rounded, with thousands separated: 12,345."""
    return DASH if value is None or math.isnan(value) else f"{value:,.0f}"


def tenths(value: float | None) -> str:
    """A number to one decimal: 43.1."""
    return DASH if value is None or math.isnan(value) else f"{value:.1f}"


def mib(value: float | None) -> str:
    """Bytes, shown in MiB."""
    return DASH if value is None or math.isnan(value) else number(value / MIB)


def ms(value: float | None) -> str:
    """Seconds, shown in milliseconds."""
    return DASH if value is None or math.isnan(value) else number(value * MS)


def times(value: float | None) -> str:
    """A ratio as a multiple (data ÷ cache, a time ÷ none's): two significant digits below 1,
    one decimal below 10, whole above (0.47×, 4.2×, 2,048×); below 0.01, "<0.01×" (a database in
    a default cache of gigabytes: 9.2e-05× says nothing more)."""
    if value is None or math.isnan(value):
        return DASH
    if value < 0.01:
        return "<0.01×"
    below_one = f"{value:.2g}"
    if value < 1 and below_one != "1":  # 0.998 is 1.0×, as above one
        return f"{below_one}×"
    return f"{value:.1f}×" if value < 10 else f"{value:,.0f}×"


def ratio(value: float | None) -> str:
    """A ratio as a multiple with two decimals whatever its size (a compression ratio: 4.50×),
    where `times`' rounding would hide the difference between two methods."""
    return DASH if value is None or math.isnan(value) else f"{value:.2f}×"


def signed_ms(value: float | None) -> str:
    """A difference in milliseconds, signed: two decimals below 100, whole above (+0.12, +1,302)."""
    if value is None or math.isnan(value):
        return DASH
    return f"{value:+,.2f}" if abs(value) < 100 else f"{value:+,.0f}"


def duration(seconds: float) -> str:
    """A span of time in a sentence, two significant digits in ms below a second, else in s
    (12 ms, 520 ms, 3.4 s, 1,200 s), never in exponent notation."""
    return f"{_two_digits(seconds * 1000)} ms" if seconds < 1 else f"{_two_digits(seconds)} s"


def _two_digits(value: float) -> str:
    """Two significant digits, whole numbers from 10 up (523 is 520, not 5.2e+02)."""
    if abs(value) < 10:
        return f"{value:.2g}"
    digits = math.floor(math.log10(abs(value))) + 1
    return f"{round(value, 2 - digits):,.0f}"


def interval(low: float | None, high: float | None, fmt: Callable[[Any], str] = number) -> str:
    """A confidence interval as a table cell, each bound in its unit: [+1.2%, +5.0%]."""
    return DASH if low is None or math.isnan(low) else f"[{fmt(low)}, {fmt(high)}]"


def signed(value: float) -> str:
    """A bound of an overhead's interval in a sentence: percent, signed, without the % sign (+1.2)."""
    return f"{value:+.1f}"


def change(pct: float, low: float, high: float) -> str:
    """An overhead and its 95% interval as sentences write it: +3.1% [+1.2, +5.0]; without an
    interval (one measurement on a side), +3.1% (no interval: one measurement)."""
    if math.isnan(low) or math.isnan(high):
        return f"{percent(pct)} (no interval: one measurement)"
    return f"{percent(pct)} [{signed(low)}, {signed(high)}]"


def display_unit(unit: str) -> tuple[str, float]:
    """The friendlier unit a table shows and the factor from the raw unit to it."""
    if unit == "s":
        return "ms", MS
    if unit == "bytes":
        return "MiB", 1.0 / MIB
    return unit, 1.0
