"""The broker tests' harness: real in-process brokers on the simulation's ports.

:func:`run_cluster` builds a :class:`~minikafka.sim.world.World` (``Options(seed=...,
brokers=N, storage=...)``), starts ZooKeeper's twin and the N brokers, waits on virtual
time until a controller is elected and every broker is registered, and runs the test's
``async def body(cluster)`` on the world's loop (:func:`~minikafka.sim.runner.run_world`).
No process, no socket, no wall clock: the brokers are the real ``Broker`` (request
layer, replica manager, fetchers, controller, coordinators) and the clients the real
``AIOProducer``/``AIOConsumer``/``AIOAdmin`` on :class:`~minikafka.sim.network.SimTransport`
and the world's virtual clock; the seed fixes every latency and every choice, so a run
replays identically.

The body gets a :class:`Cluster`: clients wired to the simulated network under a node
name of their own (``cluster.producer("p1", acks="all")``), the world's faults
(``crash``, ``restart``, ``pause``, ``resume``), ``wait_until(condition, timeout_s)`` in
virtual seconds, and reads of the brokers' own replica state (``leader``, ``replica``).
A failing test's message ends with the last lines of the world's trace and the brokers'
event timelines (elections, ISR changes).
"""
from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, TypeVar

from minikafka.client import AIOAdmin, AIOConsumer, AIOProducer
from minikafka.replication.partition import PartitionReplica
from minikafka.sim.clients import bootstrap, sim_ports
from minikafka.sim.runner import run_world
from minikafka.sim.world import Options, World, quiet_logs

T = TypeVar("T")

REQUEST_TIMEOUT_MS = 5000  # the clients' request.timeout.ms: a lost answer costs 5 virtual seconds
BACKOFF_MS = 100
START_S = 60.0  # virtual seconds for a controller and every broker's registration
TRACE_LINES = 40  # the trace's last lines added to a failing test's message


@dataclass
class Cluster:
    """What a test body drives (see the module docstring)."""

    world: World
    clients: list[Any] = field(default_factory=list)

    # -- time ------------------------------------------------------------------------------------------
    def now(self) -> float:
        """Virtual seconds since the world began."""
        return self.world.loop.time()

    async def wait_until(self, condition: Callable[[], bool], timeout_s: float, what: str = "",
                         interval_s: float = 0.1) -> None:
        """Poll ``condition`` every ``interval_s`` virtual seconds; AssertionError after ``timeout_s``."""
        deadline = self.now() + timeout_s
        while not condition():
            if self.now() > deadline:
                raise AssertionError(f"not within {timeout_s:g} virtual s: {what or condition}")
            await asyncio.sleep(interval_s)

    async def eventually(self, probe: Callable[[], Awaitable[T]], accept: Callable[[T], bool], timeout_s: float,
                         what: str = "", interval_s: float = 0.25) -> T:
        """Call the coroutine ``probe()`` until ``accept`` takes its answer (an exception
        counts as not yet); AssertionError, with the last answer, after ``timeout_s``."""
        deadline = self.now() + timeout_s
        last: Any = None
        while True:
            try:
                last = await probe()
                if accept(last):
                    return last
            except Exception as exc:  # noqa: BLE001 (a refusal is an answer not accepted yet)
                last = exc
            if self.now() > deadline:
                raise AssertionError(f"not within {timeout_s:g} virtual s: {what or probe}; last answer: {last!r}")
            await asyncio.sleep(interval_s)

    # -- clients ---------------------------------------------------------------------------------------
    def ports(self, name: str) -> dict[str, Any]:
        """The keyword arguments that put a real client on the simulated network (as node
        ``name``) and on the virtual clock."""
        return sim_ports(self.world, name)

    @property
    def bootstrap(self) -> str:
        return bootstrap(self.world)

    def producer(self, name: str = "producer", **kw: Any) -> AIOProducer:
        """An AIOProducer (not started) as node ``name``; closed after the body."""
        opts = {"linger_ms": 0, "request_timeout_ms": REQUEST_TIMEOUT_MS, "retry_backoff_ms": BACKOFF_MS,
                "delivery_timeout_ms": 6 * REQUEST_TIMEOUT_MS, "max_block_ms": 6 * REQUEST_TIMEOUT_MS, **kw}
        return self._keep(AIOProducer(self.bootstrap, **opts, **self.ports(name)))

    def consumer(self, name: str = "consumer", **kw: Any) -> AIOConsumer:
        """An AIOConsumer (not started) as node ``name``; closed after the body."""
        opts = {"auto_offset_reset": "earliest", "fetch_max_wait_ms": 200, "request_timeout_ms": REQUEST_TIMEOUT_MS,
                "retry_backoff_ms": BACKOFF_MS, **kw}
        return self._keep(AIOConsumer(self.bootstrap, **opts, **self.ports(name)))

    def admin(self, name: str = "admin", **kw: Any) -> AIOAdmin:
        """An AIOAdmin (not started) as node ``name``; closed after the body."""
        opts = {"request_timeout_ms": REQUEST_TIMEOUT_MS, **kw}
        return self._keep(AIOAdmin(self.bootstrap, **opts, **self.ports(name)))

    def _keep(self, client: Any) -> Any:
        self.clients.append(client)
        return client

    async def started(self, client: Any, timeout_s: float = 30.0) -> Any:
        """``client`` started (its first metadata), tried again while no broker answers."""
        await self.eventually(lambda: client.start(), lambda _: True, timeout_s, f"{client!r} started")
        return client

    async def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                           config: dict[str, Any] | None = None) -> None:
        """Create a topic through the admin client (CreateTopics) and wait until every
        replica of every partition is in its leader's ISR."""
        admin = await self.started(self.admin(f"admin-{name}"))
        await admin.create_topic(name, partitions, replication_factor, config=config)
        await self.wait_until(lambda: all(self.in_sync(name, p, replication_factor) for p in range(partitions)), 30,
                              f"{name}: every partition led with a full ISR")

    # -- faults ----------------------------------------------------------------------------------------
    def crash(self, broker_id: int) -> None:
        """SIGKILL broker ``broker_id`` (the world's crash)."""
        self.world.crash(broker_id)

    def restart(self, broker_id: int) -> None:
        """Start a new incarnation of a crashed broker (same disk in disk mode; empty in memory mode)."""
        self.world.start_broker(broker_id)

    def pause(self, broker_id: int) -> None:
        self.world.pause(broker_id)

    def resume(self, broker_id: int) -> None:
        self.world.resume(broker_id)

    # -- the brokers' own state --------------------------------------------------------------------------
    def replica(self, broker_id: int, topic: str, partition: int = 0) -> PartitionReplica | None:
        """Broker ``broker_id``'s replica of ``topic-partition`` (None: it hosts none, or is down)."""
        if not self.world.alive(broker_id):
            return None
        return self.world.brokers[broker_id].replica_manager.partitions.get((topic, partition))

    def leader(self, topic: str, partition: int = 0) -> int | None:
        """The live broker whose replica is the leader (None: no leader, or two claim it)."""
        leads = [b for b in self.world.live_brokers()
                 if (r := self.replica(b, topic, partition)) is not None and r.is_leader]
        return leads[0] if len(leads) == 1 else None

    def leader_replica(self, topic: str, partition: int = 0) -> PartitionReplica:
        b = self.leader(topic, partition)
        assert b is not None, f"{topic}-{partition} has no single leader"
        r = self.replica(b, topic, partition)
        assert r is not None
        return r

    def isr(self, topic: str, partition: int = 0) -> tuple[int, ...]:
        """The leader's ISR (empty while the partition has no single leader)."""
        b = self.leader(topic, partition)
        r = self.replica(b, topic, partition) if b is not None else None
        return r.isr if r is not None else ()

    def in_sync(self, topic: str, partition: int, replicas: int) -> bool:
        """One leader, with ``replicas`` replicas in its ISR and its high watermark at its log end."""
        b = self.leader(topic, partition)
        if b is None:
            return False
        lead = self.replica(b, topic, partition)
        assert lead is not None
        return len(lead.isr) == replicas and lead.high_watermark == lead.log_end_offset

    async def close_clients(self) -> None:
        for c in reversed(self.clients):
            try:
                await asyncio.wait_for(c.close(), 10)
            except Exception:  # noqa: BLE001 (a client of a crashed cluster may fail to close)
                pass


def run_cluster(body: Callable[[Cluster], Awaitable[T]], *, seed: int = 1, brokers: int = 3,
                storage: str = "memory", **options: Any) -> T:
    """Run ``await body(cluster)`` on a fresh simulated cluster (see the module docstring).
    ``options`` are further :class:`~minikafka.sim.world.Options` fields (``broker_settings``,
    ``truncation``, ``transactions`` ...)."""
    world = World(Options(seed=seed, brokers=brokers, storage=storage, **options))
    cluster = Cluster(world)

    async def main() -> T:
        world.start_zookeeper()
        for b in range(1, brokers + 1):
            world.start_broker(b)
        await cluster.wait_until(lambda: world.controller_id() is not None
                                 and all(world.brokers[b].broker_epoch > 0 for b in range(1, brokers + 1)),
                                 START_S, "a controller elected and every broker registered")
        try:
            return await body(cluster)
        finally:
            await cluster.close_clients()

    with quiet_logs():
        try:
            return run_world(world, main)
        except BaseException as exc:
            exc.add_note(trace_tail(world))
            raise


def trace_tail(world: World, lines: int = TRACE_LINES) -> str:
    """The last ``lines`` lines of the world's trace and the brokers' event timelines, merged."""
    merged = sorted(world.trace + world.broker_events(), key=lambda line: float(line.split(None, 1)[0]))
    return "the simulation's last events (virtual s):\n" + "\n".join(merged[-lines:])


def trace_digest(world: World) -> str:
    """A digest of the world's trace and the brokers' event timelines: equal for two runs of one seed."""
    return hashlib.sha256("\n".join(world.trace + world.broker_events()).encode()).hexdigest()
