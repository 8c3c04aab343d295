"""KIP-467 through a real client: a batch with keyless records sent to a compacted topic is
refused, and the ProduceResponse names the keyless records (``record_errors``), so that
librdkafka fails them with INVALID_RECORD and the keyed records of the same batch with
_INVALID_DIFFERENT_RECORD, as it does against Kafka 3.9.  A batch with a CreateTime out of the
topic's bounds is refused with INVALID_TIMESTAMP."""
from __future__ import annotations

import uuid

import pytest

from minikafka import Admin

pytestmark = pytest.mark.process


def test_librdkafka_tells_the_keyless_records_from_the_others_of_a_refused_batch(cluster):
    from confluent_kafka import KafkaError, Producer

    topic = f"rec-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3, config={"cleanup.policy": "compact"})
    # one batch: a long linger keeps the four records together until flush()
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "linger.ms": 10000, "acks": "all",
                         "enable.idempotence": False})
    outcome: dict[bytes, str] = {}

    def delivered(err, msg) -> None:  # noqa: ANN001
        outcome[msg.value()] = "NONE" if err is None else KafkaError(err.code()).name()

    for key, value in ((b"k0", b"a"), (None, b"b"), (b"k2", b"c"), (None, b"d")):
        producer.produce(topic, value, key=key, partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert outcome == {b"a": "_INVALID_DIFFERENT_RECORD", b"b": "INVALID_RECORD",
                       b"c": "_INVALID_DIFFERENT_RECORD", b"d": "INVALID_RECORD"}, outcome
    # keyed records alone are taken
    producer.produce(topic, b"e", key=b"k4", partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert outcome[b"e"] == "NONE"


def test_a_batch_with_a_timestamp_out_of_bounds_is_refused_with_invalid_timestamp(cluster):
    """message.timestamp.before.max.ms: a batch with a CreateTime older than that is refused
    with INVALID_TIMESTAMP (the answer names that record; librdkafka fails every record of
    the batch with INVALID_TIMESTAMP); a batch within the bounds is taken."""
    import time

    from confluent_kafka import KafkaError, Producer

    topic = f"rec-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3,
                           config={"message.timestamp.before.max.ms": "3600000"})
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "linger.ms": 10000, "acks": "all",
                         "enable.idempotence": False})
    outcome: dict[bytes, str] = {}

    def delivered(err, msg) -> None:  # noqa: ANN001
        outcome[msg.value()] = "NONE" if err is None else KafkaError(err.code()).name()

    now = int(time.time() * 1000)
    for value, ts in ((b"a", now), (b"b", now - 2 * 3600000), (b"c", now)):
        producer.produce(topic, value, partition=0, timestamp=ts, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert outcome == {b"a": "INVALID_TIMESTAMP", b"b": "INVALID_TIMESTAMP", b"c": "INVALID_TIMESTAMP"}, outcome
    producer.produce(topic, b"d", partition=0, timestamp=now - 60000, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert outcome[b"d"] == "NONE"
