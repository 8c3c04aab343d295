"""Transactional offset commits in the group core (KIP-98, KIP-447): pending until the
marker, Kafka's newest-record rule on COMMIT, fencing of stale consumers, expiry and
tombstones around open transactions, and the replay of a partition with markers."""
from __future__ import annotations

import pytest

from minikafka import errors
from minikafka.groups import records as rec
from minikafka.groups.group import Group, GroupSettings, GroupState
from minikafka.groups.replay import OffsetsReplay

S = GroupSettings(initial_rebalance_delay_ms=0)
TP0, TP1 = ("t", 0), ("t", 1)


def v(offset: int, ts: int = 0) -> rec.OffsetValue:
    return rec.OffsetValue(offset, -1, "", ts)


def stable(instance: str | None = None) -> Group:
    """A group with one member m1 at generation 1, Stable."""
    g = Group("g")
    g.join("", instance, "c", "h", 10000, 30000, "consumer", [("range", b"")], 0, "m1", S, False)
    g.sync("m1", instance, 1, {"m1": b""}, 0)
    g.metadata_written(1, None, 0)
    assert g.state is GroupState.STABLE
    return g


def commit_txn(g: Group, pid: int, offsets: dict, at: int) -> None:
    staged = g.stage_txn_offsets(pid, list(offsets.items()))
    g.txn_offsets_written(pid, staged, at)


# ---------------------------------------------------------------- pending, commit, abort

def test_pending_offsets_are_invisible_until_the_commit_marker():
    g = Group("g")
    g.offsets_committed([(TP0, v(5))], 10)
    commit_txn(g, 7, {TP0: v(9), TP1: v(3)}, 20)
    assert g.offsets == {TP0: v(5)}  # what OffsetFetch sees
    assert g.has_pending(TP0) and g.has_pending(TP1) and g.pending_partitions() == {TP0, TP1}
    assert sorted(g.complete_txn(7, True)) == [TP0, TP1]
    assert g.offsets == {TP0: v(9), TP1: v(3)} and g.positions == {TP0: 20, TP1: 21}
    assert not g.pending_txn and not g.has_pending(TP0)


def test_an_abort_marker_drops_the_pending_offsets():
    g = Group("g")
    g.offsets_committed([(TP0, v(5))], 10)
    commit_txn(g, 7, {TP0: v(9)}, 20)
    assert g.complete_txn(7, False) == []
    assert g.offsets == {TP0: v(5)} and not g.pending_txn


def test_a_marker_ends_only_its_own_producers_offsets():
    g = Group("g")
    commit_txn(g, 7, {TP0: v(1)}, 20)
    commit_txn(g, 8, {TP1: v(2)}, 21)
    g.complete_txn(8, True)
    assert g.offsets == {TP1: v(2)} and g.pending_partitions() == {TP0}
    assert g.complete_txn(99, True) == []  # no pending offsets of that producer: nothing changes


def test_a_plain_commit_written_after_the_transactional_one_wins():
    g = Group("g")
    commit_txn(g, 7, {TP0: v(9)}, 20)
    g.offsets_committed([(TP0, v(12))], 25)  # later in the log
    assert g.complete_txn(7, True) == []
    assert g.offsets == {TP0: v(12)}
    # and a plain commit written before it loses
    commit_txn(g, 7, {TP0: v(30)}, 40)
    g.offsets_committed([(TP0, v(31))], 35)
    assert g.complete_txn(7, True) == [TP0] and g.offsets[TP0] == v(30)


def test_a_failed_write_unstages_only_its_own_entries():
    g = Group("g")
    first = g.stage_txn_offsets(7, [(TP0, v(1))])
    second = g.stage_txn_offsets(7, [(TP0, v(2)), (TP1, v(2))])
    g.txn_offsets_failed(7, first)  # replaced meanwhile: the newer entry stays
    assert g.pending_txn[7][TP0].value == v(2)
    g.txn_offsets_failed(7, second)
    assert not g.pending_txn


def test_an_entry_still_being_written_is_not_committed_by_a_marker():
    g = Group("g")
    staged = g.stage_txn_offsets(7, [(TP0, v(1))])
    assert g.has_pending(TP0)
    assert g.complete_txn(7, True) == [] and TP0 not in g.offsets
    g.txn_offsets_written(7, staged, 50)  # the write ends after the marker: nothing comes back
    assert not g.pending_txn


# ---------------------------------------------------------------- fencing (KIP-447)

def test_without_member_fields_any_state_accepts_a_transactional_commit():
    g = stable()
    g.check_txn_commit("", None, -1)  # v0-v2: no generation, no member; accepted though the group has members
    Group("fresh").check_txn_commit("", None, -1)


def test_a_stale_generation_an_unknown_member_and_a_fenced_instance_are_refused():
    g = stable(instance="i-1")
    g.check_txn_commit("m1", "i-1", 1)
    with pytest.raises(errors.IllegalGenerationError):
        g.check_txn_commit("m1", "i-1", 0)
    with pytest.raises(errors.UnknownMemberIdError):
        g.check_txn_commit("zombie", None, 1)
    with pytest.raises(errors.FencedInstanceIdError):
        g.check_txn_commit("old-id", "i-1", 1)
    with pytest.raises(errors.IllegalGenerationError):
        g.check_txn_commit("m1", None, -1)  # a member id with no generation


def test_a_rebalancing_group_still_takes_a_current_members_transactional_commit():
    g = Group("g")
    g.join("", None, "c", "h", 10000, 30000, "consumer", [("range", b"")], 0, "m1", S, False)
    assert g.state is GroupState.COMPLETING_REBALANCE
    g.check_txn_commit("m1", None, 1)  # no REBALANCE_IN_PROGRESS for transactional commits, as in Kafka
    with pytest.raises(errors.RebalanceInProgressError):
        g.check_commit("m1", None, 1, 0)


def test_a_dead_group_is_not_available():
    g = Group("g")
    g.mark_dead()
    with pytest.raises(errors.CoordinatorNotAvailableError):
        g.check_txn_commit("", None, -1)


# ---------------------------------------------------------------- tombstones and expiry

def test_a_tombstone_drops_committed_and_pending_offsets_of_the_partition():
    g = Group("g")
    g.offsets_committed([(TP0, v(1))], 1)
    commit_txn(g, 7, {TP0: v(2), TP1: v(3)}, 5)
    g.offsets_removed([TP0])
    assert TP0 not in g.offsets and g.pending_partitions() == {TP1}
    g.offsets_removed([TP1])
    assert not g.pending_txn


def test_expiry_keeps_offsets_an_open_transaction_holds_and_keeps_the_group():
    g = Group("g", now=0)
    g.offsets_committed([(TP0, v(1)), (TP1, v(1))], 1)
    commit_txn(g, 7, {TP0: v(2)}, 5)
    expired, whole = g.expired_offsets(1000, 100)
    assert expired == [TP1] and not whole
    g.offsets_removed(expired)
    g.complete_txn(7, True)
    assert g.expired_offsets(1000, 100) == ([TP0], True)
    assert g.expired_offsets(50, 100) == ([], False)  # not old enough


def test_a_member_groups_offsets_do_not_expire():
    g = stable()
    g.offsets_committed([(TP0, v(1))], 1)
    assert g.expired_offsets(10**9, 1) == ([], False)


def test_an_empty_group_without_offsets_goes_at_the_next_cleanup_as_in_kafka():
    empty = Group("g", now=0)  # Empty, nothing committed (its members left without committing)
    assert empty.expired_offsets(1, 10**9) == ([], True)
    commit_txn(empty, 7, {TP0: v(2)}, 5)  # an open transaction holds offsets of it: it stays
    assert empty.expired_offsets(1, 10**9) == ([], False)


def test_offsets_of_a_group_without_protocol_expire_from_their_commit():
    g = Group("g", now=0)
    g.offsets_committed([(TP0, v(1, ts=0)), (TP1, v(1, ts=900))], 1)
    assert g.expired_offsets(1000, 500) == ([TP0], False)


# ---------------------------------------------------------------- replay of a partition

def key(tp: tuple[str, int], group: str = "g") -> rec.OffsetKey:
    return rec.OffsetKey(group, *tp)


def test_replay_commits_on_commit_markers_drops_on_abort_and_keeps_open_ones_pending():
    r = OffsetsReplay()
    r.offset(0, key(TP0), v(1))
    r.offset(1, key(TP0), v(5), producer_id=7, transactional=True)
    r.offset(2, key(TP1), v(6), producer_id=8, transactional=True)
    r.offset(3, key(TP1), v(7), producer_id=9, transactional=True)
    r.marker(7, True)   # offset 4
    r.marker(8, False)  # offset 5
    g = r.groups(now=100)["g"]
    assert g.offsets == {TP0: v(5)} and g.positions == {TP0: 1}
    assert set(g.pending_txn) == {9} and g.pending_txn[9][TP1].position == 3  # its marker comes later
    assert g.state is GroupState.EMPTY
    assert g.complete_txn(9, True) == [TP1] and g.offsets[TP1] == v(7)


def test_replay_a_commit_marker_does_not_undo_a_later_plain_commit():
    r = OffsetsReplay()
    r.offset(1, key(TP0), v(5), producer_id=7, transactional=True)
    r.offset(2, key(TP0), v(9))
    r.marker(7, True)
    assert r.groups(0)["g"].offsets == {TP0: v(9)}


def test_replay_a_plain_tombstone_drops_pending_offsets_and_group_records_load():
    r = OffsetsReplay()
    gv = rec.GroupValue("consumer", 3, "range", "m1", 0, (rec.MemberValue("m1", None, "c", "h", 1, 10000, b"", b""),))
    r.group(rec.GroupKey("g"), gv)
    r.offset(1, key(TP0), v(5), producer_id=7, transactional=True)
    r.offset(2, key(TP0, "other"), v(5), producer_id=7, transactional=True)
    r.offset(3, key(TP0), None)
    r.marker(7, True)
    groups = r.groups(0)
    assert groups["g"].offsets == {} and groups["g"].generation == 3 and "m1" in groups["g"].members
    assert groups["other"].offsets == {TP0: v(5)}  # a group with offsets only loads as an Empty group
    r.group(rec.GroupKey("g"), None)
    assert "g" not in r.groups(0)


def test_replay_of_a_transactional_tombstone_unstages_it():
    r = OffsetsReplay()
    r.offset(1, key(TP0), v(5), producer_id=7, transactional=True)
    r.offset(2, key(TP0), None, producer_id=7, transactional=True)
    r.marker(7, True)
    assert "g" not in r.groups(0)
