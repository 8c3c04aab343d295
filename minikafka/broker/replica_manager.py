"""The replica manager: the broker's partitions, produce/fetch handling and ISR writes.

It owns every :class:`PartitionReplica` of this broker and is the one place where
their :class:`Effects` are carried out, in order: persist the epoch cache, mirror
appends and truncations to storage, write ISR changes to ZooKeeper, wake waiting
requests, record events.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .. import config as cfg
from ..config import BrokerConfig, LiveConfig, topic_setting
from ..errors import (
    RECORD_VALIDATION_ERRORS,
    FetchSessionIdNotFoundError,
    InconsistentTopicIdError,
    InvalidFetchSessionEpochError,
    KafkaError,
    KafkaStorageError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    PolicyViolationError,
    RequestTimedOutError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
)
from ..groups.records import OFFSETS_TOPIC
from ..transactions.records import TXN_TOPIC
from ..metric_names import (BECOME_LEADER, BYTES_IN, BYTES_OUT, DUPLICATE_BATCHES, FETCH_SESSION_ERRORS,
                            INCREMENTAL_FETCH_PARTITIONS_CACHED, INCREMENTAL_FETCH_SESSION_EVICTIONS,
                            INCREMENTAL_FETCH_SESSIONS, INCREMENTAL_FETCHES, ISR_EXPANDS, ISR_SHRINKS,
                            LOG_CLEANER_RECORDS_REMOVED, LOG_CLEANINGS)
from ..log import cleaner
from ..protocol.rpc.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, READ_COMMITTED
from ..protocol.rpc.types import AbortedTransaction
from ..protocol.topic_ids import ZERO_TOPIC_ID
from ..protocol.rpc.types import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartitionResponse,
    LeaderAndIsrRequest,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    OffsetsForLeaderEpochRequest,
    ProducePartitionResponse,
    ProduceRequest,
    StopReplicaPartitionResponse,
    StopReplicaRequest,
    WritableTxnMarker,
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WriteTxnMarkersRequest,
)
from ..replication.fetch_session import (FETCH_SESSION_ID_NOT_FOUND, FINAL_EPOCH, INVALID_SESSION_ID, FetchContext,
                                         FetchSession, FetchSessionCache, PartitionFetch)
from ..replication.partition import Effects, LeaderState, PartitionReplica, Role
from ..zk import layout
from ..zk.errors import BadVersionError
from ..zk.session import ZkSession
from .metrics import Metrics
from .purgatory import Purgatory, parking
from .services import Clock, EventLog, FetcherControl, LeadershipListener, TxnMarkerListener
from .settings import ReplicaSettings

if TYPE_CHECKING:
    from .storage import Storage

log = logging.getLogger(__name__)

# The caller's access check of a fetch, run before each partition's read: raises its error.
ReadCheck = Callable[[str], None]

# pause before an ISR write whose outcome was unknown is tried again
ISR_WRITE_RETRY_S = 1.0
# A leader given partitions hurries its followers to take them up: a follower's fetch
# parked in a session without one of them is woken at once, and its fetches park at most
# TAKE_UP_POLL_S until its session holds them, for at most TAKE_UP_MS.
TAKE_UP_MS = 2000
# partitions named by one /isr_change_notification entry (about 40 bytes each: well under
# ZooKeeper's 1 MB)
ISR_CHANGES_PER_ENTRY = 5000
TAKE_UP_POLL_S = 0.02


class _NoFetchers:
    """Fetchers before :meth:`ReplicaManager.connect`: nothing to follow yet."""

    def add_partition(self, tp: tuple[str, int], leader_id: int, endpoint: tuple[str, int]) -> None:
        raise RuntimeError("the replica manager has no fetchers yet")

    def remove_partitions(self, tps: list[tuple[str, int]]) -> None:
        pass

    def touch(self, tp: tuple[str, int]) -> None:
        pass


def _no_listener(partition: int, leader: bool) -> None:
    pass


def _no_marker_listener(partition: int, producer_id: int, committed: bool) -> None:
    pass


_NO_FETCHERS = _NoFetchers()


class ReplicaManager:
    """All local replicas of one broker and the rules around them."""

    def __init__(self, config: BrokerConfig | LiveConfig, clock: Clock, storage: "Storage", zk: ZkSession,
                 metrics: Metrics, record_event: EventLog, session_ids: Iterator[int] | None = None) -> None:
        """``config``: the broker's :class:`~minikafka.config.LiveConfig` (the topic defaults,
        min.insync.replicas and producer.id.expiration.ms change live), or a config that
        never changes.  ``session_ids``: candidate ids for new fetch sessions (random ones,
        so that a restarted leader does not hand out the ids of before)."""
        self.live = LiveConfig.of(config)
        self.broker_id = self.config.broker_id
        self.clock = clock
        self.storage = storage
        self.zk = zk
        self.metrics = metrics
        self.record_event = record_event
        self.partitions: dict[tuple[str, int], PartitionReplica] = {}
        # replicas whose stored log is damaged where no other replica holds the records:
        # not served (KAFKA_STORAGE_ERROR), their files left as they are
        self.offline: dict[tuple[str, int], KafkaError] = {}
        # the topic id (KIP-516) each local log belongs to (disk storage: its partition.metadata)
        self.log_topic_ids: dict[tuple[str, int], str] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.produce_purgatory = Purgatory()
        self.fetch_purgatory = Purgatory()
        self.fetch_sessions = FetchSessionCache(self.settings.max_incremental_fetch_session_cache_slots)
        self._session_ids = session_ids if session_ids is not None else iter(range(1, 2 ** 31))
        self.controller_epoch = -1
        self.truncation = self.settings.replication_truncation
        self._checkpointed_hws = storage.read_hw_checkpoint()
        self._checkpointed_starts = storage.read_log_start_checkpoint()
        self._isr_tasks: set[asyncio.Task] = set()
        self._isr_changed: dict[tuple[str, int], None] = {}  # written ISR changes the controller is yet to hear of
        self._isr_notifying = False  # an /isr_change_notification write is under way
        self._starts_changed = False
        self._hws_written: dict[tuple[str, int], int] | None = None  # the HW checkpoint's last contents
        self.fetchers: FetcherControl = _NO_FETCHERS
        # follower -> the partitions it is to take up into its fetch session, with a deadline (ms)
        self._take_up: dict[int, dict[tuple[str, int], int]] = {}
        self.on_offsets_leadership: LeadershipListener = _no_listener
        self.on_offsets_marker: TxnMarkerListener = _no_marker_listener
        self.on_txn_leadership: LeadershipListener = _no_listener

    @property
    def config(self) -> BrokerConfig:
        """The broker's configuration in effect now."""
        return self.live.current

    @property
    def settings(self) -> ReplicaSettings:
        """The replica manager's settings in effect now (producer.id.expiration.ms changes
        live)."""
        return self.live.view(ReplicaSettings)

    def connect(self, fetchers: FetcherControl, on_offsets_leadership: LeadershipListener,
                on_offsets_marker: TxnMarkerListener = _no_marker_listener) -> None:
        """Wire the services that depend on the replica manager as it depends on them:
        the follower fetchers, and the group coordinator's hooks for the leadership of
        ``__consumer_offsets`` partitions and for transaction markers written to them."""
        self.fetchers = fetchers
        self.on_offsets_leadership = on_offsets_leadership
        self.on_offsets_marker = on_offsets_marker

    def connect_transactions(self, on_txn_leadership: LeadershipListener) -> None:
        """Wire the transaction coordinator's hook for the leadership of
        ``__transaction_state`` partitions."""
        self.on_txn_leadership = on_txn_leadership

    # -- helpers ------------------------------------------------------------------
    def now_ms(self) -> int:
        """The broker's monotonic clock in ms (ISR lag)."""
        return int(self.clock.monotonic() * 1000)

    def get(self, topic: str, partition: int) -> PartitionReplica:
        p = self.partitions.get((topic, partition))
        if p is None:
            offline = self.offline.get((topic, partition))
            if offline is not None:
                raise offline
            raise UnknownTopicOrPartitionError(f"broker {self.broker_id} does not host {topic}-{partition}")
        return p

    def leader_of(self, topic: str, partition: int) -> PartitionReplica:
        p = self.get(topic, partition)
        if not p.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {topic}-{partition} (leader is {p.leader_id})")
        return p

    def _create_replica(self, topic: str, partition: int, only_copy: bool = False,
                        leader_epoch: int | None = None) -> PartitionReplica:
        """Load the replica from storage.  ``only_copy``: no other replica holds its records
        (it is to lead with an ISR of itself alone), so damage in its log is refused
        (KAFKA_STORAGE_ERROR, raised) rather than cut away.  ``leader_epoch``: the
        partition's current one; a batch or leader-epoch entry above it is damage (an
        epoch cache that cannot be rebuilt from the replica's own batches: refused as the
        only copy, cut and fetched again otherwise)."""
        plog, epochs = self.storage.load(topic, partition, self._checkpointed_starts.get((topic, partition), 0),
                                         compacted=cfg.compacts(self.setting(topic, "cleanup.policy")),
                                         keep_damage=only_copy, max_epoch=leader_epoch)
        self.offline.pop((topic, partition), None)
        hw = self._checkpointed_hws.get((topic, partition), 0)
        p = PartitionReplica(topic, partition, self.broker_id, plog, epochs, hw, self.truncation)
        self._load_producer_snapshot(p)
        self._configure_log(p)
        if plog.log_end_offset:
            self.record_event("recovered", f"broker {self.broker_id} loaded {topic}-{partition}: "
                                                  f"LEO {plog.log_end_offset}, HW {p.high_watermark}, epochs {epochs.entries}")
        self.partitions[(topic, partition)] = p
        return p

    def _load_producer_snapshot(self, p: PartitionReplica) -> None:
        """Give a loaded replica the producer state its snapshot kept (the producers whose
        batches are below the log start); an unreadable snapshot is set aside, and those
        producers are unknown here (their next batches are accepted as a new producer's)."""
        text = self.storage.read_producer_snapshot(p.topic, p.partition)
        if text is None:
            return
        try:
            p.load_producer_snapshot(text)
        except KafkaError as exc:
            self.storage.set_aside_producer_snapshot(p.topic, p.partition)
            log.warning("%s-%d: producer snapshot unreadable (%s): set aside as .corrupt", p.topic, p.partition, exc)

    async def topic_config(self, topic: str) -> dict[str, str]:
        cfg = self.topic_configs.get(topic)
        if cfg is None:
            got = await self.zk.get(layout.topic_config_path(topic))
            cfg = layout.decode_topic_config(got[0]) if got else {}
            self.topic_configs[topic] = cfg
        return cfg

    def setting(self, topic: str, name: str) -> Any:
        return topic_setting(name, self.topic_configs.get(topic, {}), self.config)

    def _configure_log(self, p: PartitionReplica) -> None:
        """Give the log its topic's segment.bytes and segment.ms (where segments start); a
        compacted log rolls by max.compaction.lag.ms too when that is sooner (Kafka's
        LogConfig.maxSegmentMs), so its records can become cleanable in time."""
        p.log.segment_bytes = self.setting(p.topic, "segment.bytes")
        p.compacted = cfg.compacts(self.setting(p.topic, "cleanup.policy"))
        roll_ms = self.setting(p.topic, "segment.ms")
        if p.compacted:
            # gaps may come (the cleaner's, or a compacted leader's): recovery must still
            # accept them once the topic is back to cleanup.policy=delete
            self.storage.mark_compacted(p.topic, p.partition)
            roll_ms = min(roll_ms, self.setting(p.topic, "max.compaction.lag.ms"))
        p.log.roll_ms = roll_ms

    def configs_changed(self, topic: str | None = None) -> None:
        """Topic configs (``topic``, or every topic's broker defaults when None) changed:
        logs take the new segment settings; retention reads its settings when it runs."""
        for (t, _), p in self.partitions.items():
            if topic is None or t == topic:
                self._configure_log(p)

    # -- effects ------------------------------------------------------------------
    def apply(self, p: PartitionReplica, eff: Effects) -> None:
        """Carry out a partition's effects, in order.  Never awaits."""
        tp = (p.topic, p.partition)
        self._disturb(p)
        self.fetchers.touch(tp)  # a follower's fetch state may have moved (or it stopped following)
        storage = self.storage
        if eff.epoch_cache_changed:
            storage.write_epochs(p.topic, p.partition, p.epochs.entries)
        if eff.truncated_to is not None:
            storage.truncate(p.topic, p.partition, p.log)
        if eff.producer_snapshot_changed:
            # before the segments go: a crash in between still finds their producers
            try:
                storage.write_producer_snapshot(p.topic, p.partition, p.producers.base_offset,
                                                p.producers.encode_base())
            except OSError as exc:
                log.error("could not write the producer snapshot of %s-%d: %s", p.topic, p.partition, exc)
        if eff.log_start_changed:
            storage.delete_segments(p.topic, p.partition, p.log)
            self._starts_changed = True
        if eff.cleaned is not None:
            storage.replace_segments(p.topic, p.partition, p.log, *eff.cleaned)
            self.metrics.count(LOG_CLEANINGS)
            self.metrics.count(LOG_CLEANER_RECORDS_REMOVED, eff.cleaned_records)
        if eff.appended:
            storage.append(p.topic, p.partition, eff.appended, p.log)
            self.metrics.count(BYTES_IN, sum(len(b) for b in eff.appended))
        if eff.isr_update is not None:
            task = asyncio.get_running_loop().create_task(self._write_isr(p, eff.isr_update))
            self._isr_tasks.add(task)
            task.add_done_callback(self._isr_tasks.discard)
        if eff.hw_changed or eff.leo_changed:
            self.fetch_purgatory.wake(tp)
        if eff.hw_changed:
            self.produce_purgatory.wake(tp)
        for kind, text in eff.events:
            if kind == "duplicate":
                self.metrics.count(DUPLICATE_BATCHES)
            self.record_event(kind, text)

    def _disturb(self, p: PartitionReplica) -> None:
        """Something of ``p`` may have changed: it is no longer quiet in any follower's fetch
        session (``replication/fetch_session.py``), and a fetch of such a session waiting
        for news is woken to read it."""
        p.end_quiet()
        for session in self.fetch_sessions.disturb((p.topic, p.partition)):
            self.fetch_purgatory.wake(("fetch-session", session.id))

    async def _write_isr(self, p: PartitionReplica, isr: tuple[int, ...]) -> None:
        """Conditional write of the partition state znode (expected zk_version), then an
        /isr_change_notification entry so the controller spreads the change.

        A write whose outcome is unknown (a timeout, a lost connection: ZooKeeper may have
        applied it and its answer been lost) keeps the proposal pending, so the HW keeps
        counting the proposed members (the maximal ISR), and is tried again until it is
        answered or a new LeaderAndIsr replaces the proposal.  Only a definite refusal
        (BadVersion: the controller or a newer leader wrote first) drops it."""
        path = layout.partition_state_path(p.topic, p.partition)
        state = layout.LeaderIsr(self.broker_id, p.leader_epoch, isr, p.controller_epoch)
        while True:
            try:
                try:
                    stat = await self.zk.set(path, state.encode(), p.zk_version)
                except BadVersionError:
                    stat = await self._own_isr_write(path, state)
                    if stat is None:
                        log.info("%s-%d: ISR write %s refused (BadVersion); waiting for the controller's state",
                                 p.topic, p.partition, list(isr))
                        self.apply(p, p.isr_update_done(None, None))
                        return
                break
            except Exception as exc:  # the outcome is unknown: the proposal stays pending
                log.info("%s-%d: ISR write %s not answered (%s); trying again", p.topic, p.partition, list(isr),
                         exc.__class__.__name__)
                await asyncio.sleep(ISR_WRITE_RETRY_S)
                if p.role is not Role.LEADER or p.leader_epoch != state.leader_epoch or p.pending_isr != isr:
                    return  # a new LeaderAndIsr replaced the proposal
        before = list(p.isr)
        if p.role is Role.LEADER and p.leader_epoch == state.leader_epoch:
            self.apply(p, p.isr_update_done(isr, stat.version))
        shrink = len(isr) < len(before)
        kind = "isr_shrink" if shrink else "isr_expand"
        self.metrics.count(ISR_SHRINKS if shrink else ISR_EXPANDS)
        self.record_event(kind + "_done", f"{p.topic}-{p.partition}: ISR {before} -> {list(isr)} "
                                                 f"written (zk version {stat.version}) by leader {self.broker_id}")
        self._isr_changed[(p.topic, p.partition)] = None
        if not self._isr_notifying:
            await self._notify_isr_changes()

    async def _notify_isr_changes(self) -> None:
        """Tell the controller of the written ISR changes: one /isr_change_notification entry
        names every partition changed since the last one (at most ISR_CHANGES_PER_ENTRY), and
        changes written meanwhile go in the next, so a broker rejoining thousands of ISRs
        writes a few entries rather than one per partition (Kafka's leaders batch them too).
        Runs in the ISR write task that found no entry under way."""
        self._isr_notifying = True
        try:
            while self._isr_changed:
                tps = list(self._isr_changed)[:ISR_CHANGES_PER_ENTRY]
                for tp in tps:
                    del self._isr_changed[tp]
                try:
                    await self.zk.create(layout.ISR_CHANGE_PREFIX, layout.encode_isr_change(tps), sequence=True,
                                         makepath=True)
                except Exception as exc:
                    log.warning("could not write isr change notification: %s", exc)
        finally:
            self._isr_notifying = False

    def cancel_isr_writes(self) -> None:
        """The broker stops: ISR writes still waiting for ZooKeeper end here."""
        for task in list(self._isr_tasks):
            task.cancel()

    async def _own_isr_write(self, path: str, state: layout.LeaderIsr) -> Any:
        """After a version conflict: the znode's stat when it already holds exactly
        ``state``, else None.  An earlier write of this leader may have been applied while
        its answer was lost (ZooKeeper unreachable on the way back); the cached version is
        then one behind for ever, and every later ISR change would fail while no
        controller knows to send a new one (Kafka's checkLeaderAndIsrZkData, KAFKA-1382)."""
        got = await self.zk.get(path)
        if got is not None and layout.LeaderIsr.decode(got[0]) == state:
            return got[1]
        return None

    # -- controller requests --------------------------------------------------------
    def check_controller_epoch(self, epoch: int) -> None:
        if epoch < self.controller_epoch:
            raise StaleControllerEpochError(
                f"request from controller epoch {epoch}; broker {self.broker_id} has seen epoch {self.controller_epoch}")
        self.controller_epoch = epoch

    async def leader_and_isr(self, req: LeaderAndIsrRequest) -> list[LeaderAndIsrPartitionResponse]:
        self.check_controller_epoch(req.controller_epoch)
        endpoints = {b.id: (b.host, b.port) for b in req.live_leaders}
        results = []
        t = self.now_ms()
        led_anew = False  # a partition this broker now leads: its followers are to take it up
        for m in req.partition_states:
            topic, part = m.topic, m.partition
            err: KafkaError | None = None
            if self.broker_id not in m.replicas:
                results.append(LeaderAndIsrPartitionResponse(topic=topic, partition=part))
                continue
            inconsistent = self._check_topic_id(topic, part, m.topic_id)
            if inconsistent is not None:
                results.append(LeaderAndIsrPartitionResponse(topic=topic, partition=part, error=inconsistent))
                continue
            await self.topic_config(topic)
            p = self.partitions.get((topic, part))
            if p is None:
                try:
                    # the only in-sync copy: led by it, or by nobody yet (it is about to be elected)
                    p = self._create_replica(topic, part, only_copy=m.leader in (self.broker_id, -1)
                                             and set(m.isr) <= {self.broker_id}, leader_epoch=m.leader_epoch)
                except KafkaStorageError as exc:
                    if (topic, part) not in self.offline:
                        log.error("%s", exc.message)
                        self.record_event("replica_offline", exc.message)
                    self.offline[(topic, part)] = exc
                    results.append(LeaderAndIsrPartitionResponse(topic=topic, partition=part, error=exc))
                    continue
            st = LeaderState(m.leader, m.leader_epoch, tuple(m.isr), tuple(m.replicas), m.zk_version, m.controller_epoch)
            if p.is_stale(st):
                err = StaleControllerEpochError(f"leader epoch {st.leader_epoch} is older than {p.leader_epoch}")
            elif st.leader_epoch == p.leader_epoch and p.role is not Role.NONE:
                # Same epoch (e.g. a new controller re-sending state): refresh ISR/version only.
                self.apply(p, p.refresh_state(st))
            elif st.leader == self.broker_id:
                self.fetchers.remove_partitions([(topic, part)])
                self.apply(p, p.become_leader(st, t))
                followers = [r for r in st.replicas if r != self.broker_id]
                if self.fetch_sessions.holders((topic, part)) < len(followers):
                    # new to some follower's session here (a new partition, or led here anew);
                    # a new epoch of a partition every follower fetches already changes nothing
                    for r in followers:
                        self._take_up.setdefault(r, {})[(topic, part)] = t + TAKE_UP_MS
                    led_anew = True
                self.metrics.count(BECOME_LEADER)
                if topic == OFFSETS_TOPIC:
                    self.on_offsets_leadership(part, True)
                if topic == TXN_TOPIC:
                    self.on_txn_leadership(part, True)
            else:
                if topic == OFFSETS_TOPIC:
                    self.on_offsets_leadership(part, False)
                if topic == TXN_TOPIC:
                    self.on_txn_leadership(part, False)
                self.apply(p, p.become_follower(st, t))
                self.fetch_purgatory.wake((topic, part))
                self.produce_purgatory.wake((topic, part))
                if st.leader >= 0 and st.leader in endpoints:
                    self.fetchers.add_partition((topic, part), st.leader, endpoints[st.leader])
                else:
                    self.fetchers.remove_partitions([(topic, part)])
            results.append(LeaderAndIsrPartitionResponse(topic=topic, partition=part, error=err))
        if led_anew:
            # led partitions are new to followers' sessions: their parked fetches return now,
            # and the next ones name them (or park briefly, see _takes_up)
            for session in self.fetch_sessions.nudge():
                self.fetch_purgatory.wake(("fetch-session", session.id))
        return results

    def _takes_up(self, replica_id: int, session: FetchSession, t: int) -> bool:
        """Whether follower ``replica_id`` has partitions to take up that ``session`` does not
        hold yet (a follower learns of a partition from its own LeaderAndIsr, which may come
        after its leader's): its fetch then parks only briefly, so that the partition is
        fetched at once, not after replica.fetch.wait.max.ms.  Partitions it took up, and
        those past their deadline, are forgotten."""
        pending = self._take_up.get(replica_id)
        if not pending:
            return False
        for tp, deadline in list(pending.items()):
            if tp in session.partitions or deadline < t:
                del pending[tp]
        if not pending:
            del self._take_up[replica_id]
            return False
        return True

    def _check_topic_id(self, topic: str, part: int, topic_id: str) -> KafkaError | None:
        """KIP-516: the local log of ``topic``-``part`` must belong to the topic whose id the
        controller sent.  A log met for the first time takes the id (disk storage writes
        ``partition.metadata`` into its folder, as Kafka does); one whose recorded id
        differs belongs to an older topic of the same name (deleted while this broker was
        away, then created again): refused with INCONSISTENT_TOPIC_ID and logged loudly,
        its files left as they are (Kafka's InconsistentTopicIdException)."""
        if topic_id == ZERO_TOPIC_ID:
            return None
        tp = (topic, part)
        known = self.log_topic_ids.get(tp)
        if known is None:
            try:
                known = self.storage.read_topic_id(topic, part)
                if known is None:
                    self.storage.write_topic_id(topic, part, topic_id)
                    known = topic_id
            except (OSError, ValueError) as exc:
                msg = f"broker {self.broker_id}: partition.metadata of {topic}-{part} is unusable: {exc}"
                log.error("%s", msg)
                self.record_event("replica_offline", msg)
                return KafkaStorageError(msg)
            self.log_topic_ids[tp] = known
        if known == topic_id:
            return None
        msg = (f"broker {self.broker_id}: the log of {topic}-{part} belongs to topic id {known}, but topic {topic} "
               f"now has id {topic_id} (it was deleted and created again while this log stayed): the replica is "
               f"refused; remove {topic}-{part}'s folder to let it replicate the new topic")
        log.error("INCONSISTENT_TOPIC_ID: %s", msg)
        self.record_event("inconsistent_topic_id", msg, topic=topic, partition=part)
        return InconsistentTopicIdError(msg)

    def stop_replica(self, req: StopReplicaRequest) -> list[StopReplicaPartitionResponse]:
        self.check_controller_epoch(req.controller_epoch)
        out = []
        tps = [(x.topic, x.partition) for x in req.partitions]
        self.fetchers.remove_partitions(tps)
        for topic, part in tps:
            p = self.partitions.get((topic, part))
            if p is not None:
                if topic == OFFSETS_TOPIC:
                    self.on_offsets_leadership(part, False)
                if topic == TXN_TOPIC:
                    self.on_txn_leadership(part, False)
                p.become_none()
                self._disturb(p)
                self.fetch_purgatory.wake((topic, part))
                self.produce_purgatory.wake((topic, part))
                if req.delete_partitions:
                    del self.partitions[(topic, part)]
                    self.storage.delete(topic, part)
                    self.log_topic_ids.pop((topic, part), None)
                    self.topic_configs.pop(topic, None)
            elif req.delete_partitions and self.offline.pop((topic, part), None) is not None:
                self.storage.delete(topic, part)  # a deleted topic takes its damaged files along
            if req.delete_partitions:
                # what the checkpoints read at start-up said of the deleted partition must
                # not reach a topic of the same name created later
                self._checkpointed_starts.pop((topic, part), None)
                self._checkpointed_hws.pop((topic, part), None)
            out.append(StopReplicaPartitionResponse(topic=topic, partition=part))
        if req.delete_partitions and tps:
            # as Kafka's LogManager.asyncDelete: log-start-offset-checkpoint is written again
            # at once without the deleted partitions (a broker that crashes before the next
            # interval would otherwise give their log starts to a new topic of the same name)
            self._starts_changed = True
            self._write_log_starts(self._log_start_contents())
        return out

    # -- produce ----------------------------------------------------------------------
    async def produce(self, req: ProduceRequest) -> list[ProducePartitionResponse]:
        """Append to leaders; with acks=-1 wait for the HW.  The caller is trusted: the
        request layer has refused what a client may not write (internal topics, topics
        without Write), the coordinators write their own topics."""
        acks = req.acks
        results: list[ProducePartitionResponse] = []
        waits: list[tuple[ProducePartitionResponse, PartitionReplica, int, int]] = []
        for m in req.partitions:
            topic, part = m.topic, m.partition
            entry = ProducePartitionResponse(topic=topic, partition=part, base_offset=-1, log_append_time=-1,
                                             log_start_offset=-1)
            leader: PartitionReplica | None = None
            try:
                p = leader = self.leader_of(topic, part)
                min_isr = self.effective_min_isr(p)
                log_append_time = None
                if self.setting(topic, "message.timestamp.type") == "LogAppendTime":
                    log_append_time = int(self.clock.time() * 1000)
                max_bytes = self.setting(topic, "max.message.bytes")  # also the cap on a decompressed batch
                res, eff = p.append_as_leader(m.records, acks, min_isr, max_bytes,
                                              self.setting(topic, "compression.type"), log_append_time, max_bytes,
                                              None if log_append_time is not None else self.create_time_range(topic))
                self.apply(p, eff)
                entry.base_offset, entry.log_start_offset = res.base_offset, p.log.log_start_offset
                entry.log_append_time = res.log_append_time
                if acks == -1:
                    waits.append((entry, p, res.last_offset + 1, p.leader_term))
            except KafkaError as exc:
                # without its traceback: the frames it names (this one holds ``entry``, a
                # cycle) and their buffers, a refused batch's included, are freed now, not
                # when the cyclic collector runs
                entry.error = exc.with_traceback(None)
                if leader is not None and isinstance(exc, RECORD_VALIDATION_ERRORS):
                    # as Kafka's RecordValidationException: the partition's log start still
                    # answered (any other refusal answers -1)
                    entry.log_start_offset = leader.log.log_start_offset
            results.append(entry)
        if waits:
            parking()  # appended: only the wait for the commit is left
            if len(waits) == 1:  # the usual request: one partition, no task of its own
                await self._await_commit(*waits[0], req.timeout_ms)
            else:
                await asyncio.gather(*(self._await_commit(entry, p, target, term, req.timeout_ms)
                                       for entry, p, target, term in waits))
        return results

    async def _await_commit(self, entry: ProducePartitionResponse, p: PartitionReplica, target: int, term: int,
                            timeout_ms: int) -> None:
        """The produce purgatory: answer acks=all once HW >= last offset + 1.

        As Kafka's checkEnoughReplicasReachOffset: when the HW passes the batch with an ISR
        smaller than min.insync.replicas, the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND (the
        record is written and visible, but fewer replicas than promised have it)."""
        tp = (p.topic, p.partition)
        min_isr = self.effective_min_isr(p)
        verdict: list[KafkaError | None] = []

        def ready() -> bool:
            # Leadership first: after a lost term the HW may pass the target with other
            # records at those offsets.
            if not p.is_leader or p.leader_term != term:
                verdict.append(NotLeaderOrFollowerError(
                    f"broker {self.broker_id} lost leadership of {p.topic}-{p.partition} before the record was "
                    "known to be committed; it may still be committed"))
                return True
            if p.high_watermark >= target:
                verdict.append(None if len(p.isr) >= min_isr else NotEnoughReplicasAfterAppendError(
                    f"{p.topic}-{p.partition}: committed with ISR {list(p.isr)}, smaller than "
                    f"min.insync.replicas={min_isr}; the record is written and visible"))
                return True
            return False

        if await self.produce_purgatory.wait_until([tp], ready, timeout_ms / 1000.0):
            if verdict[-1] is not None:
                entry.error = verdict[-1]
            return
        entry.error = RequestTimedOutError(
            f"{p.topic}-{p.partition}: not committed within {timeout_ms} ms (HW {p.high_watermark}, needed {target}); "
            "it may still be committed")

    # -- transaction markers ----------------------------------------------------------------
    def create_time_range(self, topic: str) -> tuple[int, int] | None:
        """The CreateTime timestamps a leader of ``topic`` takes now: from now minus
        message.timestamp.before.max.ms to now plus message.timestamp.after.max.ms, each
        replaced by message.timestamp.difference.max.ms while left at its default (as
        Kafka's LogConfig does); None when nothing bounds them (the defaults)."""
        unset = cfg.LONG_MAX
        difference = self.setting(topic, "message.timestamp.difference.max.ms")
        before = self.setting(topic, "message.timestamp.before.max.ms")
        after = self.setting(topic, "message.timestamp.after.max.ms")
        before = difference if before == unset else before
        after = difference if after == unset else after
        if before == unset and after == unset:
            return None
        now = int(self.clock.time() * 1000)
        return now - before, now + after

    def effective_min_isr(self, p: PartitionReplica) -> int:
        """min.insync.replicas as acks=all applies it: never more than the partition's replicas
        (Kafka's Partition.effectiveMinIsr), so that a topic of replication factor 1 with
        min.insync.replicas=2 still takes acks=all writes."""
        return min(self.setting(p.topic, "min.insync.replicas"), max(len(p.replicas), 1))

    async def write_txn_markers(self, req: WriteTxnMarkersRequest) -> list[WritableTxnMarkerResult]:
        """WriteTxnMarkers on the leaders: append each marker to each of its partitions,
        then wait until the markers are committed (acks=all) or ``timeout_ms``.  A committed
        marker on ``__consumer_offsets`` completes the producer's pending offsets in the
        group coordinator."""
        now = int(self.clock.time() * 1000)
        results: list[WritableTxnMarkerResult] = []
        waits = []
        for marker in req.markers:
            res = WritableTxnMarkerResult(producer_id=marker.producer_id, partitions=[])
            for tp in marker.partitions:
                entry = WritableTxnMarkerPartitionResult(topic=tp.topic, partition=tp.partition)
                try:
                    p = self.leader_of(tp.topic, tp.partition)
                    appended, eff = p.append_marker(
                        marker.producer_id, marker.producer_epoch, marker.committed, marker.coordinator_epoch, now,
                        self.setting(tp.topic, "message.timestamp.type") == "LogAppendTime")
                    self.apply(p, eff)
                    waits.append((entry, p, appended.last_offset + 1, p.leader_term, marker))
                except KafkaError as exc:
                    entry.error = exc
                res.partitions.append(entry)
            results.append(res)

        async def commit(entry: WritableTxnMarkerPartitionResult, p: PartitionReplica, target: int, term: int,
                         marker: WritableTxnMarker) -> None:
            ack = ProducePartitionResponse(topic=p.topic, partition=p.partition, base_offset=target - 1,
                                           log_append_time=-1, log_start_offset=-1)
            await self._await_commit(ack, p, target, term, req.timeout_ms)
            if isinstance(ack.error, NotEnoughReplicasAfterAppendError):
                ack.error = None  # written and committed: the marker is in place
            entry.error = ack.error
            if entry.error is None and p.topic == OFFSETS_TOPIC:
                self.on_offsets_marker(p.partition, marker.producer_id, marker.committed)

        await asyncio.gather(*(commit(*w) for w in waits))
        return results

    # -- delete records -------------------------------------------------------------------
    async def delete_records(self, req: DeleteRecordsRequest) -> list[DeleteRecordsPartitionResult]:
        """DeleteRecords on the leaders: move each log start, then wait (the delete-records
        purgatory of Kafka) until the in-sync followers moved theirs too, or timeout_ms."""
        results: list[DeleteRecordsPartitionResult] = []
        waits: list[tuple[DeleteRecordsPartitionResult, PartitionReplica, int]] = []
        for m in req.partitions:
            topic, part = m.topic, m.partition
            entry = DeleteRecordsPartitionResult(topic=topic, partition=part, low_watermark=-1)
            try:
                p = self.leader_of(topic, part)
                if not cfg.deletes(self.setting(topic, "cleanup.policy")):
                    raise PolicyViolationError(f"records of {topic}, a topic with cleanup.policy=compact, "
                                               "cannot be deleted")
                self.apply(p, p.delete_records(m.offset))
                waits.append((entry, p, p.log.log_start_offset))
            except KafkaError as exc:
                entry.error = exc
            results.append(entry)
        await asyncio.gather(*(self._await_low_watermark(entry, p, target, req.timeout_ms)
                               for entry, p, target in waits))
        return results

    async def _await_low_watermark(self, entry: DeleteRecordsPartitionResult, p: PartitionReplica, target: int,
                                   timeout_ms: int) -> None:
        def ready() -> bool:
            return not p.is_leader or p.low_watermark >= target

        if not await self.fetch_purgatory.wait_until([(p.topic, p.partition)], ready, timeout_ms / 1000.0) \
                or not p.is_leader:
            entry.error = RequestTimedOutError(
                f"{p.topic}-{p.partition}: log start {target} is set on the leader, not yet on every in-sync "
                f"replica (low watermark {p.low_watermark}) within {timeout_ms} ms")
        entry.low_watermark = p.low_watermark

    # -- fetch --------------------------------------------------------------------------
    def _read_one(self, m: FetchPartition, replica_id: int, t: int, committed: bool = False,
                  may_read: ReadCheck | None = None) -> tuple[FetchPartitionResponse, int]:
        topic, part = m.topic, m.partition
        entry = FetchPartitionResponse(topic=topic, partition=part, high_watermark=-1, log_start_offset=-1,
                                       log_end_offset=-1, leader_epoch=-1, records=b"")
        try:
            if may_read is not None:
                may_read(topic)
            p = self.leader_of(topic, part)
            p.check_leader_epoch(m.current_leader_epoch)
            entry.leader_epoch = p.leader_epoch
            entry.log_end_offset = p.log_end_offset
            entry.log_start_offset = p.log.log_start_offset
            is_follower = replica_id >= 0
            if committed and not is_follower:
                data, aborted = p.read_committed(m.fetch_offset, m.partition_max_bytes)
                entry.aborted_transactions = [AbortedTransaction(producer_id=a.producer_id,
                                                                 first_offset=a.first_offset) for a in aborted]
            elif is_follower and m.fetch_offset == p.log_end_offset:
                data = b""  # a caught-up follower (most partitions of a fetch session): nothing to read
            else:
                data = p.read(m.fetch_offset, m.partition_max_bytes, for_follower=is_follower)
            # a caught-up follower's idle partition moves only its fetch times (the quick form)
            if is_follower and not p.note_caught_up_fetch(replica_id, m.fetch_offset, t, m.log_start_offset):
                low = p.low_watermark
                self.apply(p, p.update_follower_fetch(replica_id, m.fetch_offset, t,
                                                      self.settings.replica_lag_max_messages,
                                                      m.log_start_offset))
                if p.low_watermark != low:  # a DeleteRecords may be waiting for it
                    self.fetch_purgatory.wake((topic, part))
            entry.high_watermark = p.high_watermark
            entry.last_stable_offset = p.last_stable_offset
            entry.records = data
            return entry, len(data)
        except KafkaError as exc:
            entry.error = exc
            return entry, 0

    async def fetch(self, req: FetchRequest, may_read: ReadCheck | None = None) -> FetchResponse:
        """Read now; if fewer than min_bytes are available, park in the fetch purgatory
        until one of the partitions has more to give (new records for a follower, an HW
        move for a consumer), or max_wait_ms.  A request in an incremental fetch session
        (KIP-227, ``replication/fetch_session.py``) reads every partition of its session and
        is answered only the partitions with news.  What consumers get is counted per
        partition (the dashboard's fetch rates).  ``may_read(topic)`` is the caller's access
        check, run before every read of a partition (those of the session too), which
        raises the partition's error."""
        ctx = self._session_context(req)
        answered = await self._fetch(req, ctx, may_read)
        session_id = INVALID_SESSION_ID
        if ctx is not None:
            evictions = self.fetch_sessions.evictions
            session_id = self.fetch_sessions.complete(ctx, self.now_ms(), self._session_ids)
            if ctx.incremental:
                self.metrics.count(INCREMENTAL_FETCHES, fetcher="replica" if req.replica_id >= 0 else "consumer")
            if self.fetch_sessions.evictions != evictions:
                self.metrics.count(INCREMENTAL_FETCH_SESSION_EVICTIONS, self.fetch_sessions.evictions - evictions)
            self.metrics.set_level(INCREMENTAL_FETCH_SESSIONS, len(self.fetch_sessions))
            self.metrics.set_level(INCREMENTAL_FETCH_PARTITIONS_CACHED, self.fetch_sessions.partition_count())
        if req.replica_id < 0:
            asked = ctx.partitions if ctx is not None else req.partitions
            self.metrics.count_consumer_fetch({(m.topic, m.partition): m.fetch_offset for m in asked},
                                              [((e.topic, e.partition), e.records) for e in answered if e.error is None])
        return FetchResponse(session_id=session_id, partitions=answered)

    def _session_context(self, req: FetchRequest) -> FetchContext | None:
        """None for a sessionless request, else its session context; a session error is
        raised (the request changes nothing)."""
        if req.session_epoch == FINAL_EPOCH and req.session_id == INVALID_SESSION_ID:
            return None
        ctx = self.fetch_sessions.begin(
            req.session_id, req.session_epoch,
            {(m.topic, m.partition): PartitionFetch(m.fetch_offset, m.log_start_offset, m.partition_max_bytes,
                                                    m.current_leader_epoch, m.high_watermark) for m in req.partitions},
            [(f.topic, f.partition) for f in req.forgotten], req.replica_id >= 0, self.now_ms())
        if ctx.error is not None:
            self.metrics.count(FETCH_SESSION_ERRORS, error=ctx.error)
            cls = FetchSessionIdNotFoundError if ctx.error == FETCH_SESSION_ID_NOT_FOUND else InvalidFetchSessionEpochError
            raise cls(ctx.message)
        return ctx

    async def _fetch(self, req: FetchRequest, ctx: FetchContext | None = None,
                     may_read: ReadCheck | None = None) -> list[FetchPartitionResponse]:
        replica_id = req.replica_id
        parts: list[Any] = ctx.partitions if ctx is not None else req.partitions
        t = self.now_ms()
        committed = req.isolation_level == READ_COMMITTED
        busy = self._busy_in_session(parts, req, ctx, t)
        results = [self._read_one(m, replica_id, t, committed, may_read) for m in busy]
        total = sum(n for _, n in results)
        has_error = any(r.error is not None for r, _ in results)
        # nothing to wait for: no partition at all (a session whose partitions are all quiet
        # waits like any other, until one of them is disturbed or max_wait_ms)
        nothing = not parts and (ctx is None or ctx.session is None or not ctx.session.partitions)
        if total >= req.min_bytes or has_error or req.max_wait_ms == 0 or nothing:
            return self._bound(results, req.max_bytes, busy, ctx, replica_id < 0)
        # what a consumer may read up to: the HW, or the LSO for read_committed
        hws = {(r.topic, r.partition): r.last_stable_offset if committed else r.high_watermark for r, _ in results}
        keys: list[Any] = [(m.topic, m.partition) for m in parts]
        session = ctx.session if ctx is not None and ctx.incremental and replica_id >= 0 else None
        if session is not None:  # a follower's session: its quiet partitions wake it when disturbed
            keys.append(("fetch-session", session.id))
            disturbed = session.disturbed

        def ready() -> bool:
            if session is not None and session.disturbed != disturbed:
                return True
            for m in parts:
                p = self.partitions.get((m.topic, m.partition))
                if p is None or not p.is_leader:
                    return True
                if replica_id >= 0:
                    # As Kafka's DelayedFetch: a follower's fetch waits for new records
                    # only (a moved HW reaches the follower with its next fetch)
                    if p.log_end_offset > m.fetch_offset:
                        return True
                else:
                    bound = p.last_stable_offset if committed else p.high_watermark
                    if bound != hws[(m.topic, m.partition)] or bound > m.fetch_offset:
                        return True
            return False

        wait_s = req.max_wait_ms / 1000.0
        if session is not None and self._takes_up(replica_id, session, t):
            wait_s = min(wait_s, TAKE_UP_POLL_S)
        await self.fetch_purgatory.wait_until(keys, ready, wait_s)
        t = self.now_ms()
        if session is not None and session.disturbed != disturbed:  # quiet partitions woke: read them too
            parts = [session.partitions[tp] for tp in session.active]
        busy = self._busy_in_session(parts, req, ctx, t)
        return self._bound([self._read_one(m, replica_id, t, committed, may_read) for m in busy], req.max_bytes,
                           busy, ctx, replica_id < 0)

    def _busy_in_session(self, parts: list[Any], req: FetchRequest, ctx: FetchContext | None, t: int) -> list[Any]:
        """The partitions of a follower's incremental fetch that need reading: all but the
        idle ones.  A session partition this request did not name is idle when the follower
        is in its ISR at the leader's LEO, with the HW and log start it was last answered
        (:meth:`PartitionReplica.note_caught_up_fetch` moves its fetch times there and then):
        its read would find nothing and its answer would leave it out.  It is then quiet:
        the session's next fetches do not even look at it (``parts`` holds only the
        session's active partitions) until something of it changes (:meth:`_disturb`), and
        its follower's catch-up time follows the session's fetches (its mark, set here).
        So a cluster's idle partitions cost a follower's fetch nothing."""
        if ctx is None or not ctx.incremental or req.replica_id < 0:
            return parts
        session = ctx.session
        assert session is not None
        session.mark.last_fetch_ms = t
        replica_id = req.replica_id
        named = {(m.topic, m.partition) for m in req.partitions}
        partitions = self.partitions
        busy = []
        for m in parts:
            tp = (m.topic, m.partition)
            p = partitions.get(tp)
            if (tp in named or p is None or m.current_leader_epoch not in (-1, p.leader_epoch)
                    or m.answered_high_watermark != p.high_watermark
                    or m.answered_log_start_offset != p.log.log_start_offset
                    or not p.note_caught_up_fetch(replica_id, m.fetch_offset, t, m.log_start_offset, session.mark)):
                busy.append(m)
            else:
                session.settle(tp)
        return busy

    def _bound(self, results: list[tuple[FetchPartitionResponse, int]], max_bytes: int,
               asked: list[Any], ctx: FetchContext | None, consumer: bool) -> list[FetchPartitionResponse]:
        """Keep the answer under ``max_bytes`` (at least one batch), and leave out the
        partitions with nothing new: for a follower's sessionless fetch, compared with
        the high watermark and log start offset it sent; in a session, with what the
        session last answered."""
        out = []
        size = 0
        for (entry, n), m in zip(results, asked):
            if ctx is not None:
                if not m.must_answer(n > 0, entry.error is not None, entry.high_watermark, entry.log_start_offset,
                                     entry.last_stable_offset if consumer else None):
                    continue
            elif not n and entry.error is None and entry.high_watermark == m.high_watermark \
                    and entry.log_start_offset == m.log_start_offset:
                continue  # nothing new for this follower
            if size and size + n > max_bytes:
                entry.records = b""
                n = 0
            size += n
            self.metrics.count(BYTES_OUT, n)
            out.append(entry)
        return out

    def list_offsets(self, req: ListOffsetsRequest) -> list[ListOffsetsPartitionResponse]:
        out = []
        for m in req.partitions:
            entry = ListOffsetsPartitionResponse(topic=m.topic, partition=m.partition, offset=-1, timestamp=-1,
                                                 leader_epoch=-1)
            try:
                p = self.leader_of(m.topic, m.partition)
                p.check_leader_epoch(m.current_leader_epoch)
                ts = m.timestamp
                upto = p.log_end_offset if req.replica_id >= 0 else \
                    p.last_stable_offset if req.isolation_level == READ_COMMITTED else p.high_watermark
                if ts == EARLIEST_TIMESTAMP:
                    off = p.log.log_start_offset
                elif ts == LATEST_TIMESTAMP:
                    off = upto
                else:
                    # MAX_TIMESTAMP (-3) or a time: a record's offset, never one at or above the HW
                    found = p.log.offset_of_max_timestamp(upto) if ts == MAX_TIMESTAMP else \
                        p.log.offset_for_timestamp(ts, upto)
                    off = -1
                    if found is not None:
                        entry.timestamp, off = found
                # no record at or after the time: offset, timestamp and leader epoch unknown, as in Kafka
                entry.offset, entry.leader_epoch = off, p.leader_epoch if off >= 0 else -1
            except KafkaError as exc:
                entry.error = exc
            out.append(entry)
        return out

    def offsets_for_leader_epoch(self, req: OffsetsForLeaderEpochRequest) -> list[EpochEndOffset]:
        out = []
        for m in req.partitions:
            entry = EpochEndOffset(topic=m.topic, partition=m.partition, leader_epoch=-1, end_offset=-1)
            try:
                p = self.leader_of(m.topic, m.partition)
                p.check_leader_epoch(m.current_leader_epoch)
                entry.leader_epoch, entry.end_offset = p.end_offset_for_epoch(m.leader_epoch)
            except KafkaError as exc:
                entry.error = exc
            out.append(entry)
        return out

    def replica_state(self, partitions: list[tuple[str, int, int | None]] | None, checksum_upto: int | None) -> list[dict]:
        """Snapshots of local replicas (``partitions``: topic, partition and its own checksum
        bound or None; None for all), as :meth:`PartitionReplica.describe` gives them.  A
        leader's also names its ISR followers that are out of sync now (``out_of_sync``:
        not caught up to its LEO within replica.lag.time.max.ms, the rule of the ISR check),
        so that a follower one fetch behind is not mistaken for a lagging one."""
        wanted = partitions if partitions is not None else [(t, p, None) for t, p in sorted(self.partitions)]
        t = self.now_ms()
        s = self.settings
        lag, msgs, idle = s.replica_lag_time_max_ms, s.replica_lag_max_messages, s.minikafka_replica_lag_idle_followers
        out = []
        for topic, part, upto in wanted:
            p = self.partitions.get((topic, part))
            if p is not None:
                state = p.describe(upto if upto is not None else checksum_upto)
                state["out_of_sync"] = p.out_of_sync_replicas(t, lag, msgs, idle) if p.is_leader else []
                out.append(state)
        return out

    # -- timers -----------------------------------------------------------------------
    def shrink_isr_check(self) -> None:
        """Every replica.lag.time.max.ms / 2: propose removing lagging followers."""
        t = self.now_ms()
        s = self.settings
        lag, msgs, idle = s.replica_lag_time_max_ms, s.replica_lag_max_messages, s.minikafka_replica_lag_idle_followers
        for p in list(self.partitions.values()):
            if p.is_leader:
                self.apply(p, p.maybe_shrink_isr(t, lag, msgs, idle))

    def checkpoint_hws(self) -> None:
        """Write replication-offset-checkpoint, and log-start-offset-checkpoint when a log
        start moved since the last time (on the caller's thread: the broker's stop, which
        writes both, as Kafka's LogManager does at shutdown)."""
        self._write_hws(self._hw_contents())
        self._write_log_starts(self._log_start_contents())

    async def checkpoint_hws_in_background(self) -> None:
        """Every replica.high.watermark.checkpoint.interval.ms: replication-offset-checkpoint,
        with the offsets read on the loop and the file written (fsynced twice) on a worker
        thread, so no event loop waits on the disk.  Nothing is written while no high
        watermark moved and no partition came or went since the last write (an idle
        broker's file already says it)."""
        contents = self._hw_contents()
        if contents == self._hws_written:
            return
        await asyncio.get_running_loop().run_in_executor(None, self._write_hws, contents)

    async def checkpoint_log_starts_in_background(self) -> None:
        """Every log.flush.start.offset.checkpoint.interval.ms (Kafka's 60 s): log-start-
        offset-checkpoint, when a log start moved since the last write.  A broker that
        crashes comes back with the log starts it last wrote (or its first segments' base
        offsets), so a DeleteRecords inside a segment newer than that is undone, as in Kafka."""
        starts = self._log_start_contents()
        if starts is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._write_log_starts, starts)

    def _hw_contents(self) -> dict[tuple[str, int], int]:
        return {tp: p.high_watermark for tp, p in self.partitions.items()}

    def _log_start_contents(self) -> dict[tuple[str, int], int] | None:
        if not self._starts_changed:
            return None
        self._starts_changed = False
        return {tp: p.log.log_start_offset for tp, p in self.partitions.items() if p.log.log_start_offset > 0}

    def _write_hws(self, hws: dict[tuple[str, int], int]) -> None:
        try:
            self.storage.write_hw_checkpoint(hws)
        except OSError as exc:
            self._hws_written = None  # try again next time
            log.error("could not write %s: %s", "replication-offset-checkpoint", exc)
        else:
            self._hws_written = hws

    def _write_log_starts(self, starts: dict[tuple[str, int], int] | None) -> None:
        if starts is None:
            return
        try:
            self.storage.write_log_start_checkpoint(starts)
        except OSError as exc:
            self._starts_changed = True  # try again next time
            log.error("could not write %s: %s", "log-start-offset-checkpoint", exc)

    def retention_check(self) -> None:
        """Every log.retention.check.interval.ms: each replica, leader or follower, deletes
        the old segments its topic's retention.ms / retention.bytes let go (Kafka's
        LogManager cleanup) when its cleanup.policy includes delete."""
        now = int(self.clock.time() * 1000)
        for p in list(self.partitions.values()):
            if p.role is Role.NONE or not cfg.deletes(self.setting(p.topic, "cleanup.policy")):
                continue
            self.apply(p, p.apply_retention(now, self.setting(p.topic, "retention.ms"),
                                            self.setting(p.topic, "retention.bytes")))

    def expire_producers(self) -> None:
        """Every producer.id.expiration.check.interval.ms: each replica forgets the
        idempotent producers that wrote nothing for producer.id.expiration.ms (measured
        from their last batch's timestamp, on the wall clock) and have no open transaction
        in it (Kafka's PeriodicProducerExpirationCheck)."""
        now = int(self.clock.time() * 1000)
        expiration = self.settings.producer_id_expiration_ms
        for p in list(self.partitions.values()):
            if p.is_hosted:
                self.apply(p, p.expire_producers(now, expiration))

    async def clean_logs(self) -> None:
        """Every log.cleaner.backoff.ms (when log.cleaner.enable): compact each replica of a
        topic whose cleanup.policy includes compact, leader or follower alike (each broker
        cleans its own logs, as Kafka's LogCleaner does), one log at a time.  Decoding and
        rewriting run in a worker thread on a snapshot of the log's head, so the event
        loop keeps serving; the result is put in place only if the head did not change."""
        now = int(self.clock.time() * 1000)
        for p in list(self.partitions.values()):
            if p.role is Role.NONE or not p.compacted:
                continue
            inp = p.clean_input(now, self.setting(p.topic, "min.cleanable.dirty.ratio"),
                                self.setting(p.topic, "min.compaction.lag.ms"),
                                self.setting(p.topic, "max.compaction.lag.ms"))
            if inp is None:
                continue
            plan = await asyncio.to_thread(cleaner.compute, inp, now, self.setting(p.topic, "delete.retention.ms"))
            # the replica may have been stopped while the cleaner ran in its thread
            if self.partitions.get((p.topic, p.partition)) is p and p.is_hosted:
                self.apply(p, p.apply_clean(inp, plan))

    def under_replicated(self) -> int:
        return sum(1 for p in self.partitions.values() if p.is_leader and len(p.isr) < len(p.replicas))
