"""A confluent-kafka consume-process-commit loop through a leader kill: nothing lost,
nothing processed twice.  Copy it: the fixtures come from minikafka's pytest plugin."""
import confluent_kafka
import pytest

from minikafka.testing import Recorder, leader_of

pytestmark = [pytest.mark.process, pytest.mark.minikafka(partitions=3)]


def commit(consumer, msg):
    """Commit a processed record; a coordinator that moved (retriable) is asked again."""
    while True:
        try:
            return consumer.commit(msg, asynchronous=False)
        except confluent_kafka.KafkaException as exc:
            if not exc.args[0].retriable():
                raise


def test_no_order_is_lost_or_processed_twice_when_a_leader_dies(minikafka_cluster, minikafka_topic):
    kafka, rec, fault = minikafka_cluster.kafka_bootstrap, Recorder(), None
    # Idempotent: without it, a send the dead leader had already replicated is retried to the
    # new leader and written twice, as on Apache Kafka (librdkafka's default is not idempotent).
    producer = rec.producer(confluent_kafka.Producer({
        "bootstrap.servers": kafka, "acks": "all", "enable.idempotence": True}))
    consumer = rec.consumer(confluent_kafka.Consumer({
        "bootstrap.servers": kafka, "group.id": "billing", "auto.offset.reset": "earliest",
        "enable.auto.commit": False}), name="billing", topics=[minikafka_topic])
    consumer.subscribe([minikafka_topic])
    for i in range(400):  # produce, and consume-process-commit, one record at a time
        producer.produce(minikafka_topic, f"order-{i}".encode())
        producer.poll(0)
        if i == 100:
            fault = minikafka_cluster.faults.kill(leader_of(minikafka_topic, 0))
        msg = consumer.poll(0.05)
        if msg is not None and msg.error() is None:
            commit(consumer, msg)  # processed: commit it
    producer.flush(60)
    while rec.unread("billing"):  # the rest, until every acknowledged order was handed over
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            commit(consumer, msg)
    consumer.close()
    fault.heal()
    report = rec.check(minikafka_cluster)
    assert report.ok, report
    assert report.acked == 400 and not report.lost and not report.reread and not report.duplicated
