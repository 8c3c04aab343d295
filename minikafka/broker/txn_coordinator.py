"""The transaction coordinator: transactional ids whose ``__transaction_state`` partition
this broker leads (KIP-98).

The decisions are :class:`~minikafka.transactions.state.TransactionMetadata`'s (pure);
this shell writes each decided state to ``__transaction_state`` with acks=all before it
acts on it, sends the COMMIT/ABORT markers to the partitions' leaders
(``write_txn_markers``, retried until every partition has its marker), then writes
CompleteCommit/CompleteAbort.  When this broker becomes the leader of a partition of
the topic it replays it (the last record per transactional id wins) and finishes what
was prepared there; a ticker aborts transactions past their timeout and removes
expired transactional ids.  Both protocols (msgpack and Kafka's) call the same methods.

* The coordinator of transactional id T is the leader of ``__transaction_state``
  partition ``abs(hashCode(T)) % transaction.state.log.num.partitions``; any other
  broker answers NOT_COORDINATOR, and the leader answers COORDINATOR_LOAD_IN_PROGRESS
  until it has replayed the partition.  The coordinator epoch sent with markers is
  the partition's leader epoch.
* The topic is created on the first FindCoordinator with key_type 1.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable

from ..errors import (
    CoordinatorNotAvailableError,
    InvalidRequestError,
    KafkaError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    OperationNotAttemptedError,
    TransactionalIdNotFoundError,
    UnknownTopicOrPartitionError,
)
from ..config import BrokerConfig
from ..groups.records import OFFSETS_TOPIC
from ..groups.records import partition_for as group_partition_for
from ..metric_names import TXN_ABORTS, TXN_COMMITS, TXN_FENCED, TXN_TIMED_OUT
from ..protocol.records.batch import BatchHeader, batch_records, encode_batch
from ..protocol.rpc.types import (
    ProducePartition,
    ProduceRequest,
    TopicPartition,
    WritableTxnMarker,
    WriteTxnMarkersRequest,
)
from ..rpc import request
from ..transactions import records as rec
from ..transactions.state import (
    Effects,
    Markers,
    TransactionMetadata,
    TxnRecord,
    TxnState,
    check_timeout,
)
from ..zk.errors import ZooKeeperUnavailableError
from ..zk.session import ZkSession
from .coordinator_runtime import CoordinatorRuntime, InternalTopic, Shard
from .metadata_cache import MetadataCache
from .metrics import Metrics
from .services import Clock, EventLog, Spawn
from .settings import TxnCoordinatorSettings
from .topic_admin import TopicAdmin

if TYPE_CHECKING:
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

TICK_S = 0.2
RETRY_S = 0.1  # between rounds of markers (and of a failed CompleteX write)
COUNTED = {"txn_commit": TXN_COMMITS, "txn_abort": TXN_ABORTS, "txn_fenced": TXN_FENCED, "txn_timed_out": TXN_TIMED_OUT}
# marker errors after which the partition needs no marker any more (as Kafka's
# TransactionMarkerRequestCompletionHandler: a newer epoch or coordinator is there already)
MARKER_DONE = {"INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED", "TRANSACTION_COORDINATOR_FENCED", "UNSUPPORTED_VERSION",
               "UNSUPPORTED_FOR_MESSAGE_FORMAT"}

Call = Callable[[str, int, str, dict, float | None], Awaitable[dict]]
ProducerIds = Callable[[], Awaitable[int]]


@dataclass
class _Shard(Shard):
    """The transactional ids of one ``__transaction_state`` partition this broker leads;
    its own tasks (:attr:`Shard.tasks`) are the marker rounds of prepared transactions."""

    epoch: int = 0  # the partition's leader epoch: the coordinator epoch of our markers
    txns: dict[str, TransactionMetadata] = field(default_factory=dict)


TXN_STATE = InternalTopic(rec.TXN_TOPIC, "transactions", "transactional id", "txn_coordinator",
                          lambda: InvalidRequestError("the transactional id is empty"))


class TransactionCoordinator:
    """Transactions of the partitions of ``__transaction_state`` led here."""

    def __init__(self, config: BrokerConfig, clock: Clock, zk: ZkSession, metadata: MetadataCache,
                 metrics: Metrics, record_event: EventLog, replica_manager: "ReplicaManager",
                 topic_admin: TopicAdmin, producer_ids: ProducerIds, call: Call, spawn: Spawn) -> None:
        self.config = config
        self.settings = TxnCoordinatorSettings.of(config)  # static settings only
        self.broker_id = config.broker_id
        self.clock = clock
        self.metadata = metadata
        self.metrics = metrics
        self.record_event = record_event
        self.replica_manager = replica_manager
        self.producer_ids = producer_ids
        self.call = call
        self.spawn = spawn
        self.runtime: CoordinatorRuntime[_Shard] = CoordinatorRuntime(
            TXN_STATE, self.settings.state_topic, config, clock, zk, metadata, topic_admin, replica_manager,
            record_event, spawn)
        self.shards = self.runtime.shards
        self._last_abort_check = 0.0
        self._last_expiry_check = 0.0

    def _now(self) -> int:
        return self.runtime.now_ms()

    @property
    def num_partitions(self) -> int:
        return self.runtime.num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return self.runtime.partition_for(transactional_id)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self.runtime.every("txn-ticker", TICK_S, self._tick)

    async def stop(self) -> None:
        await self.runtime.stop(self._unload)

    async def _tick(self) -> None:
        mono = self.clock.monotonic()
        s = self.settings
        if mono - self._last_abort_check >= s.transaction_abort_timed_out_transaction_cleanup_interval_ms / 1000:
            self._last_abort_check = mono
            await self._abort_timed_out()
        if mono - self._last_expiry_check >= s.transaction_remove_expired_transaction_cleanup_interval_ms / 1000:
            self._last_expiry_check = mono
            await self._expire()

    async def _abort_timed_out(self) -> None:
        now = self._now()
        for shard in self.runtime.loaded():
            for meta in list(shard.txns.values()):
                if meta.timed_out(now):
                    try:
                        await self._run(shard, meta, meta.abort_timed_out(now))
                    except KafkaError as exc:
                        log.info("aborting the timed-out transaction of %r failed: %s", meta.transactional_id, exc)

    async def _expire(self) -> None:
        now = self._now()
        keep_ms = self.settings.transactional_id_expiration_ms
        for shard in self.runtime.loaded():
            for meta in list(shard.txns.values()):
                if meta.expired(now, keep_ms):
                    try:
                        await self._run(shard, meta, meta.expire(now))
                    except KafkaError as exc:
                        log.info("expiring transactional id %r failed: %s", meta.transactional_id, exc)

    # -- partition leadership ---------------------------------------------------------------
    def on_leadership(self, partition: int, is_leader: bool) -> None:
        """Called by the replica manager after a LeaderAndIsr or StopReplica touched
        ``__transaction_state``-``partition``."""
        def new_shard(partition: int) -> _Shard:
            p = self.replica_manager.partitions.get((rec.TXN_TOPIC, partition))
            return _Shard(partition, epoch=p.leader_epoch if p is not None else 0)

        self.runtime.on_leadership(partition, is_leader, new_shard, self._load, self._unload)

    def _unload(self, shard: _Shard) -> None:
        """Nothing to tell anyone: the shard's marker rounds are cancelled with it, and its
        successor finishes what was prepared."""

    async def _load(self, shard: _Shard) -> None:
        """Replay the partition from its log start to its LEO (the last record per
        transactional id wins), once the high watermark covers it (:mod:`.coordinator_log`),
        then finish the prepared transactions."""
        started = self.clock.monotonic()
        found: dict[str, TxnRecord | None] = {}
        n = 0

        def on_batch(h: BatchHeader, raw: bytes, offset: int) -> None:
            nonlocal n
            for position, _, key, value, _ in batch_records(h, raw):
                if position < offset or key is None:
                    continue
                try:
                    found[rec.decode_key(key).transactional_id] = None if value is None else rec.decode_value(value)
                except KafkaError as exc:
                    log.warning("%s-%d offset %d: unreadable record skipped: %s", rec.TXN_TOPIC, shard.partition,
                                position, exc)
                n += 1

        if not await self.runtime.replay(shard.partition, on_batch):
            return
        for tid, value in found.items():
            if value is not None and value.state is not TxnState.DEAD:
                shard.txns[tid] = TransactionMetadata(tid, value)
        shard.loaded = True
        prepared = 0
        for meta in shard.txns.values():
            eff = meta.recover()
            if eff.markers is not None:
                prepared += 1
                self._send_later(shard, meta, eff.markers)
        self.record_event("txn_coordinator_loaded", f"broker {self.broker_id} coordinates the transactions of "
                                                    f"{rec.TXN_TOPIC}-{shard.partition} (coordinator epoch {shard.epoch}): "
                                                    f"{len(shard.txns)} transactional ids, {prepared} prepared, from "
                                                    f"{n} records in {(self.clock.monotonic() - started) * 1000:.0f} ms")

    # -- finding ------------------------------------------------------------------------------
    def _shard_of(self, transactional_id: str) -> _Shard:
        return self.runtime.shard_of(transactional_id)

    def _meta(self, transactional_id: str) -> tuple[_Shard, TransactionMetadata]:
        from ..errors import InvalidProducerIdMappingError
        shard = self._shard_of(transactional_id)
        meta = shard.txns.get(transactional_id)
        if meta is None:
            raise InvalidProducerIdMappingError(f"transactional id {transactional_id!r} has no producer id: "
                                                "call InitProducerId first")
        return shard, meta

    async def find_coordinator(self, key: str) -> int:
        """The broker id coordinating transactional id ``key``; creates
        ``__transaction_state`` on first use.  COORDINATOR_NOT_AVAILABLE while the
        partition has no leader."""
        return await self.runtime.find_coordinator(key)

    # -- running decisions -----------------------------------------------------------------------
    async def _run(self, shard: _Shard, meta: TransactionMetadata, eff: Effects) -> None:
        """Carry out ``eff``: write, adopt, record its events, send its markers (in the
        background), then raise its reply when it has one."""
        if eff.error is not None:
            raise eff.error
        if eff.write is None:
            return
        try:
            await self._append(shard, meta.transactional_id, eff.write)
        except BaseException:
            meta.write_failed()
            raise
        if not self.runtime.current(shard):
            meta.write_failed()
            raise NotCoordinatorError(f"broker {self.broker_id} stopped coordinating {rec.TXN_TOPIC}-{shard.partition}")
        meta.written()
        if meta.record.state is TxnState.DEAD and shard.txns.get(meta.transactional_id) is meta:
            del shard.txns[meta.transactional_id]
        for kind, text in eff.events:
            self.record_event(kind, text)
            if kind in COUNTED:
                self.metrics.count(COUNTED[kind])
        if eff.markers is not None:
            self._send_later(shard, meta, eff.markers)
        if eff.reply is not None:
            raise eff.reply

    async def _append(self, shard: _Shard, transactional_id: str, value: TxnRecord) -> None:
        """Write the record with acks=all; raise the error a client should see
        (NOT_COORDINATOR when leadership moved meanwhile)."""
        ts = self._now()
        data = None if value.state is TxnState.DEAD else rec.encode_value(value)
        batch = encode_batch([(rec.encode_key(transactional_id), data, None, ts)])
        p = self.replica_manager.partitions.get((rec.TXN_TOPIC, shard.partition))
        if p is None or not p.is_leader or p.leader_epoch != shard.epoch:
            raise NotCoordinatorError(f"broker {self.broker_id} no longer leads {rec.TXN_TOPIC}-{shard.partition} "
                                      f"at epoch {shard.epoch}")
        res, = await self.replica_manager.produce(ProduceRequest(
            acks=-1, timeout_ms=self.settings.request_timeout_ms,
            partitions=[ProducePartition(topic=rec.TXN_TOPIC, partition=shard.partition, records=batch)]))
        if res.error is None:
            return
        if isinstance(res.error, (NotLeaderOrFollowerError, UnknownTopicOrPartitionError)):
            raise NotCoordinatorError(f"broker {self.broker_id} lost {rec.TXN_TOPIC}-{shard.partition}: "
                                      f"{res.error.message}")
        # as Kafka: a failed write (NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, ...) is
        # COORDINATOR_NOT_AVAILABLE to the client, which looks up the coordinator and retries
        raise CoordinatorNotAvailableError(f"writing to {rec.TXN_TOPIC}-{shard.partition} failed: "
                                           f"{res.error.code.name}: {res.error.message}")

    # -- markers ------------------------------------------------------------------------------------
    def _send_later(self, shard: _Shard, meta: TransactionMetadata, markers: Markers) -> None:
        self.runtime.shard_task(shard, self._complete(shard, meta, markers), f"txn-markers-{meta.transactional_id}")

    async def _complete(self, shard: _Shard, meta: TransactionMetadata, markers: Markers) -> None:
        """Send the markers until every partition has one, then write CompleteX (retried
        while this broker still coordinates the partition)."""
        remaining = set(markers.partitions)
        while remaining:
            if not self.runtime.current(shard):
                return
            remaining = await self._marker_round(shard, markers, remaining)
            if remaining:
                await asyncio.sleep(RETRY_S)
        while self.runtime.current(shard):
            try:
                await self._run(shard, meta, meta.markers_written(self._now()))
                return
            except NotCoordinatorError:
                return
            except KafkaError as exc:
                log.info("writing the completion of %r failed, retrying: %s", meta.transactional_id, exc)
                await asyncio.sleep(RETRY_S)

    async def _marker_round(self, shard: _Shard, markers: Markers, remaining: set[tuple[str, int]]) -> set[tuple[str, int]]:
        """One WriteTxnMarkers per leader; returns the partitions still without a marker."""
        md = self.metadata
        by_leader: dict[int, list[tuple[str, int]]] = {}
        left: set[tuple[str, int]] = set()
        for tp in sorted(remaining):
            st = md.partitions.get(tp)
            if st is None:
                log.info("%s-%d is gone: no marker needed", *tp)  # a deleted topic
                continue
            leader = st["leader"]
            if leader < 0 or (leader != self.broker_id and leader not in md.brokers):
                left.add(tp)
            else:
                by_leader.setdefault(leader, []).append(tp)
        timeout_ms = self.settings.request_timeout_ms

        async def send(leader: int, tps: list[tuple[str, int]]) -> None:
            req = WriteTxnMarkersRequest(markers=[WritableTxnMarker(
                producer_id=markers.producer_id, producer_epoch=markers.producer_epoch, committed=markers.committed,
                coordinator_epoch=shard.epoch, partitions=[TopicPartition(topic=t, partition=p) for t, p in tps])],
                timeout_ms=timeout_ms)
            try:
                if leader == self.broker_id:
                    results = await self.replica_manager.write_txn_markers(req)
                else:
                    host, port = md.brokers[leader]
                    results = (await request(self.call, host, port, req, timeout_ms / 1000 + 5)).markers
            except Exception as exc:  # an unreachable leader, a transport error: the next round retries
                log.info("markers of producer %d to broker %d failed: %s", markers.producer_id, leader, exc)
                left.update(tps)
                return
            for res in results:
                for pr in res.partitions:
                    if pr.error is not None and pr.error.code.name not in MARKER_DONE:
                        left.add((pr.topic, pr.partition))
                    elif pr.error is not None:
                        log.info("marker of producer %d to %s-%d not needed: %s", markers.producer_id, pr.topic,
                                 pr.partition, pr.error)

        await asyncio.gather(*(send(b, tps) for b, tps in by_leader.items()))
        return left

    # -- APIs ------------------------------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int = -1,
                               producer_epoch: int = -1) -> tuple[int, int]:
        """InitProducerId with a transactional id: (producer id, epoch)."""
        err = check_timeout(timeout_ms, self.settings.transaction_max_timeout_ms)
        if err is not None:
            raise err
        shard = self._shard_of(transactional_id)
        expected = (producer_id, producer_epoch) if producer_id >= 0 else None
        meta = shard.txns.get(transactional_id)
        now = self._now()
        if meta is None:
            meta = shard.txns[transactional_id] = TransactionMetadata.new(
                transactional_id, await self._new_producer_id(), timeout_ms, now)
        new_pid = (await self._new_producer_id() if meta.needs_producer_id(None if expected is None else expected[1])
                   else None)
        shard = self._shard_of(transactional_id)  # still here after the awaits
        await self._run(shard, meta, meta.init_producer_id(timeout_ms, expected, self._now(), new_pid))
        return meta.record.producer_id, meta.record.producer_epoch

    async def _new_producer_id(self) -> int:
        try:
            return await self.producer_ids()
        except ZooKeeperUnavailableError as exc:
            raise CoordinatorNotAvailableError(
                f"broker {self.broker_id} has no producer ids left and ZooKeeper, which hands out the next block, "
                f"does not answer ({exc}); try again") from None

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: list[tuple[str, int]]) -> list[KafkaError | None]:
        """AddPartitionsToTxn: one error (or None) per partition; when one partition is
        refused, the others are OPERATION_NOT_ATTEMPTED."""
        errs: list[KafkaError | None] = []
        for t, p in partitions:
            if (t, p) not in self.metadata.partitions:
                errs.append(UnknownTopicOrPartitionError(f"{t}-{p} does not exist"))
            else:
                errs.append(None)
        if any(errs):
            return [e or OperationNotAttemptedError("another partition of the request failed") for e in errs]
        shard, meta = self._meta(transactional_id)
        try:
            await self._run(shard, meta, meta.add_partitions(producer_id, producer_epoch, frozenset(partitions),
                                                             self._now()))
        except KafkaError as exc:
            return [exc] * len(partitions)
        return [None] * len(partitions)

    async def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> None:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the
        transaction."""
        offsets = self.metadata.partitions_of(OFFSETS_TOPIC)
        n = len(offsets) or self.settings.offsets_topic_num_partitions
        tp = (OFFSETS_TOPIC, group_partition_for(group_id, n))
        shard, meta = self._meta(transactional_id)
        await self._run(shard, meta, meta.add_partitions(producer_id, producer_epoch, frozenset([tp]), self._now()))

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool) -> None:
        """EndTxn: answered once PrepareCommit/PrepareAbort is written; the markers and
        CompleteX follow."""
        shard, meta = self._meta(transactional_id)
        await self._run(shard, meta, meta.end_txn(producer_id, producer_epoch, committed, self._now()))

    def describe(self, transactional_id: str) -> TransactionMetadata:
        """DescribeTransactions of one id."""
        shard = self._shard_of(transactional_id)
        meta = shard.txns.get(transactional_id)
        if meta is None or meta.record.producer_epoch < 0:
            raise TransactionalIdNotFoundError(f"transactional id {transactional_id!r} does not exist")
        return meta

    def list_transactions(self, states: list[str], producer_ids: list[int], duration_ms: int = -1) -> tuple[list[TransactionMetadata], list[str]]:
        """ListTransactions: the ids here that match the filters, and the state filters that
        name no state."""
        wanted = {TxnState.by_label(s) for s in states} - {None}
        unknown = [s for s in states if TxnState.by_label(s) is None]
        now = self._now()
        out = []
        for shard in self.shards.values():
            if not shard.loaded:
                continue
            for meta in shard.txns.values():
                r = meta.record
                if r.producer_epoch < 0:
                    continue
                if states and meta.state not in wanted:
                    continue
                if producer_ids and r.producer_id not in producer_ids:
                    continue
                if duration_ms >= 0 and (r.start_ms < 0 or r.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT,
                                                                        TxnState.COMPLETE_COMMIT)
                                         or now - r.start_ms <= duration_ms):
                    continue
                out.append(meta)
        if states and not wanted:
            return [], unknown
        return sorted(out, key=lambda m: m.transactional_id), unknown

    def transactions(self) -> list[TransactionMetadata]:
        """Every transactional id coordinated here (the dashboard, metrics)."""
        return [m for s in self.shards.values() if s.loaded for m in s.txns.values() if m.record.producer_epoch >= 0]
