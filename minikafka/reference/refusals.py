"""Refused admin requests, asked of Apache Kafka and of minikafka alike.

Each case is one admin call through confluent-kafka's AdminClient (the same client on
both clusters' Kafka listeners) that a broker must refuse, or, for a few, accept. What
is compared is the answer's error name (``NONE`` for success): Kafka's words for the
same mistake.  Messages are not compared (they are free text in Kafka too).

The cases share a topic, :data:`TOPIC` (3 partitions, RF 3), that the first case
creates; :func:`run` returns one row per case.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

TOPIC = "refusals"
MISSING = "no-such-topic"


@dataclass(frozen=True)
class Case:
    name: str  # what is asked, in words (the page's first column)
    ask: Callable[[Any], Any]  # AdminClient -> a future (or a dict of one future)


def _one(futures: Any) -> Any:
    return next(iter(futures.values())) if isinstance(futures, dict) else futures


def _new(name: str, partitions: int = 3, rf: int = 3, config: dict | None = None):  # noqa: ANN202
    from confluent_kafka.admin import NewTopic
    return NewTopic(name, partitions, rf, config=config or {})


def _create(*args: Any, validate_only: bool = False, **kwargs: Any) -> Callable[[Any], Any]:
    return lambda admin: admin.create_topics([_new(*args, **kwargs)], validate_only=validate_only)


def _partitions(topic: str, count: int) -> Callable[[Any], Any]:
    from confluent_kafka.admin import NewPartitions
    return lambda admin: admin.create_partitions([NewPartitions(topic, count)])


def _alter(topic: str, key: str, value: str) -> Callable[[Any], Any]:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    resource = ConfigResource("TOPIC", topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    return lambda admin: admin.incremental_alter_configs([resource])


def _describe(topic: str) -> Callable[[Any], Any]:
    from confluent_kafka.admin import ConfigResource
    return lambda admin: admin.describe_configs([ConfigResource("TOPIC", topic)])


def _delete_records(topic: str, offset: int) -> Callable[[Any], Any]:
    from confluent_kafka import TopicPartition
    return lambda admin: admin.delete_records([TopicPartition(topic, 0, offset)])


def cases() -> list[Case]:
    return [
        Case(f"create {TOPIC} (3 partitions, RF 3)", _create(TOPIC)),
        Case(f"create {TOPIC} again", _create(TOPIC)),
        Case("create with replication factor 4 on 3 brokers", _create("rf-four", rf=4)),
        Case("create with replication factor 4, validate only", _create("rf-four", rf=4, validate_only=True)),
        Case("create with 0 partitions", _create("zero-partitions", partitions=0)),
        Case("create a topic named `bad name!`", _create("bad name!")),
        Case("create a topic named `..`", _create("..")),
        Case("create with cleanup.policy=bogus", _create("bad-policy", config={"cleanup.policy": "bogus"})),
        Case("create with retention.ms=abc", _create("bad-retention", config={"retention.ms": "abc"})),
        Case("create with an unknown config, no.such.config=1", _create("unknown-config", config={"no.such.config": "1"})),
        Case("create with min.insync.replicas=0", _create("zero-isr", config={"min.insync.replicas": "0"})),
        Case(f"delete {MISSING}", lambda admin: admin.delete_topics([MISSING])),
        Case(f"partitions of {TOPIC} down to 2", _partitions(TOPIC, 2)),
        Case(f"partitions of {TOPIC} kept at 3", _partitions(TOPIC, 3)),
        Case(f"partitions of {MISSING} up to 4", _partitions(MISSING, 4)),
        Case(f"set retention.ms=abc on {TOPIC}", _alter(TOPIC, "retention.ms", "abc")),
        Case(f"set no.such.config=1 on {TOPIC}", _alter(TOPIC, "no.such.config", "1")),
        Case(f"set retention.ms on {MISSING}", _alter(MISSING, "retention.ms", "1000")),
        Case(f"describe the configs of {MISSING}", _describe(MISSING)),
        Case(f"delete records of {TOPIC}-0 below offset 100 (its end is 0)", _delete_records(TOPIC, 100)),
        Case(f"delete records of {MISSING}-0", _delete_records(MISSING, 0)),
    ]


def error_name(future: Any, timeout_s: float = 60) -> str:
    """``NONE`` when the call succeeded, else Kafka's name of the error it answered."""
    from confluent_kafka import KafkaException
    try:
        future.result(timeout_s)
    except KafkaException as exc:
        return exc.args[0].name()
    return "NONE"


def run(bootstrap: str) -> dict[str, str]:
    """Every case against one cluster: case name -> error name."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive while its futures are
    out = {}
    for case in cases():
        try:
            future = _one(case.ask(admin))
        except (ValueError, TypeError) as exc:  # refused by the client before any request
            out[case.name] = f"(client: {type(exc).__name__})"
            continue
        out[case.name] = error_name(future)
    return out
