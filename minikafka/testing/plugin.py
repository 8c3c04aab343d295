"""The pytest plugin (entry point ``pytest11``: installed with minikafka, active in every
pytest run; ``-p no:minikafka`` turns it off).

Fixtures:

* ``minikafka_cluster``: a :class:`~minikafka.testing.cluster.LocalCluster` (ZooKeeper and
  N brokers, memory storage, free ports), started once per session for each set of
  settings and shared by the tests that ask for the same; a test that left it broken
  (a broker killed or paused, a link cut, ZooKeeper down) has it healed before the next
  test uses it: what is down is restarted, link faults are removed, and the next test
  starts once every partition has a leader and a full ISR (a cluster that cannot be
  healed is replaced by a new one);
* ``minikafka_topic``: a new topic for the test (its name), deleted after it;
* ``minikafka_admin``: a :class:`minikafka.Admin` on the cluster.

Settings, each from the test's ``@pytest.mark.minikafka(...)`` marker first, then the ini
option (``pytest.ini``, ``pyproject.toml``'s ``[tool.pytest.ini_options]``):

======================  ===============================  =================================
marker keyword          ini option                       meaning (default)
======================  ===============================  =================================
``brokers``             ``minikafka_brokers``            brokers in the cluster (3)
``zookeeper_nodes``     ``minikafka_zookeeper_nodes``    ZooKeeper servers: 1, or 3 or 5 (1)
``broker_configs``      ``minikafka_broker_configs``     broker settings, ``key=value`` lines
``partitions``          ``minikafka_partitions``         the topic's partitions (1)
``replication_factor``  ``minikafka_replication_factor`` the topic's replicas (min(3, brokers))
``topic_configs``       ``minikafka_topic_configs``      topic settings, ``key=value`` lines
``security``            ``minikafka_security``           the Kafka listener's protocol:
                                                         PLAINTEXT, SSL, SASL_PLAINTEXT or
                                                         SASL_SSL (PLAINTEXT)
``sasl_users``          ``minikafka_sasl_users``         SASL/PLAIN users, ``name=password``
                                                         lines (admin and alice)
(none)                  ``minikafka_links``              auto, on or off: brokers in cgroups
                                                         for link faults (auto: when root)
======================  ===============================  =================================

On a secured cluster, ``minikafka_cluster.kafka_client_config(user=None)`` (confluent-kafka),
``kafka_python_config(user=None)`` and ``java_client_properties(user=None)`` give the
settings that reach the Kafka listener (see :mod:`minikafka.testing.security`).
"""
from __future__ import annotations

import re
import time
from typing import Any, Iterator

import pytest

INI = {
    "minikafka_brokers": ("brokers of the session cluster (default 3)", "3"),
    "minikafka_zookeeper_nodes": ("ZooKeeper servers of the session cluster: 1, or an ensemble of 3 or 5 (default 1)",
                                  "1"),
    "minikafka_broker_configs": ("broker settings of the session cluster, key=value lines", ""),
    "minikafka_partitions": ("partitions of each test's topic (default 1)", "1"),
    "minikafka_replication_factor": ("replication factor of each test's topic (default: min(3, brokers))", ""),
    "minikafka_topic_configs": ("topic settings of each test's topic, key=value lines", ""),
    "minikafka_security": ("the Kafka listener's security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL "
                           "(default PLAINTEXT)", "PLAINTEXT"),
    "minikafka_sasl_users": ("SASL/PLAIN users of a secured Kafka listener, name=password lines (default: "
                             "admin=admin-secret, alice=alice-secret)", ""),
    "minikafka_links": ("auto, on or off: start brokers in cgroups so that link faults work (default auto: "
                        "when running as root with iptables and cgroup v2)", "auto"),
}
MARKER_KEYS = ("brokers", "zookeeper_nodes", "broker_configs", "partitions", "replication_factor", "topic_configs",
               "security", "sasl_users")


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, (help, default) in INI.items():
        parser.addini(name, help, type="linelist" if name.endswith(("_configs", "_users")) else "string",
                      default=default or None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "minikafka(brokers=3, zookeeper_nodes=1, broker_configs={}, partitions=1, replication_factor=None, "
                   "topic_configs={}, security='PLAINTEXT', sasl_users={}): "
                   "settings of the minikafka cluster and topic this test uses")


def _pairs(lines: Any, where: str) -> dict[str, str]:
    if isinstance(lines, dict):
        return {str(k): str(v) for k, v in lines.items()}
    out = {}
    for line in lines or ():
        line = str(line).strip()
        if not line:
            continue
        key, eq, value = line.partition("=")
        if not eq or not key.strip():
            raise pytest.UsageError(f"{where}: {line!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def settings(node: Any, config: pytest.Config) -> dict[str, Any]:
    """The settings of one test: its ``minikafka`` markers (closest first), then the ini options."""
    marker: dict[str, Any] = {}
    for m in reversed(list(node.iter_markers("minikafka"))):
        unknown = set(m.kwargs) - set(MARKER_KEYS)
        if unknown or m.args:
            raise pytest.UsageError(f"{node.nodeid}: @pytest.mark.minikafka takes the keywords "
                                    f"{', '.join(MARKER_KEYS)}; got {sorted(unknown) or list(m.args)}")
        marker.update(m.kwargs)

    def ini(name: str) -> Any:
        return config.getini(f"minikafka_{name}")

    def number(key: str) -> int | None:
        raw = marker.get(key, ini(key))
        if raw in (None, ""):
            return None
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise pytest.UsageError(f"minikafka {key} must be a whole number, got {raw!r}") from None
        if value < 1:
            raise pytest.UsageError(f"minikafka {key} must be at least 1, got {value}")
        return value
    brokers = number("brokers") or 3
    return {
        "brokers": brokers,
        "zookeeper_nodes": number("zookeeper_nodes") or 1,
        "broker_configs": _pairs(marker.get("broker_configs", ini("broker_configs")), "minikafka broker_configs"),
        "partitions": number("partitions") or 1,
        "replication_factor": number("replication_factor") or min(3, brokers),
        "topic_configs": _pairs(marker.get("topic_configs", ini("topic_configs")), "minikafka topic_configs"),
        "security": _security(marker.get("security", ini("security")),
                              _pairs(marker.get("sasl_users", ini("sasl_users")), "minikafka sasl_users")),
        "links": str(config.getini("minikafka_links") or "auto"),
    }


def _security(protocol: Any, users: dict[str, str]) -> Any:
    from ..errors import ClientError
    from .security import Security, parse_users

    try:
        return Security(str(protocol or "PLAINTEXT"), parse_users(users))
    except ClientError as exc:
        raise pytest.UsageError(f"minikafka security: {exc}") from None


class ClusterPool:
    """The session's clusters, one per (brokers, broker settings), started when first
    asked for and stopped at the end of the session."""

    def __init__(self) -> None:
        self.clusters: dict[tuple, Any] = {}
        self.start_seconds: dict[tuple, float] = {}

    def get(self, s: dict[str, Any]) -> Any:
        from .cluster import start_cluster

        key = (s["brokers"], s["zookeeper_nodes"], tuple(sorted(s["broker_configs"].items())), s["links"],
               s["security"].key)
        cluster = self.clusters.get(key)
        if cluster is not None and not cluster.stopped:
            try:
                if cluster.broken():
                    cluster.heal()
                else:
                    cluster.wait.isr_full(timeout_s=120)
                return cluster
            except Exception:
                cluster.stop()  # cannot be healed: replace it
        t0 = time.monotonic()
        cluster = start_cluster(brokers=s["brokers"], broker_configs=s["broker_configs"], links=s["links"],
                                zookeeper_nodes=s["zookeeper_nodes"], security=s["security"])
        self.start_seconds[key] = time.monotonic() - t0
        self.clusters[key] = cluster
        return cluster

    def stop(self) -> None:
        for cluster in self.clusters.values():
            try:
                cluster.stop()
            except Exception:
                pass
        self.clusters.clear()


@pytest.fixture(scope="session")
def minikafka_pool() -> Iterator[ClusterPool]:
    """The session's clusters (see :class:`ClusterPool`)."""
    pool = ClusterPool()
    try:
        yield pool
    finally:
        pool.stop()


@pytest.fixture
def minikafka_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """This test's settings (marker, then ini options)."""
    return settings(request.node, request.config)


@pytest.fixture
def minikafka_cluster(minikafka_pool: ClusterPool, minikafka_settings: dict[str, Any]) -> Any:
    """The cluster of this test's settings, healed of what earlier tests left broken."""
    return minikafka_pool.get(minikafka_settings)


def _topic_name(nodeid: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", nodeid.split("::")[-1]).strip("-.")[:150] or "test"
    return f"{name}-{time.monotonic_ns() % 10**9}"


@pytest.fixture
def minikafka_topic(minikafka_cluster: Any, minikafka_settings: dict[str, Any],
                    request: pytest.FixtureRequest) -> Iterator[str]:
    """A new topic for this test (partitions, replication factor and configs from the
    settings), deleted after it (after healing the cluster, when the test broke it)."""
    s = minikafka_settings
    name = minikafka_cluster.create_topic(_topic_name(request.node.nodeid), s["partitions"], s["replication_factor"],
                                          s["topic_configs"])
    yield name
    try:
        if minikafka_cluster.broken():
            minikafka_cluster.heal()
        minikafka_cluster.delete_topic(name)
    except Exception:
        pass  # the next test's cluster fixture heals or replaces the cluster


@pytest.fixture
def minikafka_admin(minikafka_cluster: Any) -> Iterator[Any]:
    """A :class:`minikafka.Admin` on the cluster, closed after the test."""
    with minikafka_cluster.admin() as admin:
        yield admin
