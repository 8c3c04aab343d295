"""A partition refused as damaged (its only copy, KAFKA_STORAGE_ERROR) as a real Kafka
consumer sees it: librdkafka reads the partition's error and backs off, with no protocol
parse failures (the Fetch answer carries empty records, not a null field it cannot read)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from minikafka import Admin, Producer
from minikafka.cluster.state import load
from process_helpers import wait_for

pytestmark = pytest.mark.process


def test_a_consumer_of_an_offline_partition_gets_the_storage_error_and_no_parse_failures(make_cluster):
    c = make_cluster(brokers=1, storage="disk")
    topic = "offline-only-copy"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=1)
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(20):
            p.send(topic, f"record-{i:04d}".encode()).result(30)
    c.stop(1)
    segment = sorted((Path(load(c.dir).broker(1).data_dir) / f"{topic}-0").glob("*.log"))[-1]
    raw = bytearray(segment.read_bytes())
    raw[3] ^= 0x01  # the first batch's base offset: the only copy is refused, not cut
    segment.write_bytes(bytes(raw))
    c.start(1)
    wait_for(lambda: "holds the only copy" in Path(load(c.dir).broker(1).log).read_text(), 30,
             message="the broker to refuse the damaged only copy")

    logs: list[str] = []

    class _Logs:  # librdkafka's log lines, as a logging.Logger would receive them
        def log(self, level, fmt, *args):
            logs.append(fmt % args if args else fmt)

    def parse_failures() -> list[str]:
        return [line for line in logs if "parse failure" in line.lower() or "MessageSetSize" in line]

    def storage_error_read() -> bool:  # librdkafka says it read the partition's error ("fetch" debug)
        return any("Fetch failed" in line and "KAFKA_STORAGE_ERROR" in line for line in logs)

    # librdkafka handles KAFKA_STORAGE_ERROR itself, as a leader not available: it refreshes
    # its metadata and fetches again after fetch.error.backoff.ms, and poll() stays empty
    consumer = Consumer({"bootstrap.servers": c.kafka_bootstrap, "group.id": "offline-reader",
                         "enable.auto.commit": False, "logger": _Logs(), "debug": "fetch"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        messages = []

        def decided() -> bool:
            m = consumer.poll(0.2)
            if m is not None:
                messages.append(m)
            return storage_error_read() or bool(parse_failures())

        wait_for(decided, 30, message="the consumer to read the partition's error")
        deadline = time.monotonic() + 2  # a little more polling: a refetch storm would show here
        while time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None:
                messages.append(m)
    finally:
        consumer.close()
    failures = parse_failures()
    assert failures == [], f"{len(failures)} protocol parse failures, the first: {failures[:1]}"
    assert storage_error_read()
    assert [m for m in messages if m.error() is None] == [], "no record of the refused copy is served"
    reads = [line for line in logs if "Fetch failed" in line]
    assert len(reads) < 100, f"{len(reads)} failed fetches in a few seconds: no backoff"
