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


def fmt(value: float) -> str:
    """A figure for the table: thousands separators for big numbers, 3 digits for small ones."""
    if value != value:  # nan
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"
