"""Assignors and the consumer protocol bytes, without processes."""
from __future__ import annotations

import random

import pytest

from minikafka import errors
from minikafka.client.assignors import ASSIGNORS, assignor
from minikafka.groups.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

S = Subscription


def test_range_and_roundrobin_match_kafkas_documented_examples():
    subs = {"C0": S(["t0", "t1"]), "C1": S(["t0", "t1"])}
    assert ASSIGNORS["range"].assign({"t0": 3, "t1": 3}, subs) == {
        "C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "C1": [("t0", 2), ("t1", 2)]}
    assert ASSIGNORS["roundrobin"].assign({"t0": 3, "t1": 3}, subs) == {
        "C0": [("t0", 0), ("t0", 2), ("t1", 1)], "C1": [("t0", 1), ("t1", 0), ("t1", 2)]}


def _check(result, partitions_per_topic, subs):
    flat = [tp for tps in result.values() for tp in tps]
    assert len(flat) == len(set(flat)), "a partition went to two members"
    wanted = {(t, p) for t, n in partitions_per_topic.items() for p in range(n)
              if any(t in s.topics for s in subs.values())}
    assert set(flat) == wanted, "a subscribed partition went to nobody"
    for m, tps in result.items():
        assert all(t in subs[m].topics for t, _ in tps), f"{m} got a topic it did not subscribe to"
    assert set(result) == set(subs)


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_three_members_share_six_partitions_two_each(name):
    subs = {m: S(["t"]) for m in ("a", "b", "c")}
    got = ASSIGNORS[name].assign({"t": 6}, subs)
    _check(got, {"t": 6}, subs)
    assert sorted(len(v) for v in got.values()) == [2, 2, 2]


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_random_cases_never_overlap_or_leave_gaps(name):
    rng = random.Random(7)
    for _ in range(300):
        topics = {f"t{i}": rng.randint(1, 8) for i in range(rng.randint(1, 4))}
        names = list(topics) + ["ghost"]
        subs = {f"m{i}": S(rng.sample(names, rng.randint(1, len(names)))) for i in range(rng.randint(1, 6))}
        for s in subs.values():  # some owned partitions, possibly stale or claimed twice
            s.owned_partitions = [(t, rng.randrange(9)) for t in rng.sample(names, 1)]
        _check(ASSIGNORS[name].assign(topics, subs), topics, subs)


def test_sticky_moves_only_what_it_must():
    sticky = ASSIGNORS["sticky"]
    owned = {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)], "c": [("t", 4), ("t", 5)]}
    # c leaves: a and b keep theirs and share c's
    got = sticky.assign({"t": 6}, {m: S(["t"], owned_partitions=owned[m]) for m in ("a", "b")})
    assert set(owned["a"]) <= set(got["a"]) and set(owned["b"]) <= set(got["b"])
    assert sorted(len(v) for v in got.values()) == [3, 3]
    # d joins: one partition moves to it (balance 2,2,1,1), the other five stay
    subs = {m: S(["t"], owned_partitions=owned.get(m, [])) for m in ("a", "b", "c", "d")}
    got = sticky.assign({"t": 6}, subs)
    _check(got, {"t": 6}, subs)
    kept = sum(len(set(owned[m]) & set(got[m])) for m in owned)
    assert kept == 5 and sorted(len(v) for v in got.values()) == [1, 1, 2, 2]


def test_members_with_different_subscriptions():
    subs = {"a": S(["x"]), "b": S(["x", "y"]), "c": S(["y"])}
    for name in ASSIGNORS:
        got = ASSIGNORS[name].assign({"x": 2, "y": 2, "unused": 4}, subs)
        _check(got, {"x": 2, "y": 2, "unused": 4}, subs)


def test_unknown_assignor_is_a_clear_error():
    with pytest.raises(ValueError, match="range, roundrobin, sticky"):
        assignor("cooperative-sticky")


def test_subscription_and_assignment_bytes_match_kafka_python():
    from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberAssignment_v0 as KAssign
    from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberMetadata_v0 as KMeta

    theirs = KMeta(0, ["a", "b"], b"ud").encode()
    assert decode_subscription(theirs) == S(["a", "b"], b"ud")
    assert encode_subscription(S(["a", "b"], b"ud"), version=0) == theirs
    ours = encode_assignment(Assignment([("t", 2), ("t", 0), ("u", 1)]), version=0)
    back = KAssign.decode(ours)
    assert sorted((tp.topic, tp.partition) for tp in back.partitions()) == [("t", 0), ("t", 2), ("u", 1)]
    assert decode_assignment(KAssign(0, [("t", [0, 2])], b"").encode()).partitions == [("t", 0), ("t", 2)]


def test_version_1_round_trips_and_bad_bytes_are_refused():
    sub = S(["t", "u"], None, [("t", 1), ("u", 0)])
    assert decode_subscription(encode_subscription(sub)) == sub
    assert decode_subscription(encode_subscription(sub) + b"\x00\x00\x00\x07") == sub  # newer trailing fields
    assert decode_assignment(b"").partitions == []
    with pytest.raises(errors.InconsistentGroupProtocolError):
        decode_subscription(b"\x00\x01\x7f\xff\xff\xff")
    with pytest.raises(errors.InconsistentGroupProtocolError):
        decode_assignment(b"\x00")
