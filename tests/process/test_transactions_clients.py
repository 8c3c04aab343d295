"""Transactions with more unchanged third-party clients, through the Kafka listener of one
3-broker cluster: aiokafka, kafka-python and kafkajs. Each commits a transaction, aborts
one whose records are already in the log, runs a consume-transform-produce step that
commits its input offsets inside the transaction, and reads the output back with a
read_committed consumer (only committed records) and a read_uncommitted one (everything).
The Python clients are also fenced by a second instance with the same transactional id.
(confluent-kafka: tests/process/test_transactions.py; Kafka's Java client, tools and
Streams: tests/process/test_transactions_java.py.)
"""
from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

import pytest

from minikafka import Admin, Producer
from process_helpers import wait_for

pytestmark = pytest.mark.process

CONFIGS = {"transaction.state.log.num.partitions": "5", "group.initial.rebalance.delay.ms": "200"}
INPUT = [f"in{i}".encode() for i in range(6)]
COMMITTED = [f"c{i}".encode() for i in range(5)]
JS_SCRIPT = Path(__file__).resolve().parents[1] / "js" / "kafkajs_transactions.js"


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    from process_helpers import start_cluster
    handle = start_cluster(tmp_path_factory.mktemp("txn-clients") / "minikafka", brokers=3, broker_configs=CONFIGS)
    try:
        yield handle
    finally:
        handle.down()


def topics(cluster) -> tuple[str, str, str]:
    """A fresh input topic holding INPUT, an empty output topic (one partition each) and a group name."""
    name = f"tx-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions=1, replication_factor=3)
        admin.create_topic(f"{name}-out", partitions=1, replication_factor=3)
    with Producer(cluster.bootstrap) as producer:
        for value in INPUT:
            producer.send(name, value, partition=0)
        producer.flush()
    return name, f"{name}-out", f"g-{name}"


def committed_offset(cluster, group: str, topic: str) -> int | None:
    """The group's committed offset of partition 0, as the group coordinator answers it."""
    import confluent_kafka as ck
    c = ck.Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": group})
    try:
        (tp,) = c.committed([ck.TopicPartition(topic, 0)], timeout=10)
        return tp.offset if tp.offset >= 0 else None
    finally:
        c.close()


def expected_output() -> list[bytes]:
    return COMMITTED + [v.upper() for v in INPUT]


# -- aiokafka ---------------------------------------------------------------------------------------

async def _aiokafka_read(bootstrap: str, topic: str, isolation: str, expect: int) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", isolation_level=isolation)
    await c.start()
    try:
        c.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < expect and time.monotonic() < deadline:
            batch = await c.getmany(timeout_ms=500)
            got += [r.value for rs in batch.values() for r in rs]
        batch = await c.getmany(timeout_ms=1500)  # nothing more may come
        return got + [r.value for rs in batch.values() for r in rs]
    finally:
        await c.stop()


def test_aiokafka_transactions(txn_cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import ProducerFenced
    from aiokafka.structs import TopicPartition
    source, sink, group = topics(txn_cluster)
    bootstrap = txn_cluster.kafka_bootstrap
    tid = f"aio-{uuid.uuid4().hex[:6]}"

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        await asyncio.wait_for(p.start(), 60)
        try:
            async with p.transaction():
                for value in COMMITTED:
                    await p.send(sink, value, partition=0)
            await p.begin_transaction()
            await p.send_and_wait(sink, b"aborted", partition=0)
            await p.abort_transaction()
            # consume-transform-produce: the input offsets commit with the output
            c = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                                 enable_auto_commit=False, isolation_level="read_committed")
            await c.start()
            try:
                records: list = []
                deadline = time.monotonic() + 30
                while len(records) < len(INPUT) and time.monotonic() < deadline:
                    batch = await c.getmany(timeout_ms=500)
                    records += [r for rs in batch.values() for r in rs]
                assert [r.value for r in records] == INPUT
                async with p.transaction():
                    for r in records:
                        await p.send(sink, r.value.upper(), partition=0)
                    await p.send_offsets_to_transaction({TopicPartition(source, 0): records[-1].offset + 1}, group)
            finally:
                await c.stop()
            # a second instance with the same id fences this one
            second = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
            await asyncio.wait_for(second.start(), 60)
            await second.stop()
            with pytest.raises(ProducerFenced):
                async with p.transaction():
                    await p.send_and_wait(sink, b"zombie", partition=0)
        finally:
            await p.stop()
        return (await _aiokafka_read(bootstrap, sink, "read_committed", 11),
                await _aiokafka_read(bootstrap, sink, "read_uncommitted", 12))

    committed, everything = asyncio.run(run())
    assert committed == expected_output()
    assert sorted(everything) == sorted(expected_output() + [b"aborted"])
    # the marker reaches __consumer_offsets after EndTxn is answered, as in Kafka
    wait_for(lambda: committed_offset(txn_cluster, group, source) == len(INPUT), 20, 0.2,
             "the transaction's offset commit")


# -- kafka-python -----------------------------------------------------------------------------------

def _kafka_python_read(bootstrap: str, topic: str, isolation: str, expect: int) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap.split(","), auto_offset_reset="earliest",
                      isolation_level=isolation, enable_auto_commit=False)
    try:
        c.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < expect and time.monotonic() < deadline:
            got += [r.value for rs in c.poll(500).values() for r in rs]
        return got + [r.value for rs in c.poll(1500).values() for r in rs]
    finally:
        c.close()


def test_kafka_python_transactions(txn_cluster):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata
    source, sink, group = topics(txn_cluster)
    bootstrap = txn_cluster.kafka_bootstrap.split(",")
    tid = f"kp-{uuid.uuid4().hex[:6]}"
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    try:
        p.init_transactions()
        p.begin_transaction()
        for value in COMMITTED:
            p.send(sink, value, partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.send(sink, b"aborted", partition=0).get(30)
        p.abort_transaction()
        c = KafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, isolation_level="read_committed")
        try:
            records: list = []
            deadline = time.monotonic() + 30
            while len(records) < len(INPUT) and time.monotonic() < deadline:
                records += [r for rs in c.poll(500).values() for r in rs]
            assert [r.value for r in records] == INPUT
            p.begin_transaction()
            for r in records:
                p.send(sink, r.value.upper(), partition=0)
            p.send_offsets_to_transaction({TopicPartition(source, 0): OffsetAndMetadata(records[-1].offset + 1, "", -1)},
                                          group)
            p.commit_transaction()
        finally:
            c.close()
        second = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        second.init_transactions()  # fences the first
        second.close()
        with pytest.raises(KafkaError) as info:
            p.begin_transaction()
            p.send(sink, b"zombie", partition=0).get(30)
            p.commit_transaction()
        assert "fenced" in f"{type(info.value).__name__} {info.value}".lower()
    finally:
        p.close(timeout=10)
    assert _kafka_python_read(txn_cluster.kafka_bootstrap, sink, "read_committed", 11) == expected_output()
    everything = _kafka_python_read(txn_cluster.kafka_bootstrap, sink, "read_uncommitted", 12)
    assert sorted(everything) == sorted(expected_output() + [b"aborted"])
    wait_for(lambda: committed_offset(txn_cluster, group, source) == len(INPUT), 20, 0.2,
             "the transaction's offset commit")


# -- kafkajs ----------------------------------------------------------------------------------------

def test_kafkajs_transactions(txn_cluster):
    from node_clients import run_node
    source, sink, group = topics(txn_cluster)
    r = run_node(JS_SCRIPT, txn_cluster.kafka_bootstrap, source, sink, group, f"kjs-{uuid.uuid4().hex[:6]}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (result,) = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert result["copied"] == len(INPUT) and result["transactions"] >= 1
    assert result["offsets"] == [[0, len(INPUT)]], "sendOffsets committed the input offsets with the output"
    assert result["read_committed"] == [v.decode() for v in expected_output()]
    assert sorted(result["read_uncommitted"]) == sorted([v.decode() for v in expected_output()] + ["aborted"])
