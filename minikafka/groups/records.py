"""The records of ``__consumer_offsets``, in Apache Kafka's own binary layout.

Every committed offset and every group's membership is a keyed record in the
internal topic; the key says what the record is about, the value its latest state,
and a record with a null value (a tombstone) deletes it.  A coordinator that takes
over a partition rebuilds its groups by replaying these records: the last value per
key wins.  The layouts are Kafka's (``OffsetCommitKey`` v1, ``OffsetCommitValue`` v3,
``GroupMetadataKey`` v2, ``GroupMetadataValue`` v3), so Kafka's tools can read the
topic too.  Big-endian; strings are an int16 length and UTF-8; bytes an int32 length
(-1 for null); arrays an int32 count.

The coordinator of group G is the leader of partition ``abs(java hashCode(G)) % N``
of ``__consumer_offsets`` (:func:`partition_for`), as Kafka computes it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import CorruptMessageError
from ..protocol.internal_records import Reader, blob, coordinator_partition, nullable_string, string

OFFSETS_TOPIC = "__consumer_offsets"

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition that holds ``group_id`` (Kafka's
    ``Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount``)."""
    return coordinator_partition(group_id, partitions)


@dataclass(frozen=True)
class OffsetKey:
    """Key of a committed offset: (group, topic, partition)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    """Key of a group's metadata record."""

    group: str


@dataclass(frozen=True)
class OffsetValue:
    """A committed offset (Kafka's OffsetAndMetadata)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1


@dataclass(frozen=True)
class MemberValue:
    """One member as stored in a group's metadata record."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupValue:
    """A group's state after a completed rebalance (or when it went empty)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberValue, ...] = field(default=())


# -- writing ------------------------------------------------------------------------

def encode_key(key: OffsetKey | GroupKey) -> bytes:
    if isinstance(key, OffsetKey):
        return struct.pack(">h", OFFSET_KEY_VERSION) + string(key.group) + string(key.topic) + struct.pack(">i", key.partition)
    return struct.pack(">h", GROUP_KEY_VERSION) + string(key.group)


def encode_offset(v: OffsetValue) -> bytes:
    return (struct.pack(">hqi", OFFSET_VALUE_VERSION, v.offset, v.leader_epoch) + string(v.metadata)
            + struct.pack(">q", v.commit_timestamp))


def encode_group(v: GroupValue) -> bytes:
    out = [struct.pack(">h", GROUP_VALUE_VERSION), string(v.protocol_type), struct.pack(">i", v.generation),
           nullable_string(v.protocol), nullable_string(v.leader), struct.pack(">q", v.current_state_timestamp),
           struct.pack(">i", len(v.members))]
    for m in v.members:
        out += [string(m.member_id), nullable_string(m.group_instance_id), string(m.client_id), string(m.client_host),
                struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms), blob(m.subscription),
                blob(m.assignment)]
    return b"".join(out)


# -- reading ------------------------------------------------------------------------

def decode_key(data: bytes) -> OffsetKey | GroupKey:
    r = Reader(data, OFFSETS_TOPIC)
    version = r.int(">h")
    if version in (0, 1):
        return OffsetKey(r.str(), r.str(), r.int(">i"))
    if version == 2:
        return GroupKey(r.str())
    raise CorruptMessageError(f"unknown __consumer_offsets key version {version}")


def decode_offset(data: bytes) -> OffsetValue:
    r = Reader(data, OFFSETS_TOPIC)
    version = r.int(">h")
    offset = r.int(">q")
    epoch = r.int(">i") if version >= 3 else -1
    metadata = r.str()
    ts = r.int(">q")
    return OffsetValue(offset, epoch, metadata, ts)


def decode_group(data: bytes) -> GroupValue:
    r = Reader(data, OFFSETS_TOPIC)
    version = r.int(">h")
    protocol_type, generation = r.str(), r.int(">i")
    protocol, leader = r.nstr(), r.nstr()
    ts = r.int(">q") if version >= 2 else -1
    members = []
    for _ in range(r.int(">i")):
        member_id = r.str()
        instance = r.nstr() if version >= 3 else None
        client_id, host = r.str(), r.str()
        rebalance = r.int(">i") if version >= 1 else 0
        session = r.int(">i")
        members.append(MemberValue(member_id, instance, client_id, host, rebalance, session, r.bytes(), r.bytes()))
    return GroupValue(protocol_type, generation, protocol, leader, ts, tuple(members))
