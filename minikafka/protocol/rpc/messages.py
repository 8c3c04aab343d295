"""Every API of the broker protocol: ``POST /v1/<api>`` with a msgpack map body.

Each entry of :data:`APIS` declares the request (validated on the broker) and the
response (documented; every response map carries ``error_code``, ``error`` and
``message`` at top level, and per-partition entries carry their own ``error_code``).
docs/protocol.md is generated from this module: ``python -m minikafka.protocol.rpc.doc``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..topic_ids import ZERO_TOPIC_ID
from .schema import Field as F
from .schema import Struct

# Special offsets and ids, as in Kafka.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3  # ListOffsets: the record with the largest timestamp (KIP-734)
CONSUMER_REPLICA_ID = -1
NO_LEADER = -1
PREFERRED_ELECTION, UNCLEAN_ELECTION = 0, 1  # ElectLeaders' election_type (Kafka's ElectionType)

TOP_LEVEL = (
    F("error_code", "int", "0 or Kafka's error code for the whole request"),
    F("error", "str", "Kafka's name for error_code (NONE when 0)"),
    F("message", "str", "human-readable detail, empty when there is no error"),
)
PARTITION_ERROR = (
    F("error_code", "int", "0 or Kafka's error code for this partition"),
    F("error", "str", "Kafka's name for error_code"),
    F("message", "str", "detail, may be empty"),
)

BROKER = Struct("Broker", (
    F("id", "int", "broker id"),
    F("host", "str", "advertised host"),
    F("port", "int", "advertised port"),
))

# Controller to brokers: BROKER plus the broker's optional EXTERNAL listener, which a
# broker answers in Metadata to clients that reached it on its own external listener,
# and its optional Kafka binary-protocol listeners (answered in Kafka-protocol Metadata).
ENDPOINT = Struct("Endpoint", (F("host", "str"), F("port", "int")))
LIVE_BROKER = Struct("LiveBroker", BROKER.fields + (
    F("external", ENDPOINT, "advertised EXTERNAL listener; nil when the broker has none", default=None, nullable=True),
    F("kafka", ENDPOINT, "advertised Kafka-protocol listener; nil when the broker has none",
      default=None, nullable=True),
    F("kafka_external", ENDPOINT, "advertised external Kafka-protocol listener; nil when the broker has none",
      default=None, nullable=True),
))

PARTITION_STATE = Struct("PartitionState", (
    F("topic", "str"),
    F("partition", "int", minimum=0),
    F("controller_epoch", "int", "epoch of the controller that wrote this state"),
    F("leader", "int", "leader broker id, -1 when offline"),
    F("leader_epoch", "int", minimum=0),
    F("isr", ["int"], "in-sync replicas, leader included"),
    F("zk_version", "int", "version of the partition state znode (fences ISR writes)"),
    F("replicas", ["int"], "assigned replicas (AR) in order; the first is the preferred leader"),
    F("is_new", "bool", "the partition was just created", default=False),
    F("topic_id", "str", "the topic's id (KIP-516), 22 base64url characters as Kafka prints them; "
      f"{ZERO_TOPIC_ID} (the zero id) when unknown", default=ZERO_TOPIC_ID),
))

TP = Struct("TopicPartition", (F("topic", "str"), F("partition", "int", minimum=0)))

ABORTED_TXN = Struct("AbortedTransaction", (
    F("producer_id", "int"),
    F("first_offset", "int", "offset of the transaction's first record in this partition"),
))

READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Fetch and ListOffsets isolation_level, as Kafka's


@dataclass(frozen=True)
class Api:
    """One API: its path name, request schema, response schema and purpose."""

    name: str
    request: Struct
    response: Struct
    doc: str
    controller_only: bool = False


def _resp(name: str, *fields: F) -> Struct:
    return Struct(name, TOP_LEVEL + tuple(fields))


APIS: dict[str, Api] = {}


def _api(name: str, doc: str, request: tuple, response: tuple, controller_only: bool = False) -> None:
    title = "".join(p.capitalize() for p in name.split("_"))
    APIS[name] = Api(name, Struct(f"{title}Request", request), _resp(f"{title}Response", *response), doc, controller_only)


_api(
    "metadata",
    "Brokers, controller and partition leaders/ISR from the broker's metadata cache (filled by UpdateMetadata).",
    (
        F("topics", ["str"], "topic names; nil for every topic", default=None, nullable=True),
        F("allow_auto_topic_creation", "bool", "create the named topics that do not exist when the broker's "
          "auto.create.topics.enable is true (they are answered LEADER_NOT_AVAILABLE until they have leaders)",
          default=False),
    ),
    (
        F("cluster_id", "str"),
        F("controller_id", "int", "-1 when unknown"),
        F("controller_epoch", "int"),
        F("brokers", [BROKER], "live brokers, at the endpoints of the listener the request arrived on"),
        F("topics", [Struct("TopicMetadata", PARTITION_ERROR + (
            F("name", "str"),
            F("topic_id", "str", "the topic's id (KIP-516); the zero id for a topic that does not exist",
              default=ZERO_TOPIC_ID),
            F("partitions", [Struct("PartitionMetadata", PARTITION_ERROR + (
                F("partition", "int"), F("leader", "int"), F("leader_epoch", "int"),
                F("replicas", ["int"]), F("isr", ["int"]), F("offline_replicas", ["int"]),
            ))]),
        ))]),
    ),
)

_api(
    "produce",
    "Append record batches to partition leaders. acks 0/1/-1 (all); with -1 the answer waits until the "
    "high watermark passes the batch, or timeout_ms (REQUEST_TIMED_OUT, indefinite).",
    (
        F("acks", "int", "-1 (all), 0 or 1", minimum=-1, maximum=1),
        F("timeout_ms", "int", "how long acks=-1 may wait for replication", default=30000, minimum=0),
        F("partitions", [Struct("ProducePartition", (
            F("topic", "str"), F("partition", "int", minimum=0),
            F("records", "bytes", "one or more Kafka record batches v2, possibly compressed (protocol/records/)"),
        ))]),
    ),
    (
        F("partitions", [Struct("ProducePartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR + (
            F("base_offset", "int", "offset given to the first record, -1 on error"),
            F("log_append_time", "int", "the time the leader stamped the batch with when the topic uses "
              "message.timestamp.type=LogAppendTime, else -1"),
            F("log_start_offset", "int"),
        ))]),
    ),
)

_api(
    "init_producer_id",
    "A new producer id (epoch 0) for an idempotent producer, from a block this broker reserved in "
    "/latest_producer_id_block. With a transactional_id, sent to its transaction coordinator (find_coordinator "
    "key_type 1): the id's producer id with its epoch bumped, which fences the previous instance and aborts its "
    "open transaction (a new producer id when the epoch is exhausted); INVALID_TRANSACTION_TIMEOUT when "
    "transaction_timeout_ms exceeds transaction.max.timeout.ms. KIP-360: producer_id and producer_epoch given "
    "bump the epoch after a recoverable error; PRODUCER_FENCED when they are not the current ones.",
    (
        F("transactional_id", "str", "nil for an idempotent producer", default=None, nullable=True),
        F("transaction_timeout_ms", "int", default=60000, minimum=0),
        F("producer_id", "int", "the producer's current id (KIP-360), -1 for none", default=-1, minimum=-1),
        F("producer_epoch", "int", "the producer's current epoch (KIP-360), -1 for none", default=-1, minimum=-1),
    ),
    (
        F("producer_id", "int"),
        F("producer_epoch", "int"),
    ),
)

_api(
    "fetch",
    "Read batches from a leader. replica_id -1 is a consumer and sees only offsets below the high watermark; "
    "a broker id is a follower fetch whose fetch_offset is that follower's LEO. The leader holds the request up "
    "to max_wait_ms until min_bytes are available or the high watermark moves.",
    (
        F("replica_id", "int", "-1 for consumers, the follower's broker id for replication", default=-1),
        F("broker_epoch", "int", "follower's broker epoch (czxid of its registration)", default=-1),
        F("max_wait_ms", "int", default=500, minimum=0, maximum=300000),
        F("min_bytes", "int", default=1, minimum=0),
        F("max_bytes", "int", "response size bound (at least one batch is returned)", default=52428800, minimum=0),
        F("isolation_level", "int", "0 read_uncommitted: up to the high watermark; 1 read_committed: up to the "
          "last stable offset, with the aborted transactions of the range returned", default=0, minimum=0, maximum=1),
        F("partitions", [Struct("FetchPartition", (
            F("topic", "str"), F("partition", "int", minimum=0),
            F("fetch_offset", "int", minimum=0),
            F("current_leader_epoch", "int", "requester's known leader epoch, -1 to skip the check", default=-1),
            F("partition_max_bytes", "int", default=1048576, minimum=0),
            F("log_start_offset", "int", "a follower's log start offset (the leader's DeleteRecords waits for it), "
              "-1 for consumers", default=-1, minimum=-1),
            F("high_watermark", "int", "a follower's high watermark: the answer leaves the partition out when it "
              "has nothing new for the follower (no records, this high watermark and this log start offset, as "
              "Kafka's incremental fetch sessions do); -1 (consumers) always gets an answer", default=-1, minimum=-1),
        ))]),
        F("session_id", "int", "incremental fetch session (KIP-227): 0 for none, else the id an earlier answer "
          "gave", default=0, minimum=0),
        F("session_epoch", "int", "-1 sessionless (closing session_id, if any); 0 a full fetch asking for a new "
          "session (closing session_id, if any); else the session's next epoch: an incremental fetch naming only "
          "the partitions added or whose fetch_offset, log_start_offset, partition_max_bytes or "
          "current_leader_epoch changed, the leader reading every partition of the session (a wrong epoch is "
          "INVALID_FETCH_SESSION_EPOCH, an unknown session FETCH_SESSION_ID_NOT_FOUND)", default=-1, minimum=-1),
        F("forgotten", [Struct("FetchForgottenPartition", (F("topic", "str"), F("partition", "int", minimum=0)))],
          "an incremental fetch's partitions to drop from the session", default=[]),
    ),
    (
        F("session_id", "int", "the fetch session of this answer (0: none; the next fetch is a full one)", default=0),
        F("partitions", [Struct("FetchPartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR + (
            F("high_watermark", "int"), F("log_start_offset", "int"), F("log_end_offset", "int", "leader's LEO"),
            F("leader_epoch", "int", "leader's current epoch"),
            F("last_stable_offset", "int", "the first offset of the oldest open transaction, or the high "
              "watermark when none is open (-1 on error)", default=-1),
            F("aborted_transactions", [ABORTED_TXN], "read_committed: the aborted transactions whose records "
              "overlap the answer (skip records of that producer from first_offset until its ABORT marker); "
              "nil for read_uncommitted", default=None, nullable=True),
            F("records", "bytes", "concatenated batches, may be empty"),
        ))]),
    ),
)

_api(
    "list_offsets",
    "Earliest (timestamp -2) or latest (-1) offset of partitions, from their leader. For consumers "
    "(replica_id -1) latest is the high watermark (read_committed: the last stable offset), never the LEO.",
    (
        F("replica_id", "int", default=-1),
        F("isolation_level", "int", "1 (read_committed): latest is the last stable offset", default=0,
          minimum=0, maximum=1),
        F("partitions", [Struct("ListOffsetsPartition", (
            F("topic", "str"), F("partition", "int", minimum=0),
            F("timestamp", "int", "-1 latest (HW for consumers), -2 earliest, -3 largest timestamp, or a time in ms: "
                                  "the first offset whose record timestamp is at least that", minimum=-3),
            F("current_leader_epoch", "int", default=-1),
        ))]),
    ),
    (
        F("partitions", [Struct("ListOffsetsPartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR + (
            F("offset", "int", "-1 when no record matches the time"),
            F("timestamp", "int", "timestamp of the record found (time lookups and -3), else -1"),
            F("leader_epoch", "int"),
        ))]),
    ),
)

_api(
    "create_topics",
    "Create topics: any broker validates and writes /brokers/topics/T (Kafka's round-robin replica placement, replication/rules.py) and "
    "/config/topics/T; the controller then elects leaders. With timeout_ms > 0 the answer waits until every "
    "partition has a leader in this broker's metadata.",
    (
        F("topics", [Struct("CreatableTopic", (
            F("name", "str"),
            F("num_partitions", "int", "-1: the broker's num.partitions", minimum=-1, maximum=10000),
            F("replication_factor", "int", "-1: the broker's default.replication.factor", minimum=-1, maximum=1000),
            F("config", {"str": "str"}, "topic configs by Kafka name", default=dict),
            F("assignment", {"str": ["int"]}, "explicit replicas per partition (string keys)", default=None, nullable=True),
        ))]),
        F("timeout_ms", "int", default=30000, minimum=0),
        F("validate_only", "bool", default=False),
    ),
    (
        F("topics", [Struct("CreatableTopicResult", (F("name", "str"),) + PARTITION_ERROR + (
            F("topic_id", "str", "the created topic's id (KIP-516); the zero id when it was not created",
              default=ZERO_TOPIC_ID),))]),
    ),
)

_api(
    "leader_and_isr",
    "Controller to broker: become leader or follower of partitions. Refused with STALE_CONTROLLER_EPOCH when "
    "controller_epoch is older than one already seen; partition states with an older leader_epoch are ignored.",
    (
        F("controller_id", "int"), F("controller_epoch", "int"),
        F("broker_epoch", "int", "target broker's epoch; a stale one is refused with STALE_BROKER_EPOCH", default=-1),
        F("partition_states", [PARTITION_STATE]),
        F("live_leaders", [LIVE_BROKER], "endpoints of the leaders named in partition_states"),
    ),
    (
        F("partitions", [Struct("LeaderAndIsrPartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),
    ),
    controller_only=True,
)

_api(
    "update_metadata",
    "Controller to every broker: the full or partial metadata (live brokers, partition states) for metadata caches.",
    (
        F("controller_id", "int"), F("controller_epoch", "int"),
        F("partition_states", [PARTITION_STATE]),
        F("live_brokers", [LIVE_BROKER], "host/port: inter-broker listener; external: for external clients"),
        F("deleted_topics", ["str"], default=list),
    ),
    (),
    controller_only=True,
)

_api(
    "stop_replica",
    "Controller to broker: stop fetching for partitions, optionally delete their logs.",
    (
        F("controller_id", "int"), F("controller_epoch", "int"),
        F("delete_partitions", "bool", default=False),
        F("partitions", [TP]),
    ),
    (
        F("partitions", [Struct("StopReplicaPartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),
    ),
    controller_only=True,
)

_api(
    "offsets_for_leader_epoch",
    "KIP-101/279: the leader's end offset for an epoch: the start offset of the next higher epoch in its epoch "
    "cache, or its LEO for the latest epoch. The answer names the epoch it is for (the largest <= the one asked).",
    (
        F("replica_id", "int", default=-1),
        F("partitions", [Struct("OffsetForLeaderPartition", (
            F("topic", "str"), F("partition", "int", minimum=0),
            F("current_leader_epoch", "int", "fencing: requester's known leader epoch", default=-1),
            F("leader_epoch", "int", "the epoch to look up"),
        ))]),
    ),
    (
        F("partitions", [Struct("EpochEndOffset", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR + (
            F("leader_epoch", "int", "epoch the answer is for, -1 if none"), F("end_offset", "int", "-1 if unknown"),
        ))]),
    ),
)

_api(
    "replica_state",
    "Introspection: this broker's replicas: role, leader epoch, LEO, HW, log start offset, and (leader side) "
    "each follower's LEO as last seen; with checksum_upto, a CRC-32 of the log's batches below that offset. "
    "With an authorizer, only replicas of topics the principal may Describe (a named topic it may not is "
    "TOPIC_AUTHORIZATION_FAILED).",
    (
        F("partitions", [Struct("ReplicaStatePartition", (
            F("topic", "str"), F("partition", "int", minimum=0),
            F("checksum_upto", "int", "this partition's checksum bound (overrides the top-level one)",
              default=None, nullable=True),
        ))], "nil for all local replicas", default=None, nullable=True),
        F("checksum_upto", "int", "offset bound for the log checksums, -1 for each replica's own HW; nil: no checksum",
          default=None, nullable=True),
    ),
    (
        F("broker_id", "int"),
        F("zookeeper_session", "str", "this broker's ZooKeeper session: connected, suspended (disconnected, "
          "the session may live on), lost (expired) or connecting", default=""),
        F("replicas", [Struct("ReplicaState", (
            F("topic", "str"), F("partition", "int"), F("role", "str", "leader, follower or offline"),
            F("leader", "int"), F("leader_epoch", "int"), F("log_start_offset", "int"),
            F("log_end_offset", "int"), F("high_watermark", "int"), F("isr", ["int"]),
            F("replicas", ["int"], "assigned replicas, the preferred leader first", default=list),
            F("remote_leos", {"int": "int"}, "leader only: follower id -> LEO last reported"),
            F("out_of_sync", ["int"], "leader only: the ISR followers out of sync now, by Kafka's rule: not "
              "caught up to the leader's LEO within replica.lag.time.max.ms (the next ISR check removes them)",
              default=list),
            F("epochs", [["int"]], "epoch cache entries [epoch, start_offset]"),
            F("checksum", "int", "CRC-32 of batches below checksum_upto", nullable=True),
            F("checksum_upto", "int", "the offset bound the checksum covers, nil without a checksum",
              default=None, nullable=True),
            F("size_bytes", "int", "bytes of the batches in the log", default=0),
            F("segments", "int", "log segments (retention deletes whole ones)", default=1),
            F("producers", [Struct("ProducerState", (
                F("producer_id", "int"), F("producer_epoch", "int"),
                F("last_sequence", "int"), F("last_offset", "int"), F("last_timestamp", "int"),
            ))], "idempotent producers with batches in this replica's log", default=[]),
            F("fetched_records", "int", "records consumers fetched from this replica as leader (a counter)",
              default=0),
            F("fetched_bytes", "int", "batch bytes consumers fetched from this replica as leader (a counter)",
              default=0),
            F("last_stable_offset", "int", "the first offset of the oldest open transaction, or the high "
              "watermark when none is open (read_committed reads below it)", default=-1),
            F("ongoing_transactions", [Struct("OngoingTransaction", (
                F("producer_id", "int"), F("first_offset", "int", "offset of the transaction's first record here"),
            ))], "transactions open in this replica's log, oldest first", default=[]),
            F("aborted_transactions", "int", "entries of this replica's aborted-transaction index", default=0),
        ))]),
    ),
)

_api(
    "api_versions",
    "What this broker speaks: the list of API names and the broker id.",
    (),
    (F("apis", ["str"]), F("broker_id", "int")),
)


_api(
    "events",
    "Recent events recorded by this broker (and, as controller, the cluster's): elections, ISR changes, "
    "truncations, registrations. With cluster=true, every broker's events as this broker holds them, "
    "merged by time: it asks every live broker for its new ones (also once a second in the background, so "
    "a dead broker's events stay, up to its last second).",
    (
        F("since", "float", "only events with ts > since (seconds since the epoch)", default=0.0),
        F("cluster", "bool", "every broker's events as this one holds them, a dead broker's included",
          default=False),
        F("limit", "int", default=500, minimum=1, maximum=5000),
    ),
    (
        F("events", [Struct("Event", (
            F("ts", "float", "seconds since the epoch"), F("broker", "int", "broker that recorded it"),
            F("kind", "str", "controller_elected, broker_registered, broker_lost, leader_elected, isr_shrink, "
                             "isr_expand, unclean_election, truncate, ..."),
            F("text", "str"),
        ))]),
    ),
)

_api(
    "controlled_shutdown",
    "Broker to controller, before a clean stop: move the broker's leaderships to other ISR replicas and take "
    "it out of the ISRs it follows (Kafka's ControlledShutdown). Answers the partitions it still leads.",
    (
        F("broker_id", "int"), F("broker_epoch", "int", default=-1),
    ),
    (
        F("remaining_partitions", [TP], "partitions whose leadership could not be moved (e.g. RF=1)"),
    ),
)

_api(
    "elect_leaders",
    "To the controller (any broker forwards it): leader election (KIP-460). election_type 0 (preferred): "
    "the preferred (first) replica where it is alive and in the ISR; partitions nil means every partition "
    "whose leader is not its preferred replica. election_type 1 (unclean): a leader for partitions that have "
    "none, an out-of-sync live replica if no ISR replica is alive (records it lacks are lost); partitions nil "
    "means every partition without a leader.",
    (
        F("partitions", [TP], default=None, nullable=True),
        F("election_type", "int", "0 preferred, 1 unclean", default=0, minimum=0, maximum=1),
        F("timeout_ms", "int", default=30000, minimum=0),
    ),
    (
        F("partitions", [Struct("ElectLeadersPartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),
    ),
)

_api(
    "delete_topics",
    "Mark topics for deletion under /admin/delete_topics; the controller stops and deletes their replicas "
    "and removes their znodes. With timeout_ms > 0 the answer waits until the topics left the metadata.",
    (
        F("topics", ["str"], "topics by name", default=list),
        F("topic_ids", ["str"], "topics by id (KIP-516): an id no topic has is UNKNOWN_TOPIC_ID", default=list),
        F("timeout_ms", "int", default=30000, minimum=0),
    ),
    (
        F("topics", [Struct("DeletableTopicResult", (F("name", "str", "the topic's name; empty for an unknown id"),)
                            + PARTITION_ERROR + (F("topic_id", "str", "the id it was named by, else the zero id",
                                                   default=ZERO_TOPIC_ID),))],
          "topics named by name first, then those named by id, each in request order"),
    ),
)

_api(
    "create_partitions",
    "Raise a topic's partition count (Kafka's CreatePartitions): the new partitions are added to "
    "/brokers/topics/T, where the controller gives them leaders. With timeout_ms > 0 the answer waits until "
    "they are led in this broker's metadata.",
    (
        F("topic", "str"),
        F("count", "int", "the new total number of partitions", minimum=1),
        F("assignments", [["int"]], "replicas of each new partition; nil: placed like new topics",
          default=None, nullable=True),
        F("timeout_ms", "int", default=30000, minimum=0),
        F("validate_only", "bool", default=False),
    ),
    (
        F("partitions", ["int"], "ids of the partitions added"),
    ),
)

_api(
    "delete_records",
    "To the leader of each partition (Kafka's DeleteRecords): its log start offset becomes offset (-1: the "
    "high watermark); segments wholly below it are deleted, and consumers reading below it get "
    "OFFSET_OUT_OF_RANGE. OFFSET_OUT_OF_RANGE when offset is above the high watermark. The answer waits up to "
    "timeout_ms until every in-sync replica has moved its log start too (REQUEST_TIMED_OUT otherwise); "
    "low_watermark is the smallest log start among them.",
    (
        F("partitions", [Struct("DeleteRecordsPartition", (
            F("topic", "str"), F("partition", "int", minimum=0),
            F("offset", "int", "new log start offset, -1 for the high watermark", minimum=-1),
        ))]),
        F("timeout_ms", "int", default=30000, minimum=0),
    ),
    (
        F("partitions", [Struct("DeleteRecordsPartitionResult", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR + (
            F("low_watermark", "int", "smallest log start offset of the in-sync replicas, -1 on error"),
        ))]),
    ),
)

ACL_BINDING = Struct("AclBinding", (
    F("resource_type", "str", "Topic, Group, Cluster or TransactionalId"),
    F("resource_name", "str", "the resource's name; '*' for every one of its type; kafka-cluster for the Cluster"),
    F("pattern_type", "str", "LITERAL (the name, or '*') or PREFIXED (names starting with it)", default="LITERAL"),
    F("principal", "str", "User:NAME, or User:* for everyone"),
    F("host", "str", "client address, or '*'", default="*"),
    F("operation", "str", "All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
      "AlterConfigs or IdempotentWrite"),
    F("permission", "str", "Allow or Deny", default="Allow"),
))
ACL_FILTER = Struct("AclFilter", tuple(
    F(f.name, f.type, f.doc + "; nil matches any" + ("; Match: every rule that applies to resource_name"
                                                       if f.name == "pattern_type" else ""),
      default=None, nullable=True) for f in ACL_BINDING.fields))

_api(
    "create_acls",
    "Add ACLs (Kafka's CreateAcls), kept in ZooKeeper's /kafka-acl in Kafka 2.x's layout and loaded by every "
    "broker. Needs Alter on the Cluster; SECURITY_DISABLED when the broker has no authorizer "
    "(authorizer.class.name).",
    (F("acls", [ACL_BINDING]),),
    (),
)

_api(
    "describe_acls",
    "The ACLs that match a filter (Kafka's DescribeAcls). Needs Describe on the Cluster.",
    (F("filter", ACL_FILTER, default=None, nullable=True),),
    (F("acls", [ACL_BINDING]),),
)

_api(
    "delete_acls",
    "Remove the ACLs each filter matches (Kafka's DeleteAcls); the answer lists what each filter removed. "
    "Needs Alter on the Cluster.",
    (F("filters", [ACL_FILTER]),),
    (F("results", [Struct("DeleteAclsResult", (F("acls", [ACL_BINDING]),))]),),
)

_api(
    "describe_configs",
    "Every setting of a topic with its value and where it comes from: the topic's override (topic), the "
    "broker's dynamic config (dynamic_broker, dynamic_default), its --config (broker) or the default (default). "
    "With broker instead of topic: the answering broker's own settings.",
    (
        F("topic", "str", "the topic (give topic or broker)", default=None, nullable=True),
        F("broker", "str", "the answering broker's id, or \"\" (give topic or broker)", default=None, nullable=True),
    ),
    (
        F("configs", [Struct("ConfigEntry", (
            F("name", "str"), F("value", "str", nullable=True),
            F("source", "str", "topic, dynamic_broker, dynamic_default, broker or default"),
            F("documentation", "str"),
            F("read_only", "bool", "broker settings only: false for those that change live (dynamic)", default=False),
            F("is_sensitive", "bool", "a password (ssl.key.password...): value is null", default=False),
        ))]),
    ),
)

_api(
    "alter_configs",
    "Set and delete topic overrides (Kafka's IncrementalAlterConfigs SET and DELETE): a conditional write "
    "of /config/topics/T and a /config/changes notification every broker applies.  With broker instead of "
    "topic: dynamic broker configs in /config/brokers/<id> (\"\": /config/brokers/<default>, every broker); "
    "a setting that cannot change live is INVALID_REQUEST.",
    (
        F("topic", "str", "the topic (give topic or broker)", default=None, nullable=True),
        F("broker", "str", "a broker id, or \"\" for every broker's defaults (give topic or broker)", default=None,
          nullable=True),
        F("set", {"str": "str"}, "overrides to set", default={}),
        F("delete", ["str"], "overrides to remove (back to the broker's value)", default=[]),
        F("validate_only", "bool", default=False),
    ),
    (),
)

_api(
    "alter_partition_reassignments",
    "Write /admin/reassign_partitions; the controller adds the new replicas, waits until they join the ISR, "
    "moves the leader if needed and drops the old replicas.",
    (
        F("partitions", [Struct("ReassignablePartition", (
            F("topic", "str"), F("partition", "int", minimum=0), F("replicas", ["int"], "the new replica list"),
        ))]),
    ),
    (
        F("partitions", [Struct("ReassignablePartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),
    ),
)

_api(
    "list_partition_reassignments",
    "The reassignments still in progress (what /admin/reassign_partitions holds): per partition its current "
    "replicas, the target replicas not yet in the ISR (adding) and the replicas to drop (removing).",
    (
        F("partitions", [TP], "nil for every partition being reassigned", default=None, nullable=True),
    ),
    (
        F("partitions", [Struct("OngoingReassignment", (
            F("topic", "str"), F("partition", "int"),
            F("replicas", ["int"], "the current replica list (old and new replicas while moving)"),
            F("adding_replicas", ["int"]), F("removing_replicas", ["int"]),
        ))]),
    ),
)

_api(
    "describe_log_dirs",
    "This broker's log directory (its data directory, or 'memory' with in-memory storage) and the size of "
    "each local replica in it (Kafka's DescribeLogDirs). offset_lag is how far a follower is behind its "
    "leader's high watermark (0 on the leader).",
    (
        F("partitions", [TP], "nil for every local replica", default=None, nullable=True),
    ),
    (
        F("log_dirs", [Struct("LogDir", (
            F("log_dir", "str"),
            F("total_bytes", "int", "-1: unknown"), F("usable_bytes", "int", "-1: unknown"),
            F("partitions", [Struct("LogDirPartition", (
                F("topic", "str"), F("partition", "int"), F("size", "int"), F("offset_lag", "int"),
            ))]),
        ))]),
    ),
)

# -- consumer groups (the coordinator of a group is the leader of its partition of
# __consumer_offsets; any other broker answers NOT_COORDINATOR) ----------------------

_MEMBER = (
    F("group_id", "str"),
    F("member_id", "str", "the id the coordinator gave; empty on a first join", default=""),
    F("group_instance_id", "str", "group.instance.id of a static member", default=None, nullable=True),
)

_api(
    "find_coordinator",
    "The broker that coordinates a group (the leader of its __consumer_offsets partition; key_type 0) or a "
    "transactional id (the leader of its __transaction_state partition; key_type 1); creates the topic on "
    "first use and answers COORDINATOR_NOT_AVAILABLE until it has a leader.",
    (F("key", "str", "the group id or transactional id"),
     F("key_type", "int", "0: group, 1: transaction", default=0, minimum=0, maximum=1)),
    (F("node_id", "int"), F("host", "str"), F("port", "int")),
)

_api(
    "join_group",
    "Join (or rejoin) a group. The answer waits until the rebalance round ends: every known member rejoined, "
    "or the longest rebalance timeout ran out (the first round of an empty group also waits "
    "group.initial.rebalance.delay.ms). The group leader's answer lists every member and its metadata.",
    _MEMBER + (
        F("client_id", "str", default=""),
        F("session_timeout_ms", "int", "evicted when silent this long", minimum=1),
        F("rebalance_timeout_ms", "int", "longest a rebalance waits for this member (max.poll.interval.ms); "
          "-1: the session timeout", default=-1, minimum=-1),
        F("protocol_type", "str", "\"consumer\" for consumers"),
        F("protocols", [Struct("JoinGroupProtocol", (F("name", "str", "assignor name, e.g. range"),
                                                      F("metadata", "bytes", "Kafka's ConsumerProtocolSubscription")))]),
    ),
    (
        F("generation_id", "int"), F("protocol_type", "str"), F("protocol_name", "str", "the chosen assignor"),
        F("leader", "str", "member id of the group leader"), F("member_id", "str", "this member's id"),
        F("members", [Struct("JoinGroupMember", (F("member_id", "str"), F("group_instance_id", "str", nullable=True),
                                                 F("metadata", "bytes")))], "every member, for the leader only"),
    ),
)

_api(
    "sync_group",
    "After a join: the group leader sends every member's assignment; each member gets its own once the group's "
    "metadata record is committed (REBALANCE_IN_PROGRESS when a new round started meanwhile).",
    _MEMBER + (
        F("generation_id", "int"),
        F("assignments", [Struct("SyncGroupAssignment", (F("member_id", "str"), F("assignment", "bytes")))],
          "the leader's assignment (Kafka's ConsumerProtocolAssignment per member); empty for others", default=[]),
    ),
    (F("protocol_type", "str"), F("protocol_name", "str"), F("assignment", "bytes", "this member's assignment")),
)

_api(
    "heartbeat",
    "Keep a member alive within session.timeout.ms; REBALANCE_IN_PROGRESS asks it to rejoin.",
    _MEMBER + (F("generation_id", "int"),),
    (),
)

_api(
    "leave_group",
    "Members leave at once (the group rebalances without waiting for their session to time out).",
    (F("group_id", "str"), F("members", [Struct("LeavingMember", (
        F("member_id", "str", default=""), F("group_instance_id", "str", default=None, nullable=True)))])),
    (F("members", [Struct("LeaveGroupMemberResponse", (F("member_id", "str"), F("group_instance_id", "str", nullable=True))
                          + PARTITION_ERROR)]),),
)

_api(
    "offset_commit",
    "Commit offsets as records in __consumer_offsets (acks=all). Members give their generation; "
    "generation -1 with no member id commits for a group that has no members.",
    _MEMBER + (
        F("generation_id", "int", default=-1),
        F("offsets", [Struct("OffsetCommitPartition", (
            F("topic", "str"), F("partition", "int", minimum=0), F("offset", "int", minimum=0),
            F("leader_epoch", "int", "epoch of the last consumed record, -1 if unknown", default=-1),
            F("metadata", "str", default="", nullable=True),
        ))]),
    ),
    (F("partitions", [Struct("OffsetCommitPartitionResponse", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),),
)

_api(
    "offset_fetch",
    "Committed offsets of a group (offset -1 where none is committed).",
    (F("group_id", "str"), F("partitions", [TP], "nil for every committed partition", default=None, nullable=True),
     F("require_stable", "bool", "answer UNSTABLE_OFFSET_COMMIT (retriable, offset -1) for partitions an open "
       "transaction holds offsets of (KIP-447; read_committed consumers)", default=False)),
    (F("partitions", [Struct("OffsetFetchPartition", (
        F("topic", "str"), F("partition", "int"), F("offset", "int"), F("leader_epoch", "int"), F("metadata", "str"),
    ) + PARTITION_ERROR)]),),
)

_api(
    "list_groups",
    "The groups this broker coordinates.",
    (),
    (F("groups", [Struct("ListedGroup", (F("group_id", "str"), F("protocol_type", "str"), F("state", "str")))]),),
)

_api(
    "describe_groups",
    "State, generation, protocol, leader and members (with their metadata and assignment) of groups this "
    "broker coordinates; a group it does not know is described as Dead.",
    (F("groups", ["str"]),),
    (F("groups", [Struct("DescribedGroup", PARTITION_ERROR + (
        F("group_id", "str"), F("state", "str"), F("generation", "int"), F("protocol_type", "str"),
        F("protocol", "str"), F("leader", "str", "member id of the group leader"),
        F("members", [Struct("DescribedMember", (
            F("member_id", "str"), F("group_instance_id", "str", nullable=True), F("client_id", "str"),
            F("client_host", "str"), F("metadata", "bytes"), F("assignment", "bytes")))]),
    ))]),),
)

_api(
    "delete_groups",
    "Delete empty groups and their committed offsets (tombstones in __consumer_offsets); NON_EMPTY_GROUP "
    "while members remain.",
    (F("groups", ["str"]),),
    (F("groups", [Struct("DeletedGroup", (F("group_id", "str"),) + PARTITION_ERROR)]),),
)


_api(
    "offset_delete",
    "Delete a group's committed offsets of some partitions (Kafka's OffsetDelete, KIP-496): tombstones in "
    "__consumer_offsets. GROUP_ID_NOT_FOUND for an unknown group; GROUP_SUBSCRIBED_TO_TOPIC for a partition "
    "of a topic that a member of the (non-empty) group subscribes to.",
    (F("group_id", "str"), F("partitions", [TP])),
    (F("partitions", [Struct("OffsetDeletePartition", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),),
)


def tp_key(topic: str, partition: int) -> tuple[str, int]:
    """The key used for a topic-partition in dicts throughout the code."""
    return (topic, partition)

_api(
    "write_txn_markers",
    "Transaction coordinator to partition leaders (KIP-98): end transactions by appending a control batch "
    "(a COMMIT or ABORT marker) of each producer to each partition, with acks=all. The partition's last stable "
    "offset then passes the transaction; an ABORT also enters the partition's aborted-transaction index. "
    "A marker to a __consumer_offsets partition also completes the producer's pending transactional offsets. "
    "Needs the cluster credential.",
    (
        F("markers", [Struct("WritableTxnMarker", (
            F("producer_id", "int", minimum=0),
            F("producer_epoch", "int", minimum=0),
            F("committed", "bool", "true: COMMIT, false: ABORT"),
            F("coordinator_epoch", "int", "the coordinator's leader epoch of its __transaction_state partition",
              minimum=0),
            F("partitions", [TP]),
        ))]),
        F("timeout_ms", "int", "how long to wait for the markers' high watermark", default=30000, minimum=0),
    ),
    (
        F("markers", [Struct("WritableTxnMarkerResult", (
            F("producer_id", "int"),
            F("partitions", [Struct("WritableTxnMarkerPartitionResult",
                                    (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),
        ))]),
    ),
)


# -- transactions (KIP-98): answered by the transaction coordinator of the transactional id

_TXN_PRODUCER = (
    F("transactional_id", "str"),
    F("producer_id", "int", "the id InitProducerId gave", minimum=0),
    F("producer_epoch", "int", "the epoch InitProducerId gave", minimum=0),
)

_api(
    "add_partitions_to_txn",
    "Add partitions to the producer's transaction before it writes to them (the first one begins the "
    "transaction: Empty/Complete* -> Ongoing, written to __transaction_state with acks=all). "
    "INVALID_PRODUCER_ID_MAPPING for an unknown id or producer id, PRODUCER_FENCED for an old epoch, "
    "CONCURRENT_TRANSACTIONS while the previous transaction is completing; per partition "
    "UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, or OPERATION_NOT_ATTEMPTED when another failed. "
    "Needs Write on the transactional id and on each topic.",
    _TXN_PRODUCER + (F("partitions", [TP]),),
    (F("partitions", [Struct("AddPartitionsToTxnResult", (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),),
)

_api(
    "add_offsets_to_txn",
    "Add the group's __consumer_offsets partition to the transaction, before TxnOffsetCommit sends the "
    "group coordinator the offsets to commit with it. Errors as add_partitions_to_txn; needs Write on the "
    "transactional id and Read on the group.",
    _TXN_PRODUCER + (F("group_id", "str"),),
    (),
)

_api(
    "end_txn",
    "Commit or abort the transaction: PrepareCommit/PrepareAbort is written to __transaction_state (acks=all) "
    "and answered; the coordinator then sends COMMIT/ABORT markers to every partition of the transaction "
    "(write_txn_markers) and writes CompleteCommit/CompleteAbort. A retried end_txn of the same outcome "
    "succeeds; CONCURRENT_TRANSACTIONS while markers are on their way; INVALID_TXN_STATE for the other outcome "
    "or no open transaction. Needs Write on the transactional id.",
    _TXN_PRODUCER + (F("committed", "bool", "true: commit, false: abort"),),
    (),
)

TXN_STATES_DOC = "Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence or Dead"

_api(
    "describe_transactions",
    "State, producer id and epoch, timeout, start time and partitions of transactional ids this broker "
    "coordinates (Kafka's DescribeTransactions); per id NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, "
    "TRANSACTIONAL_ID_NOT_FOUND or TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Describe on the id).",
    (F("transactional_ids", ["str"]),),
    (F("transactions", [Struct("DescribedTransaction", PARTITION_ERROR + (
        F("transactional_id", "str"),
        F("state", "str", TXN_STATES_DOC),
        F("producer_id", "int"), F("producer_epoch", "int"),
        F("transaction_timeout_ms", "int"),
        F("transaction_start_time_ms", "int", "-1 when no transaction is open"),
        F("partitions", [TP], "the open transaction's partitions (those still without a marker while it completes)"),
    ))]),),
)

_api(
    "list_transactions",
    "The transactional ids this broker coordinates (Kafka's ListTransactions), those the principal may "
    "Describe; filtered by state names and producer ids (empty: all), and by duration (KIP-994: only open "
    "transactions running longer than duration_filter_ms; -1: all).",
    (
        F("state_filters", ["str"], TXN_STATES_DOC, default=[]),
        F("producer_id_filters", ["int"], default=[]),
        F("duration_filter_ms", "int", default=-1, minimum=-1),
    ),
    (
        F("unknown_state_filters", ["str"], "state filters that name no state"),
        F("transactions", [Struct("ListedTransaction", (
            F("transactional_id", "str"), F("producer_id", "int"), F("state", "str"),
        ))]),
    ),
)

_api(
    "txn_offset_commit",
    "Kafka's TxnOffsetCommit (KIP-98, KIP-447): a transactional producer commits a consumer group's offsets "
    "inside its transaction (after AddOffsetsToTxn on the transaction coordinator). The group coordinator "
    "writes them to __consumer_offsets as a transactional batch of the producer (acks=all); they stay pending, "
    "invisible to OffsetFetch, until the transaction's COMMIT marker makes them the committed offsets (an ABORT "
    "drops them). With generation_id/member_id/group_instance_id the consumer's membership is checked as for "
    "OffsetCommit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); an older producer epoch is "
    "INVALID_PRODUCER_EPOCH. Needs Write on the transactional id and Read on the group and topics.",
    (
        F("transactional_id", "str"),
        F("group_id", "str"),
        F("producer_id", "int", minimum=0),
        F("producer_epoch", "int", minimum=0, maximum=32767),
        F("generation_id", "int", "the consumer's generation; -1 when not given", default=-1),
        F("member_id", "str", "the consumer's member id; empty when not given", default=""),
        F("group_instance_id", "str", "the consumer's group.instance.id", default=None, nullable=True),
        F("offsets", [Struct("TxnOffsetCommitPartition", (
            F("topic", "str"), F("partition", "int", minimum=0), F("offset", "int", minimum=0),
            F("leader_epoch", "int", "epoch of the last consumed record, -1 if unknown", default=-1),
            F("metadata", "str", default="", nullable=True),
        ))]),
    ),
    (F("partitions", [Struct("TxnOffsetCommitPartitionResponse",
                             (F("topic", "str"), F("partition", "int")) + PARTITION_ERROR)]),),
)
