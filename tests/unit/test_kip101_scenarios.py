"""The anomalies of high-watermark truncation (KIP-101) and their fix by leader epochs,
played step by step on the deterministic harness in scenario.py, for both truncation modes."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikafka.sim.partition_model import BIG, Cluster, log_values

from minikafka.errors import NotEnoughReplicasError
from minikafka.log.epoch_cache import LeaderEpochCache
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, iter_records, read_header, stamp
from minikafka.replication.partition import LeaderState, PartitionReplica, Role, TruncationMode

HW = TruncationMode.HIGH_WATERMARK
LE = TruncationMode.LEADER_EPOCH
A, B = 1, 2


def records_of(c: Cluster, broker: int) -> dict[int, str]:
    """{offset: value} of a replica's whole log: iter_records over log.read(0, big, None)."""
    log = c.replica(broker).log
    return {r.offset: r.value.decode() for r in iter_records(log.read(0, BIG, None))}


def assert_identical(c: Cluster, *brokers: int) -> None:
    leos = {c.replica(b).log_end_offset for b in brokers}
    assert len(leos) == 1, f"LEOs differ: {leos}"
    leo = leos.pop()
    assert len({c.checksum(b, leo) for b in brokers}) == 1
    assert len({tuple(sorted(records_of(c, b).items())) for b in brokers}) == 1


# -- KIP-101 scenario 1: data loss ------------------------------------------------------------

def scenario_1(mode: TruncationMode) -> Cluster:
    c = Cluster(brokers=(A, B), truncation=mode, min_insync_replicas=1)
    assert (c.leader, c.leader_epoch, c.isr) == (A, 0, (A, B))
    a, b = c.replica(A), c.replica(B)

    assert c.produce() == [(0, "m1")]
    c.fetch_round(B)  # B copies m1
    c.fetch_round(B)  # both HW 1
    assert (a.high_watermark, b.high_watermark) == (1, 1)
    assert "m1" in c.acked

    assert c.produce() == [(1, "m2")]
    c.fetch_round(B)  # B copies m2, learns HW 1
    assert (b.log_end_offset, b.high_watermark) == (2, 1)
    c.fetch_round(B, deliver=False)  # A sees B at offset 2: HW 2, m2 acknowledged; B has not heard
    assert (a.high_watermark, b.high_watermark) == (2, 1)
    assert c.acked == ["m1", "m2"]  # m2 is acknowledged and committed

    # B restarts (quickly: the controller does not notice) and truncates
    b = c.bounce(B)
    assert b.role is Role.FOLLOWER and c.leader_epoch == 0
    # A dies before B fetches again; B is in the ISR and becomes leader
    c.crash(A)
    assert (c.leader, c.leader_epoch, c.isr) == (B, 1, (B,))
    # A comes back as a follower of B
    c.restart(A)
    assert c.replica(A).role is Role.FOLLOWER
    c.replicate(2)
    return c


def test_scenario_1_high_watermark_truncation_loses_committed_record():
    c = scenario_1(HW)
    # B cut m2 on restart (its HW was 1); A's fetch at 2 was past B's LEO, so A cut it too
    assert records_of(c, B) == {0: "m1"}
    assert records_of(c, A) == {0: "m1"}
    assert "m2" in c.acked
    assert all("m2" not in records_of(c, x).values() for x in (A, B))
    # the next record takes offset 1 on both: m2 is gone for good
    c.produce()
    c.replicate(2)
    assert records_of(c, A) == records_of(c, B) == {0: "m1", 1: "m3"}
    assert_identical(c, A, B)


def test_scenario_1_leader_epoch_truncation_keeps_committed_record():
    c = scenario_1(LE)
    # B asked A for the end of epoch 0 (2) instead of cutting to its HW (1)
    assert (B, 0, (0, 2)) in c.truncation_rounds
    assert records_of(c, B) == records_of(c, A) == {0: "m1", 1: "m2"}
    assert c.replica(B).epochs.entries == [(0, 0), (1, 2)]
    c.produce()
    c.replicate(2)
    assert records_of(c, A) == records_of(c, B) == {0: "m1", 1: "m2", 2: "m3"}
    assert_identical(c, A, B)
    assert c.replica(B).high_watermark == 3 and c.replica(A).high_watermark == 3
    assert set(c.acked) >= {"m1", "m2", "m3"}


@pytest.mark.parametrize("mode", [HW, LE])
def test_scenario_1_checksums(mode):
    c = scenario_1(mode)
    leo = c.replica(B).log_end_offset
    assert c.checksum(A, leo) == c.checksum(B, leo)
    assert ("m2" in records_of(c, B).values()) is (mode is LE)


# -- KIP-101 scenario 2: divergence -------------------------------------------------------------

def scenario_2(mode: TruncationMode) -> Cluster:
    c = Cluster(brokers=(A, B), truncation=mode, min_insync_replicas=1)
    c.produce()  # m1 at 0
    c.replicate(2)
    c.produce()  # m2 at 1
    c.fetch_round(B)  # B has m2 (not flushed yet), HW 1
    c.fetch_round(B, deliver=False)  # A: HW 2
    assert (c.replica(A).high_watermark, c.replica(B).high_watermark) == (2, 1)
    # power failure: both die, the controller with them; B loses its unflushed m2
    c.crash(A, detected=False)
    c.crash(B, detected=False, lose_unflushed_from=1)
    assert c.values(A) == {0: "m1", 1: "m2"} and c.values(B) == {0: "m1"}
    # B restarts first and is elected (it is in the ISR stored in ZooKeeper)
    c.restart(B)
    assert (c.leader, c.leader_epoch, c.isr) == (B, 1, (B,))
    assert c.produce() == [(1, "m3")]
    assert c.replica(B).high_watermark == 2
    # A comes back as follower
    c.restart(A)
    c.replicate(2)
    return c


def test_scenario_2_high_watermark_truncation_diverges():
    c = scenario_2(HW)
    a, b = c.replica(A), c.replica(B)
    # A kept m2 (its HW was 2) and both logs end at 2 with different records at offset 1
    assert a.log_end_offset == b.log_end_offset == 2
    assert records_of(c, A) == {0: "m1", 1: "m2"}
    assert records_of(c, B) == {0: "m1", 1: "m3"}
    assert a.log.checksum(2) != b.log.checksum(2)
    assert a.log.checksum(1) == b.log.checksum(1)
    # and nothing notices: A is back in the ISR, both HWs say offset 1 is committed
    assert c.isr == (B, A)  # A appended on rejoining
    assert a.high_watermark == b.high_watermark == 2


def test_scenario_2_leader_epoch_truncation_converges():
    c = scenario_2(LE)
    # A asked for epoch 0, B answered (0, 1): A truncated offset 1 and copied m3
    assert (A, 0, (0, 1)) in c.truncation_rounds
    assert records_of(c, A) == records_of(c, B) == {0: "m1", 1: "m3"}
    assert_identical(c, A, B)
    assert c.replica(A).epochs.entries == c.replica(B).epochs.entries == [(0, 0), (1, 1)]
    c.produce()
    c.replicate(2)
    assert_identical(c, A, B)
    assert c.replica(A).high_watermark == c.replica(B).high_watermark == 3


def scenario_2_unclean(mode: TruncationMode) -> Cluster:
    """The same divergence without lost writes: B falls out of the ISR, A commits m2
    alone, A dies, B is elected uncleanly and writes m3 at offset 1."""
    c = Cluster(brokers=(A, B), truncation=mode, min_insync_replicas=1, unclean=True)
    c.produce()
    c.replicate(2)
    c.produce()  # m2 at 1; B stopped fetching (at LEO 1, the leader's until now)
    c.tick(c.lag_time_max_ms + 1)  # B behind for the lag time: A shrinks the ISR
    assert c.isr == (A,) and c.leader_epoch == 0
    assert c.replica(A).high_watermark == 2 and "m2" in c.acked  # committed by A alone
    c.crash(A)
    assert c.leader == B and c.isr == (B,)
    c.produce()  # m3 at 1
    c.restart(A)
    c.replicate(2)
    return c


@pytest.mark.parametrize("mode", [HW, LE])
def test_scenario_2_unclean_election(mode):
    c = scenario_2_unclean(mode)
    assert records_of(c, B) == {0: "m1", 1: "m3"}
    if mode is HW:
        assert records_of(c, A) == {0: "m1", 1: "m2"}
        assert c.checksum(A, 2) != c.checksum(B, 2)
    else:
        assert_identical(c, A, B)


# -- a leader that never had any epoch of the follower ------------------------------------------

@pytest.mark.parametrize("mode", [HW, LE])
def test_follower_epochs_all_older_than_leader(mode):
    """B never copied anything; after an unclean election B's log starts at its own epoch.
    A asks about epoch 0, which B never had: B answers that epoch 0 ends where its first
    epoch starts (offset 0), so A drops everything and copies B's log."""
    c = Cluster(brokers=(A, B), truncation=mode, min_insync_replicas=1, unclean=True)
    c.tick(c.lag_time_max_ms + 1)
    assert c.isr == (A,)
    c.produce(2)  # m1, m2 committed by A alone
    assert c.replica(A).high_watermark == 2
    c.crash(A)
    assert c.leader == B
    c.produce()  # m3 at 0 on B
    c.restart(A)
    c.replicate(2)
    assert records_of(c, B) == {0: "m3"}
    if mode is LE:
        assert (A, 0, (0, 0)) in c.truncation_rounds
        assert_identical(c, A, B)
    else:
        # A truncated to its HW (2), its fetch was past B's LEO (1), it cut to 1 and kept m1
        assert records_of(c, A) == {0: "m1"}
        assert c.checksum(A, 1) != c.checksum(B, 1)


# -- KIP-279: stepping back epoch by epoch -----------------------------------------------------

def kip279(mode: TruncationMode) -> Cluster:
    c = Cluster(brokers=(A, B), truncation=mode, min_insync_replicas=1, unclean=True)
    c.produce()  # m1 at 0, epoch 0
    c.replicate(2)
    c.crash(A)  # B leads at epoch 1
    assert (c.leader, c.leader_epoch) == (B, 1)
    c.produce()  # m2 at 1, epoch 1: A never sees epoch 1
    c.crash(B)  # offline, ISR [B], epoch 2
    assert c.leader == -1 and c.isr == (B,)
    c.restart(A)  # unclean: A leads at epoch 3
    assert (c.leader, c.leader_epoch) == (A, 3)
    c.produce(2)  # m3, m4 at 1, 2 with epoch 3
    c.crash(A)  # offline, epoch 4
    c.restart(B)  # unclean: B leads at epoch 5
    assert (c.leader, c.leader_epoch) == (B, 5)
    c.produce()  # m5 at 2, epoch 5
    return c


def test_kip279_follower_steps_back_epoch_by_epoch():
    c = kip279(LE)
    # B: epochs 0, 1, 5; A (crashed) has 0, 3 -- an epoch B never had
    assert c.replica(B).epochs.entries == [(0, 0), (1, 1), (5, 2)]
    assert c.saved[A].epochs.entries == [(0, 0), (3, 1)]
    c.restart(A)
    rounds = [(epoch, answer) for broker, epoch, answer in c.truncation_rounds if broker == A][-2:]
    # A asks for epoch 3; B's answer names epoch 1 (older than asked), ending at 2.
    # A has no epoch 1: it cuts to where its epoch 0 ends (1) and asks again for epoch 0.
    assert rounds == [(3, (1, 2)), (0, (0, 1))]
    assert c.replica(A).log_end_offset == 1
    assert c.replica(A).epochs.entries == [(0, 0)]
    c.replicate(2)
    assert records_of(c, A) == records_of(c, B) == {0: "m1", 1: "m2", 2: "m5"}
    assert_identical(c, A, B)
    assert c.replica(A).epochs.entries == c.replica(B).epochs.entries


def test_kip279_with_high_watermark_truncation_diverges():
    c = kip279(HW)
    c.restart(A)
    c.replicate(2)
    # A kept m3 at offset 1 (below its HW), while B has m2 there
    assert records_of(c, A)[1] == "m3" and records_of(c, B)[1] == "m2"
    leo = min(c.replica(A).log_end_offset, c.replica(B).log_end_offset)
    assert c.checksum(A, leo) != c.checksum(B, leo)


# -- the same exchange on hand-built replicas ------------------------------------------------

def build(broker: int, spec: list[tuple[int, int, str]], entries: list[tuple[int, int]], hw: int,
          mode: TruncationMode = LE) -> PartitionReplica:
    """A replica whose log holds one batch per (offset, epoch, value)."""
    log = PartitionLog()
    for offset, epoch, value in spec:
        data = stamp(encode_batch([(None, value.encode(), None, 0)]), offset, epoch)
        log.append(read_header(data), data)
    return PartitionReplica("t", 0, broker, log, LeaderEpochCache(entries), hw, mode)


def exchange(f: PartitionReplica, leader: PartitionReplica, max_rounds: int = 20) -> list[tuple[int, tuple[int, int]]]:
    rounds = []
    while f.needs_truncation:
        assert len(rounds) < max_rounds, f"no convergence: {rounds}"
        epoch = f.truncation_epoch()
        answer = leader.end_offset_for_epoch(epoch)
        rounds.append((epoch, answer))
        f.on_leader_epoch_end_offset(*answer)
    return rounds


def copy_all(f: PartitionReplica, leader: PartitionReplica) -> None:
    for _ in range(3):
        data = leader.read(f.log_end_offset, BIG, for_follower=True)
        leader.update_follower_fetch(f.broker_id, f.log_end_offset, 0)
        f.append_as_follower(data, leader.high_watermark)


def test_kip279_hand_built_with_empty_epoch_at_log_end():
    """The follower's newest epoch holds no record (it led briefly without writing) and
    the leader never had it: stepping back must drop that epoch entry, or the follower
    would ask about the same epoch forever."""
    leader = build(A, [(0, 0, "a"), (1, 0, "b"), (2, 0, "c"), (3, 2, "d"), (4, 2, "e"), (5, 2, "f"), (6, 4, "g")],
                   [(0, 0), (2, 3), (4, 6)], hw=7)
    f = build(B, [(0, 0, "a"), (1, 0, "b"), (2, 0, "c"), (3, 1, "x"), (4, 1, "y")], [(0, 0), (1, 3), (3, 5)], hw=3)
    st = LeaderState(A, 4, (A, B), (A, B), 0, 1)
    leader.become_leader(st, 0)
    f.become_follower(st, 0)
    assert f.needs_truncation
    rounds = exchange(f, leader)
    assert rounds == [(3, (2, 6)), (1, (0, 3))]
    assert f.log_end_offset == 3 and f.epochs.entries == [(0, 0)]
    copy_all(f, leader)
    assert log_values(f.log) == log_values(leader.log)
    assert f.log.checksum(7) == leader.log.checksum(7)
    assert f.epochs.entries == leader.epochs.entries


# -- random histories: leader epochs never lose an acknowledged record, replicas converge ----------

STEPS = st.lists(st.one_of(
    st.tuples(st.just("produce"), st.integers(1, 2)),
    st.tuples(st.just("fetch"), st.sampled_from([A, B]), st.booleans()),
    st.tuples(st.just("tick"), st.integers(1, 12_000)),
    st.tuples(st.just("crash"), st.sampled_from([A, B]), st.booleans()),
    st.tuples(st.just("restart"), st.sampled_from([A, B])),
), max_size=30)


def play(c: Cluster, steps) -> None:
    for op in steps:
        kind = op[0]
        leader_up = c.leader in c.replicas
        if kind == "produce" and leader_up:
            try:
                c.produce(op[1])
            except NotEnoughReplicasError:
                pass
        elif kind == "fetch" and leader_up and op[1] in c.replicas and op[1] != c.leader:
            f = c.replica(op[1])
            if f.role is Role.FOLLOWER and f.leader_id == c.leader:
                c.truncate(op[1])
                c.fetch_round(op[1], deliver=op[2])
        elif kind == "tick":
            if leader_up:
                c.tick(op[1])
            else:
                c.now_ms += op[1]
        elif kind == "crash" and op[1] in c.replicas and len(c.replicas) > 1:
            c.crash(op[1], detected=op[2])
        elif kind == "restart" and op[1] in c.saved:
            c.restart(op[1])
        # ISR followers hold the leader's records below the HW
        if c.leader in c.replicas:
            leader = c.replica(c.leader)
            for b in c.isr:
                if b in c.replicas and b != c.leader:
                    n = min(leader.high_watermark, c.replica(b).log_end_offset)
                    assert c.checksum(b, n) == leader.log.checksum(n), c.history
    # heal: everyone back, a leader, a few rounds
    for b in list(c.saved):
        c.restart(b)
    if c.leader not in c.replicas:
        c.elect()
    c.tick(0)
    c.replicate(4)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(STEPS, st.booleans())
def test_random_histories_with_leader_epochs(steps, unclean):
    c = Cluster(brokers=(A, B), truncation=LE, min_insync_replicas=1, unclean=unclean)
    play(c, steps)
    assert_identical(c, A, B)
    if not unclean:
        kept = set(records_of(c, c.leader).values())
        assert [v for v in c.acked if v not in kept] == [], c.history
