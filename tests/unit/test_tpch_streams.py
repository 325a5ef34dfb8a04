"""The query orders of TPC-H Appendix A."""

from __future__ import annotations

import pytest

from tdebench.workloads.tpch import streams


@pytest.mark.parametrize("number", range(streams.MAX_STREAMS + 1))
def test_every_order_is_a_permutation_of_the_22_queries(number: int) -> None:
    assert sorted(streams.stream_order(number)) == list(range(1, 23))


def test_power_test_is_stream_zero() -> None:
    assert streams.stream_order(0) == streams.POWER_ORDER
    assert streams.POWER_ORDER[:4] == (14, 2, 9, 20)


def test_ten_throughput_streams_with_distinct_orders() -> None:
    assert streams.MAX_STREAMS == 10
    assert len(set(streams.STREAM_ORDERS)) == len(streams.STREAM_ORDERS)
    assert streams.stream_order(1)[:3] == (21, 3, 18)
    assert streams.stream_order(10)[-3:] == (4, 8, 5)


@pytest.mark.parametrize("number", [-1, streams.MAX_STREAMS + 1])
def test_streams_past_the_table_are_refused(number: int) -> None:
    with pytest.raises(ValueError, match="streams 0..10"):
        streams.stream_order(number)
