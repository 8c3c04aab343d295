"""A ZooKeeper outage seen by a Kafka client (confluent-kafka) on the Kafka listener: what
needs ZooKeeper is answered with the retriable REQUEST_TIMED_OUT, as on the msgpack
listener, on the same connection; once ZooKeeper is back the same client succeeds."""
from __future__ import annotations

import json
import logging
import os
import signal

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.cluster.state import load
from process_helpers import wait_for

pytestmark = pytest.mark.process


def _connections(admin: AdminClient, stats: list[dict]) -> tuple[int, int]:
    """(connects, disconnects) over every broker, from librdkafka's next statistics."""
    seen = len(stats)
    wait_for(lambda: admin.poll(0.1) is not None and len(stats) > seen, 30, message="librdkafka's statistics")
    brokers = stats[-1]["brokers"].values()
    return sum(b["connects"] for b in brokers), sum(b["disconnects"] for b in brokers)


def test_a_kafka_client_gets_request_timed_out_during_a_zookeeper_outage_and_keeps_its_connection(make_cluster):
    c = make_cluster(brokers=1)
    stats: list[dict] = []
    admin = AdminClient({"bootstrap.servers": c.kafka_bootstrap, "statistics.interval.ms": 200,
                         "stats_cb": lambda text: stats.append(json.loads(text)),
                         "logger": logging.getLogger("librdkafka")})  # its reconnect lines after the test
    admin.create_topics([NewTopic("before", 1, 1)], operation_timeout=30)["before"].result(60)
    before = _connections(admin, stats)
    zk_pid = load(c.dir).zookeeper.pid
    os.kill(zk_pid, signal.SIGSTOP)
    try:
        # the broker asks ZooKeeper for the live brokers first; no answer within its request
        # timeout (12 s) is REQUEST_TIMED_OUT, answered for the topic in the request
        future = admin.create_topics([NewTopic("during", 1, 1)], request_timeout=60)["during"]
        with pytest.raises(KafkaException) as raised:
            future.result(90)
        error = raised.value.args[0]
        assert error.code() == KafkaError.REQUEST_TIMED_OUT, error
        assert "ZooKeeper" in error.str(), error
        assert _connections(admin, stats) == before  # answered on the connection it came on
    finally:
        os.kill(zk_pid, signal.SIGCONT)

    def created() -> bool:
        try:
            admin.create_topics([NewTopic("during", 1, 1)], operation_timeout=30)["during"].result(60)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return True  # a retry whose answer was lost: the topic is there all the same
            if exc.args[0].retriable() or exc.args[0].code() == KafkaError.REQUEST_TIMED_OUT:
                return False  # the broker's session is still reconnecting
            raise
        return True

    wait_for(created, 90, interval_s=1, message="the topic created once ZooKeeper is back")
    wait_for(lambda: admin.list_topics(timeout=10).topics["during"].partitions[0].leader == 1, 60,
             message="the new topic led by broker 1")
