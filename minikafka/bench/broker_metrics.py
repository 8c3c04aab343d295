"""What the brokers' own /metrics say about a benchmark run: read before and after it.

A latency figure alone does not say whether the time went to the path a record takes or
to a broker process that could not run. The latency rows therefore also report, from
each broker's ``/metrics`` over the run:

- ``loop_lag_p99_ms`` and ``loop_lag_max_ms``: how late the brokers' event loops woke
  their 10 ms timer (``minikafka_event_loop_lag_seconds``), the worst broker's p99 and
  the largest lateness seen, both as their histogram buckets' upper bounds;
- ``loop_stalls``: how often a loop was held for 100 ms or more;
- ``gc_pause_ms``: the time the brokers' garbage collectors held them, all generations.
"""
from __future__ import annotations

import math
import urllib.request
from contextlib import contextmanager
from typing import Iterator

from .. import errors
from .. import metric_names as M
from ..client.connection import parse_bootstrap

Samples = dict[str, float]  # a sample line's name with its labels -> value


def scrape(host: str, port: int) -> Samples:
    """One broker's /metrics as ``{'name{labels}': value}``."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=30) as answer:
        return parse(answer.read().decode())


def parse(text: str) -> Samples:
    """Prometheus' text format as ``{'name{labels}': value}`` (comments left out)."""
    out: Samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def value(samples: Samples, name: str) -> float:
    """A metric without labels; a broker that does not report it is an error."""
    try:
        return samples[name]
    except KeyError:
        raise errors.ClientError(f"the broker reports no {name}") from None


def _buckets(samples: Samples, name: str) -> list[tuple[float, float]]:
    """(upper bound, cumulative count) of a histogram without labels, in bound order."""
    prefix = f"{name}_bucket{{le=\""
    out = []
    for key, count in samples.items():
        if key.startswith(prefix):
            bound = key[len(prefix):-2]
            out.append((math.inf if bound == "+Inf" else float(bound), count))
    return sorted(out)


def _sum_of(samples: Samples, name: str) -> float:
    """The ``_sum`` of a histogram over all its label values."""
    prefix = f"{name}_sum"
    return sum(v for key, v in samples.items() if key == prefix or key.startswith(prefix + "{"))


def quantile_bound(before: list[tuple[float, float]], after: list[tuple[float, float]], q: float) -> float:
    """The upper bound of the bucket holding the ``q`` quantile of the observations made
    between two readings of one cumulative histogram (0 without any)."""
    start = dict(before)
    counts = [(bound, n - start.get(bound, 0.0)) for bound, n in after]
    total = counts[-1][1] if counts else 0.0
    if total <= 0:
        return 0.0
    finite = [bound for bound, _ in counts if bound != math.inf]
    for bound, n in counts:
        if n >= q * total:
            return bound if bound != math.inf else (finite[-1] if finite else math.inf)
    return finite[-1] if finite else math.inf


@contextmanager
def pauses(bootstrap: str) -> Iterator[dict[str, float]]:
    """Read every broker's /metrics around the body; the dict it yields is filled with
    the run's figures (see the module's docstring) when the body ends."""
    brokers = parse_bootstrap(bootstrap)
    before = [scrape(h, p) for h, p in brokers]
    figures: dict[str, float] = {}
    yield figures
    after = [scrape(h, p) for h, p in brokers]
    lag = M.EVENT_LOOP_LAG_SECONDS.name
    p99, worst, stalls, gc_s = 0.0, 0.0, 0.0, 0.0
    for b, a in zip(before, after):
        p99 = max(p99, quantile_bound(_buckets(b, lag), _buckets(a, lag), 0.99))
        worst = max(worst, quantile_bound(_buckets(b, lag), _buckets(a, lag), 1.0))
        stalls += a.get(M.EVENT_LOOP_STALLS.name, 0.0) - b.get(M.EVENT_LOOP_STALLS.name, 0.0)
        gc_s += _sum_of(a, M.GC_PAUSE_SECONDS.name) - _sum_of(b, M.GC_PAUSE_SECONDS.name)
    figures.update(loop_lag_p99_ms=p99 * 1000, loop_lag_max_ms=worst * 1000, loop_stalls=stalls,
                   gc_pause_ms=gc_s * 1000)
