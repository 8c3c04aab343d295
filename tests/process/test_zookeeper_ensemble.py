"""A 3-server ZooKeeper ensemble under a 3-broker cluster (``cluster up --zookeeper-nodes 3``,
the brokers' zookeeper.connect ``h1:p1,h2:p2,h3:p3/kafka``): its status, one server killed
(the leader) and the quorum lost, as Kafka in ZooKeeper mode lives through them.

The tests share one cluster and run in file order; each leaves every server and broker
running."""
from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from minikafka.cluster import launcher
from minikafka.zk import layout
from process_helpers import holds, read_all, run_cli, start_cluster, stop_cluster, wait_for, zk_client

pytestmark = pytest.mark.process

SESSION_TIMEOUT_MS = 6000
CONFIGS = {"group.initial.rebalance.delay.ms": "200", "replica.lag.time.max.ms": "2000",
           "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)}


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory, request):
    dir = tmp_path_factory.mktemp("zk-ensemble") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3, broker_configs=CONFIGS, zookeeper_nodes=3, zookeeper_chroot="/kafka")


def modes(c) -> dict[int, str]:
    return {s["id"]: s["mode"] for s in c.status()["zookeeper_servers"]}


def leader_server(c) -> int:
    wait_for(lambda: list(modes(c).values()).count("leader") == 1, 30, message="one ZooKeeper leader")
    return next(i for i, m in modes(c).items() if m == "leader")


def registrations(c) -> dict[int, int]:
    """broker id -> the session id owning /brokers/ids/N (read under the chroot)."""
    zk = zk_client(c, authenticated=False)
    try:
        return {int(b): zk.get(layout.broker_path(int(b)))[1].ephemeralOwner
                for b in zk.get_children(layout.BROKER_IDS)}
    finally:
        zk.stop()
        zk.close()


def isr_in_zookeeper(c, topic: str, partition: int) -> list[int]:
    zk = zk_client(c, authenticated=False)
    try:
        return json.loads(zk.get(layout.partition_state_path(topic, partition))[0])["isr"]
    finally:
        zk.stop()
        zk.close()


def api_state(c, broker: int) -> dict:
    """The dashboard's /api/state served by ``broker``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{c.brokers[broker]}/api/state", timeout=10) as resp:
        return json.loads(resp.read())


def dashboard_view(c, broker: int) -> tuple[list[str], dict[int, str]]:
    """What the dashboard says: each ZooKeeper server's mode, each broker's session state."""
    st = api_state(c, broker)
    return ([z["mode"] for z in st["zookeeper"]["servers"]],
            {b["id"]: b["zookeeper_session"] for b in st["brokers"]})


def create_led_topic(c, topic: str, partitions: int) -> None:
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=partitions, replication_factor=3, config={"min.insync.replicas": "2"})

        def led() -> bool:
            (d,) = admin.describe_topics([topic])
            return all(p.leader > 0 and len(p.isr) == 3 for p in d.partitions)

        wait_for(led, 30, message=f"every partition of {topic} led with a full ISR")


def test_status_lists_three_servers_one_leader_and_brokers_use_every_server(ensemble):
    st = ensemble.status()
    servers = st["zookeeper_servers"]
    assert [s["id"] for s in servers] == [1, 2, 3]
    assert sorted(s["mode"] for s in servers) == ["follower", "follower", "leader"]
    assert all(s["pid"] for s in servers)
    hosts, chroot = ensemble.zk_connect.split("/", 1)
    assert chroot == "kafka" and hosts == ",".join(f"127.0.0.1:{s['client_port']}" for s in servers)
    assert st["registered"] == [1, 2, 3] and st["controller"] in (1, 2, 3)  # read under /kafka
    # the dashboard's state: every server's mode and every broker's session
    zk_modes, sessions = dashboard_view(ensemble, 1)
    assert sorted(zk_modes) == ["follower", "follower", "leader"]
    assert sessions == {1: "connected", 2: "connected", 3: "connected"}
    # the CLI: text and JSON, and a bad id is one line with exit status 2
    text = run_cli("cluster", "status", "--dir", ensemble.dir)
    assert text.returncode == 0 and text.stdout.count("zookeeper server ") == 3, text.stdout
    assert json.loads(run_cli("cluster", "status", "--json", "--dir", ensemble.dir).stdout)["zookeeper_servers"]
    bad = run_cli("cluster", "zookeeper", "kill", "7", "--dir", ensemble.dir)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "servers: 1, 2, 3" in bad.stderr


def test_losing_the_zookeeper_leader_changes_nothing_clients_see(ensemble):
    """The ensemble's leader killed under acks=all load: no error, nothing lost, the same
    broker sessions and controller; restarted, the server rejoins as a follower."""
    c = ensemble
    topic = "zk-leader-loss"
    create_led_topic(c, topic, 3)
    sessions, controller = registrations(c), c.status()["controller"]
    acked: list[bytes] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def produce() -> None:
        try:
            with Producer(c.bootstrap, acks="all", retries=0) as p:
                i = 0
                while not stop.is_set():
                    value = f"v-{i}".encode()
                    p.send(topic, value).result(20)
                    acked.append(value)
                    i += 1
                    time.sleep(0.02)
        except BaseException as exc:  # surfaced below: the test wants none
            errors.append(exc)

    consumed: list[bytes] = []

    def consume() -> None:
        try:
            with Consumer(c.bootstrap) as consumer:
                consumer.assign([TopicPartition(topic, p) for p in range(3)])
                consumer.seek_to_beginning()
                while not stop.is_set():
                    consumed.extend(r.value for r in consumer.poll(timeout_ms=200))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=produce, daemon=True), threading.Thread(target=consume, daemon=True)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(acked) > 20 or errors, 30, message="produces before the kill")
        killed = leader_server(c)
        launcher.zookeeper_kill(c.dir, killed)
        before, read_before = len(acked), len(consumed)
        # a new ZooKeeper leader among the two left, and produces and reads go on meanwhile
        wait_for(lambda: sorted(m for i, m in modes(c).items() if i != killed) == ["follower", "leader"], 30,
                 message="a new ZooKeeper leader")
        wait_for(lambda: (len(acked) > before + 50 and len(consumed) > read_before + 50) or errors, 30,
                 message="produces and reads after the kill")
        # the brokers kept their sessions: same registrations, same controller
        assert registrations(c) == sessions
        assert c.status()["controller"] == controller
        launcher.zookeeper_start(c.dir, killed)
        assert modes(c)[killed] == "follower"
        wait_for(lambda: len(acked) > before + 80 or errors, 30, message="produces after the restart")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert errors == []
    assert registrations(c) == sessions and c.status()["controller"] == controller
    got = read_all(c.bootstrap, topic, 3)
    assert [v for v in acked if v not in set(got)] == []


def test_losing_the_quorum_keeps_leaders_serving_and_isr_changes_wait_for_it(ensemble):
    """Two of three servers killed for longer than the session timeout: leaders keep
    serving acks=all produces and fetches, a dead follower stays in the ISR until the
    quorum is back, the brokers keep their sessions (kazoo reconnects within a second,
    as the Java client does, and the new leader gives sessions a fresh timeout), and the
    ISR change happens once ZooKeeper can be written again."""
    c = ensemble
    topic = "zk-quorum-loss"
    create_led_topic(c, topic, 1)
    with Admin(c.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    leader = d.partitions[0].leader
    follower = next(b for b in (1, 2, 3) if b != leader and b != c.status()["controller"])
    sessions = registrations(c)
    acked: list[bytes] = []
    zk_leader = leader_server(c)
    killed = [zk_leader, min(s for s in (1, 2, 3) if s != zk_leader)]  # the leader and a follower
    for sid in killed:
        launcher.zookeeper_kill(c.dir, sid)
    try:
        left = next(s for s in (1, 2, 3) if s not in killed)
        wait_for(lambda: modes(c)[left] == "looking", 30, message="the last server stops serving")
        # the dashboard shows it: two servers down, one looking, every broker's session suspended
        def shown_lost() -> bool:
            zk_modes, sessions = dashboard_view(c, leader)
            return sorted(zk_modes) == ["down", "down", "looking"] and set(sessions.values()) == {"suspended"}

        wait_for(shown_lost, 30, message="the dashboard showing the lost quorum")
        # leaders keep taking acks=all writes (the ISR stays whole) and serving reads
        with Producer(c.bootstrap, acks="all", retries=0) as p:
            for i in range(30):
                p.send(topic, f"no-quorum-{i}".encode()).result(20)
                acked.append(f"no-quorum-{i}".encode())
        assert set(acked) <= set(read_all(c.bootstrap, topic, 1))
        # a dead follower cannot leave the ISR while ZooKeeper cannot be written: its
        # leader's metadata keeps it, past replica.lag.time.max.ms and the session timeout
        c.kill(follower)

        def isr_whole() -> bool:
            with Admin(c.endpoint(leader)) as admin:
                (d,) = admin.describe_topics([topic])
            return sorted(d.partitions[0].isr) == [1, 2, 3]

        holds(isr_whole, (SESSION_TIMEOUT_MS + 3000) / 1000, interval_s=0.5, message="the ISR while no quorum")
    finally:
        for sid in killed:
            launcher.zookeeper_start(c.dir, sid)
    # the quorum is back: the sessions survived (the new leader gave them a fresh timeout),
    # and the ISR change that waited happens
    wait_for(lambda: sorted(m for m in modes(c).values()) == ["follower", "follower", "leader"], 30,
             message="the ensemble serving again")
    alive = {b: s for b, s in sessions.items() if b != follower}
    wait_for(lambda: follower not in isr_in_zookeeper(c, topic, 0), 30, message="the dead follower out of the ISR")
    assert {b: s for b, s in registrations(c).items() if b != follower} == alive
    c.start(follower)
    wait_for(lambda: sorted(isr_in_zookeeper(c, topic, 0)) == [1, 2, 3], 30, message="the follower back in the ISR")
    with Producer(c.bootstrap, acks="all") as p:
        p.send(topic, b"after").result(30)
        acked.append(b"after")
    got = read_all(c.bootstrap, topic, 1)
    assert [v for v in acked if v not in set(got)] == []
