"""A broker's ZooKeeper session on real in-process brokers (harness.py): a broker whose
session expired registers again once it can, however the link to ZooKeeper comes and goes."""
from __future__ import annotations

import asyncio
import json

from harness import Cluster, run_cluster

from minikafka.sim.zookeeper import ZK

TOPIC = "reg"


def _registered(c: Cluster, broker_id: int) -> bool:
    """Whether /brokers/ids/N exists and belongs to the broker's current session."""
    node = c.world.zk.nodes.get(f"/brokers/ids/{broker_id}")
    return node is not None and node.ephemeral_owner == c.world.brokers[broker_id].zk.session_id


def test_a_broker_registers_again_when_its_link_to_zookeeper_drops_once_more_on_reconnecting():
    """Broker 1's session expires; it reconnects with a new session, and its link to
    ZooKeeper is cut again at once, for less than the keep-alive's ping interval, so its
    first try to register times out and no state change follows.  Once the link
    is back it registers and rejoins every ISR: it keeps trying (a single try left it
    unregistered for good, out of every ISR, with no state change left to try again)."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=3, replication_factor=3)
        net = c.world.network
        session = c.world.brokers[1].zk
        first = session.session_id
        lost = []

        def on_state(state: str) -> None:
            if state == "LOST":
                lost.append(state)
            elif state == "CONNECTED" and len(lost) == 1:
                lost.append("cut")
                net.cut("b1", ZK)  # the new session's first requests (the registration's) are lost

        session.on_state_change(on_state)
        net.cut("b1", ZK)
        net.cut(ZK, "b1")
        await c.wait_until(lambda: first in c.world.zk.expired, 60, "broker 1's session expired")
        net.heal("b1", ZK)
        net.heal(ZK, "b1")
        await c.wait_until(lambda: session.session_id not in (None, first) and ("b1", ZK) in net.cuts, 60,
                           "a new session, and the link cut again")
        await asyncio.sleep(1.5)  # shorter than the keep-alive's ping interval: no state change follows
        assert not _registered(c, 1)
        net.heal("b1", ZK)
        await c.wait_until(lambda: _registered(c, 1), 60, "broker 1 registered again")
        await c.wait_until(lambda: all(c.in_sync(TOPIC, p, 3) for p in range(3)), 60, "every ISR full again")

    run_cluster(body, seed=51)


def test_a_broker_rejoining_many_isrs_tells_the_controller_in_a_few_notifications():
    """A follower restarted after missing records rejoins the ISR of every partition it
    follows; its leaders write each ISR change, but name them to the controller in a few
    /isr_change_notification entries (changes written while one entry is being written go
    in the next one), not one entry per partition, and the controller's metadata shows
    every ISR full again."""

    async def body(c: Cluster) -> None:
        partitions = 24
        await c.create_topic("many", partitions=partitions, replication_factor=3)
        entries: list[str] = []
        zk = c.world.zk
        request = zk.request

        def counting(sid: int, op: tuple):
            if op[0] == "create" and str(op[1]).startswith("/isr_change_notification/isr_change_"):
                entries.append(op[1])
            return request(sid, op)

        zk.request = counting  # type: ignore[method-assign]
        c.crash(3)
        await c.wait_until(lambda: all(3 not in c.isr("many", p) for p in range(partitions)), 60,
                           "broker 3 out of every ISR")
        producer = await c.started(c.producer("p", acks="all"))
        for p in range(partitions):
            await producer.send_and_wait("many", b"missed", partition=p)
        entries.clear()
        c.restart(3)
        await c.wait_until(lambda: all(c.in_sync("many", p, 3) for p in range(partitions)), 60,
                           "broker 3 back in every ISR")
        assert 1 <= len(entries) < partitions // 2, entries

    run_cluster(body, seed=52)


def _controller(c: Cluster) -> int | None:
    node = c.world.zk.nodes.get("/controller")
    return None if node is None else json.loads(node.data)["brokerid"]


def test_a_watch_notification_lost_on_a_cut_link_reaches_the_controller_once_the_link_is_back():
    """The controller's link from ZooKeeper is cut for less than its session's keep-alive
    notices (no SUSPENDED), and a broker registers meanwhile: the notification of
    /brokers/ids is lost on the way.  ZooKeeper loses none (TCP delivers it late, or the
    reconnection replays it), so the controller must still see the new registration.  The
    simulation dropped it for good, and seed 15 of a sweep ended with partitions offline
    after healing."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=3, replication_factor=1)
        await c.wait_until(lambda: _controller(c) is not None, 30, "a controller")
        controller = _controller(c)
        p, b = next((p, c.leader(TOPIC, p)) for p in range(3) if c.leader(TOPIC, p) != controller)
        assert b is not None
        net = c.world.network
        c.crash(b)
        await c.wait_until(lambda: not _registered(c, b) and c.leader(TOPIC, p) is None, 60,
                           f"broker {b} gone, {TOPIC}-{p} offline")
        net.cut(ZK, f"b{controller}")
        c.restart(b)
        await c.wait_until(lambda: _registered(c, b), 60, f"broker {b} registered again")
        await asyncio.sleep(0.5)  # within the keep-alive's ping interval: the session stays CONNECTED
        net.heal(ZK, f"b{controller}")

        def seen() -> bool:
            live = c.world.brokers[controller].controller.ctx.live
            return b in live and live[b].epoch == c.world.zk.nodes[f"/brokers/ids/{b}"].czxid
        await c.wait_until(seen, 60, f"the controller knows broker {b}'s new registration")

    run_cluster(body, seed=52)
