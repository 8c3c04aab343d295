"""minikafka: an in-memory mini Kafka cluster to see, learn and test Kafka's replication.

Brokers are separate processes speaking msgpack over HTTP, with a real ZooKeeper
for controller election, broker registration and ISR state.  This package gives
the client side:

>>> from minikafka import Admin, Producer, Consumer, TopicPartition
>>> Admin("127.0.0.1:9092").create_topic("events", partitions=3, replication_factor=3)
>>> p = Producer("127.0.0.1:9092", acks="all")
>>> p.send("events", b"hello", key=b"k").result()
>>> c = Consumer("127.0.0.1:9092", auto_offset_reset="earliest")
>>> c.assign([TopicPartition("events", 0)])
>>> c.poll(timeout_ms=1000)

``minikafka.aio`` has the asyncio versions (AIOProducer, AIOConsumer, AIOAdmin);
``minikafka.errors`` has every error class, named after Kafka's error codes.
The client classes are imported on first use, so importing a pure submodule
(``minikafka.protocol``, ``minikafka.log``...) does not load asyncio or aiohttp.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors

__version__ = "0.1.0"

__all__ = ["AclBinding", "Admin", "Consumer", "ConsumerBatch", "ConsumerRecord", "Producer", "RecordMetadata", "TopicPartition", "errors"]

_CLIENT_NAMES = {
    "AclBinding": "minikafka.auth.acls",
    "Producer": "minikafka.client.sync",
    "Consumer": "minikafka.client.sync",
    "Admin": "minikafka.client.sync",
    "TopicPartition": "minikafka.client.types",
    "RecordMetadata": "minikafka.client.types",
    "ConsumerRecord": "minikafka.client.types",
    "ConsumerBatch": "minikafka.client.batches",
    "ConsumerGroupMetadata": "minikafka.client.types",
}

if TYPE_CHECKING:  # pragma: no cover
    from .client.batches import ConsumerBatch
    from .client.sync import Admin, Consumer, Producer
    from .client.types import ConsumerRecord, RecordMetadata, TopicPartition


def __getattr__(name: str) -> Any:
    module = _CLIENT_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'minikafka' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
