"""Each fault of the test harness (minikafka.testing) against each role, on a real cluster:
kill, pause, stop (a controlled shutdown) and restart of the leader of a partition, a
follower of it, the controller, a group's coordinator and a transactional id's
coordinator.  Each case checks that the FaultAction says what it did (which broker, in
which epoch, in words), that the fault took effect (the process is dead, paused or new;
the role moved to another broker, or the follower left the ISR), that leaving the
``with`` block heals it, and that the cluster recovers (every broker registered, every
ISR full, the group's offsets and the transaction's state found on their coordinator).

The 20 cases share the session cluster of tests/process/test_testing_plugin.py (the
same settings: a 4 s ZooKeeper session, so a killed or paused broker's roles move within
seconds); each leaves it healed.  Then a ZooKeeper ensemble of three (the
``zookeeper_nodes`` setting) losing one server: the cluster keeps serving, and heals."""
from __future__ import annotations

import pytest

from minikafka import Consumer, Producer, TopicPartition
from minikafka.cluster import launcher
from minikafka.cluster.state import load
from minikafka.testing import controller, follower_of, group_coordinator, leader_of, txn_coordinator, wait_until
from minikafka.testing.roles import partition_state
from minikafka.zk import layout
from minikafka.zk.launcher import server_mode

pytestmark = [pytest.mark.process,
              pytest.mark.minikafka(partitions=3, broker_configs={"zookeeper.session.timeout.ms": "4000",
                                                                  "replica.lag.time.max.ms": "3000"})]

KINDS = ("kill", "pause", "stop", "restart")
ROLES = ("leader_of", "follower_of", "controller", "group_coordinator", "txn_coordinator")
DONE = {"kill": "killed", "pause": "paused", "stop": "stopped", "restart": "restarted"}


def _produce(cluster, topic, values, partition=0):
    with Producer(cluster.bootstrap, acks="all") as p:
        return [p.send(topic, v.encode(), partition=partition).result(30) for v in values]


def _owner(cluster, broker_id):
    """The ZooKeeper session that registered the broker (None: not registered)."""
    got = cluster.zk.get(layout.broker_path(broker_id))
    return got[1].ephemeralOwner if got else None


def _role(c, role, topic):
    """The role's target, after giving it something to coordinate (a group with committed
    offsets, a transactional id with a committed transaction); and a check that the group
    or transaction is found again on its coordinator (None for the other roles)."""
    if role == "leader_of":
        return leader_of(topic, 0), None
    if role == "follower_of":
        return follower_of(topic, 0), None
    if role == "controller":
        return controller(), None
    if role == "group_coordinator":
        group = f"g-{topic}"
        _produce(c, topic, ["a", "b", "c"])
        with Consumer(c.bootstrap, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False) as consumer:
            consumer.subscribe([topic])
            read: list = []
            wait_until(lambda: read.extend(consumer.poll(timeout_ms=200)) or len(read) >= 3, 60, "the 3 records")
            consumer.commit()

        def found(admin):
            d = admin.describe_group(group)
            return (d.coordinator == c.faults.find(group_coordinator(group)).broker
                    and admin.list_group_offsets(group).get(TopicPartition(topic, 0)) == 3)
        return group_coordinator(group), found
    tid = f"t-{topic}"
    with Producer(c.bootstrap, transactional_id=tid) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"in-a-transaction", partition=0)
        p.commit_transaction()

    def found(admin):
        (d,) = admin.describe_transactions([tid])
        return d.coordinator == c.faults.find(txn_coordinator(tid)).broker and d.state == "CompleteCommit"
    return txn_coordinator(tid), found


def _moved(c, before, victim):
    """Until the role the fault hit is played by another broker (a follower: until it
    left the ISR); returns what plays it now."""
    role = before.role
    if role.kind == "follower":
        def left():
            st = partition_state(c.zk, role.topic, role.partition)
            return st is not None and st.leader >= 0 and victim not in st.isr and st
        return wait_until(left, 60, f"broker {victim} to leave the ISR of {role.topic}-{role.partition}")

    def moved():
        now = c.faults.find(role)
        return now.broker != victim and now
    now = wait_until(moved, 60, f"{role.describe()} to move off broker {victim}")
    assert now.epoch > before.epoch, (before, now)
    return now


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("kind", KINDS)
def test_each_fault_on_each_role_says_what_it_did_takes_effect_and_heals(kind, role, minikafka_cluster,
                                                                         minikafka_topic, minikafka_admin):
    c = minikafka_cluster
    target, found_again = _role(c, role, minikafka_topic)
    before = c.faults.find(target)
    victim = before.broker
    pid = c.pid(victim)
    owner = _owner(c, victim)
    assert before.epoch is not None and before.epoch_name == ("controller epoch" if role == "controller"
                                                              else "leader epoch")
    with getattr(c.faults, kind)(target) as action:
        # what it did: the broker, the epoch, in words
        assert (action.kind, action.broker, action.role) == (kind, victim, str(target))
        assert (action.epoch, action.epoch_name, action.pid) == (before.epoch, before.epoch_name, pid)
        assert action.text.startswith(f"{DONE[kind]} {before.describe()}, pid {pid}"), action.text
        # that it took effect
        if kind == "restart":
            assert action.healed and action.heal_text.startswith(f"started broker {victim} again, pid ")
            new_pid = c.pid(victim)
            assert new_pid != pid and launcher.proc_state(new_pid) == "running"
            assert action.text == f"restarted {before.describe()}, pid {pid}: {action.heal_text}"
            assert launcher.proc_state(pid) == "dead" and _owner(c, victim) not in (None, owner)
        else:
            if kind == "stop":  # a controlled shutdown that ended by itself, not the SIGKILL after the grace period
                assert action.text.endswith(" (stopped)"), action.text
                assert load(c.dir).broker(victim).exit == "stopped"
            state = "stopped" if kind == "pause" else "dead"
            assert launcher.proc_state(pid) == state
            assert f"broker {victim} is {'paused' if kind == 'pause' else 'not running'}" in c.broken()
            _moved(c, before, victim)
    # healed on leaving the block
    assert action.healed and not c.faults.active()
    if kind == "pause":
        assert action.heal_text == f"resumed broker {victim}, pid {pid}"
        assert launcher.proc_state(pid) == "running"
    elif kind in ("kill", "stop"):
        assert action.heal_text.startswith(f"started broker {victim} again, pid ")
    wait_until(lambda: c.registered() == sorted(c.brokers), 120, "every broker to be registered")
    c.wait.isr_full(timeout_s=120)
    if found_again is not None:
        wait_until(lambda: found_again(minikafka_admin), 60, f"{target.describe()} to answer again")
    assert c.broken() == []


@pytest.fixture
def ensemble(minikafka_pool, minikafka_cluster):
    """The cluster of a test marked ``zookeeper_nodes=3``, stopped after the test rather than
    kept for the session (its six processes serve this test only)."""
    yield minikafka_cluster
    for key, cluster in list(minikafka_pool.clusters.items()):
        if cluster is minikafka_cluster:
            del minikafka_pool.clusters[key]
    minikafka_cluster.stop()


@pytest.mark.minikafka(zookeeper_nodes=3)
def test_one_zookeeper_server_of_three_down_the_cluster_keeps_serving_and_heals(ensemble):
    c = ensemble
    servers = load(c.dir).zookeeper.servers
    assert [s.id for s in servers] == [1, 2, 3] and len(c.zk_connect.split(",")) == 3
    modes = wait_until(lambda: (m := {s.id: server_mode("127.0.0.1", s.client_port) for s in servers})
                       and sorted(m.values()) == ["follower", "follower", "leader"] and m, 60,
                       "a ZooKeeper leader and two followers")
    victim = min(sid for sid, mode in modes.items() if mode == "follower")
    pid = next(s.pid for s in servers if s.id == victim)
    topic = c.create_topic(partitions=1)
    _produce(c, topic, ["before"])
    owners = {b: _owner(c, b) for b in c.brokers}
    with c.faults.zookeeper_outage([victim]) as outage:
        assert (outage.kind, outage.text) == ("zookeeper_outage", f"killed ZooKeeper server {victim} (pid {pid})")
        assert launcher.proc_state(pid) == "dead"
        assert f"ZooKeeper server {victim} is not running" in c.broken()
        # the two others are a quorum: produces are acknowledged, ZooKeeper takes writes (a new
        # topic), and no broker lost its session
        assert [m.offset for m in _produce(c, topic, ["during-0", "during-1"])] == [1, 2]
        during = c.create_topic(partitions=2)
        c.wait.isr_full(during, timeout_s=60)
        assert _produce(c, during, ["x"])[0].offset == 0
        assert {b: _owner(c, b) for b in c.brokers} == owners
    assert outage.healed and outage.heal_text == f"ZooKeeper server {victim} serving again"
    assert server_mode("127.0.0.1", next(s.client_port for s in servers if s.id == victim)) in ("follower", "leader")
    assert c.broken() == []
    c.wait.isr_full(timeout_s=60)
    assert _produce(c, topic, ["after"])[0].offset == 3
