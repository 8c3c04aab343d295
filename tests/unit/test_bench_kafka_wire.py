"""Creating a topic on a cluster just started: librdkafka's transient refusals are retried."""
from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from minikafka.bench import kafka_wire


class _Admin:
    """Answers CreateTopics with the given outcomes in turn (None: created)."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.calls = 0

    def create_topics(self, topics, request_timeout):
        self.calls += 1
        future: Future = Future()
        outcome = self.outcomes.pop(0)
        if outcome is None:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(KafkaError(outcome)))
        return {topics[0].topic: future}


@pytest.fixture
def ready_topics(monkeypatch):
    monkeypatch.setattr(kafka_wire, "partitions", lambda bootstrap, topic, admin=None: {0: (1, [1], [1])})
    monkeypatch.setattr(kafka_wire.time, "sleep", lambda s: None)


def test_no_controller_yet_and_too_few_brokers_are_retried_and_a_topic_made_meanwhile_counts(monkeypatch, ready_topics):
    admin = _Admin([KafkaError._TIMED_OUT, KafkaError.INVALID_REPLICATION_FACTOR, KafkaError.TOPIC_ALREADY_EXISTS])
    monkeypatch.setattr(kafka_wire, "_admin", lambda bootstrap: admin)
    kafka_wire.create_topic("b:1", "t", 1, 1)
    assert admin.calls == 3


def test_a_topic_that_already_existed_before_any_retry_is_an_error(monkeypatch, ready_topics):
    admin = _Admin([KafkaError.TOPIC_ALREADY_EXISTS])
    monkeypatch.setattr(kafka_wire, "_admin", lambda bootstrap: admin)
    with pytest.raises(KafkaException):
        kafka_wire.create_topic("b:1", "t", 1, 1)
