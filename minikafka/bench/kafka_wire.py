"""What the suite asks a cluster through Kafka's own protocol, with confluent-kafka (librdkafka):
create a topic, read its end offsets and its partitions' ISRs, fill it with records.

These work the same on minikafka's Kafka listener and on Apache Kafka, so that the rows
measured on both clusters (:mod:`.versus`) set them up with the same client.
"""
from __future__ import annotations

import importlib.util
import time

from .. import errors
from ..polling import poll

NEEDS_CONFLUENT = "needs confluent-kafka (pip install confluent-kafka)"


def available() -> bool:
    """Whether confluent-kafka is installed."""
    return importlib.util.find_spec("confluent_kafka") is not None


def _admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap})


def partitions(bootstrap: str, topic: str, admin=None) -> dict[int, tuple[int, list[int], list[int]]]:
    """Partition -> (leader, replicas, isr) from a Metadata request ({} while the topic is unknown)."""
    admin = admin or _admin(bootstrap)
    md = admin.list_topics(topic, timeout=10).topics.get(topic)
    if md is None or md.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in md.partitions.values()}


def wait_for(done, what: str, timeout_s: float, poll_s: float = 0.1) -> float:
    """Poll ``done()`` until true; the time it took (ClientError naming ``what`` at the timeout).
    A metadata request that fails while a broker is down counts as not yet, and so does a
    partition missing from the answer (:func:`partitions` is empty while the broker asked,
    one just started, does not know the topic yet: a KeyError)."""
    from confluent_kafka import KafkaException

    got = poll(done, timeout_s, poll_s, not_yet=(KafkaException, KeyError))
    if not got:
        raise errors.ClientError(f"{what} not within {timeout_s:.0f} s")
    return got.seconds


def create_topic(bootstrap: str, topic: str, partition_count: int, rf: int, min_isr: int | None = None) -> None:
    """CreateTopics, then wait until every partition has a leader and a full ISR.  A cluster just
    started may not yet count all its brokers, nor name its controller (Kafka's brokers learn
    of both from the controller, later on a busy machine): INVALID_REPLICATION_FACTOR and
    librdkafka's wait for the controller timing out are retried for up to 120 s; a retry
    that finds the topic made by the attempt before it goes on."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)
    config = {"min.insync.replicas": str(min_isr)} if min_isr else {}
    deadline = time.monotonic() + 120
    retried = False
    while True:
        future = admin.create_topics([NewTopic(topic, partition_count, rf, config=config)], request_timeout=30)[topic]
        try:
            future.result(60)
            break
        except KafkaException as exc:
            code = exc.args[0].code()
            if retried and code == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if code not in (KafkaError.INVALID_REPLICATION_FACTOR, KafkaError._TIMED_OUT) \
                    or time.monotonic() > deadline:
                raise
            retried = True
            time.sleep(0.5)

    def ready() -> bool:
        parts = partitions(bootstrap, topic, admin)
        return len(parts) == partition_count and all(lead >= 0 and len(isr) == rf for lead, _, isr in parts.values())
    wait_for(ready, f"{topic}: a leader and a full ISR for every partition", 60)


def wait_full_isr(bootstrap: str, topic: str, timeout_s: float = 120) -> None:
    """Until every partition of ``topic`` has a leader and all its replicas in the ISR."""
    admin = _admin(bootstrap)

    def full() -> bool:
        parts = partitions(bootstrap, topic, admin)
        return bool(parts) and all(lead >= 0 and len(isr) == len(reps) for lead, reps, isr in parts.values())
    wait_for(full, f"{topic}: the ISR filled again", timeout_s, poll_s=0.2)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-offsets-{time.time_ns()}",
                         "enable.auto.commit": False})
    try:
        parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in sorted(parts)}
    finally:
        consumer.close()


def fill(bootstrap: str, topic: str, records: int, value_size: int) -> None:
    """Write ``records`` values of ``value_size`` bytes at acks=all (idempotent, ``linger.ms`` 5);
    ClientError unless every one was acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    value = b"x" * value_size
    failed = [0]

    def delivered(err, msg) -> None:  # noqa: ANN001 (librdkafka's callback)
        if err is not None:
            failed[0] += 1

    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: serve delivery reports
                producer.poll(0.05)
    left = producer.flush(300)
    if left or failed[0]:
        raise errors.ClientError(f"{topic}: {left + failed[0]} of {records} records not acknowledged")
