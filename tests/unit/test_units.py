"""One printer per unit (report/data/units.py): a multiple, an interval and an overhead read the same in
every table and sentence, a missing value is a dash, and no rounding turns a figure into another."""

from __future__ import annotations

import math

from tdebench.report.data.units import MIB, change, duration, interval, mib, ms, percent, ratio, signed_ms, times


def test_a_multiple_has_two_significant_digits_below_one_one_decimal_below_ten_none_above() -> None:
    assert [times(v) for v in (9.2e-05, 0.0395, 0.963, 0.998, 1.04, 4.23, 12.5, 2048.4)] == [
        "<0.01×", "0.04×", "0.96×", "1.0×", "1.0×", "4.2×", "12×", "2,048×"]
    assert times(None) == times(math.nan) == "–"


def test_an_overhead_in_a_sentence_signs_both_bounds() -> None:
    assert change(3.14, 1.2, 5.04) == "+3.1% [+1.2, +5.0]"
    assert change(-8.0, -10.0, -6.0) == "-8.0% [-10.0, -6.0]"


def test_an_interval_cell_prints_each_bound_in_its_unit_and_a_missing_one_as_a_dash() -> None:
    assert interval(1.2, 5.0, percent) == "[+1.2%, +5.0%]"
    assert interval(0.83, 1.3, times) == "[0.83×, 1.3×]"
    assert interval(math.nan, math.nan, percent) == interval(None, None) == "–"


def test_bytes_and_seconds_are_shown_in_mib_and_ms() -> None:
    assert (mib(13.73 * MIB), ms(0.0123), mib(None), ms(math.nan)) == ("13.73", "12.30", "–", "–")


def test_a_compression_ratio_keeps_two_decimals_at_any_size() -> None:
    assert [ratio(v) for v in (0.996, 1.0, 4.5, 12.345)] == ["1.00×", "1.00×", "4.50×", "12.35×"]
    assert ratio(None) == ratio(math.nan) == "–"


def test_a_difference_in_ms_is_signed_with_two_decimals_below_100_and_whole_above() -> None:
    assert [signed_ms(v) for v in (0.123, -4.5, 99.994, 302.4, 1302.0)] == [
        "+0.12", "-4.50", "+99.99", "+302", "+1,302"]
    assert signed_ms(None) == signed_ms(math.nan) == "–"


def test_a_duration_in_a_sentence_is_in_ms_below_a_second_and_in_s_above() -> None:
    assert [duration(v) for v in (0.00123, 0.0456, 1.0, 3.44)] == ["1.2 ms", "46 ms", "1 s", "3.4 s"]


def test_a_duration_of_three_digits_or_more_is_whole_never_in_exponent_notation() -> None:
    assert [duration(v) for v in (0.523, 0.996, 123.4, 1234.5)] == ["520 ms", "1,000 ms", "120 s", "1,200 s"]
