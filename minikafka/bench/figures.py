"""Figures of repeated runs: each scenario runs several times and reports min, median, max."""
from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One measured quantity over the runs of a scenario."""

    name: str
    unit: str
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    def to_json(self) -> dict:
        return {"unit": self.unit, "median": self.median, "min": self.min, "max": self.max, "runs": list(self.values)}


def collect(name: str, unit: str, runs: list[dict], key: str) -> Figure:
    """The figure ``key`` of every run (runs that lack it are left out)."""
    return Figure(name, unit, tuple(float(r[key]) for r in runs if r.get(key) is not None))


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted values, nearest rank; nan when empty."""
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def ack_and_arrival_ms(acked: list[float], arrived: list[float]) -> dict:
    """A latency run's figures from its records' times in seconds: p50, p99 and p99.9
    from send to acknowledgement, and as ``e2e_*`` from send to a consumer's arrival, in
    ms, with how many of each were seen.  Sorts both lists."""
    acked.sort()
    arrived.sort()
    return {"p50_ms": percentile(acked, 0.5) * 1000, "p99_ms": percentile(acked, 0.99) * 1000,
            "p999_ms": percentile(acked, 0.999) * 1000, "e2e_p50_ms": percentile(arrived, 0.5) * 1000,
            "e2e_p99_ms": percentile(arrived, 0.99) * 1000, "e2e_p999_ms": percentile(arrived, 0.999) * 1000,
            "records": len(acked), "consumed": len(arrived)}


def fmt(value: float) -> str:
    """A figure for the table: thousands separators for big numbers, 3 digits for small ones."""
    if value != value:  # nan
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"
