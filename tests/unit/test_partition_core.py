"""PartitionReplica step by step: every HW trigger, ISR shrink and expand, acks, fencing."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.errors import (
    CorruptMessageError,
    FencedLeaderEpochError,
    InvalidRecordError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from minikafka.log.epoch_cache import LeaderEpochCache
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, iter_records, read_header, stamp
from minikafka.replication.partition import LeaderState, PartitionReplica, Role, TruncationMode

BIG = 1 << 30
LAG = 10_000
L, F, G = 1, 2, 3


def batch(*values: str, ts: int = 0) -> bytes:
    return encode_batch([(None, v.encode(), None, ts) for v in values])


def state(leader=L, epoch=0, isr=(L, F), replicas=(L, F), zk_version=0) -> LeaderState:
    return LeaderState(leader, epoch, tuple(isr), tuple(replicas), zk_version, 1)


def pair(isr=(L, F), replicas=(L, F), mode=TruncationMode.LEADER_EPOCH, now=0):
    st_ = state(isr=isr, replicas=replicas)
    leader = PartitionReplica("t", 0, L, truncation=mode)
    leader.become_leader(st_, now)
    followers = {}
    for r in replicas:
        if r != L:
            f = PartitionReplica("t", 0, r, truncation=mode)
            f.become_follower(st_, now)
            followers[r] = f
    return leader, followers


def fetch(leader: PartitionReplica, f: PartitionReplica, now: int, deliver: bool = True):
    """The seed sequence: read, record the fetch, append with the leader's HW."""
    offset = f.log_end_offset
    data = leader.read(offset, BIG, for_follower=True)
    eff = leader.update_follower_fetch(f.broker_id, offset, now)
    if deliver:
        f.append_as_follower(data, leader.high_watermark)
    return eff


def values(buf: bytes) -> list[tuple[int, str]]:
    return [(r.offset, r.value.decode()) for r in iter_records(buf)]


def with_log(broker: int, spec: list[tuple[int, str]], entries, hw: int, mode=TruncationMode.LEADER_EPOCH) -> PartitionReplica:
    """A replica whose log holds one batch per (epoch, value) entry."""
    log = PartitionLog()
    for epoch, value in spec:
        data = stamp(batch(value), log.log_end_offset, epoch)
        log.append(read_header(data), data)
    return PartitionReplica("t", 0, broker, log, LeaderEpochCache(entries), hw, mode)


# -- the seed example ------------------------------------------------------------------------

def test_seed_example_hw_learned_one_round_later():
    leader, fs = pair()
    f = fs[F]
    assert leader.is_leader and f.role is Role.FOLLOWER
    assert leader.epochs.entries == [(0, 0)]
    res, eff = leader.append_as_leader(batch("m1"), required_acks=-1, min_insync_replicas=1)
    assert (res.base_offset, res.last_offset) == (0, 0)
    assert eff.leo_changed and not eff.hw_changed
    assert (leader.log_end_offset, leader.high_watermark) == (1, 0)

    # first fetch: the follower copies m1; both HWs are still 0
    eff = fetch(leader, f, 100)
    assert not eff.hw_changed
    assert (f.log_end_offset, f.high_watermark, leader.high_watermark) == (1, 0, 0)
    assert leader.remotes[F].leo == 0

    # second fetch at offset 1: the leader moves its HW to 1 before answering; the follower learns it
    eff = fetch(leader, f, 200)
    assert eff.hw_changed
    assert leader.remotes[F].leo == 1
    assert (leader.high_watermark, f.high_watermark) == (1, 1)
    assert values(f.log.read(0, BIG)) == [(0, "m1")]
    assert f.epochs.entries == [(0, 0)]
    assert f.log.checksum(1) == leader.log.checksum(1)


# -- HW triggers ---------------------------------------------------------------------------------

def test_hw_trigger_becoming_leader_alone():
    r = with_log(L, [(0, "a"), (0, "b"), (0, "c")], [(0, 0)], hw=1)
    assert r.high_watermark == 1
    eff = r.become_leader(state(epoch=1, isr=(L,)), 0)
    assert r.high_watermark == 3 and eff.hw_changed
    assert eff.epoch_cache_changed and r.epochs.entries == [(0, 0), (1, 3)]


def test_hw_trigger_becoming_leader_with_unknown_follower_holds():
    r = with_log(L, [(0, "a"), (0, "b"), (0, "c")], [(0, 0)], hw=1)
    eff = r.become_leader(state(epoch=1, isr=(L, F)), 0)
    assert r.high_watermark == 1 and not eff.hw_changed
    assert r.remotes[F].leo == -1


def test_hw_trigger_producer_append_with_isr_leader_only():
    leader, _ = pair(isr=(L,))
    assert leader.high_watermark == 0
    _, eff = leader.append_as_leader(batch("a", "b"), 1, 1)
    assert eff.hw_changed and leader.high_watermark == 2
    _, eff = leader.append_as_leader(batch("c"), -1, 1)
    assert leader.high_watermark == 3


def test_hw_trigger_producer_append_waits_for_isr_follower():
    leader, fs = pair()
    fetch(leader, fs[F], 0)  # the follower's LEO (0) is known now
    _, eff = leader.append_as_leader(batch("a"), -1, 2)
    assert not eff.hw_changed and leader.high_watermark == 0


def test_hw_trigger_isr_shrink():
    leader, fs = pair()
    fetch(leader, fs[F], 0)
    leader.append_as_leader(batch("a"), 1, 1)
    leader.append_as_leader(batch("b"), 1, 1)
    assert leader.high_watermark == 0
    eff = leader.maybe_shrink_isr(LAG + 1, LAG)
    assert eff.isr_update == (L,)
    assert leader.isr == (L, F) and leader.high_watermark == 0  # nothing changes before the write
    eff = leader.isr_update_done((L,), 1)
    assert leader.isr == (L,) and leader.zk_version == 1
    assert eff.hw_changed and leader.high_watermark == 2


def test_hw_never_moves_on_a_follower_append_beyond_leader_hw():
    leader, fs = pair()
    leader.append_as_leader(batch("a", "b", "c"), 1, 1)
    fetch(leader, fs[F], 0)
    assert fs[F].high_watermark == 0
    fetch(leader, fs[F], 0)
    assert fs[F].high_watermark == leader.high_watermark == 3


# -- ISR shrink by time ------------------------------------------------------------------------

def test_isr_shrink_exactly_after_lag_time_without_fetch():
    leader, _ = pair(now=1000)
    leader.append_as_leader(batch("a"), 1, 1)
    assert leader.maybe_shrink_isr(1000 + LAG, LAG).isr_update is None
    assert leader.out_of_sync_replicas(1000 + LAG, LAG) == []
    assert leader.out_of_sync_replicas(1000 + LAG + 1, LAG) == [F]
    eff = leader.maybe_shrink_isr(1000 + LAG + 1, LAG)
    assert eff.isr_update == (L,)
    assert [k for k, _ in eff.events] == ["isr_shrink"]


def test_isr_shrink_follower_fetching_but_never_catching_up():
    leader, fs = pair()
    f = fs[F]
    leader.append_as_leader(batch("a"), 1, 1)
    # the follower keeps fetching at offset 0 (its responses get lost): it never catches up
    for now in range(1000, LAG + 1, 1000):
        fetch(leader, f, now, deliver=False)
        assert leader.maybe_shrink_isr(now, LAG).isr_update is None
    fetch(leader, f, LAG + 1, deliver=False)
    assert leader.maybe_shrink_isr(LAG + 1, LAG).isr_update == (L,)


def test_follower_at_leader_leo_is_caught_up_now():
    leader, fs = pair()
    f = fs[F]
    fetch(leader, f, 5000)  # offset 0 == leader LEO 0
    assert leader.remotes[F].last_caught_up_ms == 5000
    assert leader.maybe_shrink_isr(5000 + LAG, LAG).isr_update is None
    # with the switch on, the lag time alone decides: a follower that stopped fetching leaves
    assert leader.maybe_shrink_isr(5001 + LAG, LAG, idle_followers_lag=True).isr_update == (L,)


def test_a_stopped_follower_of_an_idle_partition_stays_in_the_isr_while_its_leo_is_the_leaders():
    """Kafka's ReplicaState.isCaughtUp: a follower whose last fetch reached the leader's LEO
    is in sync while nothing new is written, however long ago that fetch was; the first
    record written after the lag time puts it out."""
    leader, fs = pair()
    leader.append_as_leader(batch("a"), -1, 1)
    fetch(leader, fs[F], 1000)
    fetch(leader, fs[F], 1001)  # reports LEO 1 == the leader's; then stops fetching
    assert leader.high_watermark == 1
    assert leader.out_of_sync_replicas(100 * LAG, LAG) == []
    assert leader.maybe_shrink_isr(100 * LAG, LAG).isr_update is None
    leader.append_as_leader(batch("b"), 1, 1)  # the leader moves on: the lag time counts again
    assert leader.maybe_shrink_isr(100 * LAG, LAG).isr_update == (L,)


def test_a_follower_that_never_fetched_in_this_leadership_leaves_after_the_lag_time():
    """A new leader knows no follower LEO (-1) until it fetches: the lag time decides, even
    for an idle partition (Kafka resets the followers' state on a new leadership)."""
    leader, _ = pair(now=0)
    assert leader.maybe_shrink_isr(LAG, LAG).isr_update is None
    assert leader.maybe_shrink_isr(LAG + 1, LAG).isr_update == (L,)


def test_caught_up_to_leo_seen_at_previous_fetch():
    """Kafka's rule: a fetch reaching the leader LEO seen at the previous fetch counts as
    caught up at that previous fetch's time, even if the leader moved on since."""
    leader, fs = pair(now=0)
    f = fs[F]
    leader.append_as_leader(batch("a"), 1, 1)  # LEO 1
    fetch(leader, f, 1000)  # fetch at 0 < LEO 1: not caught up; remembers LEO 1 at t=1000
    assert leader.remotes[F].last_caught_up_ms == 0
    leader.append_as_leader(batch("b"), 1, 1)  # LEO 2
    fetch(leader, f, 3000)  # fetch at 1 == LEO at previous fetch: caught up at t=1000
    assert leader.remotes[F].last_caught_up_ms == 1000
    assert leader.maybe_shrink_isr(1000 + LAG, LAG).isr_update is None
    assert leader.maybe_shrink_isr(1001 + LAG, LAG).isr_update == (L,)


def test_behind_previous_leo_is_not_caught_up():
    leader, fs = pair(now=0)
    f = fs[F]
    leader.append_as_leader(batch("a", "b"), 1, 1)  # LEO 2
    fetch(leader, f, 1000, deliver=False)  # at 0
    leader.append_as_leader(batch("c"), 1, 1)
    leader.update_follower_fetch(F, 1, 2000)  # 1 < LEO at previous fetch (2)
    assert leader.remotes[F].last_caught_up_ms == 0


def test_shrink_keeps_leader_and_in_sync_followers():
    leader, fs = pair(isr=(L, F, G), replicas=(L, F, G))
    fetch(leader, fs[F], LAG)
    eff = leader.maybe_shrink_isr(LAG + 1, LAG)
    assert eff.isr_update == (L, F)


def test_legacy_lag_max_messages_rule():
    leader, fs = pair()
    f = fs[F]
    fetch(leader, f, 0)
    leader.append_as_leader(batch(*"abcde"), 1, 1)  # LEO 5, follower at 0
    fetch(leader, f, 10, deliver=False)  # fetch at 0: remote LEO 0
    # within the lag time, but 5 > 4 messages behind: out with the legacy rule, in without it
    assert leader.out_of_sync_replicas(20, LAG) == []
    assert leader.out_of_sync_replicas(20, LAG, lag_max_messages=5) == []
    assert leader.out_of_sync_replicas(20, LAG, lag_max_messages=4) == [F]
    assert leader.maybe_shrink_isr(20, LAG).isr_update is None
    assert leader.maybe_shrink_isr(20, LAG, lag_max_messages=4).isr_update == (L,)


def test_legacy_rule_ignores_unknown_follower_leo():
    leader, _ = pair()
    leader.append_as_leader(batch(*"abcdefgh"), 1, 1)
    assert leader.out_of_sync_replicas(1, LAG, lag_max_messages=2) == []


# -- ISR expand -----------------------------------------------------------------------------------

def test_expand_when_follower_reaches_hw():
    leader, fs = pair(isr=(L,))
    f = fs[F]
    leader.append_as_leader(batch("a", "b"), 1, 1)
    leader.append_as_leader(batch("c"), 1, 1)
    assert leader.high_watermark == 3
    eff = leader.update_follower_fetch(F, 0, 10)
    assert eff.isr_update is None
    f.append_as_follower(leader.read(0, 1, for_follower=True), leader.high_watermark)  # one batch: LEO 2
    assert f.log_end_offset == 2
    assert leader.update_follower_fetch(F, 2, 20).isr_update is None  # 2 < HW 3
    eff = fetch(leader, f, 30)
    assert f.log_end_offset == 3
    eff = leader.update_follower_fetch(F, 3, 40)
    assert eff.isr_update == (L, F) and leader.pending_isr == (L, F)
    assert [k for k, _ in eff.events] == ["isr_expand"]
    assert leader.isr == (L,)  # not before the write
    leader.isr_update_done((L, F), 1)
    assert leader.isr == (L, F) and leader.pending_isr is None


def test_expand_requires_current_epoch_start():
    # the new leader's HW (2) lags its LEO (5); its epoch 3 starts at 5
    r = with_log(L, [(0, v) for v in "abcde"], [(0, 0)], hw=2)
    st_ = state(epoch=3, isr=(L, G), replicas=(L, F, G))
    r.become_leader(st_, 0)
    assert r.high_watermark == 2 and r.epochs.entries == [(0, 0), (3, 5)]
    assert r.update_follower_fetch(F, 4, 10).isr_update is None  # >= HW, < epoch start
    eff = r.update_follower_fetch(F, 5, 20)
    assert eff.isr_update == (L, G, F)  # appended at the end, not in AR order (Kafka's Partition.expandIsr)


def test_a_proposed_expansion_holds_the_hw_at_the_new_members_leo_until_written():
    """The maximal ISR (KIP-497).  ZooKeeper may apply an expansion whose answer is
    lost, and a controller may then elect the new member: records the HW passed
    without it would be lost (the simulation's seed 167)."""
    leader, fs = pair(isr=(L, F), replicas=(L, F, G))
    g = PartitionReplica("t", 0, G)
    g.become_follower(state(isr=(L, F), replicas=(L, F, G)), 0)
    leader.append_as_leader(batch("a"), 1, 1)
    fetch(leader, fs[F], 1)
    fetch(leader, fs[F], 2)
    assert leader.high_watermark == 1
    fetch(leader, g, 3)
    assert fetch(leader, g, 4).isr_update == (L, F, G)  # G reached the HW: proposed
    leader.append_as_leader(batch("b", "c"), 1, 1)
    fetch(leader, fs[F], 5)
    fetch(leader, fs[F], 6)
    assert fs[F].log_end_offset == 3
    assert leader.high_watermark == 1, "G, proposed, has not got b and c"
    fetch(leader, g, 7)
    fetch(leader, g, 8)
    assert leader.high_watermark == 3
    # a proposed shrink does not lower the bar: F still counts until the write
    leader.isr_update_done((L, F, G), 1)
    assert leader.maybe_shrink_isr(20 * LAG, LAG, idle_followers_lag=True).isr_update == (L,)
    leader.append_as_leader(batch("d"), 1, 1)
    fetch(leader, g, 20 * LAG + 1)
    fetch(leader, g, 20 * LAG + 2)
    assert leader.high_watermark == 3, "F is still in the ISR until the shrink is written"
    leader.isr_update_done((L,), 2)
    assert leader.high_watermark == 4


def test_pending_isr_blocks_a_second_proposal():
    leader, fs = pair(isr=(L, F), replicas=(L, F, G))
    g = PartitionReplica("t", 0, G)
    g.become_follower(state(isr=(L, F), replicas=(L, F, G)), 0)
    eff = leader.maybe_shrink_isr(LAG + 1, LAG)
    assert eff.isr_update == (L,)
    # G reaches the HW, but a proposal is pending: no expand, no second shrink
    assert fetch(leader, g, LAG + 2).isr_update is None
    assert leader.maybe_shrink_isr(3 * LAG, LAG).isr_update is None
    leader.isr_update_done((L,), 1)
    assert leader.pending_isr is None and leader.isr == (L,)
    eff = fetch(leader, g, 3 * LAG + 1)
    assert eff.isr_update == (L, G)


def test_failed_isr_write_keeps_isr_and_unblocks():
    leader, _ = pair()
    assert leader.maybe_shrink_isr(LAG + 1, LAG).isr_update == (L,)
    eff = leader.isr_update_done(None, None)
    assert leader.isr == (L, F) and leader.zk_version == 0 and leader.pending_isr is None
    assert not eff.hw_changed
    assert leader.maybe_shrink_isr(LAG + 2, LAG).isr_update == (L,)


def test_new_leader_state_clears_pending_isr():
    leader, _ = pair()
    leader.maybe_shrink_isr(LAG + 1, LAG)
    leader.become_leader(state(epoch=1, isr=(L,)), LAG + 2)
    assert leader.pending_isr is None and leader.isr == (L,)


# -- produce acks -----------------------------------------------------------------------------

def test_acks_all_with_isr_below_min_insync_is_refused_and_log_unchanged():
    leader, _ = pair(isr=(L,))
    leader.append_as_leader(batch("a"), 1, 2)
    before = (leader.log_end_offset, leader.high_watermark, leader.log.read(0, BIG, None), leader.log.size_bytes)
    with pytest.raises(NotEnoughReplicasError):
        leader.append_as_leader(batch("b", "c"), -1, 2)
    assert (leader.log_end_offset, leader.high_watermark, leader.log.read(0, BIG, None), leader.log.size_bytes) == before
    # acks=1 and acks=0 are not subject to min.insync.replicas
    leader.append_as_leader(batch("b"), 1, 2)
    leader.append_as_leader(batch("c"), 0, 2)
    assert leader.log_end_offset == 3
    # enough ISR members: accepted
    leader2, _ = pair()
    res, _ = leader2.append_as_leader(batch("x"), -1, 2)
    assert res.base_offset == 0


def test_append_stamps_offset_and_epoch():
    r = with_log(L, [(0, "a")], [(0, 0)], hw=1)
    r.become_leader(state(epoch=4, isr=(L,)), 0)
    res, eff = r.append_as_leader(batch("b", "c") + batch("d"), 1, 1)
    assert (res.base_offset, res.last_offset) == (1, 3)
    assert len(eff.appended) == 2
    hs = [read_header(b) for b in eff.appended]
    assert [(h.base_offset, h.leader_epoch) for h in hs] == [(1, 4), (3, 4)]
    assert values(r.log.read(0, BIG)) == [(0, "a"), (1, "b"), (2, "c"), (3, "d")]


def test_append_rejects_bad_input_without_writing():
    leader, _ = pair(isr=(L,))
    good = batch("a")
    bad = bytearray(good)
    bad[-1] ^= 1
    with pytest.raises(CorruptMessageError):
        leader.append_as_leader(good + bytes(bad), 1, 1)
    with pytest.raises(InvalidRecordError):
        leader.append_as_leader(b"", 1, 1)
    with pytest.raises(MessageTooLargeError):
        leader.append_as_leader(good, 1, 1, max_batch_bytes=len(good) - 1)
    assert leader.log_end_offset == 0


def test_leader_decodes_every_record_before_appending():
    import struct

    import crc32c

    leader, fs = pair(isr=(L, F))
    good = batch("a", "b")
    # A correct CRC over a record section that holds 2 records while the header says 3.
    lying = bytearray(good)
    struct.pack_into(">i", lying, 23, 2)
    struct.pack_into(">i", lying, 57, 3)
    struct.pack_into(">I", lying, 17, crc32c.crc32c(bytes(lying[21:])))
    with pytest.raises(CorruptMessageError, match="records section ends inside record 2"):
        leader.append_as_leader(good + bytes(lying), 1, 1)
    assert leader.log_end_offset == 0
    # compressed producer batches are stored as sent (only offset and epoch stamped)
    packed = encode_batch([(None, b"z%d" % i, None, i) for i in range(5)], compression="zstd")
    res, eff = leader.append_as_leader(packed, 1, 1)
    assert (res.base_offset, res.last_offset) == (0, 4)
    assert eff.appended == [stamp(packed, 0, 0)]
    fetch(leader, fs[F], 0)
    assert values(fs[F].log.read(0, BIG)) == [(i, f"z{i}") for i in range(5)]


def test_only_the_leader_takes_produce_and_follower_fetches():
    leader, fs = pair()
    f = fs[F]
    with pytest.raises(NotLeaderOrFollowerError):
        f.append_as_leader(batch("a"), 1, 1)
    with pytest.raises(NotLeaderOrFollowerError):
        f.update_follower_fetch(L, 0, 0)
    with pytest.raises(NotLeaderOrFollowerError):
        leader.update_follower_fetch(7, 0, 0)  # not a replica
    with pytest.raises(NotLeaderOrFollowerError):
        leader.append_as_follower(b"", 0)
    with pytest.raises(OffsetOutOfRangeError):
        leader.update_follower_fetch(F, 1, 0)  # past the leader LEO


# -- fencing ------------------------------------------------------------------------------------

def test_check_leader_epoch():
    leader, _ = pair()
    leader.become_leader(state(epoch=5), 0)
    leader.check_leader_epoch(5)
    leader.check_leader_epoch(-1)  # no epoch given: not checked
    with pytest.raises(FencedLeaderEpochError):
        leader.check_leader_epoch(4)
    with pytest.raises(UnknownLeaderEpochError):
        leader.check_leader_epoch(6)


def test_stale_leader_and_isr_detected():
    leader, _ = pair()
    leader.become_leader(state(epoch=3), 0)
    assert leader.is_stale(state(epoch=2))
    assert not leader.is_stale(state(epoch=3))
    assert not leader.is_stale(state(epoch=4))


# -- consumer reads ----------------------------------------------------------------------------

def test_consumer_reads_stop_below_hw():
    leader, fs = pair()
    leader.append_as_leader(batch("a"), 1, 1)
    leader.append_as_leader(batch("b", "c"), 1, 1)
    assert leader.read(0, BIG, for_follower=False) == b""
    assert len(values(leader.read(0, BIG, for_follower=True))) == 3
    fetch(leader, fs[F], 0)
    fetch(leader, fs[F], 0)
    assert leader.high_watermark == 3
    leader.append_as_leader(batch("d"), 1, 1)
    assert [o for o, _ in values(leader.read(0, BIG, for_follower=False))] == [0, 1, 2]
    assert leader.read(3, BIG, for_follower=False) == b""  # between HW and LEO: nothing
    with pytest.raises(OffsetOutOfRangeError):
        leader.read(5, BIG, for_follower=False)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("produce"), st.integers(1, 3)),
                          st.tuples(st.just("fetch"), st.booleans()),
                          st.tuples(st.just("tick"), st.integers(1, LAG))), max_size=25))
def test_hw_invariants_under_random_steps(steps):
    leader, fs = pair()
    f = fs[F]
    now = 0
    n = 0
    last_hw = 0
    for kind, arg in steps:
        if kind == "produce":
            leader.append_as_leader(batch(*[f"v{n + i}" for i in range(arg)]), 1, 1)
            n += arg
        elif kind == "fetch":
            eff = fetch(leader, f, now, deliver=arg)
            if eff.isr_update is not None:
                leader.isr_update_done(eff.isr_update, leader.zk_version + 1)
        else:
            now += arg
            eff = leader.maybe_shrink_isr(now, LAG)
            if eff.isr_update is not None:
                leader.isr_update_done(eff.isr_update, leader.zk_version + 1)
        # the leader HW never decreases, never passes its LEO, and every ISR member holds it
        assert last_hw <= leader.high_watermark <= leader.log_end_offset
        last_hw = leader.high_watermark
        if F in leader.isr:
            assert f.log_end_offset >= leader.high_watermark
            assert leader.remotes[F].leo == -1 or leader.remotes[F].leo >= leader.high_watermark
        assert f.high_watermark <= min(f.log_end_offset, leader.high_watermark)
        # consumers never see an offset at or above the HW
        assert all(o < leader.high_watermark for o, _ in values(leader.read(0, BIG, for_follower=False)))
        # the follower's log is a prefix of the leader's
        assert f.log.checksum(f.log_end_offset) == leader.log.checksum(f.log_end_offset)


# -- becoming follower and truncation -------------------------------------------------------------

def test_become_follower_high_watermark_mode_truncates_to_hw_at_once():
    r = with_log(F, [(0, "a"), (0, "b"), (0, "c")], [(0, 0)], hw=1, mode=TruncationMode.HIGH_WATERMARK)
    eff = r.become_follower(state(epoch=1), 0)
    assert r.log_end_offset == 1 and eff.truncated_to == 1
    assert not r.needs_truncation


def test_become_follower_leader_epoch_mode_waits_for_the_leader():
    r = with_log(F, [(0, "a"), (0, "b"), (0, "c")], [(0, 0)], hw=1)
    eff = r.become_follower(state(epoch=1), 0)
    assert r.log_end_offset == 3 and eff.truncated_to is None
    assert r.needs_truncation and r.truncation_epoch() == 0
    done, eff = r.on_leader_epoch_end_offset(0, 2)
    assert done and not r.needs_truncation
    assert r.log_end_offset == 2 and eff.truncated_to == 2 and eff.leo_changed
    assert r.high_watermark == 1


def test_truncation_lowers_hw_and_epoch_cache():
    r = with_log(F, [(0, "a"), (0, "b"), (2, "c"), (2, "d")], [(0, 0), (2, 2)], hw=4)
    r.become_follower(state(epoch=3), 0)
    done, eff = r.on_leader_epoch_end_offset(0, 1)
    assert done and r.log_end_offset == 1 and r.high_watermark == 1
    assert r.epochs.entries == [(0, 0)] and eff.epoch_cache_changed and eff.hw_changed


def test_leader_without_epoch_answer_falls_back_to_hw():
    r = with_log(F, [(0, "a"), (0, "b"), (0, "c")], [(0, 0)], hw=2)
    r.become_follower(state(epoch=1), 0)
    done, _ = r.on_leader_epoch_end_offset(-1, -1)
    assert done and r.log_end_offset == 2


def test_follower_records_new_epochs_from_fetched_batches():
    leader = with_log(L, [(0, "a"), (2, "b"), (2, "c"), (5, "d")], [(0, 0), (2, 1), (5, 3)], hw=0)
    leader.become_leader(state(epoch=6), 0)
    f = PartitionReplica("t", 0, F)
    f.become_follower(state(epoch=6), 0)
    eff = fetch(leader, f, 0)
    assert eff is not None
    assert f.epochs.entries == [(0, 0), (2, 1), (5, 3)]
    fetch(leader, f, 0)
    assert f.high_watermark == 4 == leader.high_watermark


def test_append_as_follower_skips_what_it_has():
    leader, fs = pair()
    f = fs[F]
    leader.append_as_leader(batch("a"), 1, 1)
    data = leader.read(0, BIG, for_follower=True)
    f.append_as_follower(data, 0)
    f.append_as_follower(data, 0)  # a duplicate response
    assert f.log_end_offset == 1


def test_handle_out_of_range():
    r = with_log(F, [(0, "a"), (0, "b"), (0, "c")], [(0, 0)], hw=3)
    r.become_follower(state(epoch=1), 0)
    eff = r.handle_out_of_range(leader_leo=1, leader_log_start=0)
    assert r.log_end_offset == 1 and eff.truncated_to == 1
    r2 = with_log(F, [(0, "a")], [(0, 0)], hw=1)
    r2.become_follower(state(epoch=1), 0)
    eff = r2.handle_out_of_range(leader_leo=20, leader_log_start=10)
    assert r2.log.log_start_offset == r2.log_end_offset == 10 and r2.high_watermark == 10
    assert r2.epochs.entries == [] and eff.truncated_to == 10
    assert eff.leo_changed and eff.hw_changed and eff.epoch_cache_changed


def test_describe():
    leader, fs = pair()
    leader.append_as_leader(batch("a"), 1, 1)
    d = leader.describe(checksum_upto=1)
    assert d["role"] == "leader" and d["log_end_offset"] == 1 and d["isr"] == [L, F]
    assert d["checksum"] == leader.log.checksum(1)
    assert d["remote_leos"] == {F: -1}


def test_replica_keeps_the_empty_log_it_is_given():
    log = PartitionLog(log_start_offset=10)
    epochs = LeaderEpochCache()
    r = PartitionReplica("t", 0, F, log, epochs, high_watermark=10)
    assert r.log is log and r.epochs is epochs
    assert r.log_end_offset == 10 and r.high_watermark == 10


def test_checkpointed_hw_is_clamped_into_the_log_range():
    assert PartitionReplica("t", 0, F, PartitionLog(log_start_offset=10), high_watermark=0).high_watermark == 10
    r = with_log(F, [(0, "a"), (0, "b")], [(0, 0)], hw=7)
    assert r.high_watermark == 2


def test_follower_whose_log_end_falls_inside_a_leader_batch_takes_the_leader_batch():
    from minikafka.protocol.records.batch import encode_batch, iter_records
    from minikafka.replication.partition import LeaderState, PartitionReplica, TruncationMode

    st = LeaderState(1, 0, (1, 2), (1, 2), 0, 1)
    leader = PartitionReplica("t", 0, 1)
    follower = PartitionReplica("t", 0, 2, truncation=TruncationMode.HIGH_WATERMARK)
    leader.become_leader(st, 0)
    follower.become_follower(st, 0)
    # the follower holds one record of its own at offset 0; the leader a 2-record batch at 0-1
    own = follower.log
    from minikafka.protocol.records.batch import read_header, stamp
    mine = stamp(encode_batch([(None, b"mine", None, 1)]), 0, 0)
    own.append(read_header(mine), mine)
    leader.append_as_leader(encode_batch([(None, b"a", None, 1), (None, b"b", None, 1)]), 1, 1)
    data = leader.read(0, 1 << 20, for_follower=True)
    eff = follower.append_as_follower(data, leader.high_watermark)
    assert follower.log_end_offset == 2
    assert [r.value for r in iter_records(follower.log.read(0, 1 << 20))] == [b"a", b"b"]
    assert eff.truncated_to == 0


@pytest.mark.parametrize("mode, shrinks", [(TruncationMode.LEADER_EPOCH, True), (TruncationMode.HIGH_WATERMARK, False)])
def test_an_isr_follower_fetching_below_the_hw_leaves_the_isr_at_once(mode, shrinks):
    """A follower whose log was cut (damaged or lost files) fetches below the HW: it lacks
    committed records and must not stay electable until the lag time passes."""
    leader, fs = pair(mode=mode)
    fetch(leader, fs[F], 0)
    leader.append_as_leader(batch("a", "b"), -1, 1)
    fetch(leader, fs[F], 1)
    fetch(leader, fs[F], 2)
    assert leader.high_watermark == 2 and leader.isr == (L, F)
    eff = leader.update_follower_fetch(F, 0, 3)  # the follower came back with an empty log
    if shrinks:
        assert eff.isr_update == (L,)
        assert any("below the HW 2" in text for _, text in eff.events)
    else:
        assert eff.isr_update is None
    # a follower at or above the HW never leaves this way
    leader2, fs2 = pair(mode=mode)
    fetch(leader2, fs2[F], 0)
    leader2.append_as_leader(batch("a"), -1, 1)
    assert leader2.update_follower_fetch(F, 1, 1).isr_update is None


def test_same_epoch_state_refreshes_isr_replicas_and_version_only_when_newer():
    leader, followers = pair()
    f = followers[F]
    for r in (leader, f):
        eff = r.refresh_state(state(isr=(L,), replicas=(L, F, G), zk_version=3))
        assert not eff.hw_changed and eff.isr_update is None and not eff.events
        assert (r.isr, r.replicas, r.zk_version, r.leader_epoch) == ((L,), (L, F, G), 3, 0)
    assert leader.role is Role.LEADER and f.role is Role.FOLLOWER and f.leader_id == L
    leader.refresh_state(state(isr=(L, F), replicas=(L, F), zk_version=2))  # an older znode version
    assert (leader.isr, leader.replicas, leader.zk_version) == ((L,), (L, F, G), 3)


# -- the quick form of a caught-up follower's fetch ------------------------------------------------

def _remote_state(leader: PartitionReplica, r: int) -> tuple:
    rem = leader.remotes[r]
    return (rem.leo, rem.log_start_offset, rem.last_caught_up_ms, rem.last_fetch_leader_leo, rem.last_fetch_ms,
            leader.high_watermark, leader.isr, leader.pending_isr)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "fetch F", "fetch G", "quick F", "quick G", "shrink", "written"]),
                          st.integers(0, 3)), max_size=25))
def test_quick_caught_up_fetch_matches_the_full_rules(steps):
    """Whenever the quick form takes a fetch, the leader ends where the full rules would
    take it; it refuses every fetch that could move the HW, the ISR or a log start."""
    leader, fs = pair(isr=(L, F), replicas=(L, F, G))
    twin, twin_fs = pair(isr=(L, F), replicas=(L, F, G))
    now = 0
    for op, n in steps:
        now += 1500  # a follower that does not fetch leaves the ISR within 7 steps
        if op == "append":
            for ld in (leader, twin):
                ld.append_as_leader(batch(*"x" * (n + 1)), 1, 1)
        elif op == "shrink":
            for ld in (leader, twin):
                ld.maybe_shrink_isr(now, LAG)
        elif op == "written":  # ZooKeeper took the proposed ISR
            for ld in (leader, twin):
                if ld.pending_isr is not None:
                    ld.isr_update_done(ld.pending_isr, ld.zk_version + 1)
        else:
            r = F if op.endswith("F") else G
            offset = min(leader.log_end_offset, leader.remotes[r].leo + n) if op.startswith("fetch") \
                else leader.log_end_offset
            if op.startswith("quick") and leader.note_caught_up_fetch(r, offset, now):
                twin.update_follower_fetch(r, offset, now)
                assert _remote_state(leader, r) == _remote_state(twin, r)
                continue
            if offset < 0:
                offset = 0
            leader.update_follower_fetch(r, offset, now)
            twin.update_follower_fetch(r, offset, now)
        assert all(_remote_state(leader, r) == _remote_state(twin, r) for r in (F, G))


def test_quick_caught_up_fetch_only_for_an_in_sync_follower_at_the_hw():
    leader, fs = pair(isr=(L, F), replicas=(L, F, G))
    leader.append_as_leader(batch("a"), 1, 1)
    assert not leader.note_caught_up_fetch(F, 1, 10)  # F has not said it holds offset 0 yet: HW to move
    leader.update_follower_fetch(F, 1, 10)
    assert leader.high_watermark == 1
    assert leader.note_caught_up_fetch(F, 1, 20)
    assert leader.remotes[F].last_caught_up_ms == 20 and leader.remotes[F].last_fetch_ms == 20
    leader.update_follower_fetch(G, 1, 20)
    assert not leader.note_caught_up_fetch(G, 1, 30)  # caught up, out of the ISR: it is to join
    assert not leader.note_caught_up_fetch(F, 1, 30, log_start_offset=1)  # a new log start
    assert not leader.note_caught_up_fetch(F, 0, 30)  # behind
    leader.isr_update_done(leader.pending_isr, 1)  # G joined
    assert leader.note_caught_up_fetch(G, 1, 40)
    leader.isr_update_done(leader.maybe_shrink_isr(40 + LAG + 1, LAG, idle_followers_lag=True).isr_update, 2)
    assert leader.isr == (L,)
    assert not leader.note_caught_up_fetch(F, 1, 50)  # out of the ISR, at the HW: it is to join again
    assert leader.update_follower_fetch(F, 1, 50).isr_update == (L, F)
