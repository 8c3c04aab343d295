"""Consumer group offsets on real in-process brokers (harness.py): the group coordinator
writes commits to __consumer_offsets with acks=all, and a coordinator that takes over
(or comes back) loads them from that log."""
from __future__ import annotations

import pytest

from harness import Cluster, run_cluster
from minikafka import errors
from minikafka.client import TopicPartition
from minikafka.groups.records import partition_for

TOPIC = "clicks"
TP = TopicPartition(TOPIC, 0)
GROUP = "click-counter"
OFFSETS_TOPIC = "__consumer_offsets"


@pytest.mark.parametrize("storage", ["memory", "disk"])
def test_a_committed_offset_survives_its_coordinators_crash_and_restart(storage):
    """OffsetCommit is acknowledged once the commit record is replicated to the ISR of the
    group's __consumer_offsets partition: when the coordinator's broker crashes, the new
    leader of that partition becomes the coordinator and answers the same offset
    (OffsetFetch), and a consumer of the group starts there; restarted (with its log, or
    empty and re-replicated in memory mode) and made leader again, the first broker
    answers it too."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=1, replication_factor=3)
        producer = await c.started(c.producer("p1", acks="all"))
        for i in range(10):
            await producer.send_and_wait(TOPIC, b"click-%d" % i, partition=0)

        member = await c.started(c.consumer("c1", group_id=GROUP, enable_auto_commit=False))
        member.assign([TP])
        read: list = []
        while len(read) < 7:
            read += await member.poll(timeout_ms=200, max_records=7 - len(read))
        assert [r.offset for r in read] == list(range(7))
        await member.commit()  # the position: 7
        assert await member.committed(TP) == 7

        admin = await c.started(c.admin("a1"))
        first = (await admin.describe_group(GROUP)).coordinator
        offsets_tp = TopicPartition(OFFSETS_TOPIC, partition_for(GROUP, 2))  # offsets.topic.num.partitions=2
        assert c.leader(OFFSETS_TOPIC, offsets_tp.partition) == first
        c.crash(first)

        async def committed_by_a_new_member(name: str) -> int | None:
            fresh = await c.started(c.consumer(name, group_id=GROUP, enable_auto_commit=False))
            try:
                return await fresh.committed(TP)
            finally:
                await fresh.close()

        assert await c.eventually(lambda: committed_by_a_new_member("c2"), lambda got: got is not None, 60,
                                  "a new coordinator answers OffsetFetch") == 7
        second = (await admin.describe_group(GROUP)).coordinator
        assert second != first and second == c.leader(OFFSETS_TOPIC, offsets_tp.partition)
        resumed = await c.started(c.consumer("c3", group_id=GROUP, enable_auto_commit=False))
        resumed.assign([TP])
        rest: list = []
        while len(rest) < 3:
            rest += await resumed.poll(timeout_ms=200)
        assert [r.offset for r in rest] == [7, 8, 9]  # started at the committed offset

        c.restart(first)
        await c.wait_until(lambda: first in c.isr(OFFSETS_TOPIC, offsets_tp.partition), 60,
                           f"broker {first} back in the ISR of {offsets_tp}")
        outcome = await admin.elect_leaders([offsets_tp])
        assert outcome[offsets_tp] is None or isinstance(outcome[offsets_tp], errors.ElectionNotNeededError), outcome
        await c.wait_until(lambda: c.leader(OFFSETS_TOPIC, offsets_tp.partition) == first, 30,
                           f"broker {first} leads {offsets_tp} again")
        assert await c.eventually(lambda: committed_by_a_new_member("c4"), lambda got: got is not None, 60,
                                  "the restarted coordinator answers OffsetFetch") == 7
        assert (await admin.describe_group(GROUP)).coordinator == first

    run_cluster(body, seed=51, storage=storage)
