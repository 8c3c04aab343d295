"""The controller's failure rules on live processes: a failed handler hands the controller
to another broker (Kafka's triggerControllerMove), and re-elections leave no extra watches."""
from __future__ import annotations

import json
import urllib.request

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.security import OPEN_ACL_UNSAFE, make_acl, make_digest_acl

from minikafka import Admin
from minikafka.zk import layout
from process_helpers import wait_for, zk_client
from replica_checks import post

pytestmark = pytest.mark.process


def controller_id(zk: KazooClient) -> int | None:
    try:
        return json.loads(zk.get(layout.CONTROLLER)[0])["brokerid"]
    except NoNodeError:  # no controller right now (between a resignation and the next election)
        return None


def events(handle, broker_id: int, kind: str) -> list[dict]:
    got = post(handle.brokers[broker_id], "events", {"since": 0, "cluster": False, "limit": 5000}, timeout_s=5.0)
    return [e for e in got["events"] if e["kind"] == kind]


def test_a_controller_whose_handler_fails_hands_over_to_another_broker(make_cluster):
    c = make_cluster(brokers=3)
    zk = zk_client(c)
    try:
        first = wait_for(lambda: controller_id(zk), 30, message="a controller")
        leader, follower = [b for b in (1, 2, 3) if b != first]
        with Admin(c.bootstrap) as admin:
            admin.create_topic("locked", partitions=1, replication_factor=2, assignment={0: [leader, follower]})
        state = layout.partition_state_path("locked", 0)
        wait_for(lambda: zk.exists(state) and json.loads(zk.get(state)[0])["isr"] == [leader, follower], 30,
                 message="the partition online with both replicas in sync")
        # ZooKeeper refuses the brokers any write of this state znode: the controller's
        # handler for the follower's death fails (NoAuth), as on a misconfigured ensemble.
        zk.add_auth("digest", "operator:secret")
        zk.set_acls(state, [make_acl("world", "anyone", read=True), make_digest_acl("operator", "secret", all=True)])
        elected_before = len(events(c, leader, "controller_elected"))
        c.kill(follower)
        # The write is still refused, so every broker that takes over fails the same way and
        # resigns within milliseconds: the takeover is read from the other live broker's
        # own timeline, not from /controller at one instant.
        wait_for(lambda: len(events(c, leader, "controller_elected")) > elected_before, 30,
                 message="the other live broker taking over as controller")
        moved = events(c, first, "controller_moved")
        assert moved and "NoAuth" in moved[0]["text"]
        # the failed write changed nothing
        assert json.loads(zk.get(state)[0])["isr"] == [leader, follower]
        # once ZooKeeper accepts the write, whichever broker is controller completes it
        zk.set_acls(state, OPEN_ACL_UNSAFE)
        wait_for(lambda: json.loads(zk.get(state)[0])["isr"] == [leader], 60,
                 message="the dead follower out of the ISR")
        wait_for(lambda: controller_id(zk) is not None, 30, message="a controller after the moves")
    finally:
        zk.stop()
        zk.close()


def watches(handle, broker_id: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{handle.brokers[broker_id]}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("minikafka_zookeeper_watches "):
                return int(float(line.split()[1]))
    raise AssertionError("no minikafka_zookeeper_watches metric")


def test_re_elections_do_not_pile_up_watches(make_cluster):
    """Each resignation cancels the controller's watches: after several moves between two
    brokers the brokers hold as many ZooKeeper watches as before, and one topic creation
    is handled once."""
    c = make_cluster(brokers=2)
    zk = zk_client(c)
    try:
        wait_for(lambda: controller_id(zk), 30, message="a controller")
        before = wait_for(lambda: (lambda n: n if n > 0 else None)(sum(watches(c, b) for b in (1, 2))), 30,
                          message="the watch gauge")
        for _ in range(3):
            cid = wait_for(lambda: controller_id(zk), 30, message="a controller")
            zk.delete(layout.CONTROLLER)  # what a tool does to force a controller election
            wait_for(lambda: controller_id(zk) not in (None, cid) or None, 30, message="a new controller")
        final = wait_for(lambda: controller_id(zk), 30, message="a controller")
        wait_for(lambda: sum(watches(c, b) for b in (1, 2)) == before, 30, interval_s=0.5,
                 message=f"{before} watches across the brokers again")
        with Admin(c.bootstrap) as admin:
            admin.create_topic("once", partitions=1, replication_factor=2)
        wait_for(lambda: events(c, final, "leader_elected"), 30, message="the new partition elected")
        texts = [e["text"] for b in (1, 2) for e in events(c, b, "leader_elected") if e["text"].startswith("once-0")]
        assert len(texts) == 1, texts
    finally:
        zk.stop()
        zk.close()


def test_a_fresh_cluster_reports_no_broker_lost(make_cluster):
    """Brokers registering while the controller loads must not show up as lost: watch
    firings make the controller read /brokers/ids again, not trust what the watch saw."""
    c = make_cluster(brokers=3)
    zk = zk_client(c)
    try:
        wait_for(lambda: controller_id(zk), 30, message="a controller")
    finally:
        zk.stop()
        zk.close()
    lost = [e["text"] for b in (1, 2, 3) for kind in ("broker_lost", "isr_shrink_controller") for e in events(c, b, kind)]
    assert lost == []


def test_the_death_of_the_controller_is_a_broker_lost_event(make_cluster):
    """SIGKILL the controller: no controller watched it go, so the new one records
    ``broker_lost`` for it beside ``controller_elected``; a controller that only moved
    (/controller deleted, the broker still registered) is not lost."""
    c = make_cluster(brokers=3, broker_configs={"zookeeper.session.timeout.ms": "3000"})
    zk = zk_client(c)
    try:
        first = wait_for(lambda: controller_id(zk), 30, message="a controller")
        zk.delete(layout.CONTROLLER)
        moved = wait_for(lambda: (lambda cid: cid if cid not in (None, first) else None)(controller_id(zk)), 30,
                         message="another controller after /controller was deleted")
        wait_for(lambda: events(c, moved, "controller_loaded"), 30, message="the new controller loaded")
        c.kill(moved)
        new = wait_for(lambda: (lambda cid: cid if cid not in (None, moved) else None)(controller_id(zk)), 60,
                       message="a controller after the SIGKILL")
        lost = wait_for(lambda: [e for e in events(c, new, "broker_lost")
                                 if e["text"].startswith(f"controller: broker {moved} is gone")], 30,
                        message=f"broker {new} to record broker {moved} lost")
        assert "it was the controller" in lost[0]["text"], lost
        elected = events(c, new, "controller_elected")
        assert elected and elected[-1]["ts"] <= lost[0]["ts"]
        survivors = [b for b in (1, 2, 3) if b != moved]
        assert [e for b in survivors for e in events(c, b, "broker_lost")
                if e["text"].startswith(f"controller: broker {first} is gone")] == [], \
            "the controller that only moved is not lost"
    finally:
        zk.stop()
        zk.close()


def test_plans_too_big_for_one_zookeeper_request_are_written_in_parts(make_cluster):
    """A topic of 10,000 partitions is a plan of 20,000 ZooKeeper creates, over the 1 MB a
    ZooKeeper request may carry: it is written as several fenced transactions."""
    c = make_cluster(brokers=1)
    with Admin(c.bootstrap) as admin:
        # the answer waits for leaders; on a busy machine 10,000 may take longer than the
        # default 30 s, which is why the test waits for them itself below
        admin.create_topic("wide", partitions=10000, replication_factor=1, timeout_ms=180000)

    def led() -> int:
        with Admin(c.bootstrap) as admin:
            (d,) = admin.describe_topics(["wide"])
        return sum(1 for p in d.partitions if p.leader == 1)

    wait_for(lambda: led() == 10000, 180, interval_s=1, message="10,000 partitions led")
    assert not events(c, 1, "controller_moved")
