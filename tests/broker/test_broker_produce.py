"""Produce, Fetch, ListOffsets and DeleteRecords on real in-process brokers (harness.py):
the replica manager's acks=all purgatory and min.insync.replicas check, the followers'
fetchers, the log start offset."""
from __future__ import annotations

import pytest

from harness import Cluster, run_cluster
from minikafka import errors
from minikafka.client import TopicPartition

TOPIC = "orders"
TP = TopicPartition(TOPIC, 0)


async def read(c: Cluster, consumer, count: int, timeout_s: float = 20.0) -> list:
    """Poll ``consumer`` until it handed out ``count`` records (then one more poll: nothing more comes)."""
    got: list = []
    deadline = c.now() + timeout_s
    while len(got) < count:
        assert c.now() < deadline, f"read {len(got)} of {count} records within {timeout_s:g} virtual s"
        got += await consumer.poll(timeout_ms=200)
    got += await consumer.poll(timeout_ms=500)
    return got


def test_acks_all_to_three_replicas_then_a_consumer_reads_them_in_order_with_their_offsets():
    """acks=all: a record is acknowledged only once every replica of the ISR has it (the
    high watermark passed it); a partition is a log: the consumer reads the records in the
    order they were appended, each at the offset its acknowledgement named."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=1, replication_factor=3)
        producer = await c.started(c.producer("p1", acks="all"))
        values = [f"order-{i}".encode() for i in range(30)]
        futures = [await producer.send(TOPIC, v, key=b"k%d" % (i % 3), partition=0) for i, v in enumerate(values)]
        offsets = []
        for f in futures:
            meta = await f
            offsets.append(meta.offset)
        assert offsets == list(range(30))
        lead = c.leader_replica(TOPIC)
        assert sorted(lead.isr) == [1, 2, 3] and lead.high_watermark == 30
        for b in (1, 2, 3):  # acknowledged: every ISR replica holds all 30
            r = c.replica(b, TOPIC)
            assert r is not None and r.log_end_offset >= 30, (b, r and r.log_end_offset)

        consumer = await c.started(c.consumer("c1"))
        consumer.assign([TP])
        got = await read(c, consumer, 30)
        assert [(r.offset, r.key, r.value) for r in got] == [
            (i, b"k%d" % (i % 3), v) for i, v in enumerate(values)]
        assert await consumer.position(TP) == 30

    run_cluster(body, seed=11)


def test_acks_all_is_refused_with_not_enough_replicas_when_the_isr_is_below_the_topics_min_insync_replicas():
    """min.insync.replicas (a topic config, overriding the broker's): with the ISR shrunk
    below it, an acks=all produce is refused with NOT_ENOUGH_REPLICAS before anything is
    appended (the leader's log end and high watermark stay where they were), while acks=1
    is still taken."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
        producer = await c.started(c.producer("p1", acks="all"))
        for i in range(5):
            await producer.send_and_wait(TOPIC, b"before-%d" % i, partition=0)
        leader = c.leader(TOPIC)
        followers = [b for b in (1, 2, 3) if b != leader]
        for b in followers:
            c.crash(b)
        lead = c.replica(leader, TOPIC)
        assert lead is not None
        await c.wait_until(lambda: lead.isr == (leader,), 40, f"the ISR shrunk to the leader {leader}")
        assert (lead.log_end_offset, lead.high_watermark) == (5, 5)

        strict = await c.started(c.producer("p2", acks="all", delivery_timeout_ms=3000))
        with pytest.raises(errors.KafkaError) as refused:
            await strict.send_and_wait(TOPIC, b"refused", partition=0)
        assert refused.value.code.name == "NOT_ENOUGH_REPLICAS", refused.value
        assert (lead.log_end_offset, lead.high_watermark) == (5, 5), "a refused batch was appended"
        reader = await c.started(c.consumer("c1"))
        assert await reader.end_offsets([TP]) == {TP: 5}  # ListOffsets latest: the high watermark

        loose = await c.started(c.producer("p3", acks=1, enable_idempotence=False))
        meta = await loose.send_and_wait(TOPIC, b"acks-1", partition=0)
        assert meta.offset == 5 and lead.log_end_offset == 6

    # the brokers' own default would let acks=all through with the leader alone
    run_cluster(body, seed=12, broker_settings={"min.insync.replicas": 1})


def test_delete_records_moves_the_log_start_and_a_consumer_below_it_is_reset():
    """DeleteRecords: the partition's log start offset moves to the given offset on every
    in-sync replica (the answer's low watermark), ListOffsets earliest answers it, and a
    consumer whose position falls below it gets OFFSET_OUT_OF_RANGE, which
    auto.offset.reset=earliest turns into a seek to the new log start (and 'none' raises)."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=1, replication_factor=3)
        producer = await c.started(c.producer("p1", acks="all"))
        for i in range(10):
            await producer.send_and_wait(TOPIC, b"r%d" % i, partition=0)
        admin = await c.started(c.admin("a1"))
        assert await admin.delete_records({TP: 6}) == {TP: 6}
        for b in (1, 2, 3):
            r = c.replica(b, TOPIC)
            assert r is not None and r.log.log_start_offset == 6, (b, r and r.log.log_start_offset)

        resetting = await c.started(c.consumer("c1", auto_offset_reset="earliest"))
        assert await resetting.beginning_offsets([TP]) == {TP: 6}  # ListOffsets earliest
        resetting.assign([TP])
        resetting.seek(TP, 2)
        got = await read(c, resetting, 4)
        assert [(r.offset, r.value) for r in got] == [(i, b"r%d" % i) for i in range(6, 10)]

        strict = await c.started(c.consumer("c2", auto_offset_reset="none"))
        strict.assign([TP])
        strict.seek(TP, 2)
        with pytest.raises(errors.OffsetOutOfRangeError):
            for _ in range(20):
                await strict.poll(timeout_ms=200)

        above = await admin.delete_records({TP: 11})  # above the high watermark
        assert isinstance(above[TP], errors.OffsetOutOfRangeError), above
        assert c.leader_replica(TOPIC).log.log_start_offset == 6

    run_cluster(body, seed=13)
