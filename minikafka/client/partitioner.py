"""Choosing a partition for a record, as Kafka's Java producer does.

* A record with an explicit partition goes there.
* A keyed record goes to ``toPositive(murmur2(key)) % num_partitions`` where
  ``murmur2`` is Kafka's ``Utils.murmur2`` (seed 0x9747b28c, m 0x5bd1e995, r 24,
  signed 32-bit arithmetic) and ``toPositive(h) = h & 0x7fffffff``.  Keys thus land
  on the same partitions as with the Java client.
* A record without key sticks to one partition until that partition's batch is
  sent (or full), then the next partition is taken in round-robin order among the
  partitions that have a leader (Kafka's sticky partitioner, KIP-480).
"""
from __future__ import annotations

import random
from typing import Sequence

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[n4 + 2] << 16
    if rest >= 2:
        h ^= data[n4 + 1] << 8
    if rest >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(h: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit."""
    return h & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a keyed record."""
    if num_partitions < 1:
        raise ValueError("num_partitions must be at least 1")
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """Partition choice for records without key: one partition per batch, round robin."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._current: dict[str, int] = {}
        self._counter: dict[str, int] = {}

    def partition(self, topic: str, partitions: Sequence[int], available: Sequence[int]) -> int:
        """The sticky partition of ``topic`` (``partitions`` all, ``available`` those with a leader)."""
        p = self._current.get(topic)
        if p is None or p not in partitions:
            p = self._next(topic, partitions, available)
        return p

    def batch_done(self, topic: str, partition: int, partitions: Sequence[int], available: Sequence[int]) -> None:
        """The batch of ``partition`` was sent or filled: move on if it was the sticky one."""
        if self._current.get(topic) == partition:
            self._next(topic, partitions, available)

    def _next(self, topic: str, partitions: Sequence[int], available: Sequence[int]) -> int:
        candidates = list(available) or list(partitions)
        if not candidates:
            raise ValueError(f"topic {topic!r} has no partitions")
        count = self._counter.get(topic)
        count = self._rng.randrange(len(candidates)) if count is None else count + 1
        self._counter[topic] = count
        p = candidates[count % len(candidates)]
        self._current[topic] = p
        return p


def choose_partition(
    sticky: StickyPartitioner,
    topic: str,
    key: bytes | None,
    partitions: Sequence[int],
    available: Sequence[int],
) -> int:
    """The default partitioner: murmur2 of the key over all partitions, or sticky."""
    if key is not None:
        return partitions[partition_for_key(key, len(partitions))]
    return sticky.partition(topic, partitions, available)
