"""Counters and timings a broker keeps; rendered in Prometheus format at /metrics."""
from __future__ import annotations

import collections


class Metrics:
    """Named counters plus per-API request counts and latency sums."""

    def __init__(self) -> None:
        self.counters: collections.Counter[str] = collections.Counter()
        self.request_counts: collections.Counter[str] = collections.Counter()
        self.request_seconds: collections.Counter[str] = collections.Counter()
        self.bytes_in = 0
        self.bytes_out = 0

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] += n

    def observe_request(self, api: str, seconds: float) -> None:
        self.request_counts[api] += 1
        self.request_seconds[api] += seconds
