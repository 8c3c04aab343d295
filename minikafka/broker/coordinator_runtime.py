"""What the group coordinator and the transaction coordinator share: the runtime of a
coordinator whose state lives in the partitions of an internal topic (Kafka extracted
the same in 3.6, its ``CoordinatorRuntime``).

* **Shards.** A coordinator owns one shard per partition of its topic (``__consumer_offsets``,
  ``__transaction_state``) that this broker leads.  :meth:`CoordinatorRuntime.on_leadership`
  takes one over (a new shard, loaded by a task of the runtime's) or gives it up; a
  shard answers only once loaded: NOT_COORDINATOR for a key whose partition is not led
  here, COORDINATOR_LOAD_IN_PROGRESS while its shard loads (:meth:`CoordinatorRuntime.shard_of`).
* **Loading.** :meth:`CoordinatorRuntime.replay` reads the partition from its log start
  to the log end offset it had when the load began, once the high watermark covers it
  (:mod:`.coordinator_log`), and hands every batch to the coordinator.
* **Finding.** :meth:`CoordinatorRuntime.find_coordinator` answers FindCoordinator: the
  leader of the key's partition, and creates the topic on first use.
* **Time.** :meth:`CoordinatorRuntime.every` runs a coordinator's periodic work in a task
  the runtime owns until :meth:`CoordinatorRuntime.stop`.

The coordinators keep their own rules (the pure cores of ``groups/`` and
``transactions/``) and what their shards hold.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Coroutine, Generic, TypeVar

from ..config import BrokerConfig
from ..errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaError,
    NotCoordinatorError,
    TopicAlreadyExistsError,
)
from ..groups.records import partition_for
from ..protocol.records.batch import BatchHeader, split_batches
from ..zk.session import ZkSession
from .coordinator_log import wait_committed
from .metadata_cache import MetadataCache
from .services import Clock, EventLog, Spawn
from .settings import InternalTopicSettings
from .topic_admin import NewTopic, TopicAdmin

if TYPE_CHECKING:
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

# How much of the log one read of a load takes.
READ_BYTES = 1 << 20


@dataclass(frozen=True)
class InternalTopic:
    """The internal topic a coordinator keeps its state in, and how it names its keys."""

    name: str  # __consumer_offsets, __transaction_state
    keeps: str  # what a shard holds, for messages: "groups", "transactions"
    key_kind: str  # what a key is, for messages: "group", "transactional id"
    events: str  # the prefix of the timeline's kinds: "coordinator", "txn_coordinator"
    # FindCoordinator's and every request's error for an empty key
    empty_key: Callable[[], KafkaError]


@dataclass
class Shard:
    """What a coordinator holds of one partition of its topic led here."""

    partition: int
    loaded: bool = False
    task: asyncio.Task | None = None  # the load
    tasks: set[asyncio.Task] = field(default_factory=set)  # the shard's own work (cancelled with it)


S = TypeVar("S", bound=Shard)


class CoordinatorRuntime(Generic[S]):
    """The shards of one coordinator on one broker (see the module docstring)."""

    def __init__(self, topic: InternalTopic, created: InternalTopicSettings, config: BrokerConfig, clock: Clock,
                 zk: ZkSession, metadata: MetadataCache, topic_admin: TopicAdmin, replica_manager: "ReplicaManager",
                 record_event: EventLog, spawn: Spawn) -> None:
        """``created``: the topic's partition count, replication factor and configs at its
        creation (the coordinator's settings)."""
        self.topic = topic
        self.created = created
        self.config = config
        self.broker_id = config.broker_id
        self.clock = clock
        self.zk = zk
        self.metadata = metadata
        self.topic_admin = topic_admin
        self.replica_manager = replica_manager
        self.record_event = record_event
        self.spawn = spawn
        self.shards: dict[int, S] = {}
        self._timers: list[asyncio.Task] = []

    def now_ms(self) -> int:
        """Wall-clock ms (what the coordinators' records and deadlines use)."""
        return int(self.clock.time() * 1000)

    # -- keys and shards -------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        got = self.metadata.partitions_of(self.topic.name)
        return len(got) or self.created.num_partitions

    def partition_for(self, key: str) -> int:
        """The partition of the topic that holds ``key`` (Kafka's hash of the key)."""
        return partition_for(key, self.num_partitions)

    def shard_of(self, key: str) -> S:
        """The loaded shard of ``key``: NOT_COORDINATOR when its partition is not led here,
        COORDINATOR_LOAD_IN_PROGRESS while it loads."""
        if not key:
            raise self.topic.empty_key()
        shard = self.shards.get(self.partition_for(key))
        if shard is None:
            raise NotCoordinatorError(f"broker {self.broker_id} is not the coordinator of "
                                      f"{self.topic.key_kind} {key!r}")
        if not shard.loaded:
            raise CoordinatorLoadInProgressError(f"broker {self.broker_id} is loading the {self.topic.keeps} of "
                                                 f"{self.topic.name}-{shard.partition}")
        return shard

    def loaded(self) -> list[S]:
        """The loaded shards, in a list (the caller may await between them)."""
        return [s for s in self.shards.values() if s.loaded]

    def current(self, shard: S) -> bool:
        """True while ``shard`` is still the one of its partition (not given up or replaced)."""
        return self.shards.get(shard.partition) is shard

    # -- leadership ------------------------------------------------------------------------
    def on_leadership(self, partition: int, is_leader: bool, new_shard: Callable[[int], S],
                      load: Callable[[S], Coroutine[Any, Any, None]], unload: Callable[[S], None]) -> None:
        """After a LeaderAndIsr or StopReplica touched ``partition``: the shard held so far
        is given up (``unload``); as leader a new one is made (``new_shard``) and loaded
        (``load``, in a task of the runtime's)."""
        old = self.shards.get(partition)
        if old is not None:
            self.give_up(old, unload)
        if is_leader:
            shard = self.shards[partition] = new_shard(partition)
            shard.task = self.spawn(load(shard), f"{self.topic.keeps}-load-{partition}")
        elif old is not None:
            self.record_event(f"{self.topic.events}_unloaded",
                              f"broker {self.broker_id} stops coordinating the {self.topic.keeps} of "
                              f"{self.topic.name}-{partition}")

    def give_up(self, shard: S, unload: Callable[[S], None]) -> list[asyncio.Task]:
        """Forget ``shard``, cancel its load and its own tasks (returned, to await), then
        ``unload`` it."""
        if self.current(shard):
            del self.shards[shard.partition]
        tasks = [t for t in [shard.task, *shard.tasks] if t is not None and not t.done()]
        for t in tasks:
            t.cancel()
        unload(shard)
        return tasks

    def shard_task(self, shard: S, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task:
        """Run ``coro`` as ``shard``'s own work: cancelled when the shard is given up."""
        task = self.spawn(coro, name)
        shard.tasks.add(task)
        task.add_done_callback(shard.tasks.discard)
        return task

    async def replay(self, partition: int, on_batch: Callable[[BatchHeader, bytes, int], None]) -> bool:
        """Read ``partition`` from its log start to its log end offset of now, once the high
        watermark covers that (:func:`.coordinator_log.wait_committed`), handing each batch
        to ``on_batch(header, raw, from_offset)`` (its records from ``from_offset`` on are
        new).  False when this broker has no replica of the partition."""
        p = self.replica_manager.partitions.get((self.topic.name, partition))
        if p is None:
            return False
        await wait_committed(p)
        offset, end = p.log.log_start_offset, p.log_end_offset
        while offset < end:
            data = p.log.read(offset, READ_BYTES, None)
            if not data:
                break
            batches = split_batches(data, validate=False)
            for h, raw in batches:
                if h.next_offset > offset:
                    on_batch(h, raw, offset)
            # past the last batch read: a compacted batch may end after its last record
            offset = max(offset, max(h.next_offset for h, _ in batches))
            await asyncio.sleep(0)
        return True

    # -- finding the coordinator -----------------------------------------------------------
    async def find_coordinator(self, key: str) -> int:
        """The broker id coordinating ``key``; creates the topic on first use.
        COORDINATOR_NOT_AVAILABLE while the key's partition has no live leader."""
        if not key:
            raise self.topic.empty_key()
        md = self.metadata
        if not md.partitions_of(self.topic.name):
            await self.create_topic()
            raise CoordinatorNotAvailableError(f"{self.topic.name} is being created; ask again")
        st = md.partitions.get((self.topic.name, self.partition_for(key)))
        if st is None or st["leader"] < 0 or st["leader"] not in md.brokers:
            raise CoordinatorNotAvailableError(f"{self.topic.name} partition of {self.topic.key_kind} {key!r} "
                                               f"has no leader")
        return st["leader"]

    async def create_topic(self) -> None:
        """Create the topic as the coordinator's settings say (:attr:`created`: the
        replication factor at most the live brokers)."""
        live = len(await self.zk.children("/brokers/ids"))
        rf, configs = self.created.creation(live)
        err, = await self.topic_admin.create_topics([NewTopic(self.topic.name, self.created.num_partitions, rf, configs)],
            validate_only=False, timeout_ms=0)
        if err is not None and not isinstance(err, TopicAlreadyExistsError):
            raise CoordinatorNotAvailableError(f"could not create {self.topic.name}: {err.message}")

    # -- time --------------------------------------------------------------------------------
    def every(self, name: str, interval_s: float, tick: Callable[[], Awaitable[None]]) -> None:
        """Await ``tick`` every ``interval_s`` until :meth:`stop`; a failure is logged and
        the timer goes on."""
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    await tick()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("%s failed", name)
        self._timers.append(self.spawn(loop(), name))

    async def stop(self, unload: Callable[[S], None], also: list[asyncio.Task] | None = None) -> None:
        """Stop the timers, give up every shard (``unload``), cancel ``also``, and wait for
        all of them to end."""
        tasks = [*self._timers, *(also or [])]
        self._timers = []
        for shard in list(self.shards.values()):
            tasks += self.give_up(shard, unload)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
