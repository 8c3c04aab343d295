"""The group state machine and the offsets topic's records, without processes."""
from __future__ import annotations

import pytest

from minikafka import errors
from minikafka.groups import records as rec
from minikafka.protocol.internal_records import java_string_hash
from minikafka.groups.group import Group, GroupSettings, GroupState

S = GroupSettings(initial_rebalance_delay_ms=0)
PROTO = [("range", b"sub")]


def join(g: Group, member: str = "", now: int = 0, new_id: str = "m", instance: str | None = None,
         protocols=PROTO, settings=S, require=False, session=10000, rebalance=30000):
    return g.join(member, instance, "client", "host", session, rebalance, "consumer", protocols, now, new_id, settings,
                  require)


def answers(eff):
    return {a.member_id: a for a in eff.joins}


# ---------------------------------------------------------------- records

def test_java_hash_and_partition_match_kafka():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert rec.partition_for("polygenelubricants", 50) == 0  # Kafka's Utils.abs maps MIN_VALUE to 0
    assert java_string_hash("héllo") == 103094734  # over UTF-16 code units (values from Java)
    assert java_string_hash("\U0001F600x") == 54959989  # a surrogate pair
    assert rec.partition_for("my-group", 50) == abs(java_string_hash("my-group")) % 50


def test_records_round_trip():
    key = rec.OffsetKey("g", "t", 3)
    assert rec.decode_key(rec.encode_key(key)) == key
    assert rec.decode_key(rec.encode_key(rec.GroupKey("g"))) == rec.GroupKey("g")
    v = rec.OffsetValue(42, 5, "meta", 1700000000000)
    assert rec.decode_offset(rec.encode_offset(v)) == v
    gv = rec.GroupValue("consumer", 7, "range", "m1", 123, (
        rec.MemberValue("m1", None, "c", "/127.0.0.1", 300000, 10000, b"s", b"a"),
        rec.MemberValue("m2", "static-2", "c", "h", 1, 2, b"", b""),
    ))
    assert rec.decode_group(rec.encode_group(gv)) == gv
    with pytest.raises(errors.CorruptMessageError):
        rec.decode_key(b"\x00\x09xx")
    with pytest.raises(errors.CorruptMessageError):
        rec.decode_offset(b"\x00\x03\x00")


# ---------------------------------------------------------------- joins and the group leader

def test_the_first_member_to_join_leads_and_gets_the_member_list():
    g = Group("g")
    a, eff = join(g, new_id="m1")
    assert a is not None and a.error is None  # alone, with no delay: the round ends at once
    assert (a.generation, a.leader, a.protocol) == (1, "m1", "range")
    assert [m for m, _, _ in a.members] == ["m1"]
    assert g.state is GroupState.COMPLETING_REBALANCE
    s, eff = g.sync("m1", None, 1, {"m1": b"A"}, 1)
    assert s is None and eff.write_metadata
    eff = g.metadata_written(1, None, 2)
    assert g.state is GroupState.STABLE
    assert [(x.member_id, x.assignment) for x in eff.syncs] == [("m1", b"A")]
    # a second member: the round waits for m1 to rejoin; m1 stays leader
    a2, eff = join(g, new_id="m2", now=3)
    assert a2 is None and g.state is GroupState.PREPARING_REBALANCE
    assert g.heartbeat("m1", None, 1, 4).code.name == "REBALANCE_IN_PROGRESS"
    a1, eff = join(g, "m1", now=5)
    got = answers(eff)
    assert a1.leader == "m1" and a1.generation == 2 and len(a1.members) == 2
    assert got["m2"].leader == "m1" and got["m2"].members == []  # only the leader gets the list


def test_when_the_leader_leaves_another_member_leads():
    g = Group("g")
    join(g, new_id="m1")
    g.sync("m1", None, 1, {"m1": b""}, 0)
    g.metadata_written(1, None, 0)
    join(g, new_id="m2", now=1)
    _, eff = join(g, "m1", now=2)
    gen = g.generation
    g.sync("m1", None, gen, {"m1": b"", "m2": b""}, 3)
    g.metadata_written(gen, None, 3)
    err, eff = g.leave("m1", None, 4)
    assert err is None and g.state is GroupState.PREPARING_REBALANCE
    assert any("group leader" in text for _, text in eff.events)
    a, eff = join(g, "m2", now=5)
    assert a.leader == "m2" and g.leader == "m2" and a.generation == gen + 1
    assert any(kind == "group_leader" for kind, _ in eff.events)


def test_stale_generations_and_unknown_members_are_fenced():
    g = Group("g")
    join(g, new_id="m1")
    assert g.sync("m1", None, 0, None, 1)[0].error.code.name == "ILLEGAL_GENERATION"
    assert g.sync("x", None, 1, None, 1)[0].error.code.name == "UNKNOWN_MEMBER_ID"
    g.sync("m1", None, 1, {"m1": b""}, 1)
    g.metadata_written(1, None, 1)
    assert g.heartbeat("m1", None, 0, 2).code.name == "ILLEGAL_GENERATION"
    assert g.heartbeat("nobody", None, 1, 2).code.name == "UNKNOWN_MEMBER_ID"
    with pytest.raises(errors.IllegalGenerationError):
        g.check_commit("m1", None, 0, 3)
    with pytest.raises(errors.UnknownMemberIdError):
        g.check_commit("", None, -1, 3)  # the group has members: a commit needs a member id
    g.check_commit("m1", None, 1, 3)


def test_a_silent_member_is_evicted_after_its_session_timeout():
    g = Group("g")
    join(g, new_id="m1", session=6000)
    g.sync("m1", None, 1, {"m1": b""}, 0)
    g.metadata_written(1, None, 0)
    assert g.tick(5000).events == []
    eff = g.tick(7000)
    assert "m1" not in g.members
    assert g.state is GroupState.EMPTY and g.generation == 2 and eff.write_metadata


def test_an_empty_group_keeps_its_protocol_type_and_a_new_member_sets_it_again():
    g = Group("g")
    join(g, new_id="m1")
    g.sync("m1", None, 1, {"m1": b""}, 0)
    g.metadata_written(1, None, 0)
    err, _ = g.leave("m1", None, 1)
    assert err is None and g.state is GroupState.EMPTY
    assert g.protocol_type == "consumer" and g.protocol is None  # as Kafka's GroupMetadata keeps it
    assert g.describe()["protocol_type"] == "consumer"
    a, _ = g.join("", None, "c", "h", 10000, 30000, "connect", [("sessioned", b"")], 2, "m2", S, False)
    assert a.error is None and g.protocol_type == "connect"  # an empty group takes any type


def test_a_member_that_does_not_rejoin_is_dropped_when_the_rebalance_timeout_runs_out():
    g = Group("g")
    join(g, new_id="m1", rebalance=5000)
    g.sync("m1", None, 1, {"m1": b""}, 0)
    g.metadata_written(1, None, 0)
    assert join(g, new_id="m2", now=100, rebalance=5000)[0] is None
    eff = g.tick(4000)
    assert not eff.joins
    eff = g.tick(5200)
    assert list(g.members) == ["m2"]
    assert answers(eff)["m2"].leader == "m2"


def test_the_first_round_of_an_empty_group_waits_for_more_members():
    settings = GroupSettings(initial_rebalance_delay_ms=3000)
    g = Group("g")
    assert join(g, new_id="m1", settings=settings)[0] is None
    assert join(g, new_id="m2", now=1000, settings=settings)[0] is None
    assert g.tick(3500).joins == []  # m2 extended the wait to 4000
    eff = g.tick(4000)
    assert sorted(answers(eff)) == ["m1", "m2"] and g.generation == 1


def test_member_id_required_and_inconsistent_protocols():
    g = Group("g")
    a, _ = join(g, new_id="m1", require=True)
    assert a.error.code.name == "MEMBER_ID_REQUIRED" and a.member_id == "m1"
    a, _ = join(g, "m1")
    assert a.error is None and a.leader == "m1"
    a, _ = join(g, new_id="m2", protocols=[("roundrobin", b"")])
    assert a.error.code.name == "INCONSISTENT_GROUP_PROTOCOL"
    assert join(g, "never-given")[0].error.code.name == "UNKNOWN_MEMBER_ID"


def test_the_protocol_is_the_one_most_members_prefer_among_those_all_support():
    g = Group("g")
    join(g, new_id="m1", protocols=[("sticky", b""), ("range", b"")], settings=GroupSettings(initial_rebalance_delay_ms=10))
    join(g, new_id="m2", protocols=[("range", b""), ("sticky", b"")], settings=GroupSettings(initial_rebalance_delay_ms=10))
    join(g, new_id="m3", protocols=[("range", b"")], settings=GroupSettings(initial_rebalance_delay_ms=10))
    g.tick(100)
    assert g.protocol == "range"


def test_a_restarted_static_member_takes_its_old_place_and_fences_the_old_id():
    g = Group("g")
    join(g, new_id="m1", instance="i-1")
    g.sync("m1", "i-1", 1, {"m1": b"A"}, 0)
    g.metadata_written(1, None, 0)
    a, _ = join(g, new_id="m1b", instance="i-1", now=10)
    assert a.error is None and a.member_id == "m1b" and a.generation == 1  # stable: no rebalance
    assert g.state is GroupState.STABLE and g.members["m1b"].assignment == b"A"
    assert g.heartbeat("m1", "i-1", 1, 11).code.name == "FENCED_INSTANCE_ID"
    s, _ = g.sync("m1b", "i-1", 1, None, 12)
    assert s.assignment == b"A"


def test_a_failed_metadata_write_fails_the_syncs_and_rebalances():
    g = Group("g")
    join(g, new_id="m1")
    g.sync("m1", None, 1, {"m1": b"A"}, 0)
    eff = g.metadata_written(1, errors.CoordinatorNotAvailableError("x"), 1)
    assert eff.syncs[0].error.code.name == "COORDINATOR_NOT_AVAILABLE"
    assert g.state is GroupState.PREPARING_REBALANCE


def test_a_group_restored_from_its_record_is_stable_with_its_members():
    g = Group("g")
    join(g, new_id="m1")
    g.sync("m1", None, 1, {"m1": b"A"}, 0)
    g.metadata_written(1, None, 0)
    back = Group.restore("g", rec.decode_group(rec.encode_group(g.value(5))), 100)
    assert back.state is GroupState.STABLE and back.generation == 1 and back.leader == "m1"
    assert back.heartbeat("m1", None, 1, 200) is None
    assert back.sync("m1", None, 1, None, 201)[0].assignment == b"A"


def test_committed_offsets_are_kept_by_partition_and_the_last_one_wins():
    g = Group("g", 0)
    first, second = rec.OffsetValue(5, 0, "", 1), rec.OffsetValue(9, 1, "m", 2)
    g.offsets_committed([(("t", 0), first), (("t", 1), first)])
    g.offsets_committed([(("t", 0), second)])
    assert g.offsets == {("t", 0): second, ("t", 1): first}
