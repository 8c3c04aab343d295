"""The CLI's one line for a Kafka-protocol address given as --bootstrap-server."""
from __future__ import annotations

from minikafka.cli.listener_probe import explain
from minikafka.cluster.state import BrokerState, ClusterState, ZooKeeperState, save


def _cluster(tmp_path) -> str:
    dir = str(tmp_path / "c")
    save(ClusterState(zookeeper=ZooKeeperState(connect="127.0.0.1:2181"), dir=dir, brokers={
        1: BrokerState(id=1, host="127.0.0.1", port=9092, kafka_port=29092),
        2: BrokerState(id=2, host="127.0.0.1", port=9093, kafka_port=29093)}))
    return dir


def test_a_kafka_port_of_the_recorded_cluster_gets_its_http_port(tmp_path):
    line = explain("127.0.0.1:29092,127.0.0.1:29093", _cluster(tmp_path), probe=lambda h, p: True)
    assert line.startswith("127.0.0.1:29092, 127.0.0.1:29093 are Kafka-protocol listeners")
    assert line.endswith("use --bootstrap-server 127.0.0.1:9092,127.0.0.1:9093 (broker 1, broker 2)")


def test_an_unrecorded_kafka_port_is_named_without_a_guess(tmp_path):
    line = explain("127.0.0.1:39092", _cluster(tmp_path), probe=lambda h, p: True)
    assert "127.0.0.1:39092 is a Kafka-protocol listener" in line and "--bootstrap-server" not in line
    assert "cluster status" in line


def test_no_kafka_answer_leaves_the_error_alone(tmp_path):
    assert explain("127.0.0.1:29092", _cluster(tmp_path), probe=lambda h, p: False) is None
