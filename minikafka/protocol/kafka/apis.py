"""Every Kafka API a broker's Kafka listener serves, with the versions it supports.

Each :class:`KafkaApi` names Kafka's API key, the supported version range, the first
flexible version and the request and response schemas.  Field names are the
snake_case forms of the names in Kafka's JSON message definitions
(``ThrottleTimeMs`` -> ``throttle_time_ms``).  A client negotiates with ApiVersions
and uses, for each API, the highest version both sides support.  The reference page
docs/kafka-clients.md lists these ranges and is generated from this module.
"""
from __future__ import annotations

from dataclasses import dataclass

from .schema import MAX_VERSION, F, S, Struct


@dataclass(frozen=True)
class KafkaApi:
    """One API of Kafka's protocol as served here."""

    key: int
    name: str
    min_version: int
    max_version: int
    flexible_from: int
    request: Struct
    response: Struct
    doc: str

    def flexible(self, version: int) -> bool:
        """True when ``version`` uses compact encodings and tagged fields (KIP-482)."""
        return version >= self.flexible_from

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


APIS: dict[int, KafkaApi] = {}
BY_NAME: dict[str, KafkaApi] = {}


def _api(key: int, name: str, versions: tuple[int, int], flexible_from: int, doc: str,
         request: tuple, response: tuple) -> KafkaApi:
    api = KafkaApi(key, name, versions[0], versions[1], flexible_from,
                   S(f"{name}Request", *request), S(f"{name}Response", *response), doc)
    APIS[key] = api
    BY_NAME[name] = api
    return api


THROTTLE = F("throttle_time_ms", "int32", "0+")

PRODUCE = _api(
    0, "Produce", (3, 9), 9,
    "Append one record batch (v2) per partition; acks 0, 1 or -1 (all) with min.insync.replicas. "
    "acks=0 gets no response, as in Kafka. A batch refused because of some of its records (a record without a "
    "key on a compacted topic: INVALID_RECORD; a CreateTime outside message.timestamp.before.max.ms / "
    "after.max.ms of the leader's clock: INVALID_TIMESTAMP) names them by their index in the batch in "
    "record_errors (v8+, KIP-467), with error_message, so that a client may fail the other records of the batch "
    "with its own error (librdkafka does for INVALID_RECORD: _INVALID_DIFFERENT_RECORD).",
    (
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        F("acks", "int16"),
        F("timeout_ms", "int32"),
        F("topic_data", [S("TopicProduceData",
            F("name", "string"),
            F("partition_data", [S("PartitionProduceData",
                F("index", "int32"),
                F("records", "records", nullable="0+"),
            )]),
        )]),
    ),
    (
        F("responses", [S("TopicProduceResponse",
            F("name", "string"),
            F("partition_responses", [S("PartitionProduceResponse",
                F("index", "int32"),
                F("error_code", "int16"),
                F("base_offset", "int64"),
                F("log_append_time_ms", "int64", "2+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("record_errors", [S("BatchIndexAndErrorMessage",
                    F("batch_index", "int32"),
                    F("batch_index_error_message", "string", nullable="0+", default=None),
                )], "8+"),
                F("error_message", "string", "8+", nullable="8+", default=None),
            )]),
        )]),
        F("throttle_time_ms", "int32", "1+"),
    ),
)

FETCH = _api(
    1, "Fetch", (4, 13), 12,
    "Read record batches from partition leaders. Consumers (replica_id -1) read only below the high "
    "watermark, or with isolation_level 1 (read_committed) below the last stable offset, with the aborted "
    "transactions of the range; waits up to max_wait_ms for min_bytes. v7+: incremental fetch sessions "
    "(KIP-227, max.incremental.fetch.session.cache.slots): after a full fetch (session_epoch 0) the answer's "
    "session_id lets the next fetches name only the partitions whose fetch offset changed (forgotten_topics_data "
    "drops some), and their answers only the partitions with records or a new high watermark, last stable or log "
    "start offset; a wrong epoch is INVALID_FETCH_SESSION_EPOCH, an unknown session FETCH_SESSION_ID_NOT_FOUND. "
    "v13+: topics are named by topic id (KIP-516) in the request and the answer; an id no topic has is answered "
    "UNKNOWN_TOPIC_ID.",
    (
        F("replica_id", "int32"),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
        F("isolation_level", "int8", "4+"),
        F("session_id", "int32", "7+"),
        F("session_epoch", "int32", "7+", default=-1),
        F("topics", [S("FetchTopic",
            F("topic", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            F("partitions", [S("FetchPartition",
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "9+", default=-1),
                F("fetch_offset", "int64"),
                F("last_fetched_epoch", "int32", "12+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("partition_max_bytes", "int32"),
            )]),
        )]),
        F("forgotten_topics_data", [S("ForgottenTopic",
            F("topic", "string", "7-12"),
            F("topic_id", "uuid", "13+"),
            F("partitions", ["int32"]),
        )], "7+"),
        F("rack_id", "string", "11+"),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "7+"),
        F("session_id", "int32", "7+"),
        F("responses", [S("FetchableTopicResponse",
            F("topic", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            F("partitions", [S("PartitionData",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("high_watermark", "int64"),
                F("last_stable_offset", "int64", "4+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("aborted_transactions", [S("AbortedTransaction",
                    F("producer_id", "int64"),
                    F("first_offset", "int64"),
                )], "4+", nullable="4+", default=None),
                F("preferred_read_replica", "int32", "11+", default=-1),
                F("records", "records", nullable="0+"),
            )]),
        )]),
    ),
)

LIST_OFFSETS = _api(
    2, "ListOffsets", (0, 7), 6,
    "The offset for a timestamp: -1 latest (the high watermark for consumers, the last stable offset for "
    "read_committed ones), -2 earliest (log start), "
    "-3 the record with the largest timestamp, or the first offset whose timestamp is at least the one given.",
    (
        F("replica_id", "int32"),
        F("isolation_level", "int8", "2+"),
        F("topics", [S("ListOffsetsTopic",
            F("name", "string"),
            F("partitions", [S("ListOffsetsPartition",
                F("partition_index", "int32"),
                F("current_leader_epoch", "int32", "4+", default=-1),
                F("timestamp", "int64"),
                F("max_num_offsets", "int32", "0", default=1),
            )]),
        )]),
    ),
    (
        F("throttle_time_ms", "int32", "2+"),
        F("topics", [S("ListOffsetsTopicResponse",
            F("name", "string"),
            F("partitions", [S("ListOffsetsPartitionResponse",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("old_style_offsets", ["int64"], "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            )]),
        )]),
    ),
)

METADATA = _api(
    3, "Metadata", (0, 12), 9,
    "Brokers (at the endpoints of the Kafka listener the request arrived on), the controller, and every "
    "partition's leader, leader epoch, replicas and ISR. A missing topic named in the request is created when "
    "allow_auto_topic_creation and the broker's auto.create.topics.enable are both true. v10+: each topic's id "
    "(KIP-516); v12+: topics may be named by id (name null), an id no topic has is answered UNKNOWN_TOPIC_ID.",
    (
        F("topics", [S("MetadataRequestTopic",
            F("topic_id", "uuid", "10+"),
            F("name", "string", nullable="10+"),
        )], nullable="1+"),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        F("include_cluster_authorized_operations", "bool", "8-10"),
        F("include_topic_authorized_operations", "bool", "8+"),
    ),
    (
        F("throttle_time_ms", "int32", "3+"),
        F("brokers", [S("MetadataResponseBroker",
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", "1+", nullable="1+", default=None),
        )]),
        F("cluster_id", "string", "2+", nullable="2+", default=None),
        F("controller_id", "int32", "1+", default=-1),
        F("topics", [S("MetadataResponseTopic",
            F("error_code", "int16"),
            F("name", "string", nullable="12+"),
            F("topic_id", "uuid", "10+"),
            F("is_internal", "bool", "1+"),
            F("partitions", [S("MetadataResponsePartition",
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", "7+", default=-1),
                F("replica_nodes", ["int32"]),
                F("isr_nodes", ["int32"]),
                F("offline_replicas", ["int32"], "5+"),
            )]),
            F("topic_authorized_operations", "int32", "8+", default=-2147483648),
        )]),
        F("cluster_authorized_operations", "int32", "8-10", default=-2147483648),
    ),
)

API_VERSIONS = _api(
    18, "ApiVersions", (0, 3), 3,
    "The APIs and version ranges this broker supports. A request of a version above 3 is answered "
    "in version 0 with UNSUPPORTED_VERSION and the ranges, so the client can retry, as Kafka does.",
    (
        F("client_software_name", "string", "3+"),
        F("client_software_version", "string", "3+"),
    ),
    (
        F("error_code", "int16"),
        F("api_keys", [S("ApiVersion",
            F("api_key", "int16"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        )]),
        F("throttle_time_ms", "int32", "1+"),
    ),
)

SASL_HANDSHAKE = _api(
    17, "SaslHandshake", (0, 1), 99,
    "Choose the SASL mechanism of a SASL_PLAINTEXT or SASL_SSL listener (PLAIN). After v0 the client "
    "sends the raw SASL token in one size-prefixed frame; after v1 it sends SaslAuthenticate.",
    (
        F("mechanism", "string"),
    ),
    (
        F("error_code", "int16"),
        F("mechanisms", ["string"]),
    ),
)

SASL_AUTHENTICATE = _api(
    36, "SaslAuthenticate", (0, 2), 2,
    "Carry a SASL token (PLAIN: authzid NUL user NUL password) after SaslHandshake v1. A wrong user or "
    "password is SASL_AUTHENTICATION_FAILED and the connection closes.",
    (
        F("auth_bytes", "bytes"),
    ),
    (
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("auth_bytes", "bytes"),
        F("session_lifetime_ms", "int64", "1+"),
    ),
)

def _acl_filter(name: str) -> Struct:
    return S(name,
        F("resource_type_filter", "int8"),
        F("resource_name_filter", "string", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", nullable="0+"),
        F("host_filter", "string", nullable="0+"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    )


ACL_DESCRIPTION = S("AclDescription",
    F("principal", "string"),
    F("host", "string"),
    F("operation", "int8"),
    F("permission_type", "int8"),
)

DESCRIBE_ACLS = _api(
    29, "DescribeAcls", (0, 2), 2,
    "The ACLs matching a filter (Describe on the Cluster). SECURITY_DISABLED without an authorizer.",
    tuple(_acl_filter("DescribeAclsRequest").fields),
    (
        THROTTLE,
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("resources", [S("DescribeAclsResource",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("pattern_type", "int8", "1+", default=3),
            F("acls", [ACL_DESCRIPTION]),
        )]),
    ),
)

CREATE_ACLS = _api(
    30, "CreateAcls", (0, 2), 2,
    "Add ACLs to ZooKeeper's /kafka-acl (Alter on the Cluster); every broker loads them.",
    (
        F("creations", [S("AclCreation",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("resource_pattern_type", "int8", "1+", default=3),
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        )]),
    ),
    (
        THROTTLE,
        F("results", [S("AclCreationResult",
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        )]),
    ),
)

DELETE_ACLS = _api(
    31, "DeleteAcls", (0, 2), 2,
    "Remove the ACLs each filter matches (Alter on the Cluster); answers what each removed.",
    (
        F("filters", [_acl_filter("DeleteAclsFilter")]),
    ),
    (
        THROTTLE,
        F("filter_results", [S("DeleteAclsFilterResult",
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("matching_acls", [S("DeleteAclsMatchingAcl",
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=None),
                F("resource_type", "int8"),
                F("resource_name", "string"),
                F("pattern_type", "int8", "1+", default=3),
                F("principal", "string"),
                F("host", "string"),
                F("operation", "int8"),
                F("permission_type", "int8"),
            )]),
        )]),
    ),
)

CREATABLE_CONFIG = S("CreatableTopicConfig", F("name", "string"), F("value", "string", nullable="0+", default=None))

CREATE_TOPICS = _api(
    19, "CreateTopics", (0, 7), 5,
    "Create topics: a partition count and replication factor (-1 for the broker defaults num.partitions "
    "and default.replication.factor) or an explicit assignment, and topic configs. v7+: the created topic's id "
    "(KIP-516).",
    (
        F("topics", [S("CreatableTopic",
            F("name", "string"),
            F("num_partitions", "int32"),
            F("replication_factor", "int16"),
            F("assignments", [S("CreatableReplicaAssignment",
                F("partition_index", "int32"),
                F("broker_ids", ["int32"]),
            )]),
            F("configs", [CREATABLE_CONFIG]),
        )]),
        F("timeout_ms", "int32"),
        F("validate_only", "bool", "1+"),
    ),
    (
        F("throttle_time_ms", "int32", "2+"),
        F("topics", [S("CreatableTopicResult",
            F("name", "string"),
            F("topic_id", "uuid", "7+"),
            F("error_code", "int16"),
            F("error_message", "string", "1+", nullable="0+", default=None),
            F("num_partitions", "int32", "5+", default=-1),
            F("replication_factor", "int16", "5+", default=-1),
            F("configs", [S("CreatableTopicConfigs",
                F("name", "string"),
                F("value", "string", nullable="0+", default=None),
                F("read_only", "bool"),
                F("config_source", "int8", default=-1),
                F("is_sensitive", "bool"),
            )], "5+", nullable="5+", default=None),
        )]),
    ),
)

DELETE_TOPICS = _api(
    20, "DeleteTopics", (0, 6), 4,
    "Delete topics by name (when delete.topic.enable); answers once the controller removed them or timeout_ms. "
    "v6+: a topic may be named by id instead (KIP-516): an id no topic has is UNKNOWN_TOPIC_ID, a name and an id "
    "together INVALID_REQUEST.",
    (
        F("topics", [S("DeleteTopicState",
            F("name", "string", nullable="6+", default=None),
            F("topic_id", "uuid"),
        )], "6+"),
        F("topic_names", ["string"], "0-5"),
        F("timeout_ms", "int32"),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("responses", [S("DeletableTopicResult",
            F("name", "string", nullable="6+"),
            F("topic_id", "uuid", "6+"),
            F("error_code", "int16"),
            F("error_message", "string", "5+", nullable="5+", default=None),
        )]),
    ),
)

DELETE_RECORDS = _api(
    21, "DeleteRecords", (0, 2), 2,
    "Move the log start offset of partitions this broker leads (-1: to the high watermark); answers once "
    "every in-sync replica moved it, or timeout_ms.",
    (
        F("topics", [S("DeleteRecordsTopic",
            F("name", "string"),
            F("partitions", [S("DeleteRecordsPartition",
                F("partition_index", "int32"),
                F("offset", "int64"),
            )]),
        )]),
        F("timeout_ms", "int32"),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("topics", [S("DeleteRecordsTopicResult",
            F("name", "string"),
            F("partitions", [S("DeleteRecordsPartitionResult",
                F("partition_index", "int32"),
                F("low_watermark", "int64"),
                F("error_code", "int16"),
            )]),
        )]),
    ),
)

OFFSET_FOR_LEADER_EPOCH = _api(
    23, "OffsetForLeaderEpoch", (0, 4), 4,
    "The end offset of a leader epoch on the leader (KIP-101/KIP-320): the largest epoch <= the one "
    "asked and the start offset of the next epoch, or the LEO for the current epoch.",
    (
        F("replica_id", "int32", "3+", default=-2),
        F("topics", [S("OffsetForLeaderTopic",
            F("topic", "string"),
            F("partitions", [S("OffsetForLeaderPartition",
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "2+", default=-1),
                F("leader_epoch", "int32"),
            )]),
        )]),
    ),
    (
        F("throttle_time_ms", "int32", "2+"),
        F("topics", [S("OffsetForLeaderTopicResult",
            F("topic", "string"),
            F("partitions", [S("EpochEndOffset",
                F("error_code", "int16"),
                F("partition", "int32"),
                F("leader_epoch", "int32", "1+", default=-1),
                F("end_offset", "int64", default=-1),
            )]),
        )]),
    ),
)

DESCRIBE_CONFIGS = _api(
    32, "DescribeConfigs", (0, 4), 4,
    "Topic (resource type 2) and broker (4) configs: each setting's value and whether it is a default, "
    "a topic override or a broker setting.",
    (
        F("resources", [S("DescribeConfigsResource",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configuration_keys", ["string"], nullable="0+", default=None),
        )]),
        F("include_synonyms", "bool", "1+"),
        F("include_documentation", "bool", "3+"),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("results", [S("DescribeConfigsResult",
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", [S("DescribeConfigsResourceResult",
                F("name", "string"),
                F("value", "string", nullable="0+", default=None),
                F("read_only", "bool"),
                F("is_default", "bool", "0"),
                F("config_source", "int8", "1+", default=-1),
                F("is_sensitive", "bool"),
                F("synonyms", [S("DescribeConfigsSynonym",
                    F("name", "string"),
                    F("value", "string", nullable="0+", default=None),
                    F("source", "int8"),
                )], "1+"),
                F("config_type", "int8", "3+"),
                F("documentation", "string", "3+", nullable="0+", default=None),
            )]),
        )]),
    ),
)

ALTER_RESPONSE = (
    F("throttle_time_ms", "int32"),
    F("responses", [S("AlterConfigsResourceResponse",
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("resource_type", "int8"),
        F("resource_name", "string"),
    )]),
)

ALTER_CONFIGS = _api(
    33, "AlterConfigs", (0, 2), 2,
    "Replace a topic's whole set of overrides (settings left out return to their defaults).",
    (
        F("resources", [S("AlterConfigsResource",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", [S("AlterableConfig",
                F("name", "string"),
                F("value", "string", nullable="0+", default=None),
            )]),
        )]),
        F("validate_only", "bool"),
    ),
    ALTER_RESPONSE,
)

CREATE_PARTITIONS = _api(
    37, "CreatePartitions", (0, 3), 2,
    "Raise a topic's partition count, with an optional assignment of the new partitions.",
    (
        F("topics", [S("CreatePartitionsTopic",
            F("name", "string"),
            F("count", "int32"),
            F("assignments", [S("CreatePartitionsAssignment",
                F("broker_ids", ["int32"]),
            )], nullable="0+", default=None),
        )]),
        F("timeout_ms", "int32"),
        F("validate_only", "bool"),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("results", [S("CreatePartitionsTopicResult",
            F("name", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        )]),
    ),
)

INCREMENTAL_ALTER_CONFIGS = _api(
    44, "IncrementalAlterConfigs", (0, 1), 1,
    "Change single topic settings: operation 0 SET, 1 DELETE (back to the default), 2 APPEND and "
    "3 SUBTRACT (list settings).",
    (
        F("resources", [S("IncrementalAlterConfigsResource",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", [S("IncrementalAlterableConfig",
                F("name", "string"),
                F("config_operation", "int8"),
                F("value", "string", nullable="0+", default=None),
            )]),
        )]),
        F("validate_only", "bool"),
    ),
    ALTER_RESPONSE,
)

DESCRIBE_CLUSTER = _api(
    60, "DescribeCluster", (0, 1), 0,
    "The cluster id, the controller and the live brokers (at this listener's endpoints).",
    (
        F("include_cluster_authorized_operations", "bool"),
        F("endpoint_type", "int8", "1+", default=1),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("endpoint_type", "int8", "1+", default=1),
        F("cluster_id", "string"),
        F("controller_id", "int32", default=-1),
        F("brokers", [S("DescribeClusterBroker",
            F("broker_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="0+", default=None),
        )]),
        F("cluster_authorized_operations", "int32", default=-2147483648),
    ),
)

INIT_PRODUCER_ID = _api(
    22, "InitProducerId", (0, 5), 2,
    "A producer id and epoch for an idempotent producer; with a transactional id, from its transaction "
    "coordinator (an epoch bump that fences the previous instance; KIP-360 with producer_id/producer_epoch).",
    (
        F("transactional_id", "string", nullable="0+"),
        F("transaction_timeout_ms", "int32"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", default=-1),
        F("producer_epoch", "int16"),
    ),
)

# -- consumer groups (the coordinator is the leader of the group's __consumer_offsets partition)

FIND_COORDINATOR = _api(
    10, "FindCoordinator", (0, 4), 3,
    "The broker coordinating a group (key_type 0) or a transactional id (key_type 1); creates "
    "__consumer_offsets or __transaction_state on first use.",
    (
        F("key", "string", "0-3"),
        F("key_type", "int8", "1+"),
        F("coordinator_keys", ["string"], "4+"),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0-3"),
        F("error_message", "string", "1-3", nullable="1-3", default=None),
        F("node_id", "int32", "0-3", default=-1),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3", default=-1),
        F("coordinators", [S("Coordinator",
            F("key", "string"),
            F("node_id", "int32", default=-1),
            F("host", "string"),
            F("port", "int32", default=-1),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        )], "4+"),
    ),
)

JOIN_GROUP = _api(
    11, "JoinGroup", (0, 7), 6,
    "Join a group; the answer waits until the rebalance round ends. From v4 a new member first gets "
    "MEMBER_ID_REQUIRED with its member id (KIP-394). The group leader's answer lists every member.",
    (
        F("group_id", "string"),
        F("session_timeout_ms", "int32"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1),
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string"),
        F("protocols", [S("JoinGroupRequestProtocol",
            F("name", "string"),
            F("metadata", "bytes"),
        )]),
    ),
    (
        F("throttle_time_ms", "int32", "2+"),
        F("error_code", "int16"),
        F("generation_id", "int32", default=-1),
        F("protocol_type", "string", "7+", nullable="7+", default=None),
        F("protocol_name", "string", nullable="7+"),
        F("leader", "string"),
        F("member_id", "string"),
        F("members", [S("JoinGroupResponseMember",
            F("member_id", "string"),
            F("group_instance_id", "string", "5+", nullable="5+", default=None),
            F("metadata", "bytes"),
        )]),
    ),
)

HEARTBEAT = _api(
    12, "Heartbeat", (0, 4), 4,
    "Keep a member alive; REBALANCE_IN_PROGRESS asks it to rejoin.",
    (
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
    ),
)

LEAVE_GROUP = _api(
    13, "LeaveGroup", (0, 4), 4,
    "Members leave at once (v3+ several, by member id or group.instance.id).",
    (
        F("group_id", "string"),
        F("member_id", "string", "0-2"),
        F("members", [S("MemberIdentity",
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="0+", default=None),
        )], "3+"),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("members", [S("MemberResponse",
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="0+", default=None),
            F("error_code", "int16"),
        )], "3+"),
    ),
)

SYNC_GROUP = _api(
    14, "SyncGroup", (0, 5), 4,
    "The group leader sends the assignment; every member gets its own once the group's record is committed.",
    (
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("protocol_type", "string", "5+", nullable="5+", default=None),
        F("protocol_name", "string", "5+", nullable="5+", default=None),
        F("assignments", [S("SyncGroupRequestAssignment",
            F("member_id", "string"),
            F("assignment", "bytes"),
        )]),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("protocol_type", "string", "5+", nullable="5+", default=None),
        F("protocol_name", "string", "5+", nullable="5+", default=None),
        F("assignment", "bytes"),
    ),
)

DESCRIBE_GROUPS = _api(
    15, "DescribeGroups", (0, 5), 5,
    "State, protocol and members of groups this broker coordinates (NOT_COORDINATOR for others).",
    (
        F("groups", ["string"]),
        F("include_authorized_operations", "bool", "3+"),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("groups", [S("DescribedGroup",
            F("error_code", "int16"),
            F("group_id", "string"),
            F("group_state", "string"),
            F("protocol_type", "string"),
            F("protocol_data", "string"),
            F("members", [S("DescribedGroupMember",
                F("member_id", "string"),
                F("group_instance_id", "string", "4+", nullable="4+", default=None),
                F("client_id", "string"),
                F("client_host", "string"),
                F("member_metadata", "bytes"),
                F("member_assignment", "bytes"),
            )]),
            F("authorized_operations", "int32", "3+", default=-2147483648),
        )]),
    ),
)

LIST_GROUPS = _api(
    16, "ListGroups", (0, 4), 3,
    "The groups this broker coordinates (v4: filtered by state, with their state).",
    (
        F("states_filter", ["string"], "4+"),
    ),
    (
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("groups", [S("ListedGroup",
            F("group_id", "string"),
            F("protocol_type", "string"),
            F("group_state", "string", "4+"),
        )]),
    ),
)

OFFSET_COMMIT = _api(
    8, "OffsetCommit", (2, 8), 8,
    "Commit offsets as records in __consumer_offsets (acks=all). Members name their generation; "
    "generation -1 with an empty member id commits for a group without members.",
    (
        F("group_id", "string"),
        F("generation_id_or_member_epoch", "int32", "1+", default=-1),
        F("member_id", "string", "1+"),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        F("retention_time_ms", "int64", "2-4", default=-1),
        F("topics", [S("OffsetCommitRequestTopic",
            F("name", "string"),
            F("partitions", [S("OffsetCommitRequestPartition",
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "6+", default=-1),
                F("committed_metadata", "string", nullable="0+"),
            )]),
        )]),
    ),
    (
        F("throttle_time_ms", "int32", "3+"),
        F("topics", [S("OffsetCommitResponseTopic",
            F("name", "string"),
            F("partitions", [S("OffsetCommitResponsePartition",
                F("partition_index", "int32"),
                F("error_code", "int16"),
            )]),
        )]),
    ),
)

OFFSET_FETCH = _api(
    9, "OffsetFetch", (1, 7), 6,
    "Committed offsets of a group (-1 where none); topics null (v2+) for every committed partition.",
    (
        F("group_id", "string"),
        F("topics", [S("OffsetFetchRequestTopic",
            F("name", "string"),
            F("partition_indexes", ["int32"]),
        )], nullable="2+"),
        F("require_stable", "bool", "7+"),
    ),
    (
        F("throttle_time_ms", "int32", "3+"),
        F("topics", [S("OffsetFetchResponseTopic",
            F("name", "string"),
            F("partitions", [S("OffsetFetchResponsePartition",
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "5+", default=-1),
                F("metadata", "string", nullable="0+"),
                F("error_code", "int16"),
            )]),
        )]),
        F("error_code", "int16", "2+"),
    ),
)

DELETE_GROUPS = _api(
    42, "DeleteGroups", (0, 2), 2,
    "Delete empty groups and their offsets (NON_EMPTY_GROUP while members remain).",
    (
        F("groups_names", ["string"]),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("results", [S("DeletableGroupResult",
            F("group_id", "string"),
            F("error_code", "int16"),
        )]),
    ),
)

OFFSET_DELETE = _api(
    47, "OffsetDelete", (0, 0), 99,
    "Delete a group's committed offsets of some partitions (KIP-496); GROUP_SUBSCRIBED_TO_TOPIC for a "
    "topic an active member subscribes to.",
    (
        F("group_id", "string"),
        F("topics", [S("OffsetDeleteRequestTopic",
            F("name", "string"),
            F("partitions", [S("OffsetDeleteRequestPartition",
                F("partition_index", "int32"),
            )]),
        )]),
    ),
    (
        F("error_code", "int16"),
        F("throttle_time_ms", "int32"),
        F("topics", [S("OffsetDeleteResponseTopic",
            F("name", "string"),
            F("partitions", [S("OffsetDeleteResponsePartition",
                F("partition_index", "int32"),
                F("error_code", "int16"),
            )]),
        )]),
    ),
)

ELECT_LEADERS = _api(
    43, "ElectLeaders", (0, 2), 2,
    "Preferred (0) or unclean (1) leader election on the controller (KIP-183, KIP-460); null partitions: "
    "every partition that needs one.",
    (
        F("election_type", "int8", "1+", default=0),
        F("topic_partitions", [S("TopicPartitions",
            F("topic", "string"),
            F("partitions", ["int32"]),
        )], nullable="0+", default=None),
        F("timeout_ms", "int32", default=60000),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "1+"),
        F("replica_election_results", [S("ReplicaElectionResult",
            F("topic", "string"),
            F("partition_result", [S("PartitionResult",
                F("partition_id", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=None),
            )]),
        )]),
    ),
)

ALTER_PARTITION_REASSIGNMENTS = _api(
    45, "AlterPartitionReassignments", (0, 1), 0,
    "Move partitions to new replica lists (KIP-455): written to /admin/reassign_partitions, carried out "
    "by the controller. Cancelling (null replicas) answers NO_REASSIGNMENT_IN_PROGRESS or "
    "INVALID_REPLICA_ASSIGNMENT: a move cannot be cancelled here.",
    (
        F("timeout_ms", "int32", default=60000),
        F("allow_replication_factor_change", "bool", "1+", default=True),
        F("topics", [S("ReassignableTopic",
            F("name", "string"),
            F("partitions", [S("ReassignablePartition",
                F("partition_index", "int32"),
                F("replicas", ["int32"], nullable="0+", default=None),
            )]),
        )]),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("allow_replication_factor_change", "bool", "1+", default=True),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("responses", [S("ReassignableTopicResponse",
            F("name", "string"),
            F("partitions", [S("ReassignablePartitionResponse",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=None),
            )]),
        )]),
    ),
)

LIST_PARTITION_REASSIGNMENTS = _api(
    46, "ListPartitionReassignments", (0, 0), 0,
    "The reassignments in progress: current replicas, replicas being added (not yet in the ISR) and "
    "replicas being removed.",
    (
        F("timeout_ms", "int32", default=60000),
        F("topics", [S("ListPartitionReassignmentsTopics",
            F("name", "string"),
            F("partition_indexes", ["int32"]),
        )], nullable="0+", default=None),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("topics", [S("OngoingTopicReassignment",
            F("name", "string"),
            F("partitions", [S("OngoingPartitionReassignment",
                F("partition_index", "int32"),
                F("replicas", ["int32"]),
                F("adding_replicas", ["int32"]),
                F("removing_replicas", ["int32"]),
            )]),
        )]),
    ),
)

DESCRIBE_LOG_DIRS = _api(
    35, "DescribeLogDirs", (1, 4), 2,
    "The broker's one log directory (its data directory, or 'memory') and its replicas' sizes.",
    (
        F("topics", [S("DescribableLogDirTopic",
            F("topic", "string"),
            F("partitions", ["int32"]),
        )], nullable="0+", default=None),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "3+"),
        F("results", [S("DescribeLogDirsResult",
            F("error_code", "int16"),
            F("log_dir", "string"),
            F("topics", [S("DescribeLogDirsTopic",
                F("name", "string"),
                F("partitions", [S("DescribeLogDirsPartition",
                    F("partition_index", "int32"),
                    F("partition_size", "int64"),
                    F("offset_lag", "int64"),
                    F("is_future_key", "bool"),
                )]),
            )]),
            F("total_bytes", "int64", "4+", default=-1),
            F("usable_bytes", "int64", "4+", default=-1),
        )]),
    ),
)

# -- transactions (KIP-98, KIP-664): answered by the transactional id's transaction coordinator

TXN_TOPIC_PARTITIONS = S("AddPartitionsToTxnTopic", F("name", "string"), F("partitions", ["int32"]))

ADD_PARTITIONS_TO_TXN = _api(
    24, "AddPartitionsToTxn", (0, 3), 3,
    "Add partitions to the producer's transaction (the first begins it). v4+ (KIP-890's broker-side "
    "verification) is not served.",
    (
        F("v3_and_below_transactional_id", "string"),
        F("v3_and_below_producer_id", "int64"),
        F("v3_and_below_producer_epoch", "int16"),
        F("v3_and_below_topics", [TXN_TOPIC_PARTITIONS]),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("results_by_topic_v3_and_below", [S("AddPartitionsToTxnTopicResult",
            F("name", "string"),
            F("results_by_partition", [S("AddPartitionsToTxnPartitionResult",
                F("partition_index", "int32"),
                F("partition_error_code", "int16"),
            )]),
        )]),
    ),
)

ADD_OFFSETS_TO_TXN = _api(
    25, "AddOffsetsToTxn", (0, 3), 3,
    "Add the group's __consumer_offsets partition to the transaction (before TxnOffsetCommit).",
    (
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("group_id", "string"),
    ),
    (THROTTLE, F("error_code", "int16")),
)

END_TXN = _api(
    26, "EndTxn", (0, 3), 3,
    "Commit or abort the transaction: answered once PrepareCommit/PrepareAbort is written; the markers follow.",
    (
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("committed", "bool"),
    ),
    (THROTTLE, F("error_code", "int16")),
)

DESCRIBE_TRANSACTIONS = _api(
    65, "DescribeTransactions", (0, 0), 0,
    "State, producer, timeout, start time and partitions of transactional ids this broker coordinates (KIP-664).",
    (F("transactional_ids", ["string"]),),
    (
        THROTTLE,
        F("transaction_states", [S("DescribedTransactionState",
            F("error_code", "int16"),
            F("transactional_id", "string"),
            F("transaction_state", "string"),
            F("transaction_timeout_ms", "int32"),
            F("transaction_start_time_ms", "int64"),
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("topics", [S("DescribedTransactionTopic", F("topic", "string"), F("partitions", ["int32"]))]),
        )]),
    ),
)

LIST_TRANSACTIONS = _api(
    66, "ListTransactions", (0, 1), 0,
    "Transactional ids this broker coordinates, by state, producer id and (v1, KIP-994) duration (KIP-664).",
    (
        F("state_filters", ["string"]),
        F("producer_id_filters", ["int64"]),
        F("duration_filter", "int64", "1+", default=-1),
    ),
    (
        THROTTLE,
        F("error_code", "int16"),
        F("unknown_state_filters", ["string"]),
        F("transaction_states", [S("ListedTransactionState",
            F("transactional_id", "string"),
            F("producer_id", "int64"),
            F("transaction_state", "string"),
        )]),
    ),
)

TXN_OFFSET_COMMIT = _api(
    28, "TxnOffsetCommit", (0, 3), 3,
    "A transactional producer commits a group's offsets inside its transaction (KIP-98): pending until the "
    "transaction's COMMIT marker, dropped on ABORT. v3 carries the consumer's generation, member id and "
    "group.instance.id, checked as for OffsetCommit (KIP-447).",
    (
        F("transactional_id", "string"),
        F("group_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+", default=""),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("topics", [S("TxnOffsetCommitRequestTopic",
            F("name", "string"),
            F("partitions", [S("TxnOffsetCommitRequestPartition",
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "2+", default=-1),
                F("committed_metadata", "string", nullable="0+"),
            )]),
        )]),
    ),
    (
        F("throttle_time_ms", "int32"),
        F("topics", [S("TxnOffsetCommitResponseTopic",
            F("name", "string"),
            F("partitions", [S("TxnOffsetCommitResponsePartition",
                F("partition_index", "int32"),
                F("error_code", "int16"),
            )]),
        )]),
    ),
)

assert all(api.max_version < MAX_VERSION for api in APIS.values())
