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

__all__ = ["DataLossError", "MiniKafkaDataSource", "OptionError", "SourceOptions", "driver_address", "kafka_package",
           "local_session", "parse_options", "register"]


def kafka_package() -> str:
    """The Maven coordinate of Spark's own Kafka source and sink for the installed PySpark
    (``org.apache.spark:spark-sql-kafka-0-10_2.13:<version>``), for ``spark.jars.packages``."""
    from .kafka_jars import package

    return package()


def register(spark: Any) -> None:
    """Register the ``minikafka`` format with a SparkSession (``spark.dataSource.register``).

    As :func:`local_session`, Python workers run this interpreter unless
    ``PYSPARK_PYTHON`` is set (and ``PYSPARK_DRIVER_PYTHON`` is this interpreter unless
    set): a session built before the call, whose workers would run ``python3`` from the
    PATH, is pointed at this interpreter too, so the format's code is importable there."""
    import os
    import sys

    from .source import MiniKafkaDataSource

    if "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        try:
            sc = spark.sparkContext  # absent on Spark Connect
        except Exception:  # noqa: BLE001 - a Connect session has no SparkContext
            sc = None
        if sc is not None and getattr(sc, "pythonExec", None) == "python3":  # PySpark's default without the variable
            sc.pythonExec = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark.dataSource.register(MiniKafkaDataSource)


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def driver_address(master: str) -> dict[str, str]:
    """``spark.driver.host`` and ``spark.driver.bindAddress`` for ``master``: 127.0.0.1 when
    every executor runs on this machine (``local``, ``local[N]``, a ``spark://`` master on
    loopback), else nothing: Spark then advertises this machine's address to the executors."""
    m = master.strip()
    if m.startswith("local"):
        loopback = True
    elif m.startswith("spark://"):
        hosts = [h.rsplit(":", 1)[0] for h in m[len("spark://"):].split(",")]
        loopback = all(h in LOOPBACK_HOSTS for h in hosts)
    else:
        loopback = False
    return {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"} if loopback else {}


def local_session(app_name: str = "minikafka", master: str = "local[2]", kafka: bool = False) -> Any:
    """A SparkSession on this machine with the ``minikafka`` format registered.

    Python workers run this interpreter (``PYSPARK_PYTHON``, unless already set), the UI
    is off and shuffles use 2 partitions; logs at ERROR.  The driver binds to 127.0.0.1
    when the master is on this machine (``local[...]``, ``spark://127.0.0.1:PORT`` of
    ``minikafka spark-cluster up``); with another master it keeps Spark's default, this
    machine's address, which the executors must reach (:func:`driver_address`).
    With ``kafka=True`` it also has Spark's own ``format("kafka")``: spark-sql-kafka-0-10
    for this PySpark, from ``spark.jars.packages`` or a folder of jars
    (``minikafka.spark.kafka_jars``).  Only the JVM's first session takes configs: ask
    for ``kafka=True`` in the first one."""
    import os
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if kafka:
        from .kafka_jars import session_configs

        for key, value in session_configs().items():
            builder = builder.config(key, value)
    for key, value in driver_address(master).items():
        builder = builder.config(key, value)
    spark = (builder.master(master).appName(app_name)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def __getattr__(name: str) -> Any:
    if name == "MiniKafkaDataSource":
        from .source import MiniKafkaDataSource

        return MiniKafkaDataSource
    raise AttributeError(f"module 'minikafka.spark' has no attribute {name!r}")
