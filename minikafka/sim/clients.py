"""The simulation's clients: they carry out the :class:`~minikafka.faults.workload.Workload`
on the simulated network and record it in the :class:`~minikafka.faults.history.History`.

They speak the brokers' msgpack API over the simulated network, as any client would:
metadata from a live broker, produce to the partition leader, fetch from it.  A
producer follows its :class:`~minikafka.faults.workload.ProducerPlan` (unique values
``p1-17``), one request at a time, and records each send and its outcome: ``ok`` with
the offset, ``fail`` on a definite error, ``info`` on an indefinite one or when no
answer came.  A consumer
records every record it is handed (the invariant checker watches those reads as they
happen).  A committer commits the consumer's progress as the group's offsets through
the group coordinator and records each commit.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .. import errors
from ..errors import KafkaError
from ..faults.history import History
from ..faults.workload import ProducerPlan
from ..protocol.records.batch import encode_batch, iter_records
from .network import call
from .world import BASE_PORT, HOST

if TYPE_CHECKING:
    from .world import World


class Client:
    """What producers and consumers share: a node name, metadata and calls."""

    def __init__(self, world: "World", name: str, history: History) -> None:
        self.world = world
        self.name = name
        self.history = history
        self.topic = world.opts.topic
        self.leaders: dict[int, tuple[int, int]] = {}  # partition -> (leader, leader epoch)
        self.errors = 0

    async def call(self, broker_id: int, api: str, body: dict, timeout_s: float) -> dict:
        """Call ``api`` on broker ``broker_id`` over the simulated network."""
        return await call(self.world, self.name, HOST, BASE_PORT + broker_id, api, body, timeout_s)

    async def refresh(self) -> None:
        """Ask a broker (any, in turn) for the topic's leaders."""
        brokers = sorted(self.world.brokers)
        start = self.world.rng.randrange(len(brokers))
        for i in range(len(brokers)):
            b = brokers[(start + i) % len(brokers)]
            try:
                md = await self.call(b, "metadata", {"topics": [self.topic]}, 2.0)
            except KafkaError:
                continue
            for t in md["topics"]:
                for p in t["partitions"]:
                    if p["leader"] >= 0:
                        self.leaders[p["partition"]] = (p["leader"], p["leader_epoch"])
                    else:
                        self.leaders.pop(p["partition"], None)
            return


class Producer(Client):
    """acks=all, one request at a time, the partitions in the plan's turn."""

    def __init__(self, world: "World", plan: ProducerPlan, history: History) -> None:
        super().__init__(world, plan.name, history)
        self.plan = plan
        self.sent = 0
        self.acked = 0

    async def run(self, until: float) -> None:
        """Produce until virtual time ``until``."""
        loop = asyncio.get_running_loop()
        seq = 0
        while loop.time() < until:
            p = self.plan.partition(seq)
            if p not in self.leaders:
                await self.refresh()
                if p not in self.leaders:
                    seq += 1
                    await asyncio.sleep(0.1)
                    continue
            leader, _ = self.leaders[p]
            value = self.plan.value(seq)
            seq += 1
            batch = encode_batch([(None, value.encode(), None, int(self.world.loop.time() * 1000))])
            self.sent += 1
            op = self.history.invoke_produce(self.name, (self.topic, p), value, loop.time())
            try:
                resp = await self.call(leader, "produce", {"acks": -1, "timeout_ms": 3000, "partitions": [
                    {"topic": self.topic, "partition": p, "records": batch}]}, 5.0)
                r = resp["partitions"][0]
                if r["error_code"] == 0:
                    self.acked += 1
                    self.history.ok(op, loop.time(), r["base_offset"])
                else:
                    self.errors += 1
                    self.leaders.pop(p, None)
                    self.history.error(op, loop.time(), errors.error_name(r["error_code"]),
                                       errors.error_for(r["error_code"]).definite)
            except KafkaError as exc:
                self.errors += 1
                self.leaders.pop(p, None)
                self.history.error(op, loop.time(), type(exc).__name__, exc.definite)
            await asyncio.sleep(self.world.rng.uniform(0.005, 0.05))


class Consumer(Client):
    """Reads every partition from the start (replica_id -1: only below the HW)."""

    def __init__(self, world: "World", name: str, history: History) -> None:
        super().__init__(world, name, history)
        self.offsets: dict[int, int] = {p: 0 for p in range(world.opts.partitions)}
        self.records = 0

    async def run(self, until: float) -> None:
        """Fetch until virtual time ``until``."""
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            if len(self.leaders) < len(self.offsets):
                await self.refresh()
            if not self.leaders:
                await asyncio.sleep(0.1)
                continue
            await self.fetch_round()

    async def fetch_round(self) -> None:
        """One fetch from each leader of the partitions it leads, recording every record handed out."""
        by_leader: dict[int, list[int]] = {}
        for p, (leader, _) in sorted(self.leaders.items()):
            by_leader.setdefault(leader, []).append(p)
        for leader, parts in sorted(by_leader.items()):
            try:
                resp = await self.call(leader, "fetch", {"replica_id": -1, "max_wait_ms": 200, "min_bytes": 1, "partitions": [
                    {"topic": self.topic, "partition": p, "fetch_offset": self.offsets[p]} for p in parts]}, 3.0)
            except KafkaError:
                self.errors += 1
                for p in parts:
                    self.leaders.pop(p, None)
                continue
            for r in resp["partitions"]:
                p = r["partition"]
                if r["error_code"]:
                    self.errors += 1
                    self.leaders.pop(p, None)
                    if r["error"] == "OFFSET_OUT_OF_RANGE":
                        self.offsets[p] = 0  # read the partition again from its start
                    continue
                now = asyncio.get_running_loop().time()
                for rec in iter_records(r["records"], min_offset=self.offsets[p]):
                    self.records += 1
                    self.history.read(self.name, (self.topic, p), rec.offset,
                                      rec.value.decode() if rec.value else "", now)
                    self.offsets[p] = rec.offset + 1


class Committer(Client):
    """Commits the consumer's progress for ``group`` (OffsetCommit with generation -1, a
    group without members), through the group coordinator it finds with
    FindCoordinator: the coordinator appends the commit to __consumer_offsets with
    acks=all and acknowledges it once committed."""

    def __init__(self, world: "World", name: str, history: History, consumer: Consumer, group: str) -> None:
        super().__init__(world, name, history)
        self.consumer = consumer
        self.group = group
        self.coordinator: int | None = None
        self.best: dict[int, int] = {}
        self.commits = 0

    async def find(self) -> int | None:
        """The group's coordinator (FindCoordinator to each live broker in turn), or None."""
        for b in self.world.live_brokers():
            try:
                r = await self.call(b, "find_coordinator", {"key": self.group}, 2.0)
                return r["node_id"]
            except KafkaError:
                continue
        return None

    async def run(self, until: float) -> None:
        """Commit the consumer's progress every half second until virtual time ``until``."""
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            await asyncio.sleep(0.5)
            for p, o in self.consumer.offsets.items():
                self.best[p] = max(o, self.best.get(p, 0))
            if self.coordinator is None:
                self.coordinator = await self.find()
                if self.coordinator is None:
                    continue
            offsets = [{"topic": self.topic, "partition": p, "offset": o} for p, o in sorted(self.best.items())]
            op = self.history.invoke_commit(self.name, self.group, {(self.topic, p): o for p, o in sorted(self.best.items())},
                                            loop.time())
            try:
                r = await self.call(self.coordinator, "offset_commit", {"group_id": self.group, "generation_id": -1,
                                                                        "offsets": offsets}, 5.0)
            except KafkaError as exc:
                self.errors += 1
                self.coordinator = None
                self.history.error(op, loop.time(), type(exc).__name__, exc.definite)
                continue
            if all(x["error_code"] == 0 for x in r["partitions"]):
                self.commits += 1
                self.history.ok(op, loop.time())
            else:
                self.errors += 1
                self.coordinator = None
                failed = [errors.error_for(x["error_code"]) for x in r["partitions"] if x["error_code"]]
                self.history.error(op, loop.time(), ",".join(sorted({e.code.name for e in failed})),
                                   all(e.definite for e in failed))

    async def fetch_committed(self, timeout_s: float) -> dict[tuple[str, int], int] | None:
        """OffsetFetch from the coordinator, retried until it answers (None: it never did)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            coordinator = await self.find()
            if coordinator is not None:
                try:
                    r = await self.call(coordinator, "offset_fetch", {"group_id": self.group, "partitions": None}, 5.0)
                    if all(x["error_code"] == 0 for x in r["partitions"]):
                        return {(x["topic"], x["partition"]): x["offset"] for x in r["partitions"]}
                except KafkaError:
                    pass
            await asyncio.sleep(0.5)
        return None
