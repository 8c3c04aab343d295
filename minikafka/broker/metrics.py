"""Counters and timings a broker keeps; rendered in Prometheus format at /metrics.

Every metric is declared once in :mod:`minikafka.metric_names` (name, type, help,
labels).  :class:`Metrics` keeps the declared counters and the request-latency
histogram; :func:`render_prometheus` reads the gauges from the broker's state through
:class:`MetricSources`, a few callables the broker gives it, and writes every declared
metric in declaration order.  docs/metrics.md lists every one.

A registry of our own rather than prometheus-client: most values are gauges read from
the broker's state at scrape time, counters must be kept per broker (several brokers run
in one process in the simulation), the text stays exactly what dashboards and scripts
read (no ``_created`` series), and counting on the request path stays a dict update
without locks.
"""
from __future__ import annotations

import bisect
import collections
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, Sized

from .. import metric_names as M
from ..metric_names import COUNTER, GAUGE, HISTOGRAM, LATENCY_BUCKETS, Metric

if TYPE_CHECKING:
    from ..controller.controller import ClusterCounts

__all__ = ["LATENCY_BUCKETS", "Metrics", "MetricSources", "UndeclaredMetricError", "render_prometheus"]

TP = tuple[str, int]


class UndeclaredMetricError(KeyError):
    """Counting something that :mod:`minikafka.metric_names` does not declare as a counter,
    or with other labels than it declares."""


class _ConsumerFetched:
    """(topic, partition) -> (records, bytes) served to consumers, read by ``replica_state``
    for the dashboard's fetch rates; a view of two labelled counters."""

    def __init__(self, records: dict[tuple, float], bytes_: dict[tuple, float]) -> None:
        self._records, self._bytes = records, bytes_

    def get(self, tp: TP, default: Any = None) -> Any:
        if tp not in self._records:
            return default
        return self._records[tp], self._bytes.get(tp, 0)


class Metrics:
    """The declared counters (per label values) and histograms of one broker."""

    def __init__(self) -> None:
        # counter -> label values (in declared order; () without labels) -> value
        self._counters: dict[Metric, dict[tuple, float]] = {m: {} for m in M.COUNTERS}
        # histogram -> label values -> per bucket counts (not cumulative; the last slot is +Inf)
        self._buckets: dict[Metric, dict[tuple, list[int]]] = {m: {} for m in M.HISTOGRAMS}
        self._sums: dict[Metric, dict[tuple, float]] = {m: {} for m in M.HISTOGRAMS}
        # gauges set as they change (M.LEVELS): label values -> value
        self._levels: dict[Metric, dict[tuple, float]] = {m: {} for m in M.LEVELS}
        self.consumer_fetched = _ConsumerFetched(self._counters[M.CONSUMER_FETCH_RECORDS],
                                                 self._counters[M.CONSUMER_FETCH_BYTES])

    @staticmethod
    def _key(metric: Metric, labels: dict[str, Any]) -> tuple:
        if not labels:
            if metric.labels:
                raise UndeclaredMetricError(f"{metric.name} needs the labels {metric.labels}")
            return ()
        if len(labels) != len(metric.labels) or not all(name in labels for name in metric.labels):
            raise UndeclaredMetricError(f"{metric.name} has labels {metric.labels}, not {tuple(labels)}")
        return tuple(labels[name] for name in metric.labels)

    def count(self, metric: Metric, n: float = 1, **labels: Any) -> None:
        """Add ``n`` to a declared counter (labelled counters take their labels by name)."""
        try:
            values = self._counters[metric]
        except (KeyError, TypeError):
            raise UndeclaredMetricError(f"{metric!r} is not a counter declared in minikafka.metric_names") from None
        key = self._key(metric, labels)
        values[key] = values.get(key, 0) + n

    def set_level(self, metric: Metric, value: float, **labels: Any) -> None:
        """Set a declared level gauge (M.LEVELS) to ``value``."""
        try:
            values = self._levels[metric]
        except (KeyError, TypeError):
            raise UndeclaredMetricError(f"{metric!r} is not a level gauge declared in minikafka.metric_names") from None
        values[self._key(metric, labels)] = value

    def level(self, metric: Metric, **labels: Any) -> float:
        """A level gauge's current value (0 before it is first set)."""
        return self._levels[metric].get(self._key(metric, labels), 0)

    def level_samples(self, metric: Metric) -> Samples:
        values = self._levels[metric]
        if not metric.labels:
            return [(None, values.get((), 0))]
        return [(dict(zip(metric.labels, key)), v) for key, v in sorted(values.items())]

    def observe(self, metric: Metric, value: float, **labels: Any) -> None:
        """Add one observation to a declared histogram."""
        try:
            per_key = self._buckets[metric]
        except (KeyError, TypeError):
            raise UndeclaredMetricError(f"{metric!r} is not a histogram declared in minikafka.metric_names") from None
        key = self._key(metric, labels)
        buckets = per_key.get(key)
        if buckets is None:
            buckets = per_key[key] = [0] * (len(metric.buckets) + 1)
        buckets[bisect.bisect_left(metric.buckets, value)] += 1
        sums = self._sums[metric]
        sums[key] = sums.get(key, 0.0) + value

    def observe_request(self, api: str, seconds: float) -> None:
        """A request answered without a top-level error, and its time: count(REQUESTS,
        api=api) and observe(REQUEST_SECONDS, seconds, api=api), inlined (every request
        passes here)."""
        key = (api,)
        counts = self._counters[M.REQUESTS]
        counts[key] = counts.get(key, 0) + 1
        buckets = self._buckets[M.REQUEST_SECONDS].get(key)
        if buckets is None:
            buckets = self._buckets[M.REQUEST_SECONDS][key] = [0] * (len(M.REQUEST_SECONDS.buckets) + 1)
        buckets[bisect.bisect_left(M.REQUEST_SECONDS.buckets, seconds)] += 1
        sums = self._sums[M.REQUEST_SECONDS]
        sums[key] = sums.get(key, 0.0) + seconds

    def value(self, metric: Metric, **labels: Any) -> float:
        """A counter's current value (0 before the first count)."""
        if metric not in self._counters:
            raise UndeclaredMetricError(f"{metric!r} is not a declared counter")
        return self._counters[metric].get(self._key(metric, labels), 0)

    def counter_samples(self, metric: Metric) -> Samples:
        values = self._counters[metric]
        if not metric.labels:
            return [(None, values.get((), 0))]
        return [(dict(zip(metric.labels, key)), v) for key, v in sorted(values.items())]

    def histogram_samples(self, metric: Metric) -> list[tuple[tuple, list[int], float]]:
        """(label values, per-bucket counts, sum) per label values, sorted."""
        return [(key, buckets, self._sums[metric][key]) for key, buckets in sorted(self._buckets[metric].items())]

    def count_consumer_fetch(self, starts: dict[tuple[str, int], int], answered: list[tuple[tuple[str, int], bytes]]) -> None:
        """Count a consumer fetch's answer per partition: the batch bytes returned, and as
        records the offsets from the fetch offset (``starts``) to the end of the last batch
        returned (whole batches come back, the first one may start below the fetch
        offset).  ``answered``: (partition, records) of the partitions answered without error."""
        from ..protocol.records.batch import HEADER_SIZE, read_header

        for tp, data in answered:
            if not data:
                continue
            t, p = tp
            pos, end = 0, starts.get(tp, 0)
            while pos + HEADER_SIZE <= len(data):
                h = read_header(data, pos)
                if h.size <= 0:
                    break
                end = max(end, h.next_offset)
                pos += h.size
            self.count(M.CONSUMER_FETCH_RECORDS, max(0, end - starts.get((t, p), 0)), topic=t, partition=p)
            self.count(M.CONSUMER_FETCH_BYTES, len(data), topic=t, partition=p)


# ---------------------------------------------------------------- what /metrics reads

class LogView(Protocol):
    @property
    def log_start_offset(self) -> int: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def segments(self) -> Sized: ...


class RemoteView(Protocol):
    @property
    def leo(self) -> int: ...


class ReplicaView(Protocol):
    """What the gauges read of a local replica."""
    @property
    def is_leader(self) -> bool: ...
    @property
    def isr(self) -> Sized: ...
    @property
    def replicas(self) -> Sized: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def remotes(self) -> Mapping[int, RemoteView]: ...
    @property
    def log(self) -> LogView: ...


class OffsetView(Protocol):
    @property
    def offset(self) -> int: ...


class GroupView(Protocol):
    """What the gauges read of a group this broker coordinates."""
    @property
    def group_id(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def members(self) -> Sized: ...
    @property
    def offsets(self) -> Mapping[TP, OffsetView]: ...
    @property
    def state(self) -> Any: ...  # an enum whose value is the state's name


@dataclass(frozen=True)
class MetricSources:
    """What :func:`render_prometheus` reads besides the counters, each read at scrape time."""

    info: Callable[[], Mapping[str, Any]]  # labels of minikafka_broker_info: broker_id, storage, cluster_id
    replicas: Callable[[], Mapping[TP, ReplicaView]]  # the local replicas
    min_insync_replicas: Callable[[str], int]  # a topic's effective min.insync.replicas
    controller_epoch: Callable[[], int]  # from the metadata cache
    live_brokers: Callable[[], int]  # in the metadata cache
    cluster_counts: Callable[[], "ClusterCounts | None"]  # the active controller's; None elsewhere
    controller_queue_size: Callable[[], int]
    zookeeper_watches: Callable[[], int]
    acls: Callable[[], int]
    groups: Callable[[], Iterable[GroupView]]  # the groups this broker coordinates


# ---------------------------------------------------------------- Prometheus text format

def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, Any] | None) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


Samples = list[tuple[Mapping[str, Any] | None, float]]


class _Writer:
    """Collects metric families: one HELP and TYPE line, then the samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, m: Metric, samples: Samples) -> None:
        self.lines.append(f"# HELP {m.name} {m.help}")
        self.lines.append(f"# TYPE {m.name} {m.kind}")
        for labels, value in samples:
            self.lines.append(f"{m.name}{_labels(labels)} {_number(value)}")

    def histogram(self, m: Metric, per_key: list[tuple[tuple, list[int], float]]) -> None:
        self.lines.append(f"# HELP {m.name} {m.help}")
        self.lines.append(f"# TYPE {m.name} histogram")
        for key, buckets, total in per_key:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in zip(m.labels, key))
            sep = "," if labels else ""
            own = "{" + labels + "}" if labels else ""
            running = 0
            for bound, n in zip((*m.buckets, math.inf), buckets):
                running += n
                le = "+Inf" if math.isinf(bound) else repr(bound)
                self.lines.append(f'{m.name}_bucket{{{labels}{sep}le="{le}"}} {running}')
            self.lines.append(f"{m.name}_sum{own} {_number(float(total))}")
            self.lines.append(f"{m.name}_count{own} {running}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def follower_lags(p: ReplicaView) -> dict[int, int]:
    """On a leader: follower id -> leader LEO minus the follower's LEO as last reported
    (records); followers that have not fetched since this leadership began are left out."""
    leo = p.log_end_offset
    return {b: max(0, leo - r.leo) for b, r in sorted(p.remotes.items()) if r.leo >= 0}


def gauges(src: MetricSources) -> dict[Metric, Samples]:
    """Every declared gauge's samples, read from ``src`` without awaiting (one instant)."""
    parts = sorted(src.replicas().items())
    led = [(tp, p) for tp, p in parts if p.is_leader]
    lags = [lag for _, p in led for lag in follower_lags(p).values()]
    counts = src.cluster_counts()
    groups = list(src.groups())
    states = collections.Counter(g.state.value for g in groups)
    replicas = dict(parts)
    group_lag: Samples = []
    for g in groups:
        for (t, p), v in sorted(g.offsets.items()):
            r = replicas.get((t, p))
            if r is not None and r.is_leader:
                group_lag.append(({"group": g.group_id, "topic": t, "partition": p},
                                  max(0, r.high_watermark - v.offset)))

    def one(value: float) -> Samples:
        return [(None, value)]

    def per(fn: Callable[[Any], float], items: list = parts) -> Samples:
        return [({"topic": t, "partition": p}, fn(r)) for (t, p), r in items]

    return {
        M.BROKER_INFO: [(dict(src.info()), 1)],
        M.PARTITION_COUNT: one(len(parts)),
        M.LEADER_COUNT: one(len(led)),
        M.UNDER_REPLICATED_PARTITIONS: one(sum(1 for _, p in led if len(p.isr) < len(p.replicas))),
        M.UNDER_MIN_ISR_PARTITION_COUNT: one(sum(1 for tp, p in led if len(p.isr) < src.min_insync_replicas(tp[0]))),
        M.MAX_FOLLOWER_LAG: one(max(lags, default=0)),
        M.ACTIVE_CONTROLLER_COUNT: one(1 if counts is not None else 0),
        M.CONTROLLER_EPOCH: one(src.controller_epoch()),
        M.OFFLINE_PARTITIONS_COUNT: one(counts.offline_partitions if counts is not None else 0),
        M.GLOBAL_PARTITION_COUNT: one(counts.partitions if counts is not None else 0),
        M.GLOBAL_TOPIC_COUNT: one(counts.topics if counts is not None else 0),
        M.LIVE_BROKER_COUNT: one(src.live_brokers()),
        M.CONTROLLER_EVENT_QUEUE_SIZE: one(src.controller_queue_size()),
        M.ZOOKEEPER_WATCHES: one(src.zookeeper_watches()),
        M.ACLS: one(src.acls()),
        M.GROUP_COUNT: [({"state": st}, states.get(st, 0))
                        for st in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")],
        M.GROUP_OFFSETS_COUNT: one(sum(len(g.offsets) for g in groups)),
        M.GROUP_MEMBERS: [({"group": g.group_id}, len(g.members)) for g in groups],
        M.GROUP_GENERATION: [({"group": g.group_id}, g.generation) for g in groups],
        M.GROUP_LAG: group_lag,
        M.LOG_END_OFFSET: per(lambda r: r.log_end_offset),
        M.LOG_START_OFFSET: per(lambda r: r.log.log_start_offset),
        M.LOG_SIZE_BYTES: per(lambda r: r.log.size_bytes),
        M.LOG_SEGMENTS: per(lambda r: len(r.log.segments)),
        M.HIGH_WATERMARK: per(lambda r: r.high_watermark),
        M.PARTITION_LEADER_EPOCH: per(lambda r: r.leader_epoch),
        M.PARTITION_IS_LEADER: per(lambda r: 1 if r.is_leader else 0),
        M.PARTITION_UNDER_REPLICATED: per(lambda r: 1 if len(r.isr) < len(r.replicas) else 0, led),
        M.PARTITION_IN_SYNC_REPLICAS_COUNT: per(lambda r: len(r.isr), led),
        M.PARTITION_REPLICAS_COUNT: per(lambda r: len(r.replicas), led),
        M.PARTITION_FOLLOWER_LAG: [({"topic": t, "partition": p, "replica": b}, lag) for (t, p), r in led
                                   for b, lag in follower_lags(r).items()],
    }


def render_prometheus(metrics: Metrics, sources: MetricSources) -> str:
    """Every declared metric, in declaration order, in the Prometheus text exposition
    format (version 0.0.4).  Reads the broker's state without awaiting, so every value
    comes from one instant."""
    read = gauges(sources)
    w = _Writer()
    for m in M.REGISTRY:
        if m.kind == GAUGE:
            w.family(m, read[m] if m in read else metrics.level_samples(m))
        elif m.kind == COUNTER:
            w.family(m, metrics.counter_samples(m))
        else:
            assert m.kind == HISTOGRAM
            w.histogram(m, metrics.histogram_samples(m))
    return w.text()
