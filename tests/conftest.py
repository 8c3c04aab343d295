"""Shared fixtures: a real ZooKeeper, a real 3-broker cluster, and a cluster factory.

* ``zookeeper`` (session): a standalone ZooKeeper; ``.connect``, ``.port``, ``.pid``.
* ``cluster`` (session): ZooKeeper + 3 brokers via ``minikafka.cluster.launcher.up``;
  ``.dir``, ``.bootstrap``, ``.zk_connect``, ``.brokers`` (id -> port) and
  ``kill(id, sig)``, ``start(id)``, ``stop(id)``, ``resume(id)``, ``status()``.
* ``make_cluster`` (function): ``make_cluster(brokers=3, broker_configs=None,
  storage="memory")`` starts an extra independent cluster, stopped after the test.
* ``kafka_jars`` (session): ``kafka_jars("4" | "3.9")`` -> the directory of Apache Kafka's
  Java jars (tests/kafka_tools.py: ``run_tool``, ``tool_class``).
* ``spark`` (session): one SparkSession on local[2] with the ``minikafka`` source registered.
* ``kafka_tools_jars`` (session): the folder of Kafka 4.x's jars (kafka-tools, kafka-clients and
  what they need) that scripts/kafka-jars.sh fetches from Maven Central.

Clusters are always stopped by ``down`` and then any pid still recorded in
cluster.json is SIGKILLed, even when a test fails.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kafka_tools import kafka_jars  # noqa: E402,F401  (session fixture: Kafka's Java jars)
from process_helpers import (  # noqa: E402
    ClusterHandle,
    free_port,
    cluster_fixture,
    free_port_block,
    start_cluster,
    start_zookeeper,
    stop_cluster,
)

__all__ = ["free_port", "free_port_block"]


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory, request):
    """A real ZooKeeper on a free loopback port for the whole test session."""
    handle = start_zookeeper(tmp_path_factory.mktemp("zookeeper"))
    request.addfinalizer(handle.stop)
    return handle


@pytest.fixture(scope="session")
def cluster(tmp_path_factory, request) -> ClusterHandle:
    """ZooKeeper and 3 brokers (ids 1-3) on free ports, shared by the session.

    Tests that kill or pause a broker must bring it back (``start`` / ``resume``)
    before they end, or use ``make_cluster`` instead.
    """
    dir = tmp_path_factory.mktemp("cluster") / "minikafka"
    return cluster_fixture(request, dir, brokers=3)


@pytest.fixture
def make_cluster(tmp_path_factory, request):
    """Factory: ``make_cluster(brokers=3, broker_configs=None, storage="memory") -> ClusterHandle``."""
    count = 0

    def make(brokers: int = 3, broker_configs: dict[str, str] | None = None,
             storage: str = "memory") -> ClusterHandle:
        nonlocal count
        count += 1
        dir = tmp_path_factory.mktemp(f"extra-cluster-{count}") / "minikafka"
        return cluster_fixture(request, dir, brokers=brokers, broker_configs=broker_configs, storage=storage)

    return make


@pytest.fixture(scope="session")
def spark():
    """One SparkSession (local[2]) for the whole run, with the ``minikafka`` source registered
    and Spark's own ``kafka`` source and sink (spark-sql-kafka-0-10 from ``spark.jars.packages``).

    Its Python workers run this interpreter; the UI is off and the driver binds to loopback.
    """
    import os

    import pyarrow  # noqa: F401  (the spark extra installs both)
    import pyspark  # noqa: F401

    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    import minikafka.spark

    session = minikafka.spark.local_session("minikafka-tests", kafka=True)
    try:
        yield session
    finally:
        session.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def kafka_tools_jars(kafka_jars) -> Path:
    """Kafka 4.x's jars (``scripts/kafka-jars.sh 4``, fetched once into its cache)."""
    return kafka_jars("4")
