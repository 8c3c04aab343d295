"""The asyncio clients.

>>> from minikafka.aio import AIOProducer, AIOConsumer, AIOAdmin
>>> async with AIOProducer("127.0.0.1:9092") as producer:
...     md = await producer.send_and_wait("events", b"hello")
"""
from __future__ import annotations

from .client.admin import AIOAdmin
from .client.consumer import AIOConsumer
from .client.producer import AIOProducer
from .client.types import ConsumerRecord, PartitionDescription, RecordMetadata, TopicDescription, TopicPartition

__all__ = ["AIOAdmin", "AIOConsumer", "AIOProducer", "ConsumerRecord", "PartitionDescription", "RecordMetadata",
           "TopicDescription", "TopicPartition"]
