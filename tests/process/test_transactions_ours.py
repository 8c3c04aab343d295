"""Our own clients' transactions on real brokers: the Producer's transactional API, a
consume-transform-produce step whose input offsets commit with its outputs, fencing of
a zombie instance, and read_committed in our Consumer."""
from __future__ import annotations

import time
import uuid

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition, errors
from process_helpers import wait_for

pytestmark = pytest.mark.process


def topic_of(cluster, partitions: int = 2) -> str:
    name = f"tx-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions=partitions, replication_factor=3, config={"min.insync.replicas": "2"})
        wait_for(lambda: all(p.leader >= 0 for p in admin.describe_topics([name])[0].partitions), 30,
                 message="leaders")
    return name


def read(cluster, topic: str, partitions: int, isolation: str, expect: int) -> list[str]:
    out: list[str] = []
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest", isolation_level=isolation) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + 30
        while len(out) < expect and time.monotonic() < deadline:
            out += [r.value.decode() for r in c.poll(timeout_ms=300)]
        out += [r.value.decode() for r in c.poll(timeout_ms=500)]
    return sorted(out)


def test_commit_abort_and_fencing_with_our_producer(cluster):
    topic = topic_of(cluster)
    tid = f"ours-{uuid.uuid4().hex[:6]}"
    with Producer(cluster.bootstrap, transactional_id=tid) as p:
        with pytest.raises(errors.ClientError):
            p.send(topic, b"outside")  # no transaction yet
        p.init_transactions()
        p.begin_transaction()
        for i in range(4):
            p.send(topic, f"committed-{i}", partition=i % 2)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(3):
            p.send(topic, f"aborted-{i}", partition=i % 2)
        p.flush()
        p.abort_transaction()
        assert p.transaction_state == "READY"
        # a second instance with the same id fences this one and aborts its open transaction
        p.begin_transaction()
        p.send(topic, "zombie", partition=0).result(30)
        with Producer(cluster.bootstrap, transactional_id=tid) as newer:
            newer.init_transactions()
            newer.begin_transaction()
            newer.send(topic, "newer", partition=1)
            newer.commit_transaction()
        with pytest.raises((errors.ProducerFencedError, errors.InvalidProducerEpochError)):
            p.commit_transaction()
    assert read(cluster, topic, 2, "read_committed", 5) == sorted(
        [f"committed-{i}" for i in range(4)] + ["newer"])
    uncommitted = read(cluster, topic, 2, "read_uncommitted", 9)
    assert "aborted-0" in uncommitted and "zombie" in uncommitted


def test_consume_transform_produce_commits_input_offsets_with_outputs(cluster):
    src, dst = topic_of(cluster, 1), topic_of(cluster, 1)
    group = f"ctp-{uuid.uuid4().hex[:6]}"
    with Producer(cluster.bootstrap) as p:
        for i in range(10):
            p.send(src, f"in-{i}", partition=0)
        p.flush()
    tp = TopicPartition(src, 0)
    with Consumer(cluster.bootstrap, group_id=group, enable_auto_commit=False, isolation_level="read_committed",
                  auto_offset_reset="earliest") as c, \
            Producer(cluster.bootstrap, transactional_id=f"ctp-{group}") as p:
        c.subscribe([src])
        p.init_transactions()
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            got += c.poll(timeout_ms=300)
        assert len(got) == 10
        # first attempt: aborted; its offsets do not commit
        p.begin_transaction()
        for r in got[:6]:
            p.send(dst, r.value.decode().replace("in", "out"))
        p.send_offsets_to_transaction({tp: got[5].offset + 1}, c.group_metadata())
        p.abort_transaction()
        assert c.committed(tp) is None
        # second attempt: committed with its offsets
        p.begin_transaction()
        for r in got:
            p.send(dst, r.value.decode().replace("in", "out"))
        p.send_offsets_to_transaction({tp: got[-1].offset + 1}, c.group_metadata())
        p.commit_transaction()
        wait_for(lambda: c.committed(tp) == 10, 30, message="the offsets committed with the transaction")
    assert read(cluster, dst, 1, "read_committed", 10) == sorted(f"out-{i}" for i in range(10))
