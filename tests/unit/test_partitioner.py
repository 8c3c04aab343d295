"""Kafka's default partitioner: murmur2 of the key, sticky round robin without key."""
from __future__ import annotations

import random

import pytest

from minikafka.client.partitioner import (
    StickyPartitioner,
    choose_partition,
    murmur2,
    partition_for_key,
    to_positive,
)

# org.apache.kafka.common.utils.UtilsTest.testMurmur2 (plus the empty array).
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
}


@pytest.mark.parametrize("data, expected", sorted(KAFKA_VECTORS.items()))
def test_murmur2_matches_kafka(data, expected):
    assert murmur2(data) == expected


def test_murmur2_is_signed_32_bit():
    rng = random.Random(7)
    for _ in range(500):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        h = murmur2(data)
        assert -(2**31) <= h < 2**31


def test_every_tail_length_is_hashed():
    # The 1, 2 and 3 trailing bytes each change the hash.
    base = b"abcd"
    hashes = {murmur2(base + b"x" * n) for n in range(4)}
    assert len(hashes) == 4


def test_to_positive_clears_the_sign_bit():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-790332482) == 1357151166
    assert to_positive(5) == 5


@pytest.mark.parametrize("key, partitions, expected", [
    (b"foobar", 50, 1357151166 % 50),
    (b"foobar", 3, 1357151166 % 3),
    (b"21", 12, (-973932308 & 0x7FFFFFFF) % 12),
    (b"abc", 7, 479470107 % 7),
])
def test_partition_for_key(key, partitions, expected):
    assert partition_for_key(key, partitions) == expected


def test_partition_for_key_known_value():
    # Same answer as Kafka's DefaultPartitioner for "foobar" over 50 partitions.
    assert partition_for_key(b"foobar", 50) == 16


def test_partition_for_key_rejects_no_partitions():
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)


def test_keyed_records_ignore_leader_availability():
    # A keyed record goes to its hash partition even if that partition has no leader (as in Kafka).
    sticky = StickyPartitioner(random.Random(1))
    parts = [0, 1, 2, 3]
    for i in range(100):
        key = f"key-{i}".encode()
        assert choose_partition(sticky, "t", key, parts, available=[0]) == partition_for_key(key, 4)


def test_same_key_same_partition():
    sticky = StickyPartitioner()
    parts = list(range(6))
    first = choose_partition(sticky, "t", b"user-42", parts, parts)
    assert all(choose_partition(sticky, "t", b"user-42", parts, parts) == first for _ in range(20))


def test_sticky_keeps_a_partition_until_its_batch_is_done():
    sticky = StickyPartitioner(random.Random(3))
    parts = [0, 1, 2]
    p = sticky.partition("t", parts, parts)
    assert all(sticky.partition("t", parts, parts) == p for _ in range(10))
    # Another partition's batch being done changes nothing.
    sticky.batch_done("t", (p + 1) % 3, parts, parts)
    assert sticky.partition("t", parts, parts) == p
    sticky.batch_done("t", p, parts, parts)
    q = sticky.partition("t", parts, parts)
    assert q == (p + 1) % 3


def test_sticky_round_robin_covers_every_available_partition():
    sticky = StickyPartitioner(random.Random(5))
    parts = [0, 1, 2, 3, 4]
    available = [1, 3, 4]
    seen = []
    for _ in range(6):
        p = sticky.partition("t", parts, available)
        seen.append(p)
        sticky.batch_done("t", p, parts, available)
    assert set(seen) == set(available)
    assert all(a != b for a, b in zip(seen, seen[1:]))


def test_sticky_falls_back_to_all_partitions_without_leaders():
    sticky = StickyPartitioner(random.Random(1))
    assert sticky.partition("t", [0, 1], []) in (0, 1)


def test_sticky_topics_are_independent():
    sticky = StickyPartitioner(random.Random(2))
    a = sticky.partition("a", [0, 1, 2], [0, 1, 2])
    b = sticky.partition("b", [0, 1, 2], [0, 1, 2])
    sticky.batch_done("b", b, [0, 1, 2], [0, 1, 2])
    assert sticky.partition("a", [0, 1, 2], [0, 1, 2]) == a
