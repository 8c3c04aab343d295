"""Kafka's ZooKeeper admin paths written by hand, in Kafka 2.x's JSON, as external
Kafka tools write them: the controller and the brokers honour them."""
from __future__ import annotations

import json
import uuid

import pytest

from minikafka import Admin, Producer, errors
from minikafka.zk import layout
from process_helpers import holds, run_cli, wait_for, zk_client

pytestmark = pytest.mark.process


@pytest.fixture
def zk(cluster):
    client = zk_client(cluster)
    yield client
    client.stop()
    client.close()


def leader_of(cluster, topic: str, partition: int = 0) -> int:
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    return d.partitions[partition].leader


def kilobyte_refused(cluster, topic: str) -> bool:
    """True when a record of 1,000 bytes to ``topic`` is refused with MESSAGE_TOO_LARGE (the
    settings below lower max.message.bytes / message.max.bytes to 200)."""
    with Producer(cluster.bootstrap, acks="all", retries=0, delivery_timeout_ms=5000) as p:
        try:
            p.send(topic, b"x" * 1000).result(10)
            return False
        except errors.MessageTooLargeError:
            return True


def test_a_config_change_notification_applies_a_topic_setting_on_every_broker(cluster, zk):
    topic = f"cfg-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=2)
    wait_for(lambda: leader_of(cluster, topic) >= 0, 30, message="a leader")
    with Producer(cluster.bootstrap, acks="all") as p:
        p.send(topic, b"accepted").result(30)
    # what kafka-configs.sh --zookeeper does: the entity's config, then a notification
    zk.set(layout.topic_config_path(topic), json.dumps({"version": 1, "config": {"max.message.bytes": "200"}}).encode())
    zk.create(layout.CONFIG_CHANGE_PREFIX, json.dumps({"version": 2, "entity_path": f"topics/{topic}"}).encode(),
              sequence=True, makepath=True)

    wait_for(lambda: kilobyte_refused(cluster, topic), 30, interval_s=0.5, message="a 1,000-byte record refused with max.message.bytes=200")


def test_an_empty_preferred_election_elects_nothing(make_cluster):
    c = make_cluster(brokers=3)
    topic = "pref"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3, assignment={0: [1, 2, 3]})
    wait_for(lambda: leader_of(c, topic) == 1, 30, message="broker 1 leading")
    c.stop(1)  # controlled shutdown moves the leadership away
    c.start(1)
    moved = wait_for(lambda: (lambda lead: lead if lead in (2, 3) else None)(leader_of(c, topic)), 30,
                     message="a non-preferred leader")
    client = zk_client(c)
    try:
        wait_for(lambda: json.loads(client.get(layout.partition_state_path(topic, 0))[0])["isr"].count(1) == 1, 60,
                 message="broker 1 back in the ISR")
        for body in (b'{"version":1,"partitions":[]}', b"not json"):
            client.create(layout.PREFERRED_REPLICA_ELECTION, body, makepath=True)
            wait_for(lambda: client.exists(layout.PREFERRED_REPLICA_ELECTION) is None, 30,
                     message="the controller to consume the znode")
            assert leader_of(c, topic) == moved  # nothing elected
        # a listed partition is elected
        client.create(layout.PREFERRED_REPLICA_ELECTION,
                      json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0}]}).encode())
        wait_for(lambda: leader_of(c, topic) == 1, 30, message="the preferred leader back")
    finally:
        client.stop()
        client.close()


def test_kafka_top_level_znodes_exist_and_registrations_leave_out_an_unset_rack(cluster, zk):
    for path in ("/brokers/seqid", "/config/changes", "/config/brokers", "/config/clients", "/config/users",
                 "/consumers", "/log_dir_event_notification", "/admin/delete_topics", "/isr_change_notification",
                 "/latest_producer_id_block"):
        assert zk.exists(path) is not None, path
    registration = json.loads(zk.get(layout.broker_path(1))[0])
    assert "rack" not in registration


def test_a_partition_added_on_the_topic_znode_gets_a_leader(cluster, zk):
    """kafka-topics.sh --alter --partitions (ZooKeeper mode) rewrites /brokers/topics/T."""
    topic = f"grow-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=2)
    wait_for(lambda: leader_of(cluster, topic) >= 0, 30, message="a leader")
    data = json.loads(zk.get(layout.topic_path(topic))[0])
    data["partitions"]["1"] = [2, 3]
    zk.set(layout.topic_path(topic), json.dumps(data).encode())
    wait_for(lambda: zk.exists(layout.partition_state_path(topic, 1)) is not None, 30,
             message="the new partition's state znode")

    def led() -> bool:
        with Admin(cluster.bootstrap) as admin:
            (d,) = admin.describe_topics([topic])
        return len(d.partitions) == 2 and d.partitions[1].leader in (2, 3)

    wait_for(led, 30, message="partition 1 led by one of its replicas")
    with Producer(cluster.bootstrap, acks="all") as p:
        assert p.send(topic, b"new", partition=1).result(30).offset == 0


def test_a_waiting_reassignment_does_not_rewrite_its_znode_in_a_loop(make_cluster):
    c = make_cluster(brokers=3)
    topic = "moving"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=2, assignment={0: [1, 2]})
    wait_for(lambda: leader_of(c, topic) == 1, 30, message="a leader")
    client = zk_client(c)
    c.kill(3, "STOP")  # the new replica cannot catch up: the reassignment has to wait
    try:
        client.create(layout.REASSIGN_PARTITIONS, json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2, 3]}]}).encode(),
            makepath=True)
        wait_for(lambda: json.loads(client.get(layout.topic_path(topic))[0])["partitions"]["0"] == [1, 2, 3], 30,
                 message="AR extended to new + old")
        first = client.exists(layout.REASSIGN_PARTITIONS).version
        # a loop would rewrite it every few milliseconds; fail at the second rewrite
        def rewrites() -> int:
            stat = client.exists(layout.REASSIGN_PARTITIONS)
            assert stat is not None, "the reassignment cannot finish while broker 3 is stopped"
            return stat.version - first

        holds(lambda: rewrites() <= 1, 3, 0.02,
              message="/admin/reassign_partitions written at most once more while the reassignment waits")
    finally:
        c.resume(3)
    wait_for(lambda: client.exists(layout.REASSIGN_PARTITIONS) is None, 60, message="the reassignment to finish")
    client.stop()
    client.close()


def test_dynamic_broker_configs_by_hand_and_by_cli_apply_live(make_cluster):
    """kafka-configs.sh --zookeeper --entity-type brokers --entity-default writes
    /config/brokers/<default> and a notification: every broker applies it at once; the
    CLI's --broker-defaults and --broker N do the same through the API."""
    c = make_cluster(brokers=2)
    topic = "dyn"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=2)
    wait_for(lambda: leader_of(c, topic) >= 0, 30, message="a leader")

    def refused() -> bool:
        return kilobyte_refused(c, topic)

    assert not refused()
    client = zk_client(c)
    try:
        client.create("/config/brokers/<default>", json.dumps({"version": 1, "config": {"message.max.bytes": "200"}}).encode(),
                      makepath=True)
        client.create(layout.CONFIG_CHANGE_PREFIX, json.dumps({"version": 2, "entity_path": "brokers/<default>"}).encode(),
                      sequence=True, makepath=True)
        wait_for(refused, 30, interval_s=0.5, message="a 1,000-byte record refused with the brokers' message.max.bytes=200")
        with Admin(c.bootstrap) as admin:
            settings = admin.describe_broker_configs(2)
            assert settings["message.max.bytes"] == ("200", "dynamic_default", False)
            assert settings["replica.lag.time.max.ms"][2]  # read-only: static
            # a topic's own setting still wins over the brokers' default
            admin.alter_configs(topic, set={"max.message.bytes": "1048588"})
            wait_for(lambda: not refused(), 30, interval_s=0.5, message="the topic's override applied")
            admin.alter_configs(topic, delete=["max.message.bytes"])
            wait_for(refused, 30, interval_s=0.5, message="back to the brokers' default")
        # one broker's own setting is layered over the default
        r = run_cli("configs", "alter", "--broker", "1", "--add-config", "message.max.bytes=1048588",
                    "--bootstrap-server", c.bootstrap)
        assert r.returncode == 0 and r.stdout.strip() == "Completed updating config for broker 1.", r.stderr
        r = run_cli("configs", "describe", "--broker", "1", "--bootstrap-server", c.bootstrap)
        assert "message.max.bytes=1048588\t(dynamic_broker)" in r.stdout, r.stdout
        r = run_cli("configs", "alter", "--broker-defaults", "--delete-config", "message.max.bytes",
                    "--bootstrap-server", c.bootstrap)
        assert r.returncode == 0 and "default config for brokers" in r.stdout, r.stderr
        wait_for(lambda: json.loads(client.get("/config/brokers/<default>")[0])["config"] == {}, 10,
                 message="the default emptied")
        wait_for(lambda: not refused(), 30, interval_s=0.5, message="a 1,000-byte record accepted again")
        # a setting that cannot change live: one line, exit 2, nothing stored
        r = run_cli("configs", "alter", "--broker-defaults", "--add-config", "replica.lag.time.max.ms=100",
                    "--bootstrap-server", c.bootstrap)
        assert r.returncode == 2 and "INVALID_REQUEST" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert json.loads(client.get("/config/brokers/<default>")[0])["config"] == {}
    finally:
        client.stop()
        client.close()


@pytest.mark.parametrize("name", ["", ".", "a/b", "x" * 250])
def test_an_illegal_topic_name_never_reaches_a_znode(cluster, zk, name):
    """An empty name would name /brokers/topics itself: deleting or describing it is refused."""
    from minikafka.rpc import call_sync

    port = cluster.brokers[1]
    deleted = call_sync("127.0.0.1", port, "delete_topics", {"topics": [name], "timeout_ms": 0})
    assert [t["error"] for t in deleted["topics"]] == ["INVALID_TOPIC_EXCEPTION"]
    described = call_sync("127.0.0.1", port, "describe_configs", {"topic": name}, raise_error=False)
    assert described["error"] == "INVALID_TOPIC_EXCEPTION"
    assert zk.exists(layout.BROKER_TOPICS)
