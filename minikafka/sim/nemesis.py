"""Seeded faults for the simulated cluster.

Every ``step_s`` of virtual time the nemesis picks one fault from the world's seeded
generator and schedules its end a few seconds later:

=================  ==================================================================
``crash``          SIGKILL a broker (a partition leader or the controller half the time); restart it 1-8 s later
``power-loss``     the same, and the disk loses what the OS had not written back (disk mode)
``pause``          SIGSTOP a broker for 1-10 s (sometimes past the ZooKeeper session timeout), then SIGCONT
``shutdown``       SIGTERM: controlled shutdown, restart 1-5 s later
``partition``      cut both directions between two brokers for 2-10 s
``one-way``        drop messages from one broker to another only (a follower whose fetches are lost,
                   a controller whose LeaderAndIsr to one broker is lost), or between a broker and
                   ZooKeeper in one direction
``zk-partition``   cut a broker (often the controller) from ZooKeeper for 2-10 s
``slow``           add 20-400 ms to one link, so messages overtake each other
``expire``         expire a broker's ZooKeeper session
``zk-server-kill`` one server of a 3-server ensemble is killed and restarted: the brokers whose
                   sessions it held lose ZooKeeper for 0.1-1.5 s while their sessions move to
                   another server (the sessions survive)
``zk-outage``      ZooKeeper loses its quorum for 2-12 s (sometimes past the session timeout): every
                   broker is cut from it, no session expires meanwhile, and the new leader gives
                   every session a fresh timeout when the quorum is back
=================  ==================================================================

Faults that destroy data (a crash or a restart in memory mode, a power loss) are chosen
only while every other replica holds every committed record and the last such fault is
long past: losing the copies of an acknowledged record on two brokers is outside
Kafka's guarantee (it relies on replication, not on fsync), not a bug.

``zk-server-kill`` and ``zk-outage`` run only when asked for (``--faults
crash,zk-outage,...``), so that the default kinds keep every seed's schedule.
``power-loss`` runs only when asked for (``--faults power-loss,...``).  Kafka 2.x does
not survive every interleaving of it: a leader that loses its unsynced tail, restarts
and is confirmed leader by a controller that failed over before handling the restart
(so the broker is still in the ISR in ZooKeeper) serves a log without acknowledged
records.  Kafka closed that gap later (KIP-966, unclean-shutdown detection); the
simulation finds it within a few dozen seeds.  At most two brokers
are down at once.  :meth:`Nemesis.heal_all` ends every fault.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable

from .world import broker_name
from .zookeeper import ZK, SimZkSession

if TYPE_CHECKING:
    from .world import World

DESTROY_GAP_S = 25.0  # between two faults that destroy a broker's data (see _may_destroy_data)
KINDS = ("crash", "power-loss", "pause", "shutdown", "partition", "one-way", "zk-partition", "slow", "expire",
         "zk-server-kill", "zk-outage")
# power-loss only when asked for: Kafka 2.x does not survive every interleaving of it (see
# above); the ensemble's faults only when asked for, so that the seeds' schedules stay
ASKED_FOR_ONLY = ("power-loss", "zk-server-kill", "zk-outage")
DEFAULT_KINDS = tuple(k for k in KINDS if k not in ASKED_FOR_ONLY)


class Nemesis:
    """Chooses and applies faults; remembers how to end each."""

    def __init__(self, world: "World", kinds: tuple[str, ...] = ()) -> None:
        self.world = world
        self.kinds = tuple(k for k in (kinds or DEFAULT_KINDS) if world.opts.storage == "disk" or k != "power-loss")
        self.faults = 0
        self.counts: dict[str, int] = {}
        self._pending: list[tuple[float, Callable[[], object]]] = []  # (due, heal)
        self.down: set[int] = set()
        self._last_destroyed = -DESTROY_GAP_S

    # -- choosing ---------------------------------------------------------------------------------------------
    def _may_destroy_data(self) -> bool:
        """True when one broker may lose its data: every broker is up, every partition
        has one leader with a full ISR and every follower holds the leader's records up
        to the HW, and the last data loss is long past (the controller has handled that
        broker's restart: session timeout + replica.lag.time.max.ms + 5 s)."""
        w = self.world
        if len(w.live_brokers()) != w.opts.brokers or self.down:
            return False
        if w.loop.time() - self._last_destroyed < DESTROY_GAP_S:
            return False
        replicas: dict[tuple[str, int], list] = {}
        for b in w.live_brokers():
            for tp, p in w.brokers[b].replica_manager.partitions.items():
                replicas.setdefault(tp, []).append(p)
        for tp, ps in replicas.items():
            leaders = [p for p in ps if p.is_leader]
            if len(leaders) != 1 or len(leaders[0].isr) < len(leaders[0].replicas):
                return False
            if any(p.log_end_offset < leaders[0].high_watermark for p in ps):
                return False
        return True

    def _target(self) -> int | None:
        """A live broker: a leader, the controller or any, chosen by the seed."""
        w = self.world
        live = [b for b in w.live_brokers() if b not in self.down]
        if not live:
            return None
        r = w.rng.random()
        if r < 0.25 and w.controller_id() in live:
            return w.controller_id()
        if r < 0.5:
            leaders = sorted({b for b in live for p in w.brokers[b].replica_manager.partitions.values() if p.is_leader})
            if leaders:
                return w.rng.choice(leaders)
        return w.rng.choice(live)

    async def step(self) -> None:
        """Apply one fault (if one fits now) and any heals that are due."""
        w = self.world
        self._heal_due()
        kind = w.rng.choice(self.kinds)
        destroys = kind == "power-loss" or (kind in ("crash", "shutdown") and w.opts.storage == "memory")
        if kind in ("crash", "power-loss", "pause", "shutdown") and (len(self.down) >= 2 or (destroys and not self._may_destroy_data())):
            return
        if kind == "zk-outage" and not w.zk.has_quorum:
            return
        b = self._target()
        if b is None:
            return
        now = w.loop.time()
        name = broker_name(b)
        self.faults += 1
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind in ("crash", "power-loss"):
            if destroys:
                self._last_destroyed = now
            w.crash(b, power_loss=kind == "power-loss")
            self._down_for(b, now + w.rng.uniform(1, 8))
        elif kind == "pause":
            w.pause(b)
            self.down.add(b)
            self._later(now + w.rng.choice([w.rng.uniform(1, 4), w.rng.uniform(6, 10)]), lambda: self._resume(b))
        elif kind == "shutdown":
            if destroys:
                self._last_destroyed = now
            self.down.add(b)
            await w.stop_broker(b)
            self._down_for(b, w.loop.time() + w.rng.uniform(1, 5))
        elif kind in ("partition", "one-way", "slow"):
            others = [broker_name(o) for o in sorted(w.brokers) if o != b]
            if kind == "one-way":
                others.append(ZK)  # a broker's requests to ZooKeeper lost, or ZooKeeper's answers
            other = w.rng.choice(others)
            if kind == "one-way" and other == ZK and w.rng.random() < 0.5:
                name, other = ZK, name
            if kind == "slow":
                extra = w.rng.uniform(0.02, 0.4)
                w.network.slow[(name, other)] = extra
                w.note(f"slow {name} -> {other} by {extra * 1000:.0f} ms")
                self._later(now + w.rng.uniform(2, 10), lambda: self._heal_link(name, other))
            else:
                pairs = [(name, other)] if kind == "one-way" else [(name, other), (other, name)]
                for src, dst in pairs:
                    w.network.cut(src, dst)
                w.note(f"cut {name} {'->' if kind == 'one-way' else '<->'} {other}")
                self._later(now + w.rng.uniform(2, 10), lambda: self._heal_links(pairs))
        elif kind == "zk-partition":
            w.network.cut(name, ZK)
            w.network.cut(ZK, name)
            w.note(f"cut {name} <-> zookeeper")
            self._later(now + w.rng.uniform(2, 10), lambda: self._heal_links([(name, ZK), (ZK, name)]))
        elif kind == "zk-server-kill":
            # the brokers whose sessions the killed server held (b among them)
            moved_ids = [b] + [o for o in sorted(w.brokers) if o != b and w.rng.random() < 1 / 3]
            moved = [broker_name(o) for o in moved_ids]
            self._drop_zk_connections(moved_ids)
            for n in moved:
                w.network.cut(n, ZK)
                w.network.cut(ZK, n)
            w.note(f"zookeeper server killed: {', '.join(moved)} move their sessions")
            self._later(now + w.rng.uniform(0.1, 1.5),
                        lambda: self._heal_links([(s, d) for n in moved for s, d in ((n, ZK), (ZK, n))]))
        elif kind == "zk-outage":
            names = [broker_name(o) for o in sorted(w.brokers)]
            w.zk.lose_quorum()
            self._drop_zk_connections(sorted(w.brokers))
            for n in names:
                w.network.cut(n, ZK)
                w.network.cut(ZK, n)
            w.note("zookeeper lost its quorum")
            self._later(now + w.rng.uniform(2, 12), lambda: self._regain_quorum(names))
        elif kind == "expire":
            sid = w.brokers[b].zk.session_id
            if sid is not None:
                w.zk.expire(sid)
                w.note(f"expire {name}'s ZooKeeper session {sid:#x}")

    def _later(self, due: float, heal: Callable[[], object]) -> None:
        self._pending.append((due, heal))

    def _down_for(self, b: int, due: float) -> None:
        self.down.add(b)
        self._later(due, lambda: self._restart(b))

    def _restart(self, b: int) -> None:
        self.down.discard(b)
        if not self.world.alive(b):
            self.world.start_broker(b)

    def _resume(self, b: int) -> None:
        self.down.discard(b)
        self.world.resume(b)

    def _heal_link(self, src: str, dst: str) -> None:
        if ZK in (src, dst) and not self.world.zk.has_quorum:
            return  # nobody reaches ZooKeeper until its quorum is back (_regain_quorum)
        if (src, dst) in self.world.network.cuts or (src, dst) in self.world.network.slow:
            self.world.network.heal(src, dst)
            self.world.note(f"heal {src} -> {dst}")

    def _heal_links(self, links: list[tuple[str, str]]) -> None:
        for src, dst in links:
            self._heal_link(src, dst)

    def _drop_zk_connections(self, brokers: list[int]) -> None:
        """Tell each live broker's ZooKeeper client that its server closed the connection
        (sent before the links are cut, so it arrives; in the broker's process, so a
        paused one sees it when resumed)."""
        w = self.world
        for o in brokers:
            if w.alive(o):
                session = w.brokers[o].zk
                assert isinstance(session, SimZkSession)  # the world's brokers have simulated sessions
                w.network.send(ZK, broker_name(o), session.drop_connection, context=session.context, fifo=True)

    def _regain_quorum(self, names: list[str]) -> None:
        self.world.zk.regain_quorum()
        for n in names:
            self._heal_link(n, ZK)
            self._heal_link(ZK, n)
        self.world.note("zookeeper has its quorum again")

    def _heal_due(self) -> None:
        now = self.world.loop.time()
        due = [h for h in self._pending if h[0] <= now]
        self._pending = [h for h in self._pending if h[0] > now]
        for _, heal in due:
            heal()

    async def run(self, steps: int, step_s: float) -> None:
        for _ in range(steps):
            await asyncio.sleep(step_s)
            await self.step()

    def heal_all(self) -> None:
        """End every fault: heal links, resume paused and restart crashed brokers."""
        pending, self._pending = self._pending, []
        for _, heal in pending:
            heal()
        self.world.network.heal_all()
        for b in sorted(self.world.brokers):
            self.world.resume(b)
            if not self.world.alive(b):
                self.world.start_broker(b)
        self.down.clear()
        self.world.note("healed: every link, every broker")
