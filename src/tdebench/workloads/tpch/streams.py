"""The TPC-H query orders of spec Appendix A: stream 0 is the power test, 1..10 the
throughput test's streams. Fixed orders make runs comparable with each other and with
published results; the runner never shuffles queries itself."""

from __future__ import annotations

POWER_ORDER: tuple[int, ...] = (14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12)

# Index = stream number; index 0 is the power test's order.
STREAM_ORDERS: tuple[tuple[int, ...], ...] = (
    POWER_ORDER,
    (21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4),
    (6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21),
    (8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3),
    (5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20),
    (21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9),
    (10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21),
    (18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12),
    (19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11),
    (8, 13, 2, 20, 17, 3, 6, 21, 18, 11, 19, 10, 15, 4, 22, 1, 7, 12, 9, 14, 5, 16),
    (6, 15, 18, 17, 12, 1, 7, 2, 22, 13, 21, 10, 14, 9, 3, 16, 20, 19, 11, 4, 8, 5),
)

MAX_STREAMS = len(STREAM_ORDERS) - 1


def stream_order(number: int) -> tuple[int, ...]:
    """The query order of stream `number` (0 = power test, 1..MAX_STREAMS = throughput)."""
    if not 0 <= number <= MAX_STREAMS:
        raise ValueError(
            f"TPC-H has query orders for streams 0..{MAX_STREAMS} only, not stream {number}; "
            f"run at most {MAX_STREAMS} throughput streams"
        )
    return STREAM_ORDERS[number]
