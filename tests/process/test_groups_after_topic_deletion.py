"""Deleting a topic removes the groups' committed offsets of its partitions, and an empty
group left without offsets is gone, as Kafka's group coordinator does
(onPartitionsDeleted, cleanupGroupMetadata): DescribeGroups says DEAD, ListGroups leaves it
out, DeleteGroups answers GROUP_ID_NOT_FOUND.  The coordinator writes tombstones for them,
so a new coordinator after a failover does not bring them back."""
from __future__ import annotations

import uuid

import pytest

from minikafka import Admin
from minikafka.groups.records import OFFSETS_TOPIC, partition_for
from process_helpers import wait_for

pytestmark = pytest.mark.process


def test_a_deleted_topic_takes_the_groups_offsets_and_empty_groups_along_even_after_a_failover(make_cluster):
    from confluent_kafka import ConsumerGroupTopicPartitions, Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    cluster = make_cluster(brokers=3)
    suffix = uuid.uuid4().hex[:8]
    gone, kept = f"gone-{suffix}", f"kept-{suffix}"
    with Admin(cluster.bootstrap) as admin:
        for topic in (gone, kept):
            admin.create_topic(topic, partitions=2, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
    for i in range(6):
        producer.produce(gone, b"v%d" % i, partition=i % 2)
    assert producer.flush(30) == 0

    # group "readers" reads the topic as a consumer group, commits and leaves (Empty, generation 1)
    readers = f"readers-{suffix}"
    consumer = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": readers,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([gone])
    got = 0
    while got < 6:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()

    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    partitions = len(admin.list_topics(OFFSETS_TOPIC, timeout=30).topics[OFFSETS_TOPIC].partitions)
    # group "mixed", coordinated by the same broker, has offsets of both topics
    mixed = next(g for g in (f"mixed-{suffix}-{i}" for i in range(10000))
                 if partition_for(g, partitions) == partition_for(readers, partitions))
    (done,) = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        mixed, [TopicPartition(gone, 0, 3), TopicPartition(gone, 1, 3), TopicPartition(kept, 0, 1)])]).values()
    done.result(30)
    assert admin.describe_consumer_groups([readers])[readers].result(30).state.name == "EMPTY"

    def committed(group: str) -> list[tuple[str, int, int]]:
        (f,) = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
        return sorted((tp.topic, tp.partition, tp.offset) for tp in f.result(30).topic_partitions)

    assert committed(readers) == [(gone, 0, 3), (gone, 1, 3)]

    admin.delete_topics([gone])[gone].result(30)

    def cleaned_up() -> bool:
        return admin.describe_consumer_groups([readers])[readers].result(30).state.name == "DEAD" \
            and committed(mixed) == [(kept, 0, 1)]
    wait_for(cleaned_up, 30, message="the groups lose the deleted topic's offsets")
    assert readers not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert mixed in {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert admin.describe_consumer_groups([mixed])[mixed].result(30).state.name == "EMPTY"
    with pytest.raises(KafkaException, match="GROUP_ID_NOT_FOUND"):
        admin.delete_consumer_groups([readers])[readers].result(30)

    # the coordinator dies: the next one replays the partition, tombstones included
    coordinator = admin.describe_consumer_groups([mixed])[mixed].result(30).coordinator.id
    cluster.kill(coordinator)

    def moved() -> bool:
        # a new client each time: librdkafka keeps a group's coordinator cached while its
        # requests wait for that broker, and a describe may then outlast its 10 s
        asking = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
        try:
            return asking.describe_consumer_groups([mixed])[mixed].result(10).coordinator.id != coordinator
        except (KafkaException, TimeoutError):  # no coordinator yet, loading, or still asking the dead one
            return False
    wait_for(moved, 60, interval_s=0.5, message="another broker coordinates the groups")
    # a new client: librdkafka keeps a group's coordinator cached while its requests wait for that broker
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    assert committed(mixed) == [(kept, 0, 1)]
    assert admin.describe_consumer_groups([readers])[readers].result(30).state.name == "DEAD"
    assert readers not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}


def test_an_empty_group_without_offsets_is_gone_at_the_next_cleanup(make_cluster):
    # Kafka's cleanupGroupMetadata, every offsets.retention.check.interval.ms: a group whose
    # members left without committing is Dead; one with committed offsets stays Empty
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    cluster = make_cluster(brokers=1, broker_configs={"offsets.retention.check.interval.ms": "1000"})
    suffix = uuid.uuid4().hex[:8]
    topic = f"t-{suffix}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=1)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
    producer.produce(topic, b"v")
    assert producer.flush(30) == 0

    def join_and_leave(group: str, commit: bool) -> None:
        c = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([topic])
        wait_for(lambda: (m := c.poll(1.0)) is not None and m.error() is None, 60, message=f"{group} reads")
        if commit:
            c.commit(asynchronous=False)
        c.close()

    idle, committed = f"idle-{suffix}", f"committed-{suffix}"
    join_and_leave(idle, commit=False)
    join_and_leave(committed, commit=True)
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})

    def listed() -> set[str]:
        return {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    wait_for(lambda: idle not in listed(), 30, message="the group without offsets gone")
    assert admin.describe_consumer_groups([idle])[idle].result(30).state.name == "DEAD"
    assert committed in listed()
    assert admin.describe_consumer_groups([committed])[committed].result(30).state.name == "EMPTY"
