"""minikafka clients: asyncio cores (AIOProducer, AIOConsumer, AIOAdmin) and blocking wrappers."""
from __future__ import annotations

from .admin import AIOAdmin
from .batches import ConsumerBatch
from .consumer import AIOConsumer
from .partitioner import murmur2, partition_for_key
from .producer import AIOProducer
from .sync import Admin, Consumer, Producer
from .types import (
    BrokerInfo,
    ClusterDescription,
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndTimestamp,
    PartitionDescription,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "AIOAdmin", "AIOConsumer", "AIOProducer", "Admin", "BrokerInfo", "ClusterDescription", "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerBatch", "ConsumerRecord", "OffsetAndTimestamp", "PartitionDescription", "Producer", "RecordMetadata", "TopicDescription",
    "TopicPartition", "murmur2", "partition_for_key",
]
