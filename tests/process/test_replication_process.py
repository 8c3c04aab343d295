"""Replication on real processes: ISR shrink under a paused follower, acks=all with
min.insync.replicas, rejoining, and restarts in both storage modes."""
from __future__ import annotations

import time

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition, errors
from process_helpers import wait_for
from replica_checks import leader_state, replica_states, wait_identical

LAG_MS = 2000


def _describe(handle, topic: str):
    with Admin(handle.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc


def _isr(handle, topic: str, partition: int = 0) -> list[int]:
    st = leader_state(handle, topic, partition)
    return sorted(st["isr"]) if st else []


def _produce(handle, topic: str, values: list[bytes], acks="all", **kw) -> list:
    with Producer(handle.bootstrap, acks=acks, linger_ms=1, **kw) as p:
        futs = [p.send(topic, v, partition=0) for v in values]
        p.flush()
        return [f.result(timeout=60) for f in futs]


def _read_all(handle, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    out = []
    with Consumer(handle.bootstrap, auto_offset_reset="earliest") as c:
        tp = TopicPartition(topic, partition)
        c.assign([tp])
        end = c.end_offsets([tp])[tp]

        def done() -> bool:
            out.extend((r.offset, r.value) for r in c.poll(timeout_ms=300))
            return c.position(tp) >= end
        wait_for(done, timeout_s=30, message="reading the partition to its HW")
    return out


@pytest.mark.process
def test_paused_followers_shrink_the_isr_and_acks_all_obeys_min_insync(make_cluster):
    handle = make_cluster(broker_configs={"replica.lag.time.max.ms": str(LAG_MS)})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("isr", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    desc = _describe(handle, "isr")
    leader = desc.partitions[0].leader
    f1, f2 = [b for b in desc.partitions[0].replicas if b != leader]
    assert [m.offset for m in _produce(handle, "isr", [b"a", b"b"])] == [0, 1]
    assert _isr(handle, "isr") == [1, 2, 3]

    handle.kill(f1, "STOP")
    stopped_at = time.monotonic()
    try:
        # Produces keep succeeding (they wait until the ISR drops the paused follower).
        assert [m.offset for m in _produce(handle, "isr", [b"c"])] == [2]
        wait_for(lambda: f1 not in _isr(handle, "isr"), timeout_s=LAG_MS / 1000 * 3 + 5,
                 message=f"broker {f1} leaving the ISR")
        assert time.monotonic() - stopped_at >= LAG_MS / 1000 * 0.9, "removal only after replica.lag.time.max.ms"
        assert sorted(_isr(handle, "isr")) == sorted([leader, f2])
        assert [m.offset for m in _produce(handle, "isr", [b"d"])] == [3]

        handle.kill(f2, "STOP")
        wait_for(lambda: _isr(handle, "isr") == [leader], timeout_s=LAG_MS / 1000 * 3 + 5,
                 message="the ISR shrinking to the leader alone")
        with pytest.raises(errors.NotEnoughReplicasError):
            _produce(handle, "isr", [b"refused"], retries=0)
        assert leader_state(handle, "isr", 0)["log_end_offset"] == 4, "NOT_ENOUGH_REPLICAS writes nothing"
        # acks=1 still works with a lone ISR member.
        assert [m.offset for m in _produce(handle, "isr", [b"e"], acks=1)] == [4]
    finally:
        handle.resume(f1)
        handle.resume(f2)
    wait_for(lambda: _isr(handle, "isr") == [1, 2, 3], timeout_s=30, message="both followers rejoining the ISR")
    assert [m.offset for m in _produce(handle, "isr", [b"f"])] == [5]
    wait_identical(handle, "isr", 1, lambda p: [1, 2, 3])
    assert [v for _, v in _read_all(handle, "isr")] == [b"a", b"b", b"c", b"d", b"e", b"f"]


@pytest.mark.process
def test_consumers_never_see_offsets_at_or_above_the_hw(make_cluster):
    handle = make_cluster(broker_configs={"replica.lag.time.max.ms": "60000"})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("hw", partitions=1, replication_factor=2)
    desc = _describe(handle, "hw")
    follower = [b for b in desc.partitions[0].replicas if b != desc.partitions[0].leader][0]
    _produce(handle, "hw", [b"committed"])
    wait_for(lambda: leader_state(handle, "hw", 0)["high_watermark"] == 1, message="HW 1")
    handle.kill(follower, "STOP")
    try:
        _produce(handle, "hw", [b"uncommitted-1", b"uncommitted-2"], acks=1)
        st = leader_state(handle, "hw", 0)
        assert (st["log_end_offset"], st["high_watermark"]) == (3, 1)
        assert _read_all(handle, "hw") == [(0, b"committed")]
    finally:
        handle.resume(follower)
    wait_for(lambda: leader_state(handle, "hw", 0)["high_watermark"] == 3, message="HW reaching the LEO after resume")
    assert [v for _, v in _read_all(handle, "hw")] == [b"committed", b"uncommitted-1", b"uncommitted-2"]


@pytest.mark.process
def test_memory_broker_restarts_empty_leaves_the_isr_and_catches_up(make_cluster):
    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("mem", partitions=1, replication_factor=3)
    desc = _describe(handle, "mem")
    leader = desc.partitions[0].leader
    follower = desc.partitions[0].replicas[-1] if desc.partitions[0].replicas[-1] != leader else desc.partitions[0].replicas[1]
    _produce(handle, "mem", [f"v{i}".encode() for i in range(50)])
    handle.kill(follower, "KILL")
    wait_for(lambda: follower not in _isr(handle, "mem"), timeout_s=20, message="the killed follower leaving the ISR")
    _produce(handle, "mem", [f"w{i}".encode() for i in range(50)])
    handle.start(follower)
    wait_for(lambda: follower in _isr(handle, "mem"), timeout_s=30, message="the restarted follower rejoining")
    st = replica_states(handle, "mem", 0, brokers=[follower])[follower]
    assert st["log_end_offset"] == 100
    wait_identical(handle, "mem", 1, lambda p: [1, 2, 3])


@pytest.mark.process
def test_disk_broker_restart_truncates_by_leader_epoch_and_catches_up(make_cluster):
    handle = make_cluster(storage="disk", broker_configs={"replica.high.watermark.checkpoint.interval.ms": "200"})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("disk", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    desc = _describe(handle, "disk")
    leader = desc.partitions[0].leader
    with Admin(handle.bootstrap) as admin:
        # a leader that is the controller too steps the epoch by 2 (a new controller's
        # takeover: out of the ISR first, then the election, as in Kafka)
        step = 2 if admin.cluster().controller_id == leader else 1
    _produce(handle, "disk", [f"v{i}".encode() for i in range(100)])
    # Kill the leader: a follower takes over at the next epoch; the old leader comes back from disk.
    handle.kill(leader, "KILL")
    wait_for(lambda: (st := leader_state(handle, "disk", 0)) is not None and st["leader"] != leader
             and st["leader_epoch"] >= 1, timeout_s=20, message="a new leader")
    _produce(handle, "disk", [f"w{i}".encode() for i in range(100)])
    handle.start(leader)
    wait_for(lambda: leader in _isr(handle, "disk"), timeout_s=30, message="the old leader rejoining the ISR")
    back = replica_states(handle, "disk", 0, brokers=[leader])[leader]
    assert back["log_end_offset"] == 200
    assert [e[0] for e in back["epochs"]][:2] == [0, step], "the restarted replica learned the new epoch from the leader"
    wait_identical(handle, "disk", 1, lambda p: [1, 2, 3])
    values = [v for _, v in _read_all(handle, "disk")]
    assert values == [f"v{i}".encode() for i in range(100)] + [f"w{i}".encode() for i in range(100)]


@pytest.mark.process
def test_isr_shrinking_below_min_insync_while_waiting_answers_after_append(make_cluster):
    handle = make_cluster(broker_configs={"replica.lag.time.max.ms": str(LAG_MS)})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("after", partitions=1, replication_factor=2, config={"min.insync.replicas": "2"})
    desc = _describe(handle, "after")
    follower = [b for b in desc.partitions[0].replicas if b != desc.partitions[0].leader][0]
    _produce(handle, "after", [b"before"])
    handle.kill(follower, "STOP")
    try:
        # The request waits in the produce purgatory; the ISR drops the paused follower, the HW
        # passes the record with ISR [leader] < min.insync.replicas: written, visible, not "acked".
        with pytest.raises(errors.NotEnoughReplicasAfterAppendError):
            _produce(handle, "after", [b"written-anyway"], retries=0)
        assert _isr(handle, "after") == [desc.partitions[0].leader]
        assert [v for _, v in _read_all(handle, "after")] == [b"before", b"written-anyway"]
        with pytest.raises(errors.NotEnoughReplicasError):
            _produce(handle, "after", [b"refused"], retries=0)
    finally:
        handle.resume(follower)
    wait_for(lambda: len(_isr(handle, "after")) == 2, timeout_s=30, message="the follower rejoining")
    assert [v for _, v in _read_all(handle, "after")] == [b"before", b"written-anyway"]
