"""The test harness of applications (minikafka.testing) on a real cluster, through its own
pytest fixtures (the plugin is loaded by its pytest11 entry point): each fault by role
says which broker and epoch it hit and heals on leaving its block, the waits see the
cluster recover, the CLI and the HTTP control server carry out the same faults, the
checker catches a planted loss, duplicate and reorder in a real log and checks
kafka-python's and aiokafka's records (an aborted aiokafka transaction included), a
cluster a test left broken is healed before the next test, and a user's pytest.ini
sets the cluster and the topic."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

from minikafka import Consumer, Producer, TopicPartition
from minikafka.cluster import launcher
from minikafka.cluster.free_ports import in_ephemeral_range
from minikafka.testing import (Recorder, controller, follower_of, group_coordinator, leader_of, txn_coordinator,
                               wait_until)
from minikafka.testing.control import ControlServer
from minikafka.zk import layout

pytestmark = [pytest.mark.process,
              pytest.mark.minikafka(partitions=3, broker_configs={"zookeeper.session.timeout.ms": "4000",
                                                                  "replica.lag.time.max.ms": "3000"})]


def _produce(cluster, topic, values, partition=None):
    with Producer(cluster.bootstrap, acks="all") as p:
        return [p.send(topic, v.encode(), partition=partition).result(30) for v in values]


def _registered(cluster, broker_id):
    return cluster.zk.get(layout.broker_path(broker_id)) is not None


def test_the_fixtures_give_a_cluster_with_both_listeners_and_a_fresh_topic(minikafka_cluster, minikafka_topic,
                                                                           minikafka_admin):
    import confluent_kafka

    c = minikafka_cluster
    assert sorted(c.brokers) == [1, 2, 3] and len(c.kafka_ports) == 3
    assert not any(in_ephemeral_range(p) for p in [*c.brokers.values(), *c.kafka_ports.values()])
    (desc,) = minikafka_admin.describe_topics([minikafka_topic])
    assert len(desc.partitions) == 3 and all(sorted(p.isr) == [1, 2, 3] for p in desc.partitions)
    p = confluent_kafka.Producer({"bootstrap.servers": c.kafka_bootstrap, "acks": "all"})
    p.produce(minikafka_topic, b"through-the-kafka-listener", partition=1)
    assert p.flush(30) == 0
    with Consumer(c.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(minikafka_topic, 1)])
        got = wait_until(lambda: consumer.poll(timeout_ms=500), 30, "the record")
    assert got[0].value == b"through-the-kafka-listener"


def test_kill_the_leader_of_a_partition_by_role(minikafka_cluster, minikafka_topic):
    c = minikafka_cluster
    _produce(c, minikafka_topic, [f"k{i}" for i in range(20)], partition=0)
    leader, epoch = c.wait.leader(minikafka_topic, 0)
    with c.faults.kill(leader_of(minikafka_topic, 0)) as fault:
        assert (fault.kind, fault.broker, fault.epoch) == ("kill", leader, epoch)
        assert fault.text.startswith(f"killed broker {leader} (the leader of {minikafka_topic}-0, leader epoch "
                                     f"{epoch}), pid ")
        assert launcher.proc_state(fault.pid) == "dead"
        new, new_epoch = c.wait.leader(minikafka_topic, 0, not_broker=leader)
        assert new != leader and new_epoch > epoch
    assert fault.healed and fault.heal_text.startswith(f"started broker {leader} again")
    assert _registered(c, leader)
    c.wait.isr_full(minikafka_topic)
    _produce(c, minikafka_topic, ["after"], partition=0)


def test_pause_a_follower_and_stop_the_controller(minikafka_cluster, minikafka_topic):
    c = minikafka_cluster
    st = c.faults.find(follower_of(minikafka_topic, 1))
    with c.faults.pause(follower_of(minikafka_topic, 1)) as paused:
        assert paused.broker == st.broker and "a follower of" in paused.text
        assert launcher.proc_state(c.pid(paused.broker)) == "stopped"
    assert launcher.proc_state(c.pid(paused.broker)) == "running"
    old = c.faults.find(controller())
    with c.faults.stop(controller()) as stopped:
        assert stopped.broker == old.broker and f"controller epoch {old.epoch}" in stopped.text
        new = wait_until(lambda: (f := c.faults.find(controller())).broker != old.broker and f, 30, "a new controller")
        assert new.epoch == old.epoch + 1
    c.wait.isr_full()


def test_the_coordinators_of_a_group_and_of_a_transactional_id_by_role(minikafka_cluster, minikafka_topic,
                                                                       minikafka_admin):
    c = minikafka_cluster
    group = f"g-{minikafka_topic}"
    _produce(c, minikafka_topic, ["a", "b", "c"])
    with Consumer(c.bootstrap, group_id=group, auto_offset_reset="earliest") as consumer:
        consumer.subscribe([minikafka_topic])
        wait_until(lambda: consumer.poll(timeout_ms=200) or consumer.assignment(), 30, "an assignment")
        described = c.wait.group_stable(group, members=1)
        assert c.faults.find(group_coordinator(group)).broker == described.coordinator
        consumer.commit()
    with c.faults.restart(group_coordinator(group)) as restarted:
        assert restarted.kind == "restart" and restarted.healed
        assert restarted.text.startswith(f"restarted broker {described.coordinator} (the coordinator of group "
                                         f"{group!r}, leader epoch ")
    c.wait.isr_full("__consumer_offsets")
    with Producer(c.bootstrap, transactional_id=f"t-{minikafka_topic}") as p:
        p.init_transactions()
        found = c.faults.find(txn_coordinator(f"t-{minikafka_topic}"))
        assert found.broker == minikafka_admin.find_transaction_coordinator(f"t-{minikafka_topic}")
        with c.faults.kill(txn_coordinator(f"t-{minikafka_topic}")) as killed:
            assert killed.broker == found.broker and "the transaction coordinator of" in killed.text


def test_link_faults_a_session_expiry_and_a_zookeeper_outage(minikafka_cluster, minikafka_topic):
    c = minikafka_cluster
    assert c.links is not None, "this test runs as root: the session cluster's brokers are in cgroups"
    with c.faults.cut(leader_of(minikafka_topic, 0), follower_of(minikafka_topic, 0)) as cut:
        assert cut.text.startswith("cut the link broker ") and "(dropping every packet)" in cut.text
        assert any("DROP" in r for r in c.links.links.rules())
    assert not any("DROP" in r for r in c.links.links.rules())
    with c.faults.slow("controller", "zookeeper", loss=0.25) as slow:
        assert "dropping 25% of the packets" in slow.text
        assert any("statistic" in r and "0.25" in r for r in c.links.links.rules())
    victim = c.faults.find(follower_of(minikafka_topic, 2)).broker
    owner = c.zk.get(layout.broker_path(victim))[1].ephemeralOwner
    with c.faults.expire_session(follower_of(minikafka_topic, 2)) as expired:
        assert expired.broker == victim and f"session {owner:#x}" in expired.text
    assert c.zk.get(layout.broker_path(victim))[1].ephemeralOwner not in (None, owner)
    with c.faults.zookeeper_outage() as outage:
        assert outage.text.startswith("killed ZooKeeper server 1 (pid ")
        assert "ZooKeeper server 1 is not running" in c.broken()
    assert c.heal() == [] and c.broken() == []


def test_caught_up_waits_for_the_group_to_commit_the_end_offsets(minikafka_cluster, minikafka_topic):
    c = minikafka_cluster
    group = f"g-{minikafka_topic}"
    _produce(c, minikafka_topic, [f"v{i}" for i in range(30)])
    with Consumer(c.bootstrap, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
        consumer.subscribe([minikafka_topic])
        read = 0
        while read < 30:
            got = consumer.poll(timeout_ms=500)
            read += len(got)
            consumer.commit()
        committed = c.wait.caught_up(group, minikafka_topic, timeout_s=30)
    assert sum(committed.values()) == 30


def test_the_cli_and_the_http_endpoint_carry_out_the_same_faults(minikafka_cluster, minikafka_topic):
    c = minikafka_cluster
    run = lambda *a: subprocess.run([sys.executable, "-m", "minikafka", "fault", *a, "--dir", c.dir],  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    leader, epoch = c.wait.leader(minikafka_topic, 2)
    out = run("find", f"leader:{minikafka_topic}:2")
    assert out.returncode == 0 and out.stdout == f"broker {leader} (the leader of {minikafka_topic}-2, leader epoch {epoch})\n"
    bad = run("kill", f"leader:{minikafka_topic}:9")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == f"minikafka: error: no partition {minikafka_topic}-9 (UNKNOWN_TOPIC_OR_PARTITION)"
    assert c.broken() == []  # the mistake changed nothing
    post = lambda url, body: json.loads(urllib.request.urlopen(urllib.request.Request(  # noqa: E731
        url, method="POST", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}),
        timeout=120).read())
    with ControlServer(c) as server:
        (Path(c.dir) / "control.json").write_text(json.dumps({"url": server.url, "pid": os.getpid()}))
        try:
            # the command line, forwarded to the control server of the cluster's folder
            killed = run("kill", f"leader:{minikafka_topic}:2", "--json")
            assert killed.returncode == 0, killed.stderr
            action = json.loads(killed.stdout)
            assert (action["kind"], action["broker"], action["epoch"]) == ("kill", leader, epoch)
            assert launcher.proc_state(action["pid"]) == "dead"
            listed = run("list")
            assert f"{action['id']}: killed broker {leader} (the leader of {minikafka_topic}-2" in listed.stdout
            healed = run("heal", str(action["id"]))
            assert healed.returncode == 0 and healed.stdout.startswith(f"started broker {leader} again")
            # the same over HTTP, as a Java or Node test sends it
            found = post(server.url + "/v1/find", {"target": f"follower:{minikafka_topic}:2"})
            paused = post(server.url + "/v1/faults/pause", {"target": f"follower:{minikafka_topic}:2"})
            assert paused["broker"] == found["broker"] and launcher.proc_state(c.pid(found["broker"])) == "stopped"
            assert post(server.url + "/v1/faults/heal", {"id": paused["id"]})["done"] == [
                f"resumed broker {found['broker']}, pid {paused['pid']}"]
            forged = urllib.request.Request(server.url + "/v1/faults/kill", method="POST", data=b"target=1",
                                            headers={"Content-Type": "application/x-www-form-urlencoded"})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(forged, timeout=10)
            assert refused.value.code == 415
            with pytest.raises(urllib.error.HTTPError) as unknown:
                post(server.url + "/v1/faults/kill", {"target": "group:"})
            assert unknown.value.code == 400 and json.loads(unknown.value.read())["error"] == "INVALID_REQUEST"
        finally:
            (Path(c.dir) / "control.json").unlink()
    assert c.broken() == []


def test_the_checker_catches_a_planted_loss_duplicate_and_reorder(minikafka_cluster, minikafka_topic, minikafka_admin):
    c = minikafka_cluster
    rec = Recorder()
    with Producer(c.bootstrap, acks="all") as raw:
        p = rec.producer(raw)
        for i in range(6):
            p.send(minikafka_topic, f"r{i}".encode(), partition=0).result(30)
        raw.send(minikafka_topic, b"r3", partition=0).result(30)  # a duplicate, past the recorder
        # a reorder: "z1" recorded as acknowledged at offset 8 before "z0" was sent, which got offset 7
        first = raw.send(minikafka_topic, b"z0", partition=0).result(30)
        second = raw.send(minikafka_topic, b"z1", partition=0).result(30)
    op = rec.sent(minikafka_topic, "z1", 0)
    rec.acked(op, 0, second.offset)
    op = rec.sent(minikafka_topic, "z0", 0)
    rec.acked(op, 0, first.offset)
    with Consumer(c.bootstrap, auto_offset_reset="earliest") as consumer:
        reader = rec.consumer(consumer, name="reader")
        reader.assign([TopicPartition(minikafka_topic, 0)])
        wait_until(lambda: len(rec.history.reads) >= 9 or reader.poll(timeout_ms=200) and False, 30, "every record")
    assert rec.check(c).ok is False  # the duplicate and the reorder already
    minikafka_admin.delete_records({TopicPartition(minikafka_topic, 0): 2})  # planted loss: r0 and r1 go
    report = rec.check(c)
    t = (minikafka_topic, 0)
    assert report.lost == [(t, 0, "r0", None), (t, 1, "r1", None)]
    assert report.duplicated == [("r3", [(t, 3), (t, 6)])]
    assert report.reordered == [(t, "z1", 8, "z0", 7)]
    assert not report.unread and not report.reread
    assert [r[:3] for r in report.vanished] == [("reader", t, 0), ("reader", t, 1)]  # read, then deleted
    text = str(report)
    assert "lost: acknowledged 'r0' at " + f"{minikafka_topic}-0@0" in text and "ok=false" in text



def test_the_recorder_checks_a_kafka_python_producer_and_consumer(minikafka_cluster, minikafka_topic):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KpTopicPartition

    c = minikafka_cluster
    rec = Recorder()
    raw = KafkaProducer(**c.kafka_python_config(), acks="all")
    try:
        p = rec.producer(raw)
        futures = [p.send(minikafka_topic, f"kp{i}".encode(), partition=i % 3) for i in range(30)]
        p.flush(30)
        assert all(f.succeeded() for f in futures)
    finally:
        raw.close(timeout=10)
    assert rec.history.acked == 30
    raw_consumer = KafkaConsumer(**c.kafka_python_config(), auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer = rec.consumer(raw_consumer, name="kp-reader")
        consumer.assign([KpTopicPartition(minikafka_topic, i) for i in range(3)])
        wait_until(lambda: (consumer.poll(timeout_ms=200), rec.unread("kp-reader") == 0)[1], 60, "every record")
    finally:
        raw_consumer.close()
    report = rec.check(c)
    assert report.ok and not report.lost, str(report)
    assert report.line().startswith("acked=30 read=30 lost=0 ")


def test_the_recorder_checks_an_aiokafka_transactional_producer_and_consumer(minikafka_cluster, minikafka_topic):
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    c = minikafka_cluster
    rec = Recorder()

    async def run():
        raw = AIOKafkaProducer(bootstrap_servers=c.kafka_bootstrap, transactional_id=f"aio-{minikafka_topic}")
        await asyncio.wait_for(raw.start(), 60)
        try:
            p = rec.producer(raw, name="aio")
            async with p.transaction():  # through the recorder: counted at the commit
                await p.send_and_wait(minikafka_topic, b"kept0", partition=0)
                for i in range(1, 5):
                    await p.send(minikafka_topic, f"kept{i}".encode(), partition=i % 3)
            with pytest.raises(RuntimeError):
                async with p.transaction():  # aborted: its records are not acknowledged ones
                    for i in range(3):
                        await p.send_and_wait(minikafka_topic, f"dropped{i}".encode(), partition=i)
                    raise RuntimeError("the application gives up")
            async with p.transaction():
                await p.send(minikafka_topic, b"after", partition=1)
        finally:
            await raw.stop()
        raw_consumer = AIOKafkaConsumer(bootstrap_servers=c.kafka_bootstrap, auto_offset_reset="earliest",
                                        isolation_level="read_committed", enable_auto_commit=False)
        await raw_consumer.start()
        try:
            consumer = rec.consumer(raw_consumer, name="aio-reader", read_committed=True)
            consumer.assign([AioTopicPartition(minikafka_topic, i) for i in range(3)])
            deadline = asyncio.get_running_loop().time() + 60
            while rec.unread("aio-reader") and asyncio.get_running_loop().time() < deadline:
                await consumer.getmany(timeout_ms=200)
        finally:
            await raw_consumer.stop()

    asyncio.run(run())
    assert [op.value for op in rec.history.produces if op.outcome.value == "fail"] == ["dropped0", "dropped1",
                                                                                       "dropped2"]
    assert len(rec.aborted) == 3  # the offsets the aborted records took in the log
    report = rec.check(c)
    assert report.ok and not report.lost and not report.aborted_seen, str(report)
    assert report.line().startswith("acked=6 read=6 lost=0 ")

USER_FILE = '''
import pytest
from minikafka.testing import leader_of, follower_of

pytestmark = pytest.mark.minikafka(brokers=3, partitions=1)
SEEN = {}

def test_leaves_the_cluster_broken(minikafka_cluster, minikafka_topic):
    SEEN["topic"] = minikafka_topic
    minikafka_cluster.faults.kill(leader_of(minikafka_topic, 0))
    minikafka_cluster.faults.pause(follower_of(minikafka_topic, 0))
    minikafka_cluster.faults.cut("broker:1", "zookeeper")
    assert minikafka_cluster.broken()

def test_finds_it_healed(minikafka_cluster, minikafka_topic, minikafka_admin):
    assert minikafka_cluster.broken() == []
    assert SEEN["topic"] not in minikafka_admin.list_topics()
    (d,) = minikafka_admin.describe_topics([minikafka_topic])
    assert all(sorted(p.isr) == [1, 2, 3] for p in d.partitions)
'''


def test_a_cluster_a_test_left_broken_is_healed_before_the_next_test(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_FILE))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=240",
                          str(tmp_path / "test_user.py")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "2 passed" in out.stdout


INI_FILE = """
[pytest]
minikafka_brokers = 1
minikafka_partitions = 2
minikafka_topic_configs =
    retention.ms = 7200000
    max.message.bytes=65536
minikafka_broker_configs =
    log.retention.hours=5
minikafka_links = off
"""

INI_USER_FILE = '''
def test_the_ini_options_set_the_cluster_and_the_topic(minikafka_cluster, minikafka_topic, minikafka_admin):
    c = minikafka_cluster
    assert sorted(c.brokers) == [1] and c.registered() == [1]
    assert c.links is None  # minikafka_links = off: no cgroups, even as root
    (d,) = minikafka_admin.describe_topics([minikafka_topic])
    assert [(p.partition, p.replicas) for p in d.partitions] == [(0, [1]), (1, [1])]  # RF: min(3, 1 broker)
    configs = minikafka_admin.describe_configs(minikafka_topic)
    assert configs["retention.ms"][0] == "7200000" and configs["max.message.bytes"][0] == "65536"
    assert minikafka_admin.describe_broker_configs(1)["log.retention.hours"][0] == "5"
'''


def test_the_ini_options_of_a_users_pytest_ini_set_the_cluster_and_the_topic(tmp_path):
    (tmp_path / "pytest.ini").write_text(INI_FILE)
    (tmp_path / "test_user_ini.py").write_text(textwrap.dedent(INI_USER_FILE))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "timeout=240",
                          "test_user_ini.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "1 passed" in out.stdout

@pytest.mark.minikafka(security="SASL_SSL", sasl_users={"admin": "admin-secret", "app": "app-secret"})
def test_a_sasl_ssl_kafka_listener_reaches_the_application_and_refuses_strangers(minikafka_cluster, minikafka_topic):
    import confluent_kafka
    from confluent_kafka.admin import AdminClient

    c = minikafka_cluster
    conf = c.kafka_client_config(user="app")
    assert (conf["security.protocol"], conf["sasl.username"], conf["sasl.password"]) == ("SASL_SSL", "app", "app-secret")
    assert open(conf["ssl.ca.location"]).read().startswith("-----BEGIN CERTIFICATE-----")
    # the application's producer, recorded, through a leader kill
    rec = Recorder()
    p = rec.producer(confluent_kafka.Producer({**conf, "acks": "all", "enable.idempotence": True}))
    for i in range(20):
        p.produce(minikafka_topic, f"s{i}".encode(), partition=0)
    assert p.flush(30) == 0
    with c.faults.kill(leader_of(minikafka_topic, 0)):
        c.wait.leader(minikafka_topic, 0)
        for i in range(20, 40):
            p.produce(minikafka_topic, f"s{i}".encode(), partition=0)
        assert p.flush(60) == 0
    consumer = confluent_kafka.Consumer({**c.kafka_client_config(), "group.id": "secured-readers",
                                         "auto.offset.reset": "earliest"})
    try:
        reader = rec.consumer(consumer)
        reader.assign([confluent_kafka.TopicPartition(minikafka_topic, 0, 0)])
        wait_until(lambda: (reader.poll(0.5), len(rec.history.reads) >= 40)[1], 60, "the 40 records")
    finally:
        consumer.close()
    report = rec.check(c)
    assert report.ok, str(report)
    # a wrong password, and a client that does not speak TLS, get nothing
    seen: list = []
    wrong = AdminClient({**conf, "sasl.password": "guess", "error_cb": seen.append})
    with pytest.raises(confluent_kafka.KafkaException):
        wrong.list_topics(timeout=10)
    wrong.poll(1)  # the error callbacks
    assert any(e.code() == confluent_kafka.KafkaError._AUTHENTICATION and "Invalid username or password" in e.str()
               for e in seen), seen
    plain = AdminClient({"bootstrap.servers": c.kafka_bootstrap})
    with pytest.raises(confluent_kafka.KafkaException):
        plain.list_topics(timeout=5)
    # the Java client's properties name the same settings
    props = c.java_client_properties(user="app")
    assert f"bootstrap.servers={c.kafka_bootstrap}" in props and "security.protocol=SASL_SSL" in props
    assert 'username="app" password="app-secret";' in props and f"ssl.truststore.location={conf['ssl.ca.location']}" in props
