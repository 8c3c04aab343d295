"""The simulation's clients: the project's own asyncio clients, unchanged, on the simulated network.

They carry out the :class:`~minikafka.faults.workload.Workload` and record it in the
:class:`~minikafka.faults.history.History`.  Each is a real
:class:`~minikafka.client.producer.AIOProducer` or
:class:`~minikafka.client.consumer.AIOConsumer` given the simulation's ports (see
:mod:`minikafka.client.ports`): a :class:`~.network.SimTransport` under its own node
name, so that the nemesis's partitions and delays reach it as they reach a broker, and
the world's virtual-time :class:`~.world.SimClock`.  So every invariant the simulation
checks is checked against the code users run: the producer's metadata, retries,
idempotence and sequence numbers, the consumer's fetch positions, leader-epoch
validation and offset resets, the group commit path.

* A :class:`Producer` follows its :class:`~minikafka.faults.workload.ProducerPlan`
  (unique values ``p1-17``), one record at a time (acks=all, idempotent, no linger), and
  records each send and its outcome: ``ok`` with the offset, or ``info`` when the
  producer gave up (after its own retries a record may still have been written: the
  producer's contract, so never a definite ``fail``).
* A :class:`Consumer` (no group) reads every partition from the start and records every
  record it is handed; the invariant checker watches those reads as they happen.
* A :class:`Committer` (a consumer of the group, assigned no partitions) commits the
  consumer's progress as the group's offsets through the group coordinator and records
  each commit; at the end it reads the committed offsets back.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..client.consumer import AIOConsumer
from ..client.producer import AIOProducer
from ..client.types import TopicPartition
from ..errors import KafkaError
from ..faults.history import History
from ..faults.workload import ProducerPlan
from ..workloads.copier import start_client
from .network import SimTransport
from .world import BASE_PORT, HOST

if TYPE_CHECKING:
    from .world import World

CALL_MS = 5000  # one request's timeout (request.timeout.ms)
BACKOFF_MS = 100


def bootstrap(world: "World") -> str:
    """Every broker's address on the simulated network, as a client's bootstrap list."""
    return ",".join(f"{HOST}:{BASE_PORT + b}" for b in sorted(world.brokers))


def sim_ports(world: "World", name: str) -> dict:
    """The keyword arguments that put a real client on the simulated network (as node
    ``name``, so the nemesis reaches it) and on the world's virtual clock."""
    return {"transport": SimTransport(world, name), "clock": world.clock, "client_id": name}


def _outcome(exc: BaseException) -> tuple[str, bool]:
    """(error name, definite) of a client's failure."""
    if isinstance(exc, KafkaError):
        return exc.code.name, exc.definite
    return type(exc).__name__, False


class Client:
    """What the simulation's clients share: a node name, the world, the history."""

    def __init__(self, world: "World", name: str, history: History) -> None:
        self.world = world
        self.name = name
        self.history = history
        self.topic = world.opts.topic
        self.errors = 0

    def ports(self) -> dict:
        """:func:`sim_ports` under this client's name."""
        return sim_ports(self.world, self.name)


class Producer(Client):
    """acks=all, one record at a time, the partitions in the plan's turn (a real AIOProducer)."""

    def __init__(self, world: "World", plan: ProducerPlan, history: History) -> None:
        super().__init__(world, plan.name, history)
        self.plan = plan
        self.sent = 0
        self.acked = 0
        self.client = AIOProducer(bootstrap(world), acks="all", linger_ms=0, enable_idempotence=True,
                                  request_timeout_ms=CALL_MS, delivery_timeout_ms=6 * CALL_MS,
                                  retry_backoff_ms=BACKOFF_MS, max_block_ms=6 * CALL_MS, **self.ports())

    async def run(self, until: float) -> None:
        """Produce until virtual time ``until``."""
        loop = asyncio.get_running_loop()
        if not await start_client(self.client, lambda: until):
            return
        seq = 0
        while loop.time() < until:
            p = self.plan.partition(seq)
            value = self.plan.value(seq)
            seq += 1
            self.sent += 1
            op = self.history.invoke_produce(self.name, (self.topic, p), value, loop.time())
            try:
                meta = await (await self.client.send(self.topic, value.encode(), partition=p))
            except Exception as exc:  # noqa: BLE001 (every failure is an outcome to record)
                self.errors += 1
                name, _ = _outcome(exc)
                self.history.info(op, loop.time(), name)  # retried inside: it may still have been written
            else:
                self.acked += 1
                self.history.ok(op, loop.time(), meta.offset)
            await asyncio.sleep(self.world.rng.uniform(0.005, 0.05))

    async def close(self) -> None:
        await self.client.close()


class Consumer(Client):
    """Reads every partition from the start, outside any group (a real AIOConsumer)."""

    def __init__(self, world: "World", name: str, history: History) -> None:
        super().__init__(world, name, history)
        self.offsets: dict[int, int] = {p: 0 for p in range(world.opts.partitions)}
        self.records = 0
        self.client = AIOConsumer(bootstrap(world), group_id=None, auto_offset_reset="earliest",
                                  fetch_max_wait_ms=200, request_timeout_ms=CALL_MS, retry_backoff_ms=BACKOFF_MS,
                                  **self.ports())
        self._assigned = False

    async def run(self, until: float) -> None:
        """Read until virtual time ``until``, recording every record handed out."""
        loop = asyncio.get_running_loop()
        if not await start_client(self.client, lambda: until):
            return
        if not self._assigned:
            self.client.assign([TopicPartition(self.topic, p) for p in sorted(self.offsets)])
            self._assigned = True
        while loop.time() < until:
            try:
                records = await self.client.poll(timeout_ms=200)
            except Exception:  # noqa: BLE001 (the consumer goes on, as an application's loop would)
                self.errors += 1
                await asyncio.sleep(BACKOFF_MS / 1000)
                continue
            now = loop.time()
            for rec in records:
                self.records += 1
                self.history.read(self.name, (rec.topic, rec.partition), rec.offset,
                                  rec.value.decode() if rec.value else "", now)
                self.offsets[rec.partition] = rec.offset + 1

    async def close(self) -> None:
        await self.client.close()


class Committer(Client):
    """Commits the consumer's progress for ``group`` through the group coordinator (a real
    AIOConsumer of the group with no partitions: OffsetCommit with generation -1, a group
    without members); the coordinator appends the commit to __consumer_offsets with
    acks=all and acknowledges it once committed."""

    def __init__(self, world: "World", name: str, history: History, consumer: Consumer, group: str) -> None:
        super().__init__(world, name, history)
        self.consumer = consumer
        self.group = group
        self.best: dict[int, int] = {}
        self.commits = 0
        self.client = AIOConsumer(bootstrap(world), group_id=group, enable_auto_commit=False,
                                  request_timeout_ms=CALL_MS, retry_backoff_ms=BACKOFF_MS, **self.ports())

    async def run(self, until: float) -> None:
        """Commit the consumer's progress every half second until virtual time ``until``."""
        loop = asyncio.get_running_loop()
        if not await start_client(self.client, lambda: until):
            return
        while loop.time() < until:
            await asyncio.sleep(0.5)
            for p, o in self.consumer.offsets.items():
                self.best[p] = max(o, self.best.get(p, 0))
            offsets = {(self.topic, p): o for p, o in sorted(self.best.items())}
            op = self.history.invoke_commit(self.name, self.group, offsets, loop.time())
            try:
                await self.client.commit({TopicPartition(t, p): o for (t, p), o in offsets.items()})
            except Exception as exc:  # noqa: BLE001 (every failure is an outcome to record)
                self.errors += 1
                self.history.error(op, loop.time(), *_outcome(exc))
                continue
            self.commits += 1
            self.history.ok(op, loop.time())

    async def fetch_committed(self, timeout_s: float) -> dict[tuple[str, int], int] | None:
        """The group's committed offsets, asked until the coordinator answers (None: it never did)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        if not await start_client(self.client, lambda: deadline):
            return None
        while loop.time() < deadline:
            try:
                out = {}
                for p in range(self.world.opts.partitions):
                    got = await self.client.committed(TopicPartition(self.topic, p))
                    if got is not None:
                        out[(self.topic, p)] = got
                return out
            except Exception:  # noqa: BLE001 (asked again until the deadline)
                await asyncio.sleep(0.5)
        return None

    async def close(self) -> None:
        await self.client.close()

