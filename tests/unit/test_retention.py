"""Segments, retention, the log start offset and DeleteRecords: the pure rules, the replica
core and disk storage (no processes)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.config import BrokerConfig, topic_setting
from minikafka.errors import OffsetOutOfRangeError
from minikafka.log import retention
from minikafka.log.epoch_cache import LeaderEpochCache
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, iter_records, read_header, stamp
from minikafka.replication.partition import LeaderState, PartitionReplica

BIG = 1 << 30
HOUR = 3_600_000


def raw(value: bytes, ts: int = 0) -> bytes:
    return encode_batch([(None, value, None, ts)])


def fill(log: PartitionLog, n: int, size: int = 100, ts=lambda i: 0, epoch: int = 0) -> None:
    for _ in range(n):
        i = log.log_end_offset
        data = stamp(raw(b"x" * size, ts(i)), i, epoch)
        log.append(read_header(data), data)


def offsets(log: PartitionLog, start: int) -> list[int]:
    return [r.offset for r in iter_records(log.read(start, BIG))]


# -- segments ----------------------------------------------------------------------------------

def test_segments_roll_by_size_and_by_record_time():
    by_size = PartitionLog(segment_bytes=400)
    fill(by_size, 10)  # each batch is ~170 bytes: two per segment
    assert [s.base_offset for s in by_size.segments] == [0, 2, 4, 6, 8]
    assert sum(s.size_bytes for s in by_size.segments) == by_size.size_bytes
    assert by_size.segment_ends() == [2, 4, 6, 8, 10]

    by_time = PartitionLog(roll_ms=HOUR)
    fill(by_time, 6, ts=lambda i: [0, 10, HOUR, HOUR + 1, 3 * HOUR, 3 * HOUR][i])
    # a batch more than segment.ms after its segment's first batch starts a new one
    assert [s.base_offset for s in by_time.segments] == [0, 3, 4]
    assert by_time.segments[1].first_timestamp == HOUR + 1 and by_time.segments[0].max_timestamp == HOUR


def test_a_truncation_keeps_the_segments_below_and_recounts_the_last():
    log = PartitionLog(segment_bytes=400)
    fill(log, 9)
    log.truncate_to(5)
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    assert log.segments[-1].size_bytes == log.size_bytes - log.segments[0].size_bytes - log.segments[1].size_bytes
    fill(log, 3)
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6]


def test_advancing_the_log_start_drops_whole_segments_and_refuses_reads_below_it():
    log = PartitionLog(segment_bytes=400)
    fill(log, 10)
    dropped = log.advance_log_start(5)
    assert [s.base_offset for s in dropped] == [0, 2]
    assert log.log_start_offset == 5 and [s.base_offset for s in log.segments] == [4, 6, 8]
    assert offsets(log, 5) == [5, 6, 7, 8, 9]
    assert len(log) == 6  # batch 4 stays until its whole segment goes
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, BIG)
    assert log.advance_log_start(3) == []  # never moves back
    log.advance_log_start(10)  # everything: the log restarts empty at its end
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes, len(log)) == (10, 10, 0, 0)
    fill(log, 1)
    assert offsets(log, 10) == [10]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "start", "truncate"]), st.integers(0, 30)), max_size=40),
       st.integers(150, 900))
def test_segments_always_partition_the_log(ops, segment_bytes):
    """Whatever the appends, log start moves and truncations, segments tile the batches:
    increasing bases, the first at or below the log start, sizes adding up."""
    log = PartitionLog(segment_bytes=segment_bytes)
    for op, n in ops:
        if op == "append":
            fill(log, n % 5 + 1, size=n * 7)
        elif op == "start":
            log.advance_log_start(log.log_start_offset + n)
        else:
            log.truncate_to(max(log.log_start_offset, log.log_end_offset - n))
        bases = [s.base_offset for s in log.segments]
        assert bases == sorted(set(bases)) and bases[0] <= log.log_start_offset <= log.log_end_offset
        assert sum(s.size_bytes for s in log.segments) == log.size_bytes
        batches = list(log.batches_from(0))
        assert all(bases[0] <= b.base_offset for b in batches)
        for seg, end in zip(log.segments, log.segment_ends()):
            assert seg.size_bytes == sum(len(b.data) for b in batches if seg.base_offset <= b.base_offset < end)


# -- the retention rules ----------------------------------------------------------------------

def test_retention_by_time_deletes_old_closed_segments_below_the_hw_only():
    log = PartitionLog(segment_bytes=400)
    fill(log, 10, ts=lambda i: i * HOUR)  # segment k's newest record is (2k+1) hours
    now = 10 * HOUR
    v = retention.deletable(log, high_watermark=10, now_ms=now, retention_ms=6 * HOUR, retention_bytes=-1)
    assert (v.log_start_offset, v.segments, v.reason) == (4, 2, "retention.ms")  # newest 1 h and 3 h: > 6 h old
    assert retention.deletable(log, 3, now, 6 * HOUR, -1).log_start_offset == 2  # segment [2, 4) is not below HW 3
    assert retention.deletable(log, 10, now, -1, -1) is None
    # the active segment stays even when everything is old
    assert retention.deletable(log, 10, 100 * HOUR, 0, -1).log_start_offset == 8


def test_retention_by_size_keeps_at_least_retention_bytes():
    log = PartitionLog(segment_bytes=400)
    fill(log, 10)
    seg = log.segments[0].size_bytes
    v = retention.deletable(log, 10, 0, -1, retention_bytes=2 * seg)
    assert (v.log_start_offset, v.reason) == (6, "retention.bytes")
    assert log.size_bytes - v.bytes >= 2 * seg
    assert retention.deletable(log, 10, 0, -1, retention_bytes=log.size_bytes) is None


def test_segments_below_the_log_start_go_first():
    log = PartitionLog(segment_bytes=400)
    fill(log, 10)
    log.log_start_offset = 5  # as a checkpoint or DeleteRecords left it, segments not yet removed
    v = retention.deletable(log, 10, 0, -1, -1)
    assert (v.log_start_offset, v.reason) == (5, "log start offset")


def test_the_epoch_cache_is_trimmed_to_the_log_start():
    cache = LeaderEpochCache([(0, 0), (2, 5), (4, 9)])
    assert cache.truncate_from_start(6)
    assert cache.entries == [(2, 6), (4, 9)]
    assert not cache.truncate_from_start(6)
    assert cache.truncate_from_start(20) and cache.entries == [(4, 20)]


def test_topic_retention_settings_fall_back_to_the_broker_units():
    broker = BrokerConfig(1, "zk", settings={"log.retention.minutes": "30"})
    assert topic_setting("retention.ms", {}, broker) == 30 * 60_000
    assert topic_setting("retention.ms", {"retention.ms": "-1"}, broker) == -1
    assert topic_setting("retention.ms", {}, BrokerConfig(1, "zk")) == 168 * HOUR
    assert topic_setting("retention.ms", {}, BrokerConfig(1, "zk", settings={"log.retention.hours": "-1"})) == -1
    assert topic_setting("segment.ms", {}, BrokerConfig(1, "zk", settings={"log.roll.ms": "5000"})) == 5000
    assert topic_setting("retention.bytes", {}, BrokerConfig(1, "zk")) == -1


# -- the replica core: DeleteRecords, followers follow the leader's log start -------------------

L, F = 1, 2


def replicated(n: int, segment_bytes: int = 400):
    st_ = LeaderState(L, 0, (L, F), (L, F), 0, 1)
    leader = PartitionReplica("t", 0, L, PartitionLog(segment_bytes=segment_bytes))
    follower = PartitionReplica("t", 0, F, PartitionLog(segment_bytes=segment_bytes))
    leader.become_leader(st_, 0)
    follower.become_follower(st_, 0)
    for i in range(n):
        leader.append_as_leader(raw(b"v%d" % i * 50), -1, 1)
    for _ in range(3):
        sync(leader, follower)
    return leader, follower


def sync(leader: PartitionReplica, follower: PartitionReplica, now: int = 0) -> None:
    offset = follower.log_end_offset
    data = leader.read(offset, BIG, for_follower=True)
    leader.update_follower_fetch(F, offset, now, log_start_offset=follower.log.log_start_offset)
    follower.append_as_follower(data, leader.high_watermark, leader.log.log_start_offset)


def test_delete_records_moves_the_leaders_start_then_the_followers():
    leader, follower = replicated(10)
    assert leader.high_watermark == 10 and follower.high_watermark == 10
    with pytest.raises(OffsetOutOfRangeError):
        leader.delete_records(11)  # above the HW
    with pytest.raises(OffsetOutOfRangeError):
        leader.delete_records(-2)
    eff = leader.delete_records(5)
    assert eff.log_start_changed and leader.log.log_start_offset == 5
    assert any(kind == "log_start" for kind, _ in eff.events)
    assert leader.low_watermark == 0  # the follower has not fetched since
    sync(leader, follower)
    assert follower.log.log_start_offset == 5
    sync(leader, follower)  # its next fetch tells the leader
    assert leader.low_watermark == 5
    assert [s.base_offset for s in follower.log.segments] == [s.base_offset for s in leader.log.segments]
    leader.delete_records(-1)  # -1: up to the HW
    assert leader.log.log_start_offset == 10
    leader.append_as_leader(raw(b"after"), -1, 1)
    sync(leader, follower)
    sync(leader, follower)
    assert follower.log.log_start_offset == 10 and follower.log_end_offset == 11
    assert [v for v in (r.value for r in iter_records(follower.log.read(10, BIG)))] == [b"after"]


def test_a_follower_never_moves_its_start_past_its_own_hw():
    leader, follower = replicated(6)
    follower.append_as_follower(b"", 2, leader_log_start=5)  # a leader HW of 2 caps the follower's at 2
    assert follower.high_watermark == 2
    assert follower.log.log_start_offset == 2


def test_retention_on_a_replica_deletes_below_its_hw_and_trims_its_epochs():
    leader, follower = replicated(10)
    seg = leader.log.segments[0].size_bytes
    eff = leader.apply_retention(0, -1, 2 * seg)
    assert eff.log_start_changed and leader.log.log_start_offset == 6
    assert leader.epochs.entries == [(0, 6)]
    assert leader.apply_retention(0, -1, 2 * seg).log_start_changed is False


# -- disk storage: files follow the segments, the log start survives a restart ---------------------

def test_disk_segments_follow_the_log_and_the_log_start_is_checkpointed(tmp_path):
    from minikafka.broker.storage import DiskStorage

    s = DiskStorage(str(tmp_path), broker_id=1)
    log = PartitionLog(segment_bytes=400)
    appended = []
    for i in range(10):
        data = stamp(raw(b"x" * 100), i, 0)
        log.append(read_header(data), data)
        appended.append(data)
    s.append("t", 0, appended, log)
    files = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert [int(f[:-4]) for f in files] == [s_.base_offset for s_ in log.segments]
    log.advance_log_start(5)
    s.delete_segments("t", 0, log)
    assert sorted(int(p.name[:-4]) for p in (tmp_path / "t-0").glob("*.log")) == [4, 6, 8]
    s.write_log_start_checkpoint({("t", 0): 5})
    again = DiskStorage(str(tmp_path), broker_id=1)
    loaded, _ = again.load("t", 0, again.read_log_start_checkpoint()[("t", 0)])
    assert (loaded.log_start_offset, loaded.log_end_offset) == (5, 10)
    assert [seg.base_offset for seg in loaded.segments] == [4, 6, 8]
    assert offsets(loaded, 5) == [5, 6, 7, 8, 9]


def test_a_deleted_partition_leaves_the_checkpoints_at_once(tmp_path):
    """StopReplica with delete writes log-start-offset-checkpoint again without the
    partition (Kafka's LogManager.asyncDelete), so a broker that crashes before the next
    interval does not give the old log start to a new topic of the same name."""
    import time
    from types import SimpleNamespace

    from minikafka.broker.metrics import Metrics
    from minikafka.broker.replica_manager import ReplicaManager
    from minikafka.broker.storage import DiskStorage
    from minikafka.config import BrokerConfig
    from minikafka.protocol.rpc.types import StopReplicaRequest, TopicPartition

    def manager() -> ReplicaManager:
        config = BrokerConfig(1, "zk", storage="disk", data_dir=str(tmp_path))
        metrics = Metrics()
        return ReplicaManager(config, SimpleNamespace(time=time.time, monotonic=time.monotonic),
                              DiskStorage(str(tmp_path), 1), None, metrics, lambda *a: None)

    storage = DiskStorage(str(tmp_path), 1)
    storage.write_log_start_checkpoint({("t", 0): 2, ("u", 0): 5})
    storage.write_hw_checkpoint({("t", 0): 9, ("u", 0): 9})
    rm = manager()  # a restarted broker: it read both checkpoints
    rm.stop_replica(StopReplicaRequest(controller_id=1, controller_epoch=1, delete_partitions=True,
                                       partitions=[TopicPartition(topic="t", partition=0)]))
    assert ("t", 0) not in storage.read_log_start_checkpoint(), "written again without it"
    assert ("t", 0) not in rm._checkpointed_starts and ("t", 0) not in rm._checkpointed_hws
    assert rm._checkpointed_starts == {("u", 0): 5}, "the others' entries stay for their logs to load"
