"""The controller's ZooKeeper I/O: reads that become core events, and plans carried out
as one fenced transaction.

Every write here is fenced by ``/controller_epoch``'s znode version: a ZooKeeper
multi starts with a ``check`` of that version, so a deposed controller's write fails
as a whole (:class:`Fenced`).  A partition state write is also conditional on the state
znode's version; when a leader changed the ISR meanwhile the transaction fails with
:class:`StateConflict`, and the controller plans the event again from fresh state.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Awaitable, Callable, Iterable, TypeVar

from ..zk import layout
from ..zk.errors import BadVersionError, NodeExistsError, NoNodeError, RolledBackError
from ..zk.session import ZkSession
from .core import (CREATE, TP, AssignmentWrite, Delete, DeleteIfPresent, Failover, Plan, StateRead, StateWrite,
                   SyncReassignZnode, TopicRead, recovered_controller_epoch)

log = logging.getLogger(__name__)


CHUNK_OPS = 500  # ops per transaction: ~100 KB, well under ZooKeeper's 1 MB (jute.maxbuffer)
COMMITS_IN_FLIGHT = 4  # a big plan's transactions sent at once (a failover at 10,000 partitions has 20)
# reads in flight at once on the controller's session (Kafka pipelines its reads too,
# zookeeper.max.in.flight.requests): a failover reads every partition's state, one
# round trip each when read one after another
READS_IN_FLIGHT = 256
# many reads go in one multiRead request (ZkSession.get_many), a few requests at once: a
# read answered one by one crosses from kazoo's thread to the event loop once per znode,
# which inside a broker serving thousands of partitions costs far more than the read
READS_PER_REQUEST = 256
REQUESTS_IN_FLIGHT = 4

K = TypeVar("K")
V = TypeVar("V")


async def pipelined(read: Callable[[K], Awaitable[V]], keys: Iterable[K], width: int = READS_IN_FLIGHT) -> dict[K, V]:
    """``read(key)`` for every key, ``width`` at once: each answer lets the next read go
    (a window, so one slow answer holds back one slot, not a whole batch); the results
    by key, in the keys' order.  A read that raises cancels the others and raises."""
    keys = list(keys)
    out: dict[K, V] = {}
    todo = iter(keys)

    async def slot() -> None:
        for key in todo:  # the slots share one iterator: each key is read once
            out[key] = await read(key)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(width, len(keys))):
                group.create_task(slot())
    except ExceptionGroup as failed:  # the callers catch the read's own error (a lost session...)
        raise failed.exceptions[0] from None
    return {key: out[key] for key in keys}


class Fenced(Exception):
    """/controller_epoch moved on: another broker is controller now."""


class StateConflict(Exception):
    """A conditional write lost a race; ``tps`` are the partitions to read again."""

    def __init__(self, tps: list[TP], why: str) -> None:
        super().__init__(why)
        self.tps = tps


def parse_reassignment(data: bytes) -> dict[TP, list[int]] | None:
    """/admin/reassign_partitions: {"version":1,"partitions":[{"topic","partition","replicas"}]};
    None when malformed."""
    try:
        return {(str(d["topic"]), int(d["partition"])): [int(b) for b in d["replicas"]]
                for d in json.loads(data).get("partitions", [])}
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def encode_reassignment(remaining: dict[TP, list[int]]) -> bytes:
    body = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                         for (t, p), r in sorted(remaining.items())]}
    return json.dumps(body, separators=(",", ":")).encode()


def parse_preferred(data: bytes) -> list[TP] | None:
    """/admin/preferred_replica_election: {"version":1,"partitions":[{"topic","partition"}]};
    None when malformed."""
    try:
        return [(str(d["topic"]), int(d["partition"])) for d in json.loads(data).get("partitions", [])]
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _raise_if_fenced(results: list[Any], epoch_zk_version: int) -> None:
    """The transaction's first op checks /controller_epoch's version; it failed itself (not
    rolled back because of a later op) when another controller was elected since."""
    if results and isinstance(results[0], (BadVersionError, NoNodeError)):
        raise Fenced(f"/controller_epoch is no longer at version {epoch_zk_version}")


class ControllerStore:
    """Reads and fenced writes of the controller's znodes."""

    def __init__(self, zk: ZkSession, now_ms: Callable[[], int] | None = None,
                 new_topic_id: Callable[[], str] | None = None) -> None:
        self.zk = zk
        self.now_ms = now_ms  # the broker's clock for /controller's timestamp (None: the machine's)
        # a fresh random topic id (KIP-516) for a topic read without one (None: none given)
        self.new_topic_id = new_topic_id

    # -- reads -------------------------------------------------------------------------------
    async def get_all(self, keys: Iterable[K], path: Callable[[K], str]) -> dict[K, tuple[bytes, Any] | None]:
        """Data and stat of each key's znode ``path(key)`` (None where it does not exist),
        by key; many in one request."""
        paths = [(key, path(key)) for key in keys]
        chunks = [paths[i:i + READS_PER_REQUEST] for i in range(0, len(paths), READS_PER_REQUEST)]
        got = await pipelined(lambda i: self.zk.get_many([p for _, p in chunks[i]]), range(len(chunks)),
                              REQUESTS_IN_FLIGHT)
        return {key: result for i, chunk in enumerate(chunks) for (key, _), result in zip(chunk, got[i])}

    async def read_brokers(self, ids: list[str]) -> dict[int, layout.BrokerInfo]:
        got = await self.get_all(ids, lambda s: layout.broker_path(int(s)))
        return {int(s): layout.BrokerInfo.decode(int(s), g[0], g[1].czxid) for s, g in got.items() if g is not None}

    async def read_states(self, tps: Iterable[TP]) -> dict[TP, StateRead]:
        """The states of ``tps`` that exist, many in one request."""
        got = await self.get_all(tps, lambda tp: layout.partition_state_path(*tp))
        return {tp: StateRead(layout.LeaderIsr.decode(g[0]), g[1].version, g[1].mzxid)
                for tp, g in got.items() if g is not None}

    async def read_assignment(self, topic: str) -> dict[int, list[int]] | None:
        znode = await self.read_topic_znode(topic)
        return None if znode is None else znode.partitions

    async def read_topic_znode(self, topic: str) -> layout.TopicZnode | None:
        got = await self.zk.get(layout.topic_path(topic))
        return None if got is None else layout.TopicZnode.decode(got[0])

    async def read_topics(self, names: Iterable[str]) -> dict[str, TopicRead]:
        """The topics as the controller loads them (those that exist), in three steps over
        all of them, many reads in each request: the assignments, the configs, every
        partition's state.  One stored without a topic id comes with a fresh one (``new_topic_id``) that the
        controller writes."""
        got = await self.get_all(names, layout.topic_path)
        znodes = {t: layout.TopicZnode.decode(g[0]) for t, g in got.items() if g is not None}
        configs = await self.get_all(znodes, layout.topic_config_path)
        states = await self.read_states((t, p) for t, z in znodes.items() for p in z.partitions)
        out = {}
        for topic, znode in znodes.items():
            cfg = configs[topic]
            fresh = self.new_topic_id() if znode.topic_id is None and self.new_topic_id is not None else None
            out[topic] = TopicRead(znode.partitions, layout.decode_topic_config(cfg[0]) if cfg else {},
                                   {p: states[(topic, p)] for p in znode.partitions if (topic, p) in states},
                                   znode.topic_id, fresh, dict(znode.adding))
        return out

    async def read_failover(self, previous_controller: int | None = None) -> Failover:
        """The cluster as a new controller loads it; ``previous_controller`` is passed on."""
        live = await self.read_brokers(await self.zk.children(layout.BROKER_IDS))
        topics = await self.read_topics(await self.zk.children(layout.BROKER_TOPICS))
        return Failover(live, topics, previous_controller)

    async def take_isr_notifications(self, children: list[str]) -> dict[TP, StateRead]:
        """Read and delete /isr_change_notification/isr_change_N; the states they name."""
        tps: set[TP] = set()
        paths = [f"{layout.ISR_CHANGE_NOTIFICATION}/{name}" for name in sorted(children)]
        for path, got in (await self.get_all(paths, lambda p: p)).items():
            if got is not None:
                try:
                    tps.update(layout.decode_isr_change(got[0]))
                except (ValueError, KeyError, TypeError):
                    log.warning("malformed %s", path)
        await pipelined(self.zk.delete, paths)
        return await self.read_states(sorted(tps))

    async def recorded_controller_epochs(self) -> list[int]:
        """The controller epoch of every partition state znode (what a new controller
        recovers its epoch from when ``/controller_epoch`` is missing)."""
        out = []
        for topic in await self.zk.children(layout.BROKER_TOPICS):
            for p in await self.zk.children(layout.partitions_path(topic)):
                got = await self.zk.get(f"{layout.partitions_path(topic)}/{p}/state")
                if got is None:
                    continue
                try:
                    out.append(layout.LeaderIsr.decode(got[0]).controller_epoch)
                except (ValueError, KeyError, TypeError):
                    log.warning("malformed partition state %s-%s", topic, p)
        return out

    async def read_znode(self, path: str) -> bytes | None:
        got = await self.zk.get(path)
        return None if got is None else got[0]

    # -- the plan's transaction --------------------------------------------------------------
    async def _subtree(self, path: str) -> list[str]:
        """``path`` and every znode below it, deepest first ([] when it does not exist)."""
        if await self.zk.exists(path) is None:
            return []
        out: list[str] = []
        for child in await self.zk.children(path):
            out += await self._subtree(f"{path}/{child}")
        return out + [path]

    async def execute(self, plan: Plan, epoch_zk_version: int) -> int:
        """Run the plan's writes as transactions fenced by the controller epoch's version:
        one for most plans, several of at most :data:`CHUNK_OPS` ops for a big one (ZooKeeper
        refuses a request over 1 MB).  Returns the zxid of the first (-1 when there was
        nothing to write).  A lost race in any part raises :class:`StateConflict` naming
        every partition of the plan, so the controller re-reads them all and plans again."""
        if not plan.writes:
            return -1
        ops: list[tuple[str, Any]] = []
        existing: dict[str, set[str]] = {}  # topic -> partition znodes already there
        for w in plan.writes:
            if isinstance(w, StateWrite):
                if w.expected_version == CREATE:
                    topic = w.tp[0]
                    if topic not in existing:
                        await self.zk.ensure_path(layout.partitions_path(topic))
                        existing[topic] = set(await self.zk.children(layout.partitions_path(topic)))
                    if str(w.tp[1]) not in existing[topic]:
                        ops.append(("create", (layout.partition_path(*w.tp), b"")))
                    ops.append(("create", (layout.partition_state_path(*w.tp), w.state.encode())))
                else:
                    ops.append(("set", (layout.partition_state_path(*w.tp), w.state.encode(), w.expected_version)))
            elif isinstance(w, AssignmentWrite):
                ops.append(("set", (layout.topic_path(w.topic),
                                    layout.encode_assignment(w.assignment, w.topic_id, w.adding, w.removing), -1)))
            elif isinstance(w, Delete):
                ops += [("delete", (path,)) for path in await self._subtree(w.path)]
        starts = range(0, len(ops), CHUNK_OPS)

        async def commit(start: int) -> list[Any]:
            chunk = ops[start:start + CHUNK_OPS]

            def build(tx: Any) -> None:
                tx.check(layout.CONTROLLER_EPOCH, epoch_zk_version)
                for kind, args in chunk:
                    if kind == "create":
                        tx.create(*args)
                    elif kind == "set":
                        tx.set_data(*args)
                    else:
                        tx.delete(*args)
            return await self.zk.commit(build)

        # a big plan's transactions go a few at once: ZooKeeper applies one session's
        # requests in the order sent, so the first is still applied first
        committed = await pipelined(commit, starts, COMMITS_IN_FLIGHT)
        zxid = -1
        for start in starts:
            results = committed[start]
            _raise_if_fenced(results, epoch_zk_version)
            for (kind, args), r in zip(ops[start:start + CHUNK_OPS], results[1:]):
                if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                    written = f" ({start} of {len(ops)} ops sent before)" if start else ""
                    if isinstance(r, (BadVersionError, NodeExistsError, NoNodeError)):
                        raise StateConflict(sorted(plan.state_writes()), f"{r.__class__.__name__} on {kind} {args[0]}{written}")
                    # the adapter's error names ZooKeeper's reason (NoAuthError, ...): keep it
                    raise r.__class__(f"{kind} {args[0]}: {str(r) or r.__class__.__name__}{written}")
            if zxid < 0:
                zxid = next((r.mzxid for r in results if hasattr(r, "mzxid")), -1)
        if zxid < 0:
            for w in plan.writes:
                if isinstance(w, StateWrite):
                    stat = await self.zk.exists(layout.partition_state_path(*w.tp))
                    if stat is not None:
                        return stat.mzxid
        return zxid

    async def _fenced(self, epoch_zk_version: int, op: Any) -> bool:
        """One fenced op; False when the node was missing or changed meanwhile."""
        def build(tx: Any) -> None:
            tx.check(layout.CONTROLLER_EPOCH, epoch_zk_version)
            op(tx)
        results = await self.zk.commit(build)
        _raise_if_fenced(results, epoch_zk_version)
        failed = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
        if failed and not isinstance(failed[0], (NoNodeError, BadVersionError)):
            raise failed[0]
        return not failed

    async def run_after(self, op: DeleteIfPresent | SyncReassignZnode, epoch_zk_version: int) -> None:
        """Admin znode clean-ups after the transaction (fenced, tolerant of races)."""
        if isinstance(op, DeleteIfPresent):
            await self._fenced(epoch_zk_version, lambda tx: tx.delete(op.path))
            return
        got = await self.zk.get(layout.REASSIGN_PARTITIONS)
        if got is None:
            return
        if not op.remaining:
            await self._fenced(epoch_zk_version, lambda tx: tx.delete(layout.REASSIGN_PARTITIONS))
            return
        if parse_reassignment(got[0]) == op.remaining:
            return  # unchanged: rewriting it would fire the watch and queue the handler again
        await self._fenced(epoch_zk_version, lambda tx: tx.set_data(layout.REASSIGN_PARTITIONS,
                                                                    encode_reassignment(op.remaining), got[1].version))

    # -- the /controller race -----------------------------------------------------------------
    async def try_elect(self, broker_id: int) -> tuple[int, int] | None:
        """Create /controller and increment /controller_epoch in one transaction (Kafka's
        registerControllerAndIncrementControllerEpoch).  Returns (epoch, epoch znode
        version), or None when another broker holds /controller."""
        got = await self.zk.get(layout.CONTROLLER_EPOCH)
        if got is None:
            start = recovered_controller_epoch(await self.recorded_controller_epochs())
            try:
                await self.zk.create(layout.CONTROLLER_EPOCH, str(start).encode())
            except NodeExistsError:
                pass
            got = await self.zk.get(layout.CONTROLLER_EPOCH)
            if got is None:  # deleted again at once (by a tool): not elected this time
                return None
        epoch = int(got[0]) + 1
        version = got[1].version

        def build(tx: Any) -> None:
            tx.create(layout.CONTROLLER, layout.encode_controller(broker_id, self.now_ms() if self.now_ms else int(time.time() * 1000)),
                      ephemeral=True)
            tx.set_data(layout.CONTROLLER_EPOCH, str(epoch).encode(), version)
        try:
            results = await self.zk.transaction(build)
        except (NodeExistsError, BadVersionError, NoNodeError):
            return None
        return epoch, results[1].version

    async def enable_feature_versioning(self) -> None:
        """Create /feature (versioning enabled, no finalized features) unless it exists, as
        Kafka's controller does when it takes over (KafkaController.enableFeatureVersioning)."""
        try:
            await self.zk.create(layout.FEATURE, layout.encode_feature())
        except NodeExistsError:
            pass

    async def controller_holder(self) -> int | None:
        """The broker /controller names now (Kafka's getControllerId); None when it is
        absent, -1 when it cannot be read."""
        got = await self.zk.get(layout.CONTROLLER)
        if got is None:
            return None
        try:
            return layout.decode_controller(got[0])
        except (ValueError, KeyError, TypeError):
            return -1

    async def delete_controller(self, epoch_zk_version: int) -> bool:
        """Kafka's triggerControllerMove: delete /controller, fenced by the epoch's version
        (a controller elected meanwhile keeps it).  True when deleted or already gone."""
        try:
            return await self._fenced(epoch_zk_version, lambda tx: tx.delete(layout.CONTROLLER)) or True
        except Fenced:
            return True  # someone else is controller already
