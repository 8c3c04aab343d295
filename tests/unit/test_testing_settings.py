"""The pytest plugin's settings (minikafka.testing.plugin.settings): the test's minikafka
marker first (the closest one wins), then the ini options, then the defaults; a wrong
value is a usage error naming the setting."""
from __future__ import annotations

import pytest

from minikafka.testing.plugin import settings
from minikafka.testing.security import DEFAULT_USERS, Security


class Node:
    nodeid = "test_x.py::test_x"

    def __init__(self, *markers):
        self.markers = [m.mark for m in markers]

    def iter_markers(self, name):
        return reversed(self.markers)  # closest first, as pytest yields them


class Config:
    def __init__(self, **ini):
        self.ini = ini

    def getini(self, name):
        key = name.removeprefix("minikafka_")
        if key in self.ini:
            return self.ini[key]
        return [] if name.endswith(("_configs", "_users")) else ("auto" if key == "links" else "")


def test_defaults():
    assert settings(Node(), Config()) == {"brokers": 3, "zookeeper_nodes": 1, "broker_configs": {}, "partitions": 1,
                                          "replication_factor": 3, "topic_configs": {}, "links": "auto",
                                          "security": Security("PLAINTEXT", DEFAULT_USERS)}


def test_security_from_the_marker_or_the_ini_options():
    s = settings(Node(pytest.mark.minikafka(security="sasl_ssl", sasl_users={"carol": "c-pw"})), Config())
    assert (s["security"].protocol, s["security"].users, s["security"].sasl, s["security"].tls) == (
        "SASL_SSL", {"carol": "c-pw"}, True, True)
    ini = settings(Node(), Config(security="SASL_PLAINTEXT", sasl_users=["dave=d-pw", "erin = e-pw"]))
    assert ini["security"].users == {"dave": "d-pw", "erin": "e-pw"}
    assert ini["security"].librdkafka("erin") == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                                                  "sasl.username": "erin", "sasl.password": "e-pw"}
    assert ini["security"].kafka_python()["sasl_plain_username"] == "dave"  # the first user by default
    assert 'username="dave" password="d-pw";' in ini["security"].java_properties()
    # what the brokers get: the Kafka listener only, the harness's msgpack listener stays PLAINTEXT
    assert Security("PLAINTEXT").prepare("/nonexistent", {}) == (Security("PLAINTEXT"), {})


def test_the_marker_wins_over_the_ini_options_and_the_closest_marker_over_the_module_one():
    ini = Config(brokers="5", partitions="2", topic_configs=["min.insync.replicas=2", "retention.ms = 1000"])
    s = settings(Node(pytest.mark.minikafka(brokers=2, partitions=6), pytest.mark.minikafka(brokers=1)), ini)
    assert (s["brokers"], s["partitions"], s["replication_factor"]) == (1, 6, 1)
    assert s["topic_configs"] == {"min.insync.replicas": "2", "retention.ms": "1000"}
    assert settings(Node(), ini)["replication_factor"] == 3  # min(3, 5 brokers)


@pytest.mark.parametrize("marker, message", [
    (pytest.mark.minikafka(brokers=0), "minikafka brokers must be at least 1, got 0"),
    (pytest.mark.minikafka(partitions="many"), "minikafka partitions must be a whole number, got 'many'"),
    (pytest.mark.minikafka(broker=3), "takes the keywords brokers, zookeeper_nodes"),
    (pytest.mark.minikafka(security="KERBEROS"), "security must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    (pytest.mark.minikafka(security="SASL_SSL", sasl_users={"a b": "x"}), "a SASL user name must have no"),
])
def test_a_wrong_setting_is_a_usage_error(marker, message):
    with pytest.raises(pytest.UsageError, match=message):
        settings(Node(marker), Config())


def test_an_ini_config_line_without_an_equals_sign():
    with pytest.raises(pytest.UsageError, match="'retention.ms' is not key=value"):
        settings(Node(), Config(topic_configs=["retention.ms"]))
