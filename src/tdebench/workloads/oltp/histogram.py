"""Latency histograms: constant memory per transaction type, percentiles within 2.2%.

A virtual user records tens of thousands of latencies a minute; keeping them all would cost
memory in a 30-minute stress test and keeping a sample would lose the tail. Log-spaced
buckets (each 2^(1/32) ≈ 2.2% wider than the last, as HdrHistogram does with its
significant digits) keep every value's bucket, so a percentile is known to within one
bucket's width whatever the distribution. Histograms of several users add up exactly.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

LOWEST_S = 1e-6  # values below a microsecond share the first bucket
STEPS_PER_DOUBLING = 32
_LOG_RATIO = math.log(2) / STEPS_PER_DOUBLING
PERCENTILES = (50.0, 90.0, 95.0, 99.0)


def bucket_of(seconds: float) -> int:
    if seconds <= LOWEST_S:
        return 0
    return int(math.log(seconds / LOWEST_S) / _LOG_RATIO) + 1


def upper_edge(bucket: int) -> float:
    """The largest value bucket `bucket` can hold."""
    return LOWEST_S * math.exp(bucket * _LOG_RATIO)


@dataclass
class Histogram:
    counts: Counter[int] = field(default_factory=Counter)
    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.counts[bucket_of(seconds)] += 1
        self.count += 1
        self.total_s += seconds
        self.max_s = max(self.max_s, seconds)

    def merge(self, other: "Histogram") -> None:
        self.counts.update(other.counts)
        self.count += other.count
        self.total_s += other.total_s
        self.max_s = max(self.max_s, other.max_s)

    def to_json(self) -> dict[str, Any]:
        """Every bucket kept (JSON keys are strings), so `from_json` gives back the same histogram:
        a cluster's other drivers send theirs to the driver that owns the trial."""
        return {"counts": {str(bucket): n for bucket, n in self.counts.items()}, "count": self.count,
                "total_s": self.total_s, "max_s": self.max_s}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Histogram":
        return cls(Counter({int(bucket): int(n) for bucket, n in data["counts"].items()}), int(data["count"]),
                   float(data["total_s"]), float(data["max_s"]))

    def percentile(self, q: float) -> float:
        """The value at or below which q% of the recorded values lie: the upper edge of the
        bucket holding the rank ceil(q/100 · n) value (never above the true maximum); a
        slight overestimate by at most one bucket's width, as a latency bound should err."""
        if not self.count:
            raise ValueError("no values recorded")
        if not 0 < q <= 100:
            raise ValueError(f"a percentile is in (0, 100], not {q}")
        rank = max(1, math.ceil(q / 100 * self.count))
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return min(upper_edge(bucket), self.max_s)
        return self.max_s  # unreachable: the counts add up to count

    def metrics(self) -> dict[str, float]:
        """Percentiles, maximum and mean as `Measurement` metrics (seconds); empty if no values."""
        if not self.count:
            return {}
        figures = {f"p{q:g}_elapsed_s": self.percentile(q) for q in PERCENTILES}
        figures["max_elapsed_s"] = self.max_s
        figures["mean_elapsed_s"] = self.total_s / self.count
        return figures
