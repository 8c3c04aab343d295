"""Kafka's own clients in consumer groups on the Kafka listener: kafka-python,
confluent-kafka (librdkafka), kcat -G and aiokafka split partitions, commit and resume,
and share groups and offsets with minikafka's consumers and CLI."""
from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from process_helpers import run_cli, wait_for

pytestmark = pytest.mark.process


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(cluster, partitions: int, records: int) -> str:
    name = _name("kg")
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions, 3)
    with Producer(cluster.bootstrap, acks="all", linger_ms=5) as p:
        for i in range(records):
            p.send(name, f"r{i}".encode(), partition=i % partitions)
        p.flush()
    return name


def test_kafka_python_and_a_minikafka_consumer_split_partitions_commit_and_resume(cluster):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    topic, group = _topic(cluster, 6, 60), _name("g")
    # ours joins first and leads; kafka-python joins as a follower
    ours = Consumer(cluster.bootstrap, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False)
    theirs = None
    try:
        ours.subscribe([topic])
        wait_for(lambda: ours.poll(timeout_ms=100) is not None and len(ours.assignment()) == 6, timeout_s=60,
                 message="the first member owning all six partitions")
        theirs = KafkaConsumer(topic, bootstrap_servers=cluster.kafka_bootstrap, group_id=group,
                               auto_offset_reset="earliest", enable_auto_commit=False)
        got: list[bytes] = []

        def split() -> bool:
            for recs in theirs.poll(timeout_ms=100).values():
                got.extend(r.value for r in recs)
            got.extend(r.value for r in ours.poll(timeout_ms=100))
            return len(theirs.assignment()) == 3 and len(ours.assignment()) == 3
        wait_for(split, timeout_s=60, message="kafka-python and minikafka sharing six partitions")
        mine = {tp.partition for tp in ours.assignment()}
        assert mine.isdisjoint(tp.partition for tp in theirs.assignment())
        wait_for(lambda: split() and len(set(got)) == 60, timeout_s=60, message="every record read by the two")
        assert set(got) == {f"r{i}".encode() for i in range(60)}
        theirs.commit()
        ours.commit()
        kafka_owned = next(p for p in range(6) if p not in mine)
        assert theirs.committed(KTP(topic, kafka_owned)) == 10
        with Admin(cluster.bootstrap) as admin:
            d = admin.describe_group(group)
        assert d.leader == ours._core._group.member_id
        assert sorted(m.client_id.split("-")[0] for m in d.members) == ["kafka", "minikafka"]
    finally:
        if theirs is not None:
            theirs.close()
        ours.close()
    # our CLI sees the offsets both committed; the next member resumes there
    d = json.loads(run_cli("groups", "describe", group, "--json", "--bootstrap-server", cluster.bootstrap).stdout)
    assert sorted((o["partition"], o["current_offset"], o["lag"]) for o in d["offsets"]) == [(p, 10, 0) for p in range(6)]
    with Producer(cluster.bootstrap, acks="all") as p:
        p.send(topic, b"late", partition=4).result(timeout=30)
    with Consumer(cluster.bootstrap, group_id=group, auto_offset_reset="earliest") as nxt:
        nxt.subscribe([topic])
        late: list[bytes] = []
        wait_for(lambda: late.extend(r.value for r in nxt.poll(timeout_ms=200)) or late, timeout_s=60,
                 message="the next member reading only what came after the commits")
        assert late == [b"late"]


def test_confluent_consumer_commits_and_the_admin_lists_and_describes_groups(cluster):
    from confluent_kafka import Consumer as CConsumer
    from confluent_kafka import TopicPartition as CTP
    from confluent_kafka.admin import AdminClient

    topic, group = _topic(cluster, 3, 30), _name("g")
    c = CConsumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                   "enable.auto.commit": False, "client.id": "librdkafka-member"})
    c.subscribe([topic])
    try:
        n = 0
        deadline = time.monotonic() + 60
        while n < 30 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                n += 1
        assert n == 30
        c.commit(asynchronous=False)
        committed = c.committed([CTP(topic, p) for p in range(3)], timeout=10)
        assert [tp.offset for tp in committed] == [10, 10, 10]
        admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
        d = admin.describe_consumer_groups([group])[group].result(timeout=10)
        assert d.state.name == "STABLE" and [m.client_id for m in d.members] == ["librdkafka-member"]
        assert sorted(tp.partition for tp in d.members[0].assignment.topic_partitions) == [0, 1, 2]
    finally:
        c.close()  # LeaveGroup
    listed = admin.list_consumer_groups().result(timeout=10)
    assert group in {g.group_id for g in listed.valid}
    # the same offsets through minikafka's consumer
    with Consumer(cluster.bootstrap, group_id=group) as ours:
        assert ours.committed(TopicPartition(topic, 1)) == 10
    assert admin.delete_consumer_groups([group])[group].result(timeout=10) is None
    with Consumer(cluster.bootstrap, group_id=group) as ours:
        assert ours.committed(TopicPartition(topic, 1)) is None


def test_kcat_balanced_consumer_commits_its_offsets(cluster):
    topic, group = _topic(cluster, 2, 20), _name("g")
    out = subprocess.run(["kcat", "-b", cluster.kafka_bootstrap, "-G", group, "-X", "auto.offset.reset=earliest",
                          "-e", "-q", "-f", "%s\n", topic], capture_output=True, timeout=90)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split()) == sorted(f"r{i}".encode() for i in range(20))
    with Admin(cluster.bootstrap) as admin:
        offsets = wait_for(lambda: (o := admin.list_group_offsets(group)) and len(o) == 2 and o, timeout_s=30,
                           message="kcat's committed offsets")
    assert offsets == {TopicPartition(topic, 0): 10, TopicPartition(topic, 1): 10}


def test_aiokafka_and_a_minikafka_consumer_share_one_group(cluster):
    from aiokafka import AIOKafkaConsumer

    topic, group = _topic(cluster, 2, 20), _name("g")

    async def run() -> tuple[set[int], set[int]]:
        theirs = AIOKafkaConsumer(topic, bootstrap_servers=cluster.kafka_bootstrap, group_id=group,
                                  auto_offset_reset="earliest", enable_auto_commit=False)
        await theirs.start()
        try:
            loop = asyncio.get_running_loop()
            # aiokafka offers roundrobin only; members must share an assignor
            ours = await loop.run_in_executor(None, lambda: Consumer(cluster.bootstrap, group_id=group,
                                                                     auto_offset_reset="earliest",
                                                                     partition_assignment_strategy=["roundrobin"]))
            try:
                ours.subscribe([topic])
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    await theirs.getmany(timeout_ms=200)
                    await loop.run_in_executor(None, lambda: ours.poll(timeout_ms=200))
                    a, b = {tp.partition for tp in theirs.assignment()}, {tp.partition for tp in ours.assignment()}
                    if len(a) == 1 and len(b) == 1:
                        await theirs.commit()
                        return a, b
                raise AssertionError("aiokafka and minikafka never shared the two partitions")
            finally:
                await loop.run_in_executor(None, ours.close)
        finally:
            await theirs.stop()

    a, b = asyncio.run(run())
    assert a | b == {0, 1} and not a & b
