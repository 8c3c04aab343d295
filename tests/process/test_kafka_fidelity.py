"""Kafka behaviours that third-party clients and tools rely on, checked through those
clients: kafka-python, confluent-kafka (librdkafka), and our own Admin."""
from __future__ import annotations

import uuid

import pytest

from minikafka import Admin, Producer as OurProducer
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


def test_min_insync_replicas_above_the_replication_factor_is_accepted_and_counts_as_the_factor(cluster):
    """Kafka 3.9 caps min.insync.replicas at the partition's replica count for acks=all
    (Partition.effectiveMinIsr; found by the differential fuzzer): a topic of replication
    factor 1 with min.insync.replicas=3 takes acks=all writes."""
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

    assert produce("all") == [None]
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


# -- topic configs ----------------------------------------------------------------------------
KAFKA_TOPIC_CONFIGS = {  # each of these was refused before; values other than Kafka's defaults
    "compression.type": "zstd", "message.timestamp.type": "LogAppendTime", "flush.ms": "1000",
    "flush.messages": "100", "index.interval.bytes": "8192", "segment.index.bytes": "1048576",
    "preallocate": "true", "segment.jitter.ms": "10", "max.compaction.lag.ms": "600000",
    "message.downconversion.enable": "false", "file.delete.delay.ms": "1000",
    "leader.replication.throttled.replicas": "0:1", "follower.replication.throttled.replicas": "0:2",
    "message.timestamp.difference.max.ms": "3600000", "message.timestamp.before.max.ms": "3600000",
    "message.timestamp.after.max.ms": "3600000", "unclean.leader.election.enable": "true",
    "min.compaction.lag.ms": "1000",
}


def test_create_topics_and_alter_configs_accept_kafkas_topic_configs(cluster):
    from confluent_kafka.admin import ConfigResource, NewTopic

    admin = confluent_admin(cluster)
    topic = f"fid-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, 3, config=KAFKA_TOPIC_CONFIGS)])[topic].result(30)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([res])[res].result(30)
    assert {k: described[k].value for k in KAFKA_TOPIC_CONFIGS} == KAFKA_TOPIC_CONFIGS
    assert described["remote.storage.enable"].value == "false" and described["remote.storage.enable"].is_default

    # AlterConfigs (not incremental: replaces every override), through kafka-python
    from kafka.admin import ConfigResource as KpResource, ConfigResourceType

    kp = kafka_python_admin(cluster)
    try:
        changed = {"compression.type": "uncompressed", "preallocate": "false", "flush.messages": "7"}
        assert kp.alter_configs([KpResource(ConfigResourceType.TOPIC, topic, configs=changed)],
                                raise_on_unknown=False, incremental=False) == {"topic": {topic: "OK"}}
        described = admin.describe_configs([res])[res].result(30)
        assert {k: described[k].value for k in changed} == changed
        # kafka-python re-sends the other overrides (AlterConfigs replaces them all)
        assert described["message.timestamp.type"].value == "LogAppendTime"
        for bad in ({"compression.type": "brotli"}, {"message.timestamp.type": "Now"},
                    {"leader.replication.throttled.replicas": "all"}):
            answer = kp.alter_configs([KpResource(ConfigResourceType.TOPIC, topic, configs=bad)],
                                      raise_on_unknown=False, incremental=False)
            assert "InvalidConfig" in str(answer["topic"][topic]), answer
        described = admin.describe_configs([res])[res].result(30)
        assert {k: described[k].value for k in changed} == changed  # nothing changed
    finally:
        kp.close()


def _stored_batches(cluster, topic: str) -> list:
    """The batches partition 0's leader (broker 1) stores, as its followers fetch them."""
    from minikafka.protocol.records import split_batches
    from replica_checks import post

    r = post(cluster.brokers[1], "fetch", {"replica_id": -1, "max_wait_ms": 0, "partitions": [
        {"topic": topic, "partition": 0, "fetch_offset": 0}]})
    return [h for h, _ in split_batches(r["partitions"][0]["records"])]


@pytest.mark.parametrize("topic_codec, stored", [("zstd", "zstd"), ("producer", "gzip"), ("uncompressed", "none")])
def test_the_leader_stores_batches_in_the_topics_compression_type(cluster, topic_codec, stored):
    from kafka import KafkaConsumer, KafkaProducer

    topic = f"fid-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, 1, 3, config={"compression.type": topic_codec}, assignment={0: [1, 2, 3]})
    producer = KafkaProducer(bootstrap_servers=cluster.kafka_bootstrap, acks="all", compression_type="gzip",
                             linger_ms=50)
    for i in range(20):
        producer.send(topic, key=b"k%d" % i, value=b"value-%d" % i * 10)
    producer.flush(30)
    producer.close()
    batches = wait_for(lambda: _stored_batches(cluster, topic) or None, 30, message="the stored batches")
    assert {h.compression for h in batches} == {stored}
    consumer = KafkaConsumer(topic, bootstrap_servers=cluster.kafka_bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=10000)
    values = []
    for m in consumer:  # stops after 10 s without a record at the latest
        values.append(m.value)
        if len(values) == 20:
            break
    consumer.close()
    assert values == [b"value-%d" % i * 10 for i in range(20)]


def test_log_append_time_is_stamped_by_the_leader_and_answered_on_both_listeners(cluster):
    import time

    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer
    from minikafka.protocol.records import encode_batch
    from replica_checks import post

    topic = f"fid-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, 1, 3, config={"message.timestamp.type": "LogAppendTime"},
                           assignment={0: [1, 2, 3]})
    before = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "acks": "all"})
    delivered = []
    producer.produce(topic, b"old", timestamp=1_000, on_delivery=lambda err, msg: delivered.append((err, msg)))
    producer.flush(30)
    ((err, msg),) = delivered
    assert err is None
    kind, stamped = msg.timestamp()  # librdkafka takes it from the produce answer's log_append_time
    assert kind == TIMESTAMP_LOG_APPEND_TIME and before - 1000 <= stamped <= int(time.time() * 1000) + 1000
    answer = post(cluster.brokers[1], "produce", {"acks": -1, "partitions": [
        {"topic": topic, "partition": 0, "records": encode_batch([(None, b"ours", None, 2_000)])}]})
    (p,) = answer["partitions"]
    assert p["error_code"] == 0 and p["log_append_time"] >= stamped
    with OurProducer(cluster.bootstrap, acks="all") as ours:  # our client reports it as Kafka's producer does
        meta = ours.send(topic, b"third", timestamp_ms=3_000).result(30)
    assert meta.timestamp >= p["log_append_time"]
    consumer = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    wait_for(lambda: got.extend(m for m in [consumer.poll(0.5)] if m is not None and not m.error()) or len(got) >= 2,
             30, message="both records")
    consumer.close()
    assert [(m.value(), m.timestamp()) for m in got][:2] == [
        (b"old", (TIMESTAMP_LOG_APPEND_TIME, stamped)), (b"ours", (TIMESTAMP_LOG_APPEND_TIME, p["log_append_time"]))]


# -- CreateTopics: the topic is looked for first ------------------------------------------
def test_creating_an_existing_topic_is_topic_already_exists_whatever_else_is_wrong(cluster):
    """Kafka's CreateTopics looks for the topic before it checks the counts and the configs
    (found by the differential fuzzer): an existing topic asked again with 0 partitions, a
    replication factor of 0 or a bad config value is TOPIC_ALREADY_EXISTS."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    topic = new_topic(cluster)
    admin = confluent_admin(cluster)
    for ask in (NewTopic(topic, 0, 1), NewTopic(topic, 1, 0), NewTopic(topic, 1, 1, config={"retention.ms": "abc"})):
        with pytest.raises(KafkaException) as refused:
            admin.create_topics([ask])[topic].result(30)
        assert refused.value.args[0].name() == "TOPIC_ALREADY_EXISTS", (ask, refused.value)
    missing = f"fid-{uuid.uuid4().hex[:8]}"
    with pytest.raises(KafkaException) as refused:  # a new topic still gets the count's own error
        admin.create_topics([NewTopic(missing, 0, 1)])[missing].result(30)
    assert refused.value.args[0].name() == "INVALID_PARTITIONS"



def test_an_offset_commit_for_unknown_partitions_only_creates_no_group(cluster):
    """Kafka refuses the partitions of a topic that does not exist before the group
    coordinator sees the commit (found by the differential fuzzer): the group stays
    unknown (DescribeGroups: Dead), where minikafka made an empty group."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    admin = confluent_admin(cluster)
    group = f"g-{uuid.uuid4().hex[:8]}"
    asked = ConsumerGroupTopicPartitions(group, [TopicPartition(f"no-such-{uuid.uuid4().hex[:6]}", 0, 5)])
    (done,) = admin.alter_consumer_group_offsets([asked]).values()
    got = done.result(30)
    assert [tp.error.name() for tp in got.topic_partitions] == ["UNKNOWN_TOPIC_OR_PART"]
    described = admin.describe_consumer_groups([group])[group].result(30)
    assert described.state.name == "DEAD", described.state
    listed = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert group not in listed


def test_deleting_an_empty_groups_last_offsets_deletes_the_group(cluster):
    """Kafka's OffsetDelete ends an empty group left without offsets (cleanupGroupMetadata:
    the group is Dead; found by the differential fuzzer), where minikafka kept it Empty."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    from minikafka.reference.fuzz_run import Wire

    topic = new_topic(cluster, partitions=2)
    admin = confluent_admin(cluster)
    group = f"g-{uuid.uuid4().hex[:8]}"
    (done,) = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 1)])]).values()
    done.result(30)
    wire = Wire(cluster.kafka_bootstrap)
    try:
        assert wire.offset_delete(group, topic, 0) == {"error": "NONE", "partitions": ["NONE"]}
        assert admin.describe_consumer_groups([group])[group].result(30).state.name == "EMPTY"  # one offset left
        assert wire.offset_delete(group, topic, 1) == {"error": "NONE", "partitions": ["NONE"]}
    finally:
        wire.close()
    assert admin.describe_consumer_groups([group])[group].result(30).state.name == "DEAD"
