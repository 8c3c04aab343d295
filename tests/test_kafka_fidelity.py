"""Kafka behaviours that third-party clients and tools rely on, checked through those
clients: kafka-python, confluent-kafka (librdkafka), and our own Admin."""
from __future__ import annotations

import uuid

import pytest

from minikafka import Admin
from process_helpers import wait_for

pytestmark = pytest.mark.process


def new_topic(cluster, partitions=1, rf=3, **config) -> str:
    name = f"fid-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions=partitions, replication_factor=rf, config=config or None)
    return name


def confluent_admin(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})


def kafka_python_admin(cluster, **kw):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap, **kw)


# -- dynamic broker configs --------------------------------------------------------------
def test_describe_configs_shows_a_dynamic_broker_config_as_soon_as_alter_configs_answered(cluster):
    """No wait for the /config/changes watch: the answering broker applies the change
    before it answers, and every broker re-reads its dynamic configs before describing."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    admin = confluent_admin(cluster)

    def change(broker: str, value: str | None, op: AlterConfigOpType) -> None:
        if broker == "":  # librdkafka and kafka-python refuse the default entity: our Admin, through any broker
            with Admin(cluster.bootstrap) as ours:
                ours.alter_broker_configs(None, set={"log.retention.ms": value} if value else None,
                                          delete=() if value else ("log.retention.ms",))
            return
        res = ConfigResource(ConfigResource.Type.BROKER, broker, incremental_configs=[
            ConfigEntry("log.retention.ms", value, incremental_operation=op)])
        admin.incremental_alter_configs([res])[res].result(30)

    def value(broker: str) -> str:
        res = ConfigResource(ConfigResource.Type.BROKER, broker)
        return admin.describe_configs([res])[res].result(30)["log.retention.ms"].value

    try:
        for i in range(3):
            change("2", str(3600000 + i), AlterConfigOpType.SET)  # sent to broker 2 itself
            assert value("2") == str(3600000 + i)
        change("", "7200000", AlterConfigOpType.SET)  # every broker's default, answered by any one
        assert [value(b) for b in ("1", "3")] == ["7200000", "7200000"]
        assert value("2") == "3600002"  # its own setting wins over the default
    finally:
        change("2", None, AlterConfigOpType.DELETE)
        change("", None, AlterConfigOpType.DELETE)
    assert value("2") != "3600002" and value("1") != "7200000"


# -- groups --------------------------------------------------------------------------------
def test_an_empty_group_keeps_protocol_type_consumer(cluster):
    """After its last member left, ListGroups and DescribeGroups still say ``consumer``
    (kafka-python's and Kafka's tools filter consumer groups on it)."""
    from kafka import KafkaConsumer

    topic = new_topic(cluster)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer(topic, bootstrap_servers=cluster.kafka_bootstrap, group_id=group,
                             auto_offset_reset="earliest")
    wait_for(lambda: consumer.poll(timeout_ms=200) is not None and consumer.assignment(), 60,
             message="the consumer to join its group")
    consumer.commit()
    consumer.close()  # leaves the group: it is Empty now, with its offsets
    admin = confluent_admin(cluster)

    def described():
        d = admin.describe_consumer_groups([group])[group].result(30)
        return d if d.state.name == "EMPTY" else None

    d = wait_for(described, 30, message="the group to be empty")
    assert d.is_simple_consumer_group is False  # librdkafka: a non-empty protocol type
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(30).valid}
    assert group in listed and listed[group].is_simple_consumer_group is False
    kp = kafka_python_admin(cluster)
    try:
        desc = kp.describe_groups([group])[group]
        assert (desc["group_state"], desc["protocol_type"]) == ("Empty", "consumer"), desc
        listed = {g["group_id"]: g for g in kp.list_groups()}
        assert listed[group]["protocol_type"] == "consumer", listed[group]
    finally:
        kp.close()


# -- IncrementalAlterConfigs and min.insync.replicas ---------------------------------------
def test_append_and_subtract_change_list_settings_and_nothing_else(cluster):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    admin = confluent_admin(cluster)
    topic = new_topic(cluster)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)

    def alter(name: str, value: str, op: AlterConfigOpType) -> None:
        admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op)])])[res].result(30)

    def value(name: str) -> str:
        return admin.describe_configs([res])[res].result(30)[name].value

    assert value("cleanup.policy") == "delete"
    alter("cleanup.policy", "compact", AlterConfigOpType.APPEND)  # on the value in effect (the broker's delete)
    assert value("cleanup.policy") == "compact,delete"
    alter("cleanup.policy", "compact", AlterConfigOpType.APPEND)  # already there: unchanged
    assert value("cleanup.policy") == "compact,delete"
    alter("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)
    assert value("cleanup.policy") == "compact"
    with pytest.raises(Exception, match="INVALID_CONFIG"):
        alter("cleanup.policy", "compact", AlterConfigOpType.SUBTRACT)  # an empty policy
    with pytest.raises(Exception, match="INVALID_CONFIG"):
        alter("min.insync.replicas", "2", AlterConfigOpType.APPEND)  # not a list
    assert (value("cleanup.policy"), value("min.insync.replicas")) == ("compact", "1")  # nothing changed


def test_min_insync_replicas_above_the_replication_factor_is_accepted_and_acks_all_is_refused(cluster):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    admin = confluent_admin(cluster)
    topic = f"fid-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, 1, config={"min.insync.replicas": "2"})])[topic].result(30)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("min.insync.replicas", "3", incremental_operation=AlterConfigOpType.SET)])])[res].result(30)
    assert admin.describe_configs([res])[res].result(30)["min.insync.replicas"].value == "3"

    def produce(acks: str):
        p = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "acks": acks, "retries": 0,
                      "message.timeout.ms": 20000})
        got = []
        p.produce(topic, b"v", on_delivery=lambda err, msg: got.append(err))
        p.flush(30)
        return got

    (err,) = produce("all")
    assert err is not None and err.name() == "NOT_ENOUGH_REPLICAS", err
    assert produce("1") == [None]


# -- Metadata v0 ----------------------------------------------------------------------------
def test_metadata_v0_answers_replica_not_available_and_leaves_dead_replicas_out(cluster):
    """kafka-python speaking Metadata v0 (api_version 0.8.2), as kafka-utils' kafka-check
    does: with broker 3 dead, its partition is REPLICA_NOT_AVAILABLE with broker 3 left
    out of replicas and ISR (Kafka's ZooKeeper-mode broker); v1+ keep the full lists."""
    from kafka import KafkaProducer

    topic = f"fid-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, 1, 3, assignment={0: [1, 2, 3]})

    def partition(api_version):
        p = KafkaProducer(bootstrap_servers=cluster.kafka_bootstrap, api_version=api_version)
        try:
            assert p.partitions_for(topic) == {0}
            return p._metadata._partitions[topic][0]  # the MetadataResponse partition as received
        finally:
            p.close()

    wait_for(lambda: partition((0, 8, 2)).isr_nodes == [1, 2, 3], 30, message="a full ISR")
    before = partition((0, 8, 2))
    assert (before.error_code, before.leader_id, before.replica_nodes) == (0, 1, [1, 2, 3])
    cluster.kill(3)
    try:
        def without_3():
            p = partition((0, 8, 2))
            return p if 3 not in p.replica_nodes else None

        got = wait_for(without_3, 30, message="broker 3 out of the v0 answer")
        assert (got.error_code, got.leader_id, got.replica_nodes) == (9, 1, [1, 2])  # REPLICA_NOT_AVAILABLE
        assert 3 not in got.isr_nodes
        newer = partition((2, 6))
        assert newer.version >= 1 and (newer.error_code, newer.replica_nodes) == (0, [1, 2, 3])
    finally:
        cluster.start(3)
    wait_for(lambda: partition((0, 8, 2)).error_code == 0, 60, message="broker 3 back in the v0 answer")
