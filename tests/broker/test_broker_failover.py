"""Broker failures on real in-process brokers (harness.py): a follower's fetcher catching
up after a restart, the controller's election from the ISR, the idempotent producer across
a leader change."""
from __future__ import annotations

import asyncio

import pytest

from harness import Cluster, run_cluster, trace_digest
from minikafka.client import TopicPartition

TOPIC = "events"
TP = TopicPartition(TOPIC, 0)


@pytest.mark.parametrize("storage", ["memory", "disk"])
def test_a_crashed_follower_restarts_catches_up_and_rejoins_the_isr(storage):
    """A follower that falls behind leaves the ISR (replica.lag.time.max.ms), so acks=all
    goes on with the others; restarted (its log kept on disk, or empty in memory mode)
    it fetches from the leader until it reaches the leader's log end and is added back to
    the ISR, in the leader's state and in the metadata the admin client describes; its log
    is then identical to the leader's."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=1, replication_factor=3)
        producer = await c.started(c.producer("p1", acks="all"))
        for i in range(10):
            await producer.send_and_wait(TOPIC, b"a%d" % i, partition=0)
        leader = c.leader(TOPIC)
        follower = max(b for b in (1, 2, 3) if b != leader)
        c.crash(follower)
        for i in range(10):  # acknowledged once the follower left the ISR
            await producer.send_and_wait(TOPIC, b"b%d" % i, partition=0)
        lead = c.leader_replica(TOPIC)
        assert follower not in lead.isr and lead.high_watermark == 20

        c.restart(follower)
        await c.wait_until(lambda: follower in c.isr(TOPIC), 60, f"broker {follower} back in the ISR")
        mine = c.replica(follower, TOPIC)
        assert mine is not None and mine.log_end_offset == 20
        admin = await c.started(c.admin("a1"))
        described = await c.eventually(lambda: admin.describe_topics([TOPIC], checksums=True),
                                       lambda d: sorted(d[0].partitions[0].isr) == [1, 2, 3], 30,
                                       "the metadata's ISR names all three replicas")
        part = described[0].partitions[0]
        assert part.high_watermark == 20 and part.checksum_upto == 20
        assert len(part.replica_checksums) == 3 and len(set(part.replica_checksums.values())) == 1, \
            part.replica_checksums

    run_cluster(body, seed=31, storage=storage)


def test_the_leader_crashes_a_new_leader_comes_from_the_isr_and_the_idempotent_producer_loses_and_duplicates_nothing():
    """Leader failover: the controller elects a new leader from the ISR (so it holds every
    acknowledged record), with a higher leader epoch; the idempotent producer retries what
    was in flight against the new leader, whose producer state (replicated with the log)
    refuses the duplicates: every record is acknowledged once, at the offset where a
    consumer reads it, in the order it was sent."""

    run_cluster(leader_failover, seed=FAILOVER_SEED)


FAILOVER_SEED = 32


async def leader_failover(c: Cluster) -> str:
    await c.create_topic(TOPIC, partitions=1, replication_factor=3)
    old = c.leader(TOPIC)
    old_replica = c.replica(old, TOPIC)
    assert old_replica is not None
    isr_before, epoch_before = set(old_replica.isr), old_replica.leader_epoch
    producer = await c.started(c.producer("p1", acks="all", enable_idempotence=True))
    futures = [await producer.send(TOPIC, b"v%03d" % i, partition=0) for i in range(100)]
    await producer.flush()  # 100 acknowledged by the first leader
    in_flight_at_crash = 0
    for i in range(100, 300):
        futures.append(await producer.send(TOPIC, b"v%03d" % i, partition=0))
        if i == 140:
            in_flight_at_crash = sum(not f.done() for f in futures)
            c.crash(old)
        if i % 5 == 4:  # a few records at a time: batches in flight when the leader goes
            await asyncio.sleep(0.002)
    assert in_flight_at_crash > 0
    metas = [await f for f in futures]
    offsets = [m.offset for m in metas]
    assert offsets == sorted(offsets) and len(set(offsets)) == 300, offsets

    new = c.leader(TOPIC)
    assert new is not None and new != old and new in isr_before
    assert c.leader_replica(TOPIC).leader_epoch > epoch_before
    # this seed's crash leaves batches on the followers unacknowledged: their retries are
    # the duplicates the new leader refused (answering the offsets they were written at)
    assert any(e["kind"] == "duplicate" for e in c.world.brokers[new].events), "no retried batch was a duplicate"

    consumer = await c.started(c.consumer("c1"))
    consumer.assign([TP])
    got = []
    while len(got) < 300:
        got += await consumer.poll(timeout_ms=500)
    got += await consumer.poll(timeout_ms=500)
    assert [r.value for r in got] == [b"v%03d" % i for i in range(300)]  # none lost, none twice, in order
    assert [r.offset for r in got] == offsets
    return trace_digest(c.world)


def test_a_seed_replays_the_same_failover_identically():
    """The layer's premise: the seed fixes every latency, every broker's choice and the
    clients' timing on the virtual clock, so a run (the leader failover above, with its
    election and retries) replays event for event."""
    first = run_cluster(leader_failover, seed=FAILOVER_SEED)
    assert run_cluster(leader_failover, seed=FAILOVER_SEED) == first
