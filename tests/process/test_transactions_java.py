"""Transactions with Kafka's Java world against one 3-broker cluster, through its Kafka
listener: the Java example program's transactional KafkaProducer and read_committed
KafkaConsumer (examples/java, step ``transactions``), a Kafka Streams word count with
``processing.guarantee=exactly_once_v2`` (step ``wordcount``), and Kafka's
TransactionalMessageCopier (the tool Kafka's own exactly-once system tests drive) copying a
topic while the transaction coordinator of its transactional id is SIGKILLed; a
read_committed consumer then finds every input record in the output exactly once.
(kafka-transactions.sh of both generations: tests/process/test_transactions.py.)
"""
from __future__ import annotations

import re
import time
import uuid
from collections import Counter

import pytest

from json_lines import JsonLinesProcess
from minikafka import Admin, Producer
from test_java_example import build_example, text_lines

pytestmark = pytest.mark.process

CONFIGS = {"transaction.state.log.num.partitions": "5", "group.initial.rebalance.delay.ms": "200"}


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    from process_helpers import start_cluster
    handle = start_cluster(tmp_path_factory.mktemp("txn-java") / "minikafka", brokers=3, broker_configs=CONFIGS)
    try:
        yield handle
    finally:
        handle.down()


@pytest.fixture(scope="module")
def example_argv() -> list[str]:
    return build_example()


def run_example(argv: list[str], tmp_path, name: str, *args: str, timeout_s: float = 240) -> JsonLinesProcess:
    app = JsonLinesProcess([*argv, *args], tmp_path / f"{name}.log")
    try:
        app.wait_event(lambda e: e.get("event") == "done", timeout_s, f"the program's {name} step")
        assert app.wait_exit(60) == 0, app.tail()
    finally:
        app.stop()
    return app


def test_java_transactional_producer_and_read_committed_consumer(txn_cluster, example_argv, tmp_path):
    records = 300
    suffix = uuid.uuid4().hex[:6]
    app = run_example(example_argv, tmp_path, "transactions", "transactions",
                      "--bootstrap", txn_cluster.kafka_bootstrap, "--records", str(records),
                      "--txn-input", f"jin-{suffix}", "--txn-output", f"jout-{suffix}",
                      "--txn-group", f"jg-{suffix}", "--transactional-id", f"jt-{suffix}")
    (result,) = app.select(lambda e: e["event"] == "transactions")
    assert result["aborted"] >= 1 and result["transactions"] > result["aborted"]
    assert result["fenced"] == "ProducerFencedException", "a second instance fences the first"
    committed = Counter(result["read_committed"])
    expected = Counter([f"c-{i}" for i in range(10)] + [f"t-{i}" for i in range(records)] + ["winner"])
    assert committed == expected, "read_committed: every committed record once, nothing aborted"
    uncommitted = Counter(result["read_uncommitted"])
    assert all(uncommitted[f"a-{i}"] == 1 for i in range(10)), "the aborted records are in the log"
    assert sum(uncommitted.values()) > sum(committed.values())
    assert result["group_offsets"] == result["input_end_offsets"], "the input offsets committed with the output"


def test_kafka_streams_exactly_once_v2_word_count(txn_cluster, example_argv, tmp_path):
    lines = text_lines(120)
    (tmp_path / "text.txt").write_text("\n".join(lines) + "\n")
    suffix = uuid.uuid4().hex[:6]
    app = run_example(example_argv, tmp_path, "wordcount", "wordcount",
                      "--bootstrap", txn_cluster.kafka_bootstrap, "--text", str(tmp_path / "text.txt"),
                      "--guarantee", "exactly_once_v2", "--input", f"eos-in-{suffix}", "--output",
                      f"eos-out-{suffix}", "--app-id", f"eos-{suffix}")
    (wordcount,) = app.select(lambda e: e["event"] == "wordcount")
    expected = Counter(w for line in lines for w in re.split(r"\W+", line.lower()) if w)
    assert wordcount["guarantee"] == "exactly_once_v2"
    assert wordcount["counts"] == dict(expected), "the committed counts, read with read_committed"
    assert "RUNNING" in wordcount["states"] and "ERROR" not in wordcount["states"]


def read_committed_values(cluster, topic: str, partitions: int, expect: int) -> list[int]:
    import confluent_kafka as ck
    c = ck.Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                     "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        got: list[int] = []
        deadline = time.monotonic() + 60
        quiet_until = None
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(int(m.value()))
                quiet_until = None
            elif len(got) >= expect:
                quiet_until = quiet_until or time.monotonic() + 3  # nothing more may come
                if time.monotonic() > quiet_until:
                    break
        return got
    finally:
        c.close()


def committed_offset(cluster, group: str, topic: str) -> int:
    import confluent_kafka as ck
    c = ck.Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": group})
    try:
        (tp,) = c.committed([ck.TopicPartition(topic, 0)], timeout=30)
        return tp.offset
    finally:
        c.close()


def test_transactional_message_copier_through_a_coordinator_kill(txn_cluster, kafka_jars, tmp_path):
    from kafka_tools import JAVA_LOGGING
    records = 6000
    source = f"copy-{uuid.uuid4().hex[:6]}"
    sink, group, tid = f"{source}-out", f"{source}-group", f"{source}-copier"
    with Admin(txn_cluster.bootstrap) as admin:
        admin.create_topic(source, partitions=1, replication_factor=3)
        admin.create_topic(sink, partitions=3, replication_factor=3)
    with Producer(txn_cluster.bootstrap) as producer:
        for i in range(records):
            producer.send(source, str(i).encode(), key=str(i).encode(), partition=0)
        producer.flush()
    jars = kafka_jars("4")
    copier = JsonLinesProcess(
        ["java", "-Xmx256m", "-XX:+UseSerialGC", *JAVA_LOGGING, "-cp", f"{jars}/*",
         "org.apache.kafka.tools.TransactionalMessageCopier", "--broker-list", txn_cluster.kafka_bootstrap,
         "--input-topic", source, "--input-partition", "0", "--output-topic", sink, "--transactional-id", tid,
         "--consumer-group", group, "--transaction-size", "100", "--use-group-metadata", "--enable-random-aborts"],
        tmp_path / "copier.log")
    victim = None
    try:
        copier.wait_event(lambda e: e.get("totalProcessed", 0) >= records // 4, 120, "a quarter copied")
        with Admin(txn_cluster.bootstrap) as admin:
            victim = admin.find_transaction_coordinator(tid)
        txn_cluster.kill(victim, "KILL")
        killed_at = max(e.get("totalProcessed", 0) for e in copier.events)
        assert killed_at < records, "the copy was still going when the coordinator died"
        done = copier.wait_event(lambda e: e.get("stage") == "ShutdownComplete", 240, "the copier to finish")
        assert copier.wait_exit(60) == 0, copier.tail()
    finally:
        copier.stop()
        if victim is not None:
            txn_cluster.start(victim)
    assert done["totalProcessed"] == records and done["remaining"] == 0
    assert committed_offset(txn_cluster, group, source) == records, "the input offsets committed with the copies"
    copied = Counter(read_committed_values(txn_cluster, sink, 3, records))
    assert sorted(copied) == list(range(records)), f"missing: {sorted(set(range(records)) - set(copied))[:10]}"
    assert [v for v, n in copied.items() if n > 1] == [], "read_committed sees every input record exactly once"
