"""A broker's DescribeConfigs as Kafka answers it (kafka-configs --describe --entity-type
brokers --all): the command line's settings, listeners included, and each value's source
(STATIC_BROKER_CONFIG for what the broker was given, even at its default value), with the
synonyms of every layer that sets it."""
from __future__ import annotations

from minikafka.broker.topic_admin import (SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT,
                                          SOURCE_STATIC_BROKER, TopicAdmin)
from minikafka.config import BrokerConfig


def describe(config: BrokerConfig) -> dict:
    return {e.name: e for e in TopicAdmin(config, None, None, None, lambda: "").describe_broker("1")}


def config(**settings: str) -> BrokerConfig:
    return BrokerConfig(broker_id=1, zookeeper_connect="127.0.0.1:2181/kafka", data_dir="/data/broker-1",
                        kafka_listen_host="127.0.0.1", kafka_listen_port=29092, settings=settings)


def test_the_command_line_and_the_listeners_are_static_broker_configs():
    got = describe(config())
    assert (got["broker.id"].value, got["broker.id"].source) == ("1", SOURCE_STATIC_BROKER)
    assert got["broker.id"].synonyms == (("broker.id", "1", SOURCE_STATIC_BROKER), ("broker.id", "-1", SOURCE_DEFAULT))
    assert (got["zookeeper.connect"].value, got["zookeeper.connect"].source) == ("127.0.0.1:2181/kafka",
                                                                                 SOURCE_STATIC_BROKER)
    assert (got["log.dirs"].value, got["log.dirs"].source) == ("/data/broker-1", SOURCE_STATIC_BROKER)
    assert got["listeners"].value == "INTERNAL://127.0.0.1:9092,KAFKA://127.0.0.1:29092"
    assert got["advertised.listeners"].source == SOURCE_STATIC_BROKER and got["advertised.listeners"].read_only


def test_a_setting_given_at_its_default_value_is_static_and_an_untouched_one_default():
    got = describe(config(**{"num.partitions": "1", "zookeeper.session.timeout.ms": "6000"}))
    assert got["num.partitions"].source == SOURCE_STATIC_BROKER and not got["num.partitions"].is_default
    assert got["num.partitions"].synonyms == (("num.partitions", "1", SOURCE_STATIC_BROKER),
                                              ("num.partitions", "1", SOURCE_DEFAULT))
    assert got["default.replication.factor"].source == SOURCE_DEFAULT
    assert got["default.replication.factor"].synonyms == (("default.replication.factor", "1", SOURCE_DEFAULT),)


def test_dynamic_layers_come_first_in_kafkas_order():
    c, _ = config(**{"log.retention.hours": "24"}).with_dynamic(
        {"log.retention.ms": "5000", "min.insync.replicas": "2"}, {"log.retention.ms": "7000"})
    got = describe(c)
    assert (got["log.retention.ms"].value, got["log.retention.ms"].source) == ("7000", SOURCE_DYNAMIC_BROKER)
    assert got["log.retention.ms"].synonyms == (
        ("log.retention.ms", "7000", SOURCE_DYNAMIC_BROKER), ("log.retention.ms", "5000", SOURCE_DYNAMIC_DEFAULT),
        ("log.retention.hours", "24", SOURCE_STATIC_BROKER), ("log.retention.hours", "168", SOURCE_DEFAULT))
    assert got["min.insync.replicas"].synonyms == (("min.insync.replicas", "2", SOURCE_DYNAMIC_DEFAULT),
                                                   ("min.insync.replicas", "1", SOURCE_DEFAULT))
    # a setting with no value anywhere: null, no synonyms, DEFAULT_CONFIG (as Kafka's log.roll.ms)
    assert (got["log.roll.ms"].value, got["log.roll.ms"].synonyms, got["log.roll.ms"].source) == (None, (),
                                                                                                 SOURCE_DEFAULT)
