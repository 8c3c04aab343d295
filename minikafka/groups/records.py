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

OFFSETS_TOPIC = "__consumer_offsets"

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition that holds ``group_id`` (Kafka's
    ``Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount``; Kafka's abs
    maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


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

def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _nstr(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else _str(s)


def _bytes(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def encode_key(key: OffsetKey | GroupKey) -> bytes:
    if isinstance(key, OffsetKey):
        return struct.pack(">h", OFFSET_KEY_VERSION) + _str(key.group) + _str(key.topic) + struct.pack(">i", key.partition)
    return struct.pack(">h", GROUP_KEY_VERSION) + _str(key.group)


def encode_offset(v: OffsetValue) -> bytes:
    return (struct.pack(">hqi", OFFSET_VALUE_VERSION, v.offset, v.leader_epoch) + _str(v.metadata)
            + struct.pack(">q", v.commit_timestamp))


def encode_group(v: GroupValue) -> bytes:
    out = [struct.pack(">h", GROUP_VALUE_VERSION), _str(v.protocol_type), struct.pack(">i", v.generation),
           _nstr(v.protocol), _nstr(v.leader), struct.pack(">q", v.current_state_timestamp),
           struct.pack(">i", len(v.members))]
    for m in v.members:
        out += [_str(m.member_id), _nstr(m.group_instance_id), _str(m.client_id), _str(m.client_host),
                struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms), _bytes(m.subscription),
                _bytes(m.assignment)]
    return b"".join(out)


# -- reading ------------------------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptMessageError("__consumer_offsets record is truncated")
        got = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return got

    def int(self, fmt: str) -> int:
        return self.take(fmt)[0]

    def nstr(self) -> str | None:
        n = self.int(">h")
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise CorruptMessageError("__consumer_offsets record is truncated")
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def str(self) -> str:
        return self.nstr() or ""

    def bytes(self) -> bytes:
        n = self.int(">i")
        if n < 0:
            return b""
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    r = _Reader(data)
    version = r.int(">h")
    if version in (0, 1):
        return OffsetKey(r.str(), r.str(), r.int(">i"))
    if version == 2:
        return GroupKey(r.str())
    raise CorruptMessageError(f"unknown __consumer_offsets key version {version}")


def decode_offset(data: bytes) -> OffsetValue:
    r = _Reader(data)
    version = r.int(">h")
    offset = r.int(">q")
    epoch = r.int(">i") if version >= 3 else -1
    metadata = r.str()
    ts = r.int(">q")
    return OffsetValue(offset, epoch, metadata, ts)


def decode_group(data: bytes) -> GroupValue:
    r = _Reader(data)
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
