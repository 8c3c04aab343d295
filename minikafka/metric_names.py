"""Every metric a broker exports at /metrics, declared once: name, type, help text, labels.

Names follow Kafka's JMX metrics in snake case with a ``minikafka_`` prefix
(``kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`` becomes
``minikafka_under_replicated_partitions``); counters end in ``_total``.

Code counts with the declared objects, never with names built at the call site::

    metrics.count(ISR_SHRINKS)
    metrics.count(REQUEST_ERRORS, error=exc.code.name)

Counters and the histogram are kept by :class:`minikafka.broker.metrics.Metrics`; gauges
are read from the broker's state when /metrics is rendered
(:func:`minikafka.broker.metrics.render_prometheus`).  :data:`REGISTRY` keeps the order of
declaration, which is the order of /metrics.  docs/metrics.md documents every one (a
test checks it).

This module is a leaf with no imports of its own, so the pure controller core can name
the counters its plans carry.
"""
from __future__ import annotations

from dataclasses import dataclass

COUNTER = "counter"
GAUGE = "gauge"
HISTOGRAM = "histogram"


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per metric
class Metric:
    name: str  # the exported name, e.g. minikafka_isr_shrinks_total
    kind: str  # COUNTER, GAUGE or HISTOGRAM
    help: str  # the HELP line
    labels: tuple[str, ...] = ()  # label names, in the order samples carry them
    buckets: tuple[float, ...] = ()  # a histogram's upper bounds (the +Inf bucket is implied)

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name}>"


REGISTRY: list[Metric] = []  # in order of declaration
BY_NAME: dict[str, Metric] = {}


def _declare(name: str, kind: str, help: str, labels: tuple[str, ...], buckets: tuple[float, ...] = ()) -> Metric:
    assert name.startswith("minikafka_") and name not in BY_NAME, name
    assert (kind == COUNTER) == name.endswith("_total"), f"{name}: only counters end in _total"
    assert (kind == HISTOGRAM) == bool(buckets) and list(buckets) == sorted(buckets), name
    m = Metric(name, kind, help, labels, buckets)
    REGISTRY.append(m)
    BY_NAME[name] = m
    return m


def counter(name: str, help: str, labels: tuple[str, ...] = ()) -> Metric:
    return _declare(name, COUNTER, help, labels)


def gauge(name: str, help: str, labels: tuple[str, ...] = ()) -> Metric:
    return _declare(name, GAUGE, help, labels)


_LEVELS: list[Metric] = []


def level(name: str, help: str, labels: tuple[str, ...] = ()) -> Metric:
    """A gauge the broker sets as it goes (Metrics.set_level), not one read from its state."""
    m = _declare(name, GAUGE, help, labels)
    _LEVELS.append(m)
    return m


def histogram(name: str, help: str, buckets: tuple[float, ...], labels: tuple[str, ...] = ()) -> Metric:
    return _declare(name, HISTOGRAM, help, labels, buckets)


TP = ("topic", "partition")

# Upper bounds (seconds) of the request latency histogram; fetches long-poll up to
# max_wait_ms (500 ms by default) and acks=all produces wait for replication.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

BROKER_INFO = gauge("minikafka_broker_info", "Always 1; labels name this broker and its log storage.",
                    ("broker_id", "storage", "cluster_id"))

# -- ReplicaManager ---------------------------------------------------------------------------------
PARTITION_COUNT = gauge("minikafka_partition_count",
                        "Partitions with a replica on this broker (ReplicaManager PartitionCount).")
LEADER_COUNT = gauge("minikafka_leader_count", "Partitions this broker leads (ReplicaManager LeaderCount).")
UNDER_REPLICATED_PARTITIONS = gauge(
    "minikafka_under_replicated_partitions",
    "Partitions this broker leads whose ISR is smaller than their replica list "
    "(ReplicaManager UnderReplicatedPartitions).")
UNDER_MIN_ISR_PARTITION_COUNT = gauge(
    "minikafka_under_min_isr_partition_count",
    "Partitions this broker leads whose ISR is smaller than min.insync.replicas "
    "(ReplicaManager UnderMinIsrPartitionCount).")
ISR_SHRINKS = counter(
    "minikafka_isr_shrinks_total",
    "ISR shrinks this broker wrote to ZooKeeper as partition leader (ReplicaManager IsrShrinksPerSec).")
ISR_EXPANDS = counter(
    "minikafka_isr_expands_total",
    "ISR expansions this broker wrote to ZooKeeper as partition leader (ReplicaManager IsrExpandsPerSec).")
MAX_FOLLOWER_LAG = gauge(
    "minikafka_max_follower_lag",
    "Largest leader LEO minus follower LEO (records) over the partitions this broker leads "
    "(leader-side view of ReplicaFetcherManager MaxLag).")

# -- KafkaController --------------------------------------------------------------------------------
ACTIVE_CONTROLLER_COUNT = gauge(
    "minikafka_active_controller_count",
    "1 on the broker that is the active controller, 0 elsewhere (KafkaController ActiveControllerCount).")
CONTROLLER_EPOCH = gauge("minikafka_controller_epoch", "The controller epoch this broker knows (from UpdateMetadata).")
OFFLINE_PARTITIONS_COUNT = gauge(
    "minikafka_offline_partitions_count",
    "On the controller: partitions without a live leader (KafkaController OfflinePartitionsCount); "
    "0 on other brokers.")
GLOBAL_PARTITION_COUNT = gauge(
    "minikafka_global_partition_count",
    "On the controller: partitions in the cluster (KafkaController GlobalPartitionCount); 0 elsewhere.")
GLOBAL_TOPIC_COUNT = gauge(
    "minikafka_global_topic_count",
    "On the controller: topics in the cluster (KafkaController GlobalTopicCount); 0 elsewhere.")
LIVE_BROKER_COUNT = gauge("minikafka_live_broker_count", "Live brokers in this broker's metadata cache.")
LOG_CLEANINGS = counter("minikafka_log_cleanings_total",
                        "Log cleaner passes that compacted a log on this broker (cleanup.policy=compact).")
LOG_CLEANER_RECORDS_REMOVED = counter(
    "minikafka_log_cleaner_records_removed_total",
    "Records the log cleaner removed (superseded by a later record with the same key, or expired tombstones).")
LEADER_ELECTIONS = counter(
    "minikafka_leader_elections_total",
    "Partition leader elections this broker made as controller (ControllerStats LeaderElectionRateAndTimeMs).")
UNCLEAN_LEADER_ELECTIONS = counter(
    "minikafka_unclean_leader_elections_total",
    "Unclean leader elections this broker made as controller (ControllerStats UncleanLeaderElectionsPerSec).")
PREFERRED_LEADER_ELECTIONS = counter("minikafka_preferred_leader_elections_total",
                                     "Preferred replica elections this broker made as controller.")
CONTROLLER_ELECTIONS = counter(
    "minikafka_controller_elections_total",
    "Times this broker won the controller election (KafkaController ControllerChangeRate, local side).")
CONTROLLER_MOVES = counter(
    "minikafka_controller_moves_total",
    "Times a controller event failed on this broker and it resigned, deleting /controller so another "
    "broker takes over (Kafka's triggerControllerMove).")
CONTROLLER_WRITE_CONFLICTS = counter(
    "minikafka_controller_write_conflicts_total",
    "Controller transactions that lost a race on a partition state version and were planned again "
    "from fresh state.")
CONTROLLER_EVENT_QUEUE_SIZE = gauge(
    "minikafka_controller_event_queue_size",
    "Events waiting in this broker's controller event queue (ControllerEventManager EventQueueSize).")
ZOOKEEPER_WATCHES = gauge("minikafka_zookeeper_watches",
                          "ZooKeeper watches this broker holds (the controller's are cancelled when it resigns).")
CLUSTER_AUTHORIZATION_FAILURES = counter(
    "minikafka_cluster_authorization_failures_total",
    "Controller and replica requests refused with CLUSTER_AUTHORIZATION_FAILED: they did not carry the "
    "cluster credential.")
AUTHENTICATION_FAILURES = counter(
    "minikafka_authentication_failures_total",
    "Clients refused with SASL_AUTHENTICATION_FAILED (unknown user, wrong password) or for sending "
    "requests before authenticating on a SASL listener.")
AUTHORIZATION_FAILURES = counter(
    "minikafka_authorization_failures_total",
    "Operations an ACL did not allow (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED, or a topic left "
    "out of a metadata answer).")
ACLS = gauge("minikafka_acls", "ACLs this broker's authorizer holds (from ZooKeeper's /kafka-acl).")
FORGED_CONTROLLER_EPOCHS = counter(
    "minikafka_forged_controller_epochs_total",
    "Controller requests refused because their controller epoch is newer than /controller_epoch.")
STALE_BROKER_EPOCH_REQUESTS = counter(
    "minikafka_stale_broker_epoch_requests_total",
    "LeaderAndIsr requests refused with STALE_BROKER_EPOCH: addressed to another registration of this "
    "broker id (KIP-380).")
FENCED_FETCHES = counter(
    "minikafka_fenced_fetches_total",
    "Follower fetches this broker sent that the leader refused with FENCED_LEADER_EPOCH or "
    "UNKNOWN_LEADER_EPOCH (the two disagree on the leader epoch until LeaderAndIsr arrives).")
INCREMENTAL_FETCH_SESSIONS = level(
    "minikafka_incremental_fetch_sessions",
    "Incremental fetch sessions (KIP-227) this broker keeps as leader, followers' and consumers' "
    "(Kafka's NumIncrementalFetchSessions); at most max.incremental.fetch.session.cache.slots.")
INCREMENTAL_FETCH_PARTITIONS_CACHED = level(
    "minikafka_incremental_fetch_partitions_cached",
    "Partitions of all incremental fetch sessions this broker keeps (Kafka's NumIncrementalFetchPartitionsCached).")
INCREMENTAL_FETCHES = counter(
    "minikafka_incremental_fetches_total",
    "Fetches this broker answered in an incremental fetch session: they named only the partitions that "
    "changed (fetcher: replica for followers, consumer for the Kafka listener's consumers).", ("fetcher",))
INCREMENTAL_FETCH_SESSION_EVICTIONS = counter(
    "minikafka_incremental_fetch_session_evictions_total",
    "Incremental fetch sessions evicted to make room for another (Kafka's IncrementalFetchSessionEvictionsPerSec).")
FETCH_SESSION_ERRORS = counter(
    "minikafka_fetch_session_errors_total",
    "Fetches refused with FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH (the fetcher starts "
    "over with a full fetch).", ("error",))
DUPLICATE_BATCHES = counter(
    "minikafka_duplicate_batches_total",
    "Retried batches of idempotent producers this broker, as leader, answered with their original "
    "offsets instead of writing them again.")
KAFKA_FRAMES_REJECTED = counter("minikafka_kafka_frames_rejected_total",
                                "Kafka-protocol connections closed for a malformed or oversized frame.")
KAFKA_UNSUPPORTED_REQUESTS = counter("minikafka_kafka_unsupported_requests_total",
                                     "Kafka-protocol requests of an API or version this broker does not serve.")
CONNECTIONS = level("minikafka_connections",
                    "Open client connections per listener (msgpack HTTP and Kafka), bounded by max.connections.",
                    ("listener",))
CONNECTIONS_REFUSED = counter(
    "minikafka_connections_refused_total",
    "Connections closed at once because max.connections or max.connections.per.ip was reached.",
    ("listener", "reason"))
CONNECTIONS_IDLE_CLOSED = counter(
    "minikafka_connections_idle_closed_total",
    "Connections closed after connections.max.idle.ms without a request, or whose request (its head or its "
    "body) had not all arrived request.timeout.ms after its first byte.", ("listener",))
REQUEST_BYTES_IN_FLIGHT = level(
    "minikafka_request_bytes_in_flight",
    "Bytes client requests hold (both listeners), each from its first byte read until its answer has left: "
    "heads arriving, bodies, answers waiting to be sent; bounded by queued.max.request.bytes.")
REQUEST_MEMORY_WAITS = counter(
    "minikafka_request_memory_waits_total",
    "Requests that waited for memory because queued.max.request.bytes was in use (their connection is muted "
    "meanwhile).")
BECOME_LEADER = counter("minikafka_become_leader_total",
                        "LeaderAndIsr requests that made this broker the leader of a partition.")

# -- GroupCoordinator / GroupMetadataManager --------------------------------------------------------
GROUP_COUNT = gauge(
    "minikafka_group_count",
    "Consumer groups this broker coordinates, per state (GroupMetadataManager NumGroups, "
    "NumGroupsStable, NumGroupsPreparingRebalance, ...).", ("state",))
GROUP_OFFSETS_COUNT = gauge("minikafka_group_offsets_count",
                            "Committed offsets held by this broker's groups (GroupMetadataManager NumOffsets).")
GROUP_MEMBERS = gauge("minikafka_group_members", "Members of each group this broker coordinates.", ("group",))
GROUP_GENERATION = gauge("minikafka_group_generation", "Generation of each group this broker coordinates.",
                         ("group",))
OFFSET_COMMITS = counter("minikafka_offset_commits_total", "Offset commits this broker wrote as coordinator.")
GROUP_REBALANCES = counter("minikafka_group_rebalances_total", "Rebalances this broker started as coordinator.")
GROUP_JOINS = counter("minikafka_group_joins_total", "Members that joined groups this broker coordinates.")
GROUP_LEAVES = counter("minikafka_group_leaves_total",
                       "Members that left or were evicted (session timeout) from those groups.")
GROUP_LEADER_CHANGES = counter("minikafka_group_leader_changes_total",
                               "Times a group this broker coordinates got a new group leader.")
GROUP_LAG = gauge(
    "minikafka_group_lag",
    "High watermark minus the group's committed offset, for partitions this broker both coordinates "
    "the group of and leads (a consumer's records-lag as the brokers see it).", ("group", *TP))

# -- network / BrokerTopicMetrics -------------------------------------------------------------------
BYTES_IN = counter(
    "minikafka_bytes_in_total",
    "Record-batch bytes appended to this broker's logs, by producers on leaders and by replication "
    "on followers (BrokerTopicMetrics BytesInPerSec + ReplicationBytesInPerSec).")
BYTES_OUT = counter(
    "minikafka_bytes_out_total",
    "Record-batch bytes sent in fetch answers, to consumers and followers "
    "(BrokerTopicMetrics BytesOutPerSec + ReplicationBytesOutPerSec).")
REQUESTS = counter("minikafka_requests_total",
                   "Requests answered without a top-level error, per API (RequestMetrics RequestsPerSec).", ("api",))
REQUEST_SECONDS = histogram(
    "minikafka_request_seconds",
    "Time from decoding a request to its answer, per API (RequestMetrics TotalTimeMs), in seconds.",
    LATENCY_BUCKETS, ("api",))
LOOP_LAG_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
EVENT_LOOP_LAG_SECONDS = histogram(
    "minikafka_event_loop_lag_seconds",
    "How late the broker's event loop woke a 10 ms timer, in seconds: while the loop is held, every "
    "request, fetch answer and timer of this broker waits (Kafka's RequestHandlerAvgIdlePercent, seen from the other side).",
    LOOP_LAG_BUCKETS)
GC_PAUSE_BUCKETS = (0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25)
GC_PAUSE_SECONDS = histogram(
    "minikafka_gc_pause_seconds",
    "How long each collection of Python's garbage collector held the broker process, per generation "
    "(0 youngest, 2 full), in seconds (the JVM's GC pause time).",
    GC_PAUSE_BUCKETS, ("generation",))
EVENT_LOOP_STALLS = counter(
    "minikafka_event_loop_stalls_total",
    "Times the event loop was held for 100 ms or more; the broker's log names what ran (the loop thread's stack).")
REQUEST_ERRORS = counter(
    "minikafka_request_errors_total",
    "Requests answered with a top-level error, per error name (RequestMetrics ErrorsPerSec).", ("error",))
CONSUMER_FETCH_RECORDS = counter(
    "minikafka_consumer_fetch_records_total",
    "Records this broker served to consumers as leader, per partition: offsets from each fetch offset to "
    "the end of the last batch returned (the dashboard's fetch rates).", TP)
CONSUMER_FETCH_BYTES = counter(
    "minikafka_consumer_fetch_bytes_total",
    "Record-batch bytes this broker served to consumers as leader, per partition (the dashboard's fetch "
    "rates).", TP)

# -- per partition (kafka.log:type=Log and kafka.cluster:type=Partition) ----------------------------
LOG_END_OFFSET = gauge("minikafka_log_end_offset", "LEO of each local replica (Log LogEndOffset).", TP)
LOG_START_OFFSET = gauge("minikafka_log_start_offset", "Log start offset of each local replica (Log LogStartOffset).",
                         TP)
LOG_SIZE_BYTES = gauge("minikafka_log_size_bytes", "Bytes of record batches in each local replica's log (Log Size).",
                       TP)
LOG_SEGMENTS = gauge("minikafka_log_segments", "Segments of each local replica's log (Log NumLogSegments).", TP)
HIGH_WATERMARK = gauge("minikafka_high_watermark", "High watermark of each local replica.", TP)
PARTITION_LEADER_EPOCH = gauge("minikafka_partition_leader_epoch", "Leader epoch each local replica knows.", TP)
PARTITION_IS_LEADER = gauge("minikafka_partition_is_leader", "1 where this broker leads the partition.", TP)
PARTITION_UNDER_REPLICATED = gauge(
    "minikafka_partition_under_replicated",
    "On the leader: 1 when the ISR is smaller than the replica list (Partition UnderReplicated).", TP)
PARTITION_IN_SYNC_REPLICAS_COUNT = gauge("minikafka_partition_in_sync_replicas_count",
                                         "On the leader: ISR size (Partition InSyncReplicasCount).", TP)
PARTITION_REPLICAS_COUNT = gauge("minikafka_partition_replicas_count",
                                 "On the leader: replica list size (Partition ReplicasCount).", TP)
PARTITION_FOLLOWER_LAG = gauge("minikafka_partition_follower_lag",
                               "On the leader: leader LEO minus the follower's last reported LEO, in records.",
                               (*TP, "replica"))

# -- transactions (kafka.coordinator.transaction) ---------------------------------------------------
TXN_COMMITS = counter("minikafka_txn_commits_total", "Transactions this broker completed with a commit as "
                      "transaction coordinator (CompleteCommit written).")
TXN_ABORTS = counter("minikafka_txn_aborts_total", "Transactions this broker completed with an abort as "
                     "transaction coordinator (CompleteAbort written), timed out and fenced ones included.")
TXN_FENCED = counter("minikafka_txn_fenced_total", "Producer epochs this broker fenced as transaction coordinator "
                     "(a new instance of a transactional id called InitProducerId).")
TXN_TIMED_OUT = counter("minikafka_txn_timed_out_total", "Transactions this broker aborted as transaction "
                        "coordinator because they ran past transaction.timeout.ms.")
COUNTERS = tuple(m for m in REGISTRY if m.kind == COUNTER)
GAUGES = tuple(m for m in REGISTRY if m.kind == GAUGE and m not in _LEVELS)  # read from the broker's state
LEVELS = tuple(_LEVELS)
HISTOGRAMS = tuple(m for m in REGISTRY if m.kind == HISTOGRAM)
