"""Plain data types the clients hand to their users (frozen dataclasses)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..protocol.topic_ids import ZERO_TOPIC_ID


@dataclass(frozen=True, order=True)
class TopicPartition:
    """One partition of one topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class RecordMetadata:
    """Where an acknowledged record went.

    ``offset`` is -1 when the producer used acks=0 (no answer is awaited).
    ``timestamp`` is the record's create time in ms, or the time the partition leader
    stamped it with when the topic uses message.timestamp.type=LogAppendTime (as Kafka's
    producer reports it).
    """

    topic: str
    partition: int
    offset: int
    timestamp: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class ConsumerRecord:
    """One record read by a consumer; ``headers`` is a list of ``(name, value)`` pairs."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: list[tuple[str, bytes | None]] = field(default_factory=list, hash=False, compare=True)
    # Kafka's TimestampType name: "CreateTime" (the producer's) or "LogAppendTime" (the leader's)
    timestamp_type: str = "CreateTime"

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


_new = object.__new__


def consumer_record(topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                    timestamp: int, headers: list, timestamp_type: str = "CreateTime") -> ConsumerRecord:
    """A :class:`ConsumerRecord`, made without the frozen dataclass's field-by-field
    ``__init__`` (the consumer makes one per record; this is about twice as fast)."""
    r = _new(ConsumerRecord)
    r.__dict__.update(topic=topic, partition=partition, offset=offset, key=key, value=value,
                      timestamp=timestamp, headers=headers, timestamp_type=timestamp_type)
    return r


@dataclass(frozen=True)
class OffsetAndTimestamp:
    """``offsets_for_times``: the first offset whose record timestamp is at least the
    one asked for, and that record's timestamp (kafka-python's OffsetAndTimestamp)."""

    offset: int
    timestamp: int


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """A group member's identity as ``Consumer.group_metadata()`` gives it, for a
    transactional producer's ``send_offsets_to_transaction`` (KIP-447): the coordinator
    refuses the offsets of a member that is no longer in the group's current generation."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True)
class BrokerInfo:
    """A live broker as listed in metadata."""

    id: int
    host: str
    port: int


@dataclass(frozen=True)
class ClusterDescription:
    """Live brokers and the current controller (-1 when unknown)."""

    cluster_id: str
    controller_id: int
    brokers: list[BrokerInfo]


@dataclass(frozen=True)
class PartitionDescription:
    """One partition as the cluster sees it.

    ``leader``, ``leader_epoch``, ``replicas``, ``isr`` and ``offline_replicas``
    come from metadata.  ``high_watermark``, ``log_start_offset`` and
    ``log_end_offset`` are the leader's own values, as are ``last_stable_offset``
    (the LSO: below the high watermark while a transaction is open on the partition,
    where read_committed consumers stop) and ``ongoing_transactions`` (each open
    transaction's ``producer_id`` and ``first_offset``); ``replica_leos`` /
    ``replica_hws`` map every assigned replica's broker id to that replica's LEO
    and HW as it reports them itself (``replica_state`` API); -1 marks a value
    that is not known (leader offline, broker not answering).
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    replica_leos: dict[int, int] = field(default_factory=dict, hash=False)
    replica_hws: dict[int, int] = field(default_factory=dict, hash=False)
    error: str = "NONE"
    checksum_upto: int = -1
    replica_checksums: dict[int, int] = field(default_factory=dict, hash=False)
    # Idempotent producers the leader knows (producer_id, producer_epoch, last_sequence,
    # last_offset, last_timestamp), from its replica_state.
    producers: list[dict] = field(default_factory=list, hash=False)
    # Each replica's log start offset as it reports it (retention, DeleteRecords), and the
    # leader's log size in bytes and segments.
    replica_log_starts: dict[int, int] = field(default_factory=dict, hash=False)
    size_bytes: int = -1
    segments: int = -1
    ongoing_transactions: list[dict] = field(default_factory=list, hash=False)

    @property
    def replicas_agree(self) -> bool | None:
        """True when every reporting replica has the same log below ``checksum_upto``
        (None when checksums were not asked for)."""
        if self.checksum_upto < 0:
            return None
        return len(set(self.replica_checksums.values())) == 1

    def to_dict(self) -> dict:
        """A JSON-friendly dict (broker ids as string keys in the maps)."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "offline_replicas": list(self.offline_replicas),
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "ongoing_transactions": [dict(t) for t in self.ongoing_transactions],
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "replica_leos": {str(k): v for k, v in self.replica_leos.items()},
            "replica_hws": {str(k): v for k, v in self.replica_hws.items()},
            "replica_log_starts": {str(k): v for k, v in self.replica_log_starts.items()},
            "size_bytes": self.size_bytes,
            "segments": self.segments,
            "checksum_upto": self.checksum_upto,
            "replica_checksums": {str(k): v for k, v in self.replica_checksums.items()},
            "replicas_agree": self.replicas_agree,
            "producers": [dict(p) for p in self.producers],
            "error": self.error,
        }


@dataclass(frozen=True)
class TopicDescription:
    """A topic and its partitions, sorted by partition number."""

    name: str
    partitions: list[PartitionDescription]
    error: str = "NONE"
    topic_id: str = ZERO_TOPIC_ID  # the topic's id (KIP-516), as Kafka's tools print it

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "topic_id": self.topic_id,
            "error": self.error,
            "partition_count": len(self.partitions),
            "replication_factor": self.replication_factor,
            "partitions": [p.to_dict() for p in self.partitions],
        }


@dataclass(frozen=True)
class MemberDescription:
    """One member of a consumer group, as its coordinator describes it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[TopicPartition]


@dataclass(frozen=True)
class GroupDescription:
    """A consumer group: state (Empty, PreparingRebalance, CompletingRebalance, Stable,
    Dead), generation, the agreed assignor (``protocol``), the member id of the group
    leader, the coordinator's broker id and the members."""

    group_id: str
    state: str
    generation: int
    protocol_type: str
    protocol: str
    leader: str
    coordinator: int
    members: list[MemberDescription]
