"""Delivery callbacks on a live cluster: ``send(..., on_delivery=cb)`` on our blocking
``Producer`` and our ``AIOProducer``: once per record, with its metadata, in offset order
within a partition, on the producer's own thread; a failed record's error; and a callback
that raises is logged while the producer goes on."""
from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from minikafka import Admin, Producer, errors
from minikafka.client.producer import AIOProducer

pytestmark = pytest.mark.process


def _topic(cluster, name: str) -> str:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, 2, 3, config={"min.insync.replicas": "2"})
    return name


def test_the_blocking_producer_calls_on_delivery_once_per_record_in_order_on_its_thread(cluster, caplog):
    topic = _topic(cluster, "delivery-callbacks-sync")
    seen: list[tuple] = []

    def cb(metadata, error):
        seen.append((threading.current_thread().name, metadata and (metadata.partition, metadata.offset), error))
        if len(seen) == 5:
            raise ValueError("a bug in the application's callback")

    with caplog.at_level(logging.ERROR, logger="minikafka.client.futures"), \
            Producer(cluster.bootstrap, acks="all", linger_ms=2, batch_size=2_000) as p:
        futures = [p.send(topic, b"v%d" % i, partition=i % 2, on_delivery=cb) for i in range(400)]
        bad = p.send(topic, b"nowhere", partition=7, on_delivery=cb)  # the topic has 2 partitions
        p.flush()
        # the producer goes on after the callback that raised
        assert p.send(topic, b"after", partition=0).result(30).offset == 200
    assert len(seen) == 401
    assert {name for name, _, _ in seen} == {"minikafka-producer"}
    delivered = [where for _, where, error in seen if error is None]
    for partition in (0, 1):  # offsets in order within each partition, each record once
        assert [o for p_, o in delivered if p_ == partition] == list(range(200))
    assert [f.result(0).offset for f in futures[:4]] == [0, 0, 1, 1]
    (failed,) = [(where, error) for _, where, error in seen if error is not None]
    assert failed[0] is None and isinstance(failed[1], errors.UnknownTopicOrPartitionError)
    assert isinstance(bad.exception(0), errors.UnknownTopicOrPartitionError)
    assert [r for r in caplog.records if "on_delivery" in r.getMessage() and r.exc_info], caplog.records


def test_the_asyncio_producer_calls_on_delivery_once_per_record_in_order(cluster):
    topic = _topic(cluster, "delivery-callbacks-aio")
    seen: list[tuple] = []

    async def main() -> list:
        async with AIOProducer(cluster.bootstrap, acks="all", linger_ms=2, batch_size=2_000) as p:
            futures = [await p.send(topic, b"v%d" % i, partition=0,
                                    on_delivery=lambda m, e: seen.append((m.offset, e))) for i in range(300)]
            await p.flush()
            return [f.result().offset for f in futures]

    offsets = asyncio.run(main())
    assert offsets == list(range(300))
    assert seen == [(o, None) for o in range(300)]
