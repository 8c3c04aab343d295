"""A cluster started with Kafka's defaults (none of the test suite's lighter settings)
behaves as Apache Kafka 3.9 does with its defaults: __consumer_offsets has 50 partitions,
a missing topic is created on produce through either listener, and a broker describes its
settings with Kafka's sources."""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from minikafka import Admin, Consumer, TopicPartition
from kafka_tools import run_tool, tool_class
from process_helpers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def plain(tmp_path_factory, request):
    """3 brokers with Kafka's defaults (the ``cluster`` fixture lowers some), stopped by pid after."""
    dir = tmp_path_factory.mktemp("defaults") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3)


def test_consumer_offsets_gets_kafkas_50_partitions_on_the_first_commit(plain):
    topic = f"defaults-{uuid.uuid4().hex[:8]}"
    with Admin(plain.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    with Consumer(plain.bootstrap, group_id="defaults", enable_auto_commit=False) as c:
        c.commit({TopicPartition(topic, 0): 0})
    with Admin(plain.bootstrap) as admin:
        [offsets] = admin.describe_topics(["__consumer_offsets"])
    assert len(offsets.partitions) == 50
    assert {len(p.replicas) for p in offsets.partitions} == {3}


def test_minikafka_produce_creates_a_missing_topic_as_a_kafka_producer_does(plain):
    """auto.create.topics.enable (true by default) on the msgpack listener too: `minikafka
    produce` asks for the topic as Kafka's console producer does, and the broker creates it
    with num.partitions and default.replication.factor."""
    topic = f"auto-cli-{uuid.uuid4().hex[:8]}"
    r = subprocess.run([sys.executable, "-m", "minikafka", "produce", topic, "--bootstrap-server", plain.bootstrap],
                       input=b"a\nb\n", capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    with Admin(plain.bootstrap) as admin:
        [desc] = admin.describe_topics([topic])
        assert [len(p.replicas) for p in desc.partitions] == [1]
    with Consumer(plain.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        got: list = []
        wait_for(lambda: got.extend(c.poll(500)) or len(got) >= 2, 30, message="the produced records")
    assert [r.value for r in got] == [b"a", b"b"]


def test_a_broker_without_auto_creation_refuses_a_missing_topic_on_both_listeners(tmp_path):
    """auto.create.topics.enable=false: UNKNOWN_TOPIC_OR_PARTITION for `minikafka produce`
    (msgpack listener) and for a confluent-kafka producer (Kafka listener); nothing created."""
    from confluent_kafka import KafkaException, Producer as KafkaProducer

    dir = tmp_path / "minikafka"
    try:
        refusing = start_cluster(dir, brokers=1, broker_configs={"auto.create.topics.enable": "false"})
        r = subprocess.run([sys.executable, "-m", "minikafka", "produce", "refused-ours", "--bootstrap-server",
                            refusing.bootstrap], input=b"a\n", capture_output=True, timeout=120)
        err = r.stderr.decode()
        assert r.returncode != 0 and "UNKNOWN_TOPIC_OR_PARTITION" in err and err.count("\n") == 1, err
        p = KafkaProducer({"bootstrap.servers": refusing.kafka_bootstrap, "topic.metadata.propagation.max.ms": 1000,
                           "message.timeout.ms": 30000})
        results = []
        try:
            p.produce("refused-kafka", b"a", on_delivery=lambda e, m: results.append(e))
        except KafkaException as exc:  # librdkafka may refuse at once
            results.append(exc.args[0])
        p.flush(30)
        assert [e.name() for e in results] == ["UNKNOWN_TOPIC_OR_PART"], results
        with Admin(refusing.bootstrap) as admin:
            assert not {"refused-ours", "refused-kafka"} & set(admin.list_topics())
    finally:
        stop_cluster(dir)


def test_kafka_configs_describes_a_brokers_settings_with_their_sources(plain, kafka_jars):
    """kafka-configs --describe --entity-type brokers --entity-name 1 --all (Kafka 3.9's tool):
    the command line's settings and the listeners are STATIC_BROKER_CONFIG, so is a --config
    setting (zookeeper.set.acl, from `cluster up`), an untouched one is DEFAULT_CONFIG, and a
    dynamic one lists its layers in Kafka's order."""
    configs = ("--bootstrap-server", plain.kafka_bootstrap, "--entity-type", "brokers")
    with Admin(plain.bootstrap) as admin:
        admin.alter_broker_configs(1, set={"log.retention.ms": "7200000"})
        admin.alter_broker_configs(None, set={"log.retention.ms": "3600000"})
    try:
        r = run_tool(kafka_jars("3.9"), tool_class("3.9", "kafka-configs"), *configs, "--entity-name", "1",
                     "--describe", "--all")
    finally:
        with Admin(plain.bootstrap) as admin:
            admin.alter_broker_configs(1, delete=("log.retention.ms",))
            admin.alter_broker_configs(None, delete=("log.retention.ms",))
    assert r.returncode == 0, r.stderr
    lines = {line.strip().split("=", 1)[0]: line.strip() for line in r.stdout.splitlines()[1:]}
    assert lines["broker.id"] == ("broker.id=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:broker.id=1, "
                                  "DEFAULT_CONFIG:broker.id=-1}")
    assert lines["zookeeper.connect"].startswith("zookeeper.connect=127.0.0.1:")
    assert "synonyms={STATIC_BROKER_CONFIG:zookeeper.connect=127.0.0.1:" in lines["zookeeper.connect"]
    kafka_port = plain.kafka_ports[1]
    assert f"KAFKA://127.0.0.1:{kafka_port}" in lines["listeners"].split()[0]
    assert "synonyms={STATIC_BROKER_CONFIG:listeners=" in lines["listeners"]
    assert "synonyms={STATIC_BROKER_CONFIG:advertised.listeners=" in lines["advertised.listeners"]
    assert "synonyms={STATIC_BROKER_CONFIG:log.dirs=" in lines["log.dirs"]
    assert lines["zookeeper.set.acl"] == ("zookeeper.set.acl=true sensitive=false synonyms={STATIC_BROKER_CONFIG:"
                                          "zookeeper.set.acl=true, DEFAULT_CONFIG:zookeeper.set.acl=false}")
    assert lines["num.partitions"] == "num.partitions=1 sensitive=false synonyms={DEFAULT_CONFIG:num.partitions=1}"
    assert lines["log.retention.ms"] == (
        "log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=7200000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000, DEFAULT_CONFIG:log.retention.hours=168}")
