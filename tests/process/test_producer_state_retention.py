"""Idempotent and transactional producers across DeleteRecords, as in Kafka 2.5+ (KIP-360),
on a 3-broker cluster with disk storage, through confluent-kafka and the Kafka listener.

DeleteRecords moves the log start past every batch of a producer; the replicas keep its
state (docs/retention.md), so its next transaction commits and its next idempotent batch
is taken.  The same holds after the leader is SIGKILLed (a follower that followed the
log start leads), and after the killed broker restarts and leads again: its producer
state came back from the producer snapshot on its disk, not from its log."""
from __future__ import annotations

import time
import uuid

import pytest

from minikafka import Admin
from process_helpers import wait_for

pytestmark = pytest.mark.process

CONFIGS = {"transaction.state.log.num.partitions": "5"}
FIRST = 1  # the preferred leader of both topics


@pytest.fixture(scope="module")
def disk_cluster(tmp_path_factory, request):
    from process_helpers import cluster_fixture
    return cluster_fixture(request, tmp_path_factory.mktemp("producer-state") / "minikafka", brokers=3,
                            storage="disk", broker_configs=CONFIGS)


def _partition(cluster, topic: str):
    with Admin(cluster.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc.partitions[0]


def _delete_records(cluster, topic: str, offset: int) -> int:
    """confluent-kafka's AdminClient.delete_records (-1: to the high watermark); the low watermark."""
    import confluent_kafka
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    (fut,) = admin.delete_records([confluent_kafka.TopicPartition(topic, 0, offset)],
                                  operation_timeout=30, request_timeout=60).values()
    return fut.result(60).low_watermark


def _delete_all(cluster, topic: str, end: int) -> None:
    """DeleteRecords to the high watermark once it is ``end`` (commit_transaction returns before
    the coordinator's markers are written, as in Kafka)."""
    wait_for(lambda: _partition(cluster, topic).high_watermark == end, timeout_s=30,
             message=f"{topic}'s high watermark at {end}")
    assert _delete_records(cluster, topic, -1) == end


def _transaction(producer, topic: str, values: list[str]) -> None:
    producer.begin_transaction()
    for v in values:
        producer.produce(topic, v.encode(), partition=0)
    producer.commit_transaction(60)


def _idempotent_send(producer, topic: str, values: list[str]) -> None:
    failures: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failures.append(err.name())
    for v in values:
        producer.produce(topic, v.encode(), partition=0, on_delivery=report)
    assert producer.flush(60) == 0
    assert failures == [], failures


def _read_committed(cluster, topic: str, expect: int) -> list[str]:
    import confluent_kafka
    c = confluent_kafka.Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": f"rc-{uuid.uuid4().hex}",
                                  "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False})
    got: list[str] = []
    try:
        c.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        deadline = time.monotonic() + 60
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
    finally:
        c.close()
    return got


def _producer_ids(cluster, topic: str) -> set[int]:
    return {p["producer_id"] for p in _partition(cluster, topic).producers}


def test_producers_go_on_after_delete_records_a_leader_kill_and_a_restart(disk_cluster):
    import confluent_kafka

    cluster = disk_cluster
    suffix = uuid.uuid4().hex[:6]
    txn_topic, idem_topic = f"ps-txn-{suffix}", f"ps-idem-{suffix}"
    with Admin(cluster.bootstrap) as admin:
        for t in (txn_topic, idem_topic):
            admin.create_topic(t, partitions=1, replication_factor=3, assignment={0: [FIRST, 2, 3]})
    txn = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap,
                                    "transactional.id": f"ps-{suffix}", "linger.ms": 5})
    txn.init_transactions(60)
    idem = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap, "enable.idempotence": True,
                                     "linger.ms": 5})
    try:
        # the script: 10 records committed, DeleteRecords to 10, the next transaction commits
        _transaction(txn, txn_topic, [f"a{i}" for i in range(10)])
        wait_for(lambda: _partition(cluster, txn_topic).high_watermark == 11, timeout_s=30, message="the marker")
        assert _delete_records(cluster, txn_topic, 10) == 10
        _transaction(txn, txn_topic, [f"b{i}" for i in range(10)])
        _delete_all(cluster, txn_topic, 22)  # to the high watermark: past every batch
        _transaction(txn, txn_topic, [f"c{i}" for i in range(10)])
        # an idempotent producer likewise
        _idempotent_send(idem, idem_topic, [f"i{i}" for i in range(10)])
        _delete_all(cluster, idem_topic, 10)
        _idempotent_send(idem, idem_topic, [f"j{i}" for i in range(10)])
        assert _read_committed(cluster, txn_topic, 10) == [f"c{i}" for i in range(10)]

        # every batch of both producers below the log start, then the leader dies
        _delete_all(cluster, txn_topic, 33)
        _delete_all(cluster, idem_topic, 20)
        producers = {t: _producer_ids(cluster, t) for t in (txn_topic, idem_topic)}
        assert all(len(ids) == 1 for ids in producers.values()), producers
        assert _partition(cluster, txn_topic).leader == FIRST
        cluster.kill(FIRST)
        wait_for(lambda: _partition(cluster, txn_topic).leader not in (FIRST, -1)
                 and _partition(cluster, idem_topic).leader not in (FIRST, -1),
                 timeout_s=60, message="a follower leads both topics")
        # the new leader followed the log start and kept the producers
        assert {t: _producer_ids(cluster, t) for t in producers} == producers
        cluster.start(FIRST)
        wait_for(lambda: all(FIRST in _partition(cluster, t).isr for t in producers), timeout_s=60,
                 message="the restarted broker is back in both ISRs")
        with Admin(cluster.bootstrap) as admin:
            admin.elect_leaders([(t, 0) for t in producers])
        wait_for(lambda: all(_partition(cluster, t).leader == FIRST for t in producers), timeout_s=30,
                 message="the restarted broker leads again")
        # it wrote none of the producers' batches since its restart: their state is its snapshot's
        assert {t: _producer_ids(cluster, t) for t in producers} == producers
        _transaction(txn, txn_topic, [f"d{i}" for i in range(10)])
        _idempotent_send(idem, idem_topic, [f"k{i}" for i in range(10)])
        assert _read_committed(cluster, txn_topic, 10) == [f"d{i}" for i in range(10)]
        assert _read_committed(cluster, idem_topic, 10) == [f"k{i}" for i in range(10)]
    finally:
        idem.flush(10)
        del txn, idem  # librdkafka's threads stop before the cluster does
