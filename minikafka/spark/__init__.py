"""A PySpark source that reads committed minikafka data, in batch and streaming.

>>> import minikafka.spark
>>> minikafka.spark.register(spark)
>>> df = (spark.read.format("minikafka")
...       .option("kafka.bootstrap.servers", "127.0.0.1:9092")
...       .option("subscribe", "events")
...       .load())          # key, value, topic, partition, offset, timestamp, timestampType

Options and guarantees mirror Spark's own Kafka source (docs/spark.md).  Only
records below each partition's high watermark are ever returned.  Needs PySpark 4.x
and pyarrow (``pip install 'minikafka[spark]'``).
"""
from __future__ import annotations

from typing import Any

from .offsets import DataLossError
from .options import OptionError, SourceOptions, parse_options

__all__ = ["DataLossError", "MiniKafkaDataSource", "OptionError", "SourceOptions", "parse_options", "register"]


def register(spark: Any) -> None:
    """Register the ``minikafka`` format with a SparkSession (``spark.dataSource.register``)."""
    from .source import MiniKafkaDataSource

    spark.dataSource.register(MiniKafkaDataSource)


def __getattr__(name: str) -> Any:
    if name == "MiniKafkaDataSource":
        from .source import MiniKafkaDataSource

        return MiniKafkaDataSource
    raise AttributeError(f"module 'minikafka.spark' has no attribute {name!r}")
