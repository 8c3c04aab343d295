"""Counters and timings a broker keeps; rendered in Prometheus format at /metrics.

Names follow Kafka's JMX metrics in snake case with a ``minikafka_`` prefix
(``kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`` becomes
``minikafka_under_replicated_partitions``).  docs/metrics.md lists every one.
"""
from __future__ import annotations

import bisect
import collections
import math
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from .server import Broker

# Upper bounds (seconds) of the request latency histogram; fetches long-poll up to
# max_wait_ms (500 ms by default) and acks=all produces wait for replication.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """Named counters plus per-API request counts, latency sums and latency histograms."""

    def __init__(self) -> None:
        self.counters: collections.Counter[str] = collections.Counter()
        self.request_counts: collections.Counter[str] = collections.Counter()
        self.request_seconds: collections.Counter[str] = collections.Counter()
        # api -> count per bucket of LATENCY_BUCKETS (not cumulative; the last slot is +Inf)
        self.request_buckets: dict[str, list[int]] = {}
        self.bytes_in = 0
        self.bytes_out = 0
        # (topic, partition) -> [records, bytes] this broker served to consumers as leader
        # (the dashboard's per-partition fetch rates come from two readings of these)
        self.consumer_fetched: dict[tuple[str, int], list[int]] = {}

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] += n

    def count_consumer_fetch(self, requested: list[dict], answered: list[dict]) -> None:
        """Add a consumer fetch's answer to :attr:`consumer_fetched`: the batch bytes
        returned per partition, and as records the offsets from the fetch offset to the
        end of the last batch returned (whole batches come back, the first one may
        start below the fetch offset)."""
        from ..protocol.records.batch import HEADER_SIZE, read_header

        starts = {(m["topic"], m["partition"]): m["fetch_offset"] for m in requested}
        for e in answered:
            data = e.get("records") or b""
            if not data or e.get("error_code"):
                continue
            tp = (e["topic"], e["partition"])
            pos, end = 0, starts.get(tp, 0)
            while pos + HEADER_SIZE <= len(data):
                h = read_header(data, pos)
                if h.size <= 0:
                    break
                end = max(end, h.next_offset)
                pos += h.size
            counts = self.consumer_fetched.setdefault(tp, [0, 0])
            counts[0] += max(0, end - starts.get(tp, 0))
            counts[1] += len(data)

    def observe_request(self, api: str, seconds: float) -> None:
        self.request_counts[api] += 1
        self.request_seconds[api] += seconds
        buckets = self.request_buckets.get(api)
        if buckets is None:
            buckets = self.request_buckets[api] = [0] * (len(LATENCY_BUCKETS) + 1)
        buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1


# ---------------------------------------------------------------- Prometheus text format

def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, Any] | None) -> str:
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


class _Writer:
    """Collects metric families: one HELP and TYPE line, then the samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help: str,
               samples: Iterable[tuple[dict[str, Any] | None, float]] | float) -> None:
        self.lines.append(f"# HELP {name} {help}")
        self.lines.append(f"# TYPE {name} {kind}")
        if isinstance(samples, (int, float)):
            samples = [(None, samples)]
        for labels, value in samples:
            self.lines.append(f"{name}{_labels(labels)} {_number(value)}")

    def histogram(self, name: str, help: str, per_label: dict[str, tuple[list[int], float, int]], label: str) -> None:
        self.lines.append(f"# HELP {name} {help}")
        self.lines.append(f"# TYPE {name} histogram")
        for key, (buckets, total, count) in sorted(per_label.items()):
            running = 0
            for bound, n in zip((*LATENCY_BUCKETS, math.inf), buckets):
                running += n
                le = "+Inf" if math.isinf(bound) else repr(bound)
                self.lines.append(f'{name}_bucket{{{label}="{_escape(key)}",le="{le}"}} {running}')
            self.lines.append(f'{name}_sum{{{label}="{_escape(key)}"}} {_number(float(total))}')
            self.lines.append(f'{name}_count{{{label}="{_escape(key)}"}} {count}')

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def follower_lags(p: Any) -> dict[int, int]:
    """On a leader: follower id -> leader LEO minus the follower's LEO as last reported
    (records); followers that have not fetched since this leadership began are left out."""
    leo = p.log_end_offset
    return {b: max(0, leo - r.leo) for b, r in sorted(p.remotes.items()) if r.leo >= 0}


def render_prometheus(broker: "Broker") -> str:
    """The broker's metrics in the Prometheus text exposition format (version 0.0.4).

    Reads the broker's state without awaiting, so every value comes from one instant.
    """
    m = broker.metrics
    rm = broker.replica_manager
    controller = broker.controller
    w = _Writer()

    w.family("minikafka_broker_info", "gauge", "Always 1; labels name this broker and its log storage.",
             [({"broker_id": broker.broker_id, "storage": broker.config.storage, "cluster_id": broker.cluster_id}, 1)])

    # -- ReplicaManager -------------------------------------------------------------------
    parts = sorted(rm.partitions.items())
    led = [(tp, p) for tp, p in parts if p.is_leader]
    under_replicated = [(tp, p) for tp, p in led if len(p.isr) < len(p.replicas)]
    under_min_isr = [(tp, p) for tp, p in led if len(p.isr) < int(rm.setting(tp[0], "min.insync.replicas"))]
    w.family("minikafka_partition_count", "gauge", "Partitions with a replica on this broker (ReplicaManager PartitionCount).",
             len(parts))
    w.family("minikafka_leader_count", "gauge", "Partitions this broker leads (ReplicaManager LeaderCount).", len(led))
    w.family("minikafka_under_replicated_partitions", "gauge",
             "Partitions this broker leads whose ISR is smaller than their replica list "
             "(ReplicaManager UnderReplicatedPartitions).", len(under_replicated))
    w.family("minikafka_under_min_isr_partition_count", "gauge",
             "Partitions this broker leads whose ISR is smaller than min.insync.replicas "
             "(ReplicaManager UnderMinIsrPartitionCount).", len(under_min_isr))
    w.family("minikafka_isr_shrinks_total", "counter",
             "ISR shrinks this broker wrote to ZooKeeper as partition leader (ReplicaManager IsrShrinksPerSec).",
             m.counters["isr_shrink"])
    w.family("minikafka_isr_expands_total", "counter",
             "ISR expansions this broker wrote to ZooKeeper as partition leader (ReplicaManager IsrExpandsPerSec).",
             m.counters["isr_expand"])
    lags = [lag for _, p in led for lag in follower_lags(p).values()]
    w.family("minikafka_max_follower_lag", "gauge",
             "Largest leader LEO minus follower LEO (records) over the partitions this broker leads "
             "(leader-side view of ReplicaFetcherManager MaxLag).", max(lags, default=0))

    # -- KafkaController ------------------------------------------------------------------
    offline = 0
    global_partitions = 0
    if controller is not None:
        live = set(controller.ctx.live)
        for _, info in controller.ctx.partitions():
            global_partitions += 1
            if info.state is None or info.state.leader < 0 or info.state.leader not in live:
                offline += 1
    w.family("minikafka_active_controller_count", "gauge",
             "1 on the broker that is the active controller, 0 elsewhere (KafkaController ActiveControllerCount).",
             1 if controller is not None else 0)
    w.family("minikafka_controller_epoch", "gauge", "The controller epoch this broker knows (from UpdateMetadata).",
             broker.metadata.controller_epoch)
    w.family("minikafka_offline_partitions_count", "gauge",
             "On the controller: partitions without a live leader (KafkaController OfflinePartitionsCount); "
             "0 on other brokers.", offline)
    w.family("minikafka_global_partition_count", "gauge",
             "On the controller: partitions in the cluster (KafkaController GlobalPartitionCount); 0 elsewhere.",
             global_partitions)
    w.family("minikafka_global_topic_count", "gauge",
             "On the controller: topics in the cluster (KafkaController GlobalTopicCount); 0 elsewhere.",
             len(controller.ctx.topics) if controller is not None else 0)
    w.family("minikafka_live_broker_count", "gauge",
             "Live brokers in this broker's metadata cache.", len(broker.metadata.brokers))
    w.family("minikafka_log_cleanings_total", "counter",
             "Log cleaner passes that compacted a log on this broker (cleanup.policy=compact).",
             m.counters["log_cleanings"])
    w.family("minikafka_log_cleaner_records_removed_total", "counter",
             "Records the log cleaner removed (superseded by a later record with the same key, or expired tombstones).",
             m.counters["log_cleaner_records_removed"])
    w.family("minikafka_leader_elections_total", "counter",
             "Partition leader elections this broker made as controller (ControllerStats LeaderElectionRateAndTimeMs).",
             m.counters["leader_elections"])
    w.family("minikafka_unclean_leader_elections_total", "counter",
             "Unclean leader elections this broker made as controller (ControllerStats UncleanLeaderElectionsPerSec).",
             m.counters["unclean_leader_elections"])
    w.family("minikafka_preferred_leader_elections_total", "counter",
             "Preferred replica elections this broker made as controller.", m.counters["preferred_elections"])
    w.family("minikafka_controller_elections_total", "counter",
             "Times this broker won the controller election (KafkaController ControllerChangeRate, local side).",
             m.counters["controller_elections"])
    w.family("minikafka_controller_moves_total", "counter",
             "Times a controller event failed on this broker and it resigned, deleting /controller so another "
             "broker takes over (Kafka's triggerControllerMove).", m.counters["controller_moves"])
    w.family("minikafka_controller_write_conflicts_total", "counter",
             "Controller transactions that lost a race on a partition state version and were planned again "
             "from fresh state.", m.counters["controller_write_conflicts"])
    w.family("minikafka_controller_event_queue_size", "gauge",
             "Events waiting in this broker's controller event queue (ControllerEventManager EventQueueSize).",
             broker.kafka_controller.queue.qsize())
    w.family("minikafka_zookeeper_watches", "gauge",
             "ZooKeeper watches this broker holds (the controller's are cancelled when it resigns).",
             len(broker.zk.watches))
    w.family("minikafka_cluster_authorization_failures_total", "counter",
             "Controller and replica requests refused with CLUSTER_AUTHORIZATION_FAILED: they did not carry the "
             "cluster credential.", m.counters["cluster_authorization_failures"])
    w.family("minikafka_authentication_failures_total", "counter",
             "Clients refused with SASL_AUTHENTICATION_FAILED (unknown user, wrong password) or for sending "
             "requests before authenticating on a SASL listener.", m.counters["authentication_failures"])
    w.family("minikafka_authorization_failures_total", "counter",
             "Operations an ACL did not allow (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED, or a topic left "
             "out of a metadata answer).", m.counters["authorization_failures"])
    w.family("minikafka_acls", "gauge", "ACLs this broker's authorizer holds (from ZooKeeper's /kafka-acl).",
             len(broker.security.authorizer.bindings))
    w.family("minikafka_forged_controller_epochs_total", "counter",
             "Controller requests refused because their controller epoch is newer than /controller_epoch.",
             m.counters["forged_controller_epochs"])
    w.family("minikafka_fenced_fetches_total", "counter",
             "Follower fetches this broker sent that the leader refused with FENCED_LEADER_EPOCH or "
             "UNKNOWN_LEADER_EPOCH (the two disagree on the leader epoch until LeaderAndIsr arrives).",
             m.counters["fenced_fetches"])
    w.family("minikafka_duplicate_batches_total", "counter",
             "Retried batches of idempotent producers this broker, as leader, answered with their original "
             "offsets instead of writing them again.", m.counters["duplicate_batches"])
    w.family("minikafka_kafka_frames_rejected_total", "counter",
             "Kafka-protocol connections closed for a malformed or oversized frame.",
             m.counters["kafka_frames_rejected"])
    w.family("minikafka_kafka_unsupported_requests_total", "counter",
             "Kafka-protocol requests of an API or version this broker does not serve.",
             m.counters["kafka_unsupported_requests"])
    w.family("minikafka_become_leader_total", "counter",
             "LeaderAndIsr requests that made this broker the leader of a partition.",
             m.counters["leader_elections_seen"])

    # -- GroupCoordinator / GroupMetadataManager ---------------------------------------------
    groups = broker.coordinator.list_groups()
    states = collections.Counter(g.state.value for g in groups)
    w.family("minikafka_group_count", "gauge",
             "Consumer groups this broker coordinates, per state (GroupMetadataManager NumGroups, "
             "NumGroupsStable, NumGroupsPreparingRebalance, ...).",
             [({"state": st}, states.get(st, 0)) for st in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")])
    w.family("minikafka_group_offsets_count", "gauge",
             "Committed offsets held by this broker's groups (GroupMetadataManager NumOffsets).",
             sum(len(g.offsets) for g in groups))
    w.family("minikafka_group_members", "gauge", "Members of each group this broker coordinates.",
             [({"group": g.group_id}, len(g.members)) for g in groups])
    w.family("minikafka_group_generation", "gauge", "Generation of each group this broker coordinates.",
             [({"group": g.group_id}, g.generation) for g in groups])
    w.family("minikafka_offset_commits_total", "counter", "Offset commits this broker wrote as coordinator.",
             m.counters["offset_commits"])
    for name, help in (("group_rebalances", "Rebalances this broker started as coordinator."),
                       ("group_joins", "Members that joined groups this broker coordinates."),
                       ("group_leaves", "Members that left or were evicted (session timeout) from those groups."),
                       ("group_leader_changes", "Times a group this broker coordinates got a new group leader.")):
        w.family(f"minikafka_{name}_total", "counter", help, m.counters[name])
    lag = []
    for g in groups:
        for (t, p), v in sorted(g.offsets.items()):
            r = rm.partitions.get((t, p))
            if r is not None and r.is_leader:
                lag.append(({"group": g.group_id, "topic": t, "partition": p}, max(0, r.high_watermark - v.offset)))
    w.family("minikafka_group_lag", "gauge",
             "High watermark minus the group's committed offset, for partitions this broker both coordinates "
             "the group of and leads (a consumer's records-lag as the brokers see it).", lag)

    # -- network / BrokerTopicMetrics ------------------------------------------------------
    w.family("minikafka_bytes_in_total", "counter",
             "Record-batch bytes appended to this broker's logs, by producers on leaders and by replication "
             "on followers (BrokerTopicMetrics BytesInPerSec + ReplicationBytesInPerSec).", m.bytes_in)
    w.family("minikafka_bytes_out_total", "counter",
             "Record-batch bytes sent in fetch answers, to consumers and followers "
             "(BrokerTopicMetrics BytesOutPerSec + ReplicationBytesOutPerSec).", m.bytes_out)
    apis = sorted(set(m.request_counts) | set(m.request_buckets))
    w.family("minikafka_requests_total", "counter",
             "Requests answered without a top-level error, per API (RequestMetrics RequestsPerSec).",
             [({"api": a}, m.request_counts[a]) for a in apis])
    w.histogram("minikafka_request_seconds", "Time from decoding a request to its answer, per API "
                "(RequestMetrics TotalTimeMs), in seconds.",
                {a: (m.request_buckets.get(a, [0] * (len(LATENCY_BUCKETS) + 1)), m.request_seconds[a], m.request_counts[a])
                 for a in apis}, "api")
    errors = sorted((name.removeprefix("errors_"), n) for name, n in m.counters.items() if name.startswith("errors_"))
    w.family("minikafka_request_errors_total", "counter",
             "Requests answered with a top-level error, per error name (RequestMetrics ErrorsPerSec).",
             [({"error": e}, n) for e, n in errors])

    # -- per partition (kafka.log:type=Log and kafka.cluster:type=Partition) ------------------
    def per(fn: Any, items: list = parts) -> list[tuple[dict, float]]:
        return [({"topic": t, "partition": p}, fn(r)) for (t, p), r in items]

    w.family("minikafka_log_end_offset", "gauge", "LEO of each local replica (Log LogEndOffset).",
             per(lambda r: r.log_end_offset))
    w.family("minikafka_log_start_offset", "gauge", "Log start offset of each local replica (Log LogStartOffset).",
             per(lambda r: r.log.log_start_offset))
    w.family("minikafka_log_size_bytes", "gauge", "Bytes of record batches in each local replica's log (Log Size).",
             per(lambda r: r.log.size_bytes))
    w.family("minikafka_log_segments", "gauge", "Segments of each local replica's log (Log NumLogSegments).",
             per(lambda r: len(r.log.segments)))
    w.family("minikafka_high_watermark", "gauge", "High watermark of each local replica.",
             per(lambda r: r.high_watermark))
    w.family("minikafka_partition_leader_epoch", "gauge", "Leader epoch each local replica knows.",
             per(lambda r: r.leader_epoch))
    w.family("minikafka_partition_is_leader", "gauge", "1 where this broker leads the partition.",
             per(lambda r: 1 if r.is_leader else 0))
    w.family("minikafka_partition_under_replicated", "gauge",
             "On the leader: 1 when the ISR is smaller than the replica list (Partition UnderReplicated).",
             per(lambda r: 1 if len(r.isr) < len(r.replicas) else 0, led))
    w.family("minikafka_partition_in_sync_replicas_count", "gauge",
             "On the leader: ISR size (Partition InSyncReplicasCount).", per(lambda r: len(r.isr), led))
    w.family("minikafka_partition_replicas_count", "gauge",
             "On the leader: replica list size (Partition ReplicasCount).", per(lambda r: len(r.replicas), led))
    w.family("minikafka_partition_follower_lag", "gauge",
             "On the leader: leader LEO minus the follower's last reported LEO, in records.",
             [({"topic": t, "partition": p, "replica": b}, lag) for (t, p), r in led
              for b, lag in follower_lags(r).items()])
    return w.text()
