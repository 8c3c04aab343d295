"""The field encoding of Kafka's internal-topic records (``__consumer_offsets`` and
``__transaction_state``): big-endian integers, strings as an int16 length and UTF-8
(-1: null), bytes as an int32 length (-1: null), and the partition of a coordinator key.

Both record formats (:mod:`minikafka.groups.records`, :mod:`minikafka.transactions.records`)
write with :func:`string`, :func:`nullable_string` and :func:`blob` and read with
:class:`Reader`, which raises CORRUPT_MESSAGE for a record cut short.  Pure.
"""
from __future__ import annotations

import struct

from ..errors import CorruptMessageError, KafkaError


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The internal-topic partition that holds ``key`` (a group or transactional id):
    Kafka's ``Utils.abs(key.hashCode) % partitions``, whose abs maps Integer.MIN_VALUE to 0."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def nullable_string(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else string(s)


def blob(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


class Reader:
    """Reads the fields of one record in order; ``topic`` names it in errors."""

    def __init__(self, data: bytes, topic: str) -> None:
        self.data, self.pos, self.topic = data, 0, topic

    def _truncated(self) -> KafkaError:
        return CorruptMessageError(f"{self.topic} record is truncated")

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise self._truncated()
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
            raise self._truncated()
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def required_str(self) -> str:
        """A string that may not be null."""
        s = self.nstr()
        if s is None:
            raise CorruptMessageError(f"{self.topic} record has a null string where one is required")
        return s

    def str(self) -> str:
        """A string; null reads as empty."""
        return self.nstr() or ""

    def bytes(self) -> bytes:
        n = self.int(">i")
        if n < 0:
            return b""
        if self.pos + n > len(self.data):
            raise self._truncated()
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)
