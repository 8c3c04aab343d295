"""Kafka's "consumer" embedded protocol: the bytes a consumer puts in JoinGroup
(its subscription) and the group leader in SyncGroup (each member's assignment).

Byte-compatible with Apache Kafka's ConsumerProtocolSubscription and
ConsumerProtocolAssignment (versions 0 and 1 as Java clients write them; newer
versions are read and their extra fields kept or ignored).  Big-endian; a string is
an int16 length and UTF-8, bytes an int32 length (-1 for null), an array an int32
count.  Because the broker only stores these bytes, Kafka's own consumers and ours
can share one group when they agree on an assignor.
"""
from __future__ import annotations

import builtins
import struct
from dataclasses import dataclass, field

from ..errors import InconsistentGroupProtocolError


@dataclass
class Subscription:
    """What a member asks for: its topics, and (version 1) the partitions it owns now."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[tuple[str, int]] = field(default_factory=list)
    generation: int = -1  # version 2
    rack: str | None = None  # version 3


@dataclass
class Assignment:
    """What the group leader gives a member: its partitions."""

    partitions: list[tuple[str, int]]
    user_data: bytes | None = None


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def _grouped(tps: list[tuple[str, int]]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    out = [struct.pack(">i", len(by_topic))]
    for t in sorted(by_topic):
        parts = sorted(by_topic[t])
        out += [_str(t), struct.pack(">i", len(parts)), struct.pack(f">{len(parts)}i", *parts)]
    return b"".join(out)


def encode_subscription(sub: Subscription, version: int = 1) -> bytes:
    out = [struct.pack(">h", version), struct.pack(">i", len(sub.topics))] + [_str(t) for t in sub.topics]
    out.append(_bytes(sub.user_data))
    if version >= 1:
        out.append(_grouped(sub.owned_partitions))
    return b"".join(out)


def encode_assignment(a: Assignment, version: int = 1) -> bytes:
    return struct.pack(">h", version) + _grouped(a.partitions) + _bytes(a.user_data)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = bytes(data), 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise InconsistentGroupProtocolError("consumer protocol metadata is truncated")
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return v

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise InconsistentGroupProtocolError("consumer protocol metadata is truncated")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def str(self) -> str | None:
        n = self.take(">h")
        return None if n < 0 else self.raw(n).decode("utf-8", "replace")

    def bytes(self) -> bytes | None:
        n = self.take(">i")
        return None if n < 0 else self.raw(n)

    def count(self) -> int:
        n = self.take(">i")
        if n < -1 or n > self.left():
            raise InconsistentGroupProtocolError(f"consumer protocol metadata has a bad array length {n}")
        return max(n, 0)

    def grouped(self) -> list[tuple[builtins.str, int]]:
        out = []
        for _ in range(self.count()):
            topic = self.str() or ""
            out += [(topic, self.take(">i")) for _ in range(self.count())]
        return out


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = r.take(">h")
    if version < 0:
        raise InconsistentGroupProtocolError(f"consumer protocol version {version}")
    topics = [r.str() or "" for _ in range(r.count())]
    sub = Subscription(topics, r.bytes())
    if version >= 1 and r.left():
        sub.owned_partitions = r.grouped()
    if version >= 2 and r.left() >= 4:
        sub.generation = r.take(">i")
    if version >= 3 and r.left() >= 2:
        sub.rack = r.str()
    return sub


def decode_assignment(data: bytes) -> Assignment:
    """A member's assignment; empty bytes mean it got nothing."""
    if not data:
        return Assignment([])
    r = _Reader(data)
    version = r.take(">h")
    if version < 0:
        raise InconsistentGroupProtocolError(f"consumer protocol version {version}")
    parts = r.grouped()
    return Assignment(parts, r.bytes() if r.left() >= 4 else None)
