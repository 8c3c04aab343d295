"""A transactional copier (read_committed in; copies and input offsets committed in one
transaction) through a kill of its transaction coordinator: every record copied exactly
once, no aborted copy seen by a read_committed reader."""
import confluent_kafka
import pytest

from minikafka import Consumer, TopicPartition
from minikafka.testing import Recorder, read_final_logs, txn_coordinator

pytestmark = [pytest.mark.process, pytest.mark.minikafka(partitions=2)]


def copy_batch(copier, consumer, msgs, out):
    """One transaction: the copies and the input offsets; False when it was aborted."""
    copier.begin_transaction()
    for m in msgs:
        copier.produce(out, m.value())
    try:
        copier.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                           consumer.consumer_group_metadata())
        while True:
            try:
                copier.commit_transaction()
                return True
            except confluent_kafka.KafkaException as exc:
                if not exc.args[0].retriable():  # the coordinator moved: ask again
                    raise
    except confluent_kafka.KafkaException as exc:
        if not exc.args[0].txn_requires_abort():
            raise
        copier.abort_transaction()
        for tp in consumer.committed(consumer.assignment()):  # read the batch again
            consumer.seek(confluent_kafka.TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
        return False


def test_every_record_is_copied_exactly_once_through_a_coordinator_kill(minikafka_cluster, minikafka_topic):
    c, rec, fault = minikafka_cluster, Recorder(), None
    out = c.create_topic(partitions=2)
    inputs = [f"in-{i}" for i in range(300)]
    source = rec.producer(confluent_kafka.Producer({"bootstrap.servers": c.kafka_bootstrap}), name="source")
    for value in inputs:
        source.produce(minikafka_topic, value.encode())
    source.flush(60)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": c.kafka_bootstrap, "group.id": "copier",
                                         "isolation.level": "read_committed", "enable.auto.commit": False,
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([minikafka_topic])
    copier = rec.producer(confluent_kafka.Producer({"bootstrap.servers": c.kafka_bootstrap,
                                                    "transactional.id": "copier-1"}), name="copier")
    copier.init_transactions()
    copied = 0
    while copied < len(inputs):
        msgs = [m for m in consumer.consume(50, 0.5) if m.error() is None]
        if msgs and copy_batch(copier, consumer, msgs, out):
            copied += len(msgs)
            if fault is None:  # after the first transaction: kill its coordinator
                fault = c.faults.kill(txn_coordinator("copier-1"))
    consumer.close()
    fault.heal()
    with Consumer(c.bootstrap, isolation_level="read_committed", auto_offset_reset="earliest") as raw:
        reader = rec.consumer(raw, name="reader", read_committed=True, topics=[out])
        reader.assign([TopicPartition(out, 0), TopicPartition(out, 1)])
        while rec.unread("reader"):
            reader.poll(timeout_ms=200)
    report = rec.check(c)
    assert report.ok, report
    copies = sorted(v for log in read_final_logs(c.bootstrap, [out]).values() for v in log.values())
    assert copies == sorted(inputs)
