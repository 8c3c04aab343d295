"""The group coordinator: consumer groups whose ``__consumer_offsets`` partition this
broker leads.

The decisions are :class:`~minikafka.groups.group.Group`'s (pure); this shell parks
JoinGroup and SyncGroup requests until their round ends, writes offsets and group
metadata as records to the internal topic with acks=all, rebuilds the groups of a
partition by replaying it when this broker becomes its leader, and ticks the groups'
timers.  Both protocols (msgpack and Kafka's) call the same methods here.

* The coordinator of group G is the leader of ``__consumer_offsets`` partition
  ``abs(hashCode(G)) % offsets.topic.num.partitions``; any other broker answers
  NOT_COORDINATOR, and the leader answers COORDINATOR_LOAD_IN_PROGRESS until it has
  replayed the partition.
* The topic is created on the first FindCoordinator (replication factor
  ``min(offsets.topic.replication.factor, live brokers)``).
* Transactional offset commits (TxnOffsetCommit) are written as records of a
  transactional batch of the producer and stay pending in the group until the
  transaction coordinator's marker on the partition is committed
  (:meth:`GroupCoordinator.on_txn_marker`, called by the replica manager).
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
import random
from typing import TYPE_CHECKING, Any

from ..errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    InvalidGroupIdError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidSessionTimeoutError,
    InvalidTxnStateError,
    KafkaError,
    NonEmptyGroupError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    OffsetMetadataTooLargeError,
    ProducerFencedError,
    UnknownTopicOrPartitionError,
)
from ..groups import records as rec
from ..groups.group import Effects, Group, GroupState, JoinAnswer, SyncAnswer
from ..groups.replay import OffsetsReplay
from ..config import BrokerConfig
from ..metric_names import GROUP_JOINS, GROUP_LEADER_CHANGES, GROUP_LEAVES, GROUP_REBALANCES, OFFSET_COMMITS
from ..protocol.records.batch import BatchHeader, batch_records, encode_batch
from ..protocol.records.control import COMMIT, read_marker
from ..protocol.rpc.types import ProducePartition, ProduceRequest
from ..zk.session import ZkSession
from .coordinator_runtime import CoordinatorRuntime, InternalTopic, Shard
from .metadata_cache import MetadataCache
from .metrics import Metrics
from .services import Clock, EventLog, Spawn
from .settings import GroupCoordinatorSettings
from .topic_admin import TopicAdmin

if TYPE_CHECKING:
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

TICK_S = 0.1
# errors of a transactional offsets write that the producer must see as they are
PRODUCER_ERRORS = (InvalidProducerEpochError, ProducerFencedError, InvalidTxnStateError)
# group events counted for /metrics
COUNTED = {"group_rebalance": GROUP_REBALANCES, "group_join": GROUP_JOINS, "group_leave": GROUP_LEAVES,
           "group_leader": GROUP_LEADER_CHANGES}


@dataclass
class _Shard(Shard):
    """The groups of one ``__consumer_offsets`` partition this broker leads."""

    groups: dict[str, Group] = field(default_factory=dict)
    # transaction markers committed while the partition was being loaded: applied after
    markers: list[tuple[int, bool]] = field(default_factory=list)


OFFSETS = InternalTopic(rec.OFFSETS_TOPIC, "groups", "group", "coordinator",
                        lambda: InvalidGroupIdError("the group id is empty"))


class GroupCoordinator:
    """Consumer groups of the partitions of ``__consumer_offsets`` led here."""

    def __init__(self, config: BrokerConfig, clock: Clock, rng: random.Random, zk: ZkSession, metadata: MetadataCache,
                 metrics: Metrics, record_event: EventLog, replica_manager: "ReplicaManager",
                 topic_admin: TopicAdmin, spawn: Spawn) -> None:
        self.config = config
        self.settings = GroupCoordinatorSettings.of(config)  # static settings only
        self.broker_id = config.broker_id
        self.clock = clock
        self.random = rng
        self.metadata = metadata
        self.metrics = metrics
        self.record_event = record_event
        self.replica_manager = replica_manager
        self.spawn = spawn
        self.runtime: CoordinatorRuntime[_Shard] = CoordinatorRuntime(
            OFFSETS, self.settings.offsets_topic, config, clock, zk, metadata, topic_admin, replica_manager,
            record_event, spawn)
        self.shards = self.runtime.shards
        self._joins: dict[tuple[str, str], asyncio.Future] = {}
        self._syncs: dict[tuple[str, str], asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        self._last_cleanup = 0.0

    def _now(self) -> int:
        """Wall-clock ms (group and offset timestamps, session deadlines)."""
        return self.runtime.now_ms()

    @property
    def num_partitions(self) -> int:
        return self.runtime.num_partitions

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        self.runtime.every("group-ticker", TICK_S, self._tick)

    async def stop(self) -> None:
        await self.runtime.stop(self._unload, list(self._tasks))

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = self.spawn(coro, "group-write")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _tick(self) -> None:
        now = self._now()
        for shard in self.runtime.loaded():
            for g in list(shard.groups.values()):
                self._handle(g, g.tick(now))
        if self.clock.monotonic() - self._last_cleanup > self.settings.offsets_retention_check_interval_ms / 1000:
            self._last_cleanup = self.clock.monotonic()
            await self._expire_offsets(now)

    # -- partition leadership ------------------------------------------------------
    def on_leadership(self, partition: int, is_leader: bool) -> None:
        """Called by the replica manager after a LeaderAndIsr or StopReplica touched
        ``__consumer_offsets``-``partition``."""
        self.runtime.on_leadership(partition, is_leader, _Shard, self._load, self._unload)

    def _unload(self, shard: _Shard) -> None:
        """The shard's groups are Dead here (their members are told NOT_COORDINATOR)."""
        self._deliver([(g, g.mark_dead()) for g in shard.groups.values()])

    async def _load(self, shard: _Shard) -> None:
        """Replay the partition from its log start to its LEO (:class:`OffsetsReplay`: the
        last record per key wins; transactional offsets wait for their marker), once the
        high watermark covers it (:mod:`.coordinator_log`): an offset commit past it was
        never acknowledged and may be lost with this leader, so OffsetFetch must not
        return it."""
        started = self.clock.monotonic()
        replay = OffsetsReplay()

        def on_batch(h: BatchHeader, raw: bytes, offset: int) -> None:
            if h.is_control:
                self._replay_marker(replay, shard.partition, h, raw)
                return
            for position, _, key, value, _ in batch_records(h, raw):
                if position >= offset and key is not None:
                    self._replay_record(replay, shard.partition, position, key, value, h.producer_id,
                                        h.is_transactional)

        if not await self.runtime.replay(shard.partition, on_batch):
            return
        shard.groups.update(replay.groups(self._now()))
        shard.loaded = True
        markers, shard.markers = shard.markers, []
        for producer_id, committed in markers:
            self._complete_txn(shard, producer_id, committed)
        pending = sum(len(g.pending_partitions()) for g in shard.groups.values())
        self.record_event("coordinator_loaded", f"broker {self.broker_id} coordinates the groups of "
                                                       f"{rec.OFFSETS_TOPIC}-{shard.partition}: {len(shard.groups)} groups "
                                                       f"from {replay.records} records in "
                                                       f"{(self.clock.monotonic() - started) * 1000:.0f} ms"
                                                       + (f", {pending} transactional offsets pending" if pending else ""))

    @staticmethod
    def _replay_record(replay: OffsetsReplay, partition: int, position: int, key: bytes, value: bytes | None,
                       producer_id: int, transactional: bool) -> None:
        try:
            k = rec.decode_key(key)
            if isinstance(k, rec.OffsetKey):
                replay.offset(position, k, None if value is None else rec.decode_offset(value), producer_id,
                              transactional)
            else:
                replay.group(k, None if value is None else rec.decode_group(value))
        except KafkaError as exc:
            log.warning("%s-%d offset %d: unreadable record skipped: %s", rec.OFFSETS_TOPIC, partition, position, exc)

    @staticmethod
    def _replay_marker(replay: OffsetsReplay, partition: int, h: Any, raw: bytes) -> None:
        try:
            marker = read_marker(h, raw)
        except KafkaError as exc:
            log.warning("%s-%d offset %d: unreadable control batch skipped: %s", rec.OFFSETS_TOPIC, partition,
                        h.base_offset, exc)
            return
        if marker is not None:
            replay.marker(h.producer_id, marker[0] == COMMIT)

    # -- finding groups -------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    def _shard_of(self, group_id: str) -> _Shard:
        return self.runtime.shard_of(group_id)

    def _group(self, group_id: str, create: bool = False) -> Group | None:
        shard = self._shard_of(group_id)
        g = shard.groups.get(group_id)
        if (g is None or g.state is GroupState.DEAD) and create:
            g = shard.groups[group_id] = Group(group_id, self._now())
        return g

    async def find_coordinator(self, key: str) -> int:
        """The broker id coordinating group ``key``; creates ``__consumer_offsets`` on
        first use.  COORDINATOR_NOT_AVAILABLE while the partition has no leader."""
        return await self.runtime.find_coordinator(key)

    # -- membership ------------------------------------------------------------------
    async def join_group(self, group_id: str, member_id: str, instance_id: str | None, client_id: str, client_host: str,
                         session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                         protocols: list[tuple[str, bytes]], require_known_id: bool) -> JoinAnswer:
        s = self.settings.groups
        if not s.min_session_timeout_ms <= session_timeout_ms <= s.max_session_timeout_ms:
            raise InvalidSessionTimeoutError(
                f"session.timeout.ms={session_timeout_ms} is outside [{s.min_session_timeout_ms}, {s.max_session_timeout_ms}] "
                "(group.min.session.timeout.ms, group.max.session.timeout.ms)")
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        g = self._group(group_id, create=True)
        assert g is not None
        new_id = f"{client_id or 'member'}-{uuid.UUID(int=self.random.getrandbits(128), version=4)}"
        answer, eff = g.join(member_id, instance_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
                             protocol_type, protocols, self._now(), new_id, s, require_known_id)
        if answer is not None:
            self._handle(g, eff)
            return answer
        joined = next(mid for mid in [member_id or new_id, new_id] if mid in g.members)
        fut = asyncio.get_running_loop().create_future()
        self._joins[(group_id, joined)] = fut
        self._handle(g, eff)
        return await fut

    async def sync_group(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                         assignments: dict[str, bytes] | None) -> SyncAnswer:
        g = self._group(group_id)
        if g is None:
            from ..errors import UnknownMemberIdError
            raise UnknownMemberIdError(f"group {group_id!r} has no member {member_id!r}")
        answer, eff = g.sync(member_id, instance_id, generation, assignments, self._now())
        if answer is not None:
            self._handle(g, eff)
            return answer
        fut = asyncio.get_running_loop().create_future()
        self._syncs[(group_id, member_id)] = fut
        self._handle(g, eff)
        return await fut

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> None:
        g = self._group(group_id)
        if g is None:
            from ..errors import UnknownMemberIdError
            raise UnknownMemberIdError(f"group {group_id!r} has no member {member_id!r}")
        err = g.heartbeat(member_id, instance_id, generation, self._now())
        if err is not None:
            raise err

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> list[KafkaError | None]:
        g = self._group(group_id)
        if g is None:  # one answer for every member named
            from ..errors import UnknownMemberIdError
            return [UnknownMemberIdError(f"group {group_id!r} has no members")] * len(members)
        out: list[KafkaError | None] = []
        for member_id, instance_id in members:
            err, eff = g.leave(member_id, instance_id, self._now())
            self._handle(g, eff)
            out.append(err)
        return out

    # -- effects --------------------------------------------------------------------
    def _handle(self, g: Group, eff: Effects) -> None:
        for kind, text in eff.events:
            self.record_event(kind, text, group=g.group_id)
            if kind in COUNTED:
                self.metrics.count(COUNTED[kind])
        for a in eff.joins:
            fut = self._joins.pop((g.group_id, a.member_id), None)
            if fut is not None and not fut.done():
                fut.set_result(a)
        for s in eff.syncs:
            fut = self._syncs.pop((g.group_id, s.member_id), None)
            if fut is not None and not fut.done():
                fut.set_result(s)
        if eff.write_metadata:
            self._spawn(self._write_metadata(g, g.generation))

    def _deliver(self, items: list[tuple[Group, Effects]]) -> None:
        for g, eff in items:
            self._handle(g, eff)

    async def _write_metadata(self, g: Group, generation: int) -> None:
        error: KafkaError | None = None
        try:
            value = None if g.state is GroupState.DEAD else rec.encode_group(g.value(self._now()))
            await self._append(g.group_id, [(rec.encode_key(rec.GroupKey(g.group_id)), value)])
        except KafkaError as exc:
            error = exc
        self._handle(g, g.metadata_written(generation, error, self._now()))

    async def _append(self, group_id: str, entries: list[tuple[bytes, bytes | None]], producer_id: int = -1,
                      producer_epoch: int = -1) -> int:
        """Write keyed records to the group's partition with acks=all and return the log
        offset of the first; raise the error a client should see (NOT_COORDINATOR when
        leadership moved meanwhile).  With ``producer_id`` the records form a transactional
        batch of that producer (a TxnOffsetCommit), epoch-checked by the leader: an older
        epoch is refused INVALID_PRODUCER_EPOCH, as in Kafka."""
        partition = self.partition_for(group_id)
        ts = self._now()
        batch = encode_batch([(k, v, None, ts) for k, v in entries], producer_id=producer_id,
                             producer_epoch=producer_epoch, base_sequence=-1, is_transactional=producer_id >= 0)
        res, = await self.replica_manager.produce(ProduceRequest(
            acks=-1, timeout_ms=self.settings.offsets_commit_timeout_ms,
            partitions=[ProducePartition(topic=rec.OFFSETS_TOPIC, partition=partition, records=batch)]))
        if res.error is None:
            return res.base_offset
        if isinstance(res.error, (NotLeaderOrFollowerError, UnknownTopicOrPartitionError)):
            raise NotCoordinatorError(f"broker {self.broker_id} lost {rec.OFFSETS_TOPIC}-{partition}: {res.error.message}")
        if isinstance(res.error, PRODUCER_ERRORS):
            raise res.error
        # Kafka maps a failed group write to COORDINATOR_NOT_AVAILABLE (NOT_ENOUGH_REPLICAS,
        # REQUEST_TIMED_OUT, ...): the client looks for the coordinator again and retries.
        raise CoordinatorNotAvailableError(f"writing to {rec.OFFSETS_TOPIC}-{partition} failed: "
                                           f"{res.error.code.name}: {res.error.message}")

    # -- offsets ----------------------------------------------------------------------
    async def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                             offsets: list[tuple[str, int, int, int, str | None]]) -> list[KafkaError | None]:
        """Commit ``(topic, partition, offset, leader_epoch, metadata)`` entries; returns
        one error (or None) per entry.  A member of the group must name its current
        generation; generation -1 without a member id commits for a group with no members.
        The request layer has checked Read on the group and left out the topics it may not read."""
        errs, good = self._check_entries(offsets)
        if all(e is not None and not isinstance(e, OffsetMetadataTooLargeError) for e in errs):
            # every partition unknown or not readable: Kafka answers before it reaches the group
            # coordinator, so no group comes into being (nor is the member checked)
            return errs
        g = self._group(group_id, create=generation < 0 and not member_id)
        if g is None:
            from ..errors import UnknownMemberIdError
            raise (UnknownMemberIdError if member_id else IllegalGenerationError)(f"group {group_id!r} does not exist")
        g.check_commit(member_id, instance_id, generation, self._now())
        if good:
            try:
                at = await self._append(group_id, [(rec.encode_key(rec.OffsetKey(group_id, t, p)), rec.encode_offset(v))
                                                   for (t, p), v in good])
            except KafkaError as exc:
                return [e if e is not None else exc for e in errs]
            g.offsets_committed(good, at)
            self.metrics.count(OFFSET_COMMITS)
        return errs

    def _check_entries(self, offsets: list[tuple[str, int, int, int, str | None]]
                       ) -> tuple[list[KafkaError | None], list[tuple[tuple[str, int], rec.OffsetValue]]]:
        """Per-entry checks of a commit: the partition exists, the metadata fits
        offset.metadata.max.bytes.  One error (or None) per entry, and the values to write
        for the good ones."""
        md = self.metadata
        limit = self.settings.offset_metadata_max_bytes
        errs: list[KafkaError | None] = []
        good: list[tuple[tuple[str, int], rec.OffsetValue]] = []
        ts = self._now()
        for topic, partition, offset, epoch, metadata in offsets:
            if (topic, partition) not in md.partitions:
                errs.append(UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist"))
            elif metadata is not None and len(metadata.encode()) > limit:
                errs.append(OffsetMetadataTooLargeError(f"metadata of {topic}-{partition} is longer than "
                                                        f"offset.metadata.max.bytes={limit}"))
            else:
                errs.append(None)
                good.append(((topic, partition), rec.OffsetValue(offset, epoch, metadata or "", ts)))
        return errs, good

    async def txn_commit_offsets(self, transactional_id: str, group_id: str, producer_id: int, producer_epoch: int,
                                 member_id: str, instance_id: str | None, generation: int,
                                 offsets: list[tuple[str, int, int, int, str | None]]) -> list[KafkaError | None]:
        """Kafka's TxnOffsetCommit: stage ``(topic, partition, offset, leader_epoch,
        metadata)`` entries as pending offsets of the producer's transaction; one error
        (or None) per entry.  They are written as a transactional batch of the producer
        (acks=all) and become the group's committed offsets when the transaction's COMMIT
        marker reaches this partition (:meth:`on_txn_marker`).  The request layer has
        checked Write on the transactional id, Read on the group and on each topic.  With a
        generation or a member id (v3+, KIP-447) the member must be current; an older
        producer epoch is INVALID_PRODUCER_EPOCH.  As in Kafka, the group coordinator does not check that
        the transaction coordinator added the group (AddOffsetsToTxn)."""
        if producer_id < 0 or producer_epoch < 0:
            raise InvalidProducerIdMappingError(f"producer id {producer_id} epoch {producer_epoch} is not a "
                                                f"transactional producer's")
        shard = self._shard_of(group_id)
        g = shard.groups.get(group_id)
        if g is None or g.state is GroupState.DEAD:
            if generation >= 0:
                raise IllegalGenerationError(f"group {group_id!r} does not exist; generation {generation} is unknown")
            g = Group(group_id, self._now())
        g.check_txn_commit(member_id, instance_id, generation)
        if shard.groups.get(group_id) is not g:
            shard.groups[group_id] = g
        errs, good = self._check_entries(offsets)
        if good:
            staged = g.stage_txn_offsets(producer_id, good)
            try:
                at = await self._append(group_id, [(rec.encode_key(rec.OffsetKey(group_id, t, p)), rec.encode_offset(v))
                                                   for (t, p), v in good], producer_id, producer_epoch)
            except KafkaError as exc:
                g.txn_offsets_failed(producer_id, staged)
                return [e if e is not None else exc for e in errs]
            g.txn_offsets_written(producer_id, staged, at)
            self.metrics.count(OFFSET_COMMITS)
        return errs

    def on_txn_marker(self, partition: int, producer_id: int, committed: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` is committed on
        ``__consumer_offsets``-``partition`` (called by the replica manager): the
        producer's pending offsets in the partition's groups become committed or go."""
        shard = self.shards.get(partition)
        if shard is None:
            return
        if not shard.loaded:  # the load may have read the log before the marker: apply it after
            shard.markers.append((producer_id, committed))
            return
        self._complete_txn(shard, producer_id, committed)

    def _complete_txn(self, shard: _Shard, producer_id: int, committed: bool) -> None:
        for g in list(shard.groups.values()):
            if producer_id not in g.pending_txn:
                continue
            n = len(g.pending_txn[producer_id])
            changed = g.complete_txn(producer_id, committed)
            what = (f"{len(changed)} of {n} transactional offsets committed" if committed
                    else f"{n} transactional offsets aborted")
            self.record_event("txn_offsets_" + ("committed" if committed else "aborted"),
                              f"group {g.group_id}: producer {producer_id}: {what}", group=g.group_id)

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None) -> list[tuple[str, int, rec.OffsetValue | None]]:
        """Committed offsets of ``partitions`` (every committed one when None); None where
        nothing is committed)."""
        g = self._group(group_id)
        got = g.offsets if g is not None else {}
        if partitions is None:
            return [(t, p, v) for (t, p), v in sorted(got.items())]
        return [(t, p, got.get((t, p))) for t, p in partitions]

    def unstable_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """The group's partitions with pending transactional offsets: OffsetFetch with
        require_stable answers them UNSTABLE_OFFSET_COMMIT (KIP-447)."""
        g = self._group(group_id)
        return g.pending_partitions() if g is not None else set()

    async def _expire_offsets(self, now: int) -> None:
        """offsets.retention.minutes: a group empty that long loses its offsets (tombstones),
        except those of partitions an open transaction holds offsets of; an empty group
        goes when nothing is left, or had nothing (:meth:`Group.expired_offsets`)."""
        minutes = self.settings.offsets_retention_minutes
        keep_ms = minutes * 60_000
        for shard in self.runtime.loaded():
            for g in list(shard.groups.values()):
                had_offsets = bool(g.offsets)
                expired, whole = g.expired_offsets(now, keep_ms)
                why = f"empty for more than offsets.retention.minutes={minutes}"
                if whole and not had_offsets:
                    why = "empty without offsets"  # Kafka's cleanupGroupMetadata: Dead at the next pass
                if whole:
                    await self._delete(g, why)
                elif expired:  # the others are held by open transactions (or not old enough)
                    await self._append(g.group_id, [(rec.encode_key(rec.OffsetKey(g.group_id, t, p)), None)
                                                    for t, p in expired])
                    g.offsets_removed(expired)
                    self.record_event("offsets_expired", f"group {g.group_id}: offsets of {len(expired)} partitions "
                                                         f"expired ({why})", group=g.group_id)

    def on_topics_deleted(self, topics: list[str]) -> None:
        """Kafka's onPartitionsDeleted, called when an UpdateMetadata says ``topics`` were
        deleted (every broker gets it): each loaded group here loses its offsets of their
        partitions, and an Empty group left without offsets is Dead and removed at once
        (:meth:`Group.topics_deleted`); tombstones for those offsets (and the removed
        group's metadata) are then written to its ``__consumer_offsets`` partition, so that
        a coordinator that loads the partition later does not bring them back."""
        deleted = set(topics)
        for shard in self.runtime.loaded():  # as in Kafka: only the groups loaded now are cleaned up
            for g in list(shard.groups.values()):
                gone, dead = g.topics_deleted(deleted)
                if dead:
                    self._handle(g, g.mark_dead())
                    del shard.groups[g.group_id]
                if gone or dead:
                    self._spawn(self._tombstone_deleted(g, gone, dead, sorted(deleted)))

    async def _tombstone_deleted(self, g: Group, gone: list[tuple[str, int]], dead: bool, topics: list[str]) -> None:
        entries: list[tuple[bytes, bytes | None]] = [(rec.encode_key(rec.OffsetKey(g.group_id, t, p)), None)
                                                     for t, p in gone]
        if dead:
            entries.append((rec.encode_key(rec.GroupKey(g.group_id)), None))
        what = f"offsets of {len(gone)} partitions of deleted topics {', '.join(topics)} removed" + \
            ("; the group, empty and left without offsets, is gone" if dead else "")
        try:
            await self._append(g.group_id, entries)
        except KafkaError as exc:  # the memory is cleaned up; the log keeps them until a later removal
            log.warning("group %s: %s, but the tombstones were not written: %s", g.group_id, what, exc)
            return
        self.record_event("group_deleted" if dead else "offsets_deleted", f"group {g.group_id}: {what}",
                          group=g.group_id)

    # -- admin ----------------------------------------------------------------------
    def list_groups(self) -> list[Group]:
        """The live groups here."""
        return [g for s in self.shards.values() if s.loaded for g in s.groups.values()
                if g.state is not GroupState.DEAD]

    def describe_group(self, group_id: str) -> Group | None:
        g = self._group(group_id)
        return g if g is not None and g.state is not GroupState.DEAD else None

    async def delete_group(self, group_id: str) -> None:
        g = self._group(group_id)
        if g is None or g.state is GroupState.DEAD:
            raise GroupIdNotFoundError(f"group {group_id!r} does not exist")
        if g.members:
            raise NonEmptyGroupError(f"group {group_id!r} has {len(g.members)} active members; stop them first")
        await self._delete(g, "deleted")

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> list[KafkaError | None]:
        """Kafka's OffsetDelete: tombstones for the group's committed offsets of ``partitions``;
        one error (or None) per partition.  GROUP_ID_NOT_FOUND for an unknown group,
        NON_EMPTY_GROUP for an active group of another protocol type; in an active consumer
        group, partitions of subscribed topics are GROUP_SUBSCRIBED_TO_TOPIC.  The request
        layer has checked Delete on the group and left out the topics it may not read."""
        g = self._group(group_id)
        if g is None or g.state is GroupState.DEAD:
            raise GroupIdNotFoundError(f"group {group_id!r} does not exist")
        subscribed: set[str] = set()
        if g.members:
            if g.protocol_type != "consumer":
                raise NonEmptyGroupError(f"group {group_id!r} has {len(g.members)} active members")
            subscribed = g.subscribed_topics()
        errs: list[KafkaError | None] = []
        gone: list[tuple[str, int]] = []
        for topic, partition in partitions:
            if (topic, partition) not in self.metadata.partitions:
                errs.append(UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist"))
            elif topic in subscribed:
                errs.append(GroupSubscribedToTopicError(f"group {group_id!r} is subscribed to {topic!r}"))
            else:
                errs.append(None)
                if (topic, partition) in g.offsets or g.has_pending((topic, partition)):
                    gone.append((topic, partition))
        if gone:
            await self._append(group_id, [(rec.encode_key(rec.OffsetKey(group_id, t, p)), None) for t, p in gone])
            g.offsets_removed(gone)
            self.record_event("offsets_deleted", f"group {group_id}: offsets of {len(gone)} partitions deleted",
                              group=group_id)
            if g.state is GroupState.EMPTY and not g.offsets and not g.pending_partitions():
                # Kafka's cleanupGroupMetadata: an empty group left without offsets is gone (Dead)
                await self._delete(g, "its last offsets deleted")
        return errs

    async def _delete(self, g: Group, why: str) -> None:
        # pending transactional offsets go too (a tombstone drops them, as Kafka's coordinator writes)
        entries: list[tuple[bytes, bytes | None]] = [(rec.encode_key(rec.OffsetKey(g.group_id, t, p)), None)
                                                     for t, p in sorted(set(g.offsets) | g.pending_partitions())]
        entries.append((rec.encode_key(rec.GroupKey(g.group_id)), None))
        await self._append(g.group_id, entries)
        self._handle(g, g.mark_dead())
        shard = self.shards.get(self.partition_for(g.group_id))
        if shard is not None and shard.groups.get(g.group_id) is g:
            del shard.groups[g.group_id]
        self.record_event("group_deleted", f"group {g.group_id}: {why} (offsets and metadata tombstoned)",
                                 group=g.group_id)

