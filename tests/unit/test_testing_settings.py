"""The pytest plugin's settings (minikafka.testing.plugin.settings): the test's minikafka
marker first (the closest one wins), then the ini options, then the defaults; a wrong
value is a usage error naming the setting.  And `minikafka fault serve --zookeeper-nodes N`:
the ensemble size reaches the cluster it starts, a wrong one is one line and exit 2."""
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


# ---------------------------------------------------------------- minikafka fault serve --zookeeper-nodes

def _serve(argv, capsys):
    from minikafka.cli.main import main

    code = main(["fault", "serve", *argv])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minikafka: error: "), err
    return code, err


@pytest.mark.parametrize("value, words", [
    ("0", "argument --zookeeper-nodes: must be at least 1, got 0"),
    ("three", "argument --zookeeper-nodes: not a whole number: 'three'"),
])
def test_fault_serve_refuses_a_wrong_zookeeper_nodes_in_one_line(value, words, capsys, tmp_path):
    code, err = _serve(["--dir", str(tmp_path / "c"), "--zookeeper-nodes", value], capsys)
    assert code == 2 and words in err and "(see `minikafka fault serve --help`)" in err
    assert not (tmp_path / "c").exists()  # nothing was started


def test_fault_serve_starts_a_zookeeper_ensemble_of_zookeeper_nodes(monkeypatch, capsys, tmp_path):
    from minikafka.errors import ClientError
    from minikafka.testing import cluster

    asked = []

    def start_cluster(dir, **kwargs):
        asked.append(kwargs)
        raise ClientError("not started in a unit test")
    monkeypatch.setattr(cluster, "start_cluster", start_cluster)
    assert _serve(["--dir", str(tmp_path / "a"), "--zookeeper-nodes", "3", "--brokers", "2"], capsys)[0] == 2
    assert _serve(["--dir", str(tmp_path / "b")], capsys)[0] == 2
    assert [(k["zookeeper_nodes"], k["brokers"]) for k in asked] == [(3, 2), (1, 3)]


def test_fault_serve_refuses_zookeeper_nodes_other_than_the_running_clusters(monkeypatch, capsys, tmp_path):
    from minikafka.cluster import launcher
    from minikafka.cluster.state import ClusterState, ZooKeeperServer, ZooKeeperState, save

    dir = str(tmp_path / "c")
    save(ClusterState(ZooKeeperState(connect="127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
                                     servers=[ZooKeeperServer(i, i, 10 + i, 20 + i) for i in (1, 2, 3)]), dir=dir))
    monkeypatch.setattr(launcher, "status", lambda d: {"running": True})
    code, err = _serve(["--dir", dir, "--zookeeper-nodes", "1"], capsys)
    assert code == 2
    assert err.strip() == (f"minikafka: error: --zookeeper-nodes 1: the cluster running in {dir} has 3 ZooKeeper "
                           f"servers; stop it (`minikafka cluster down --dir {dir}`) or leave --zookeeper-nodes out")
