"""Follower fetchers: one task per (leader broker, fetcher id), Kafka's ReplicaFetcherThread.

Each round (:meth:`Fetcher.do_work`) first truncates the partitions that need it
(OffsetsForLeaderEpoch, KIP-101/279), then sends one fetch for all the others,
carrying each partition's fetch offset (its LEO) and current leader epoch (none, -1,
with ``replication.truncation=high_watermark``: a broker from before KIP-320, whose
stale followers the leader cannot fence).

Fetches run in an incremental fetch session (KIP-227, :class:`FetchSessionHandler`):
after a full fetch, a fetch names only the partitions added or whose fetch offset, log
start offset or leader epoch changed, and the leader reads the idle ones at the offsets
it cached.  A session error (the leader restarted, or evicted the session) or a fetch
without an answer makes the next fetch a full one, at once.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable

from ..config import BrokerConfig
from ..errors import (FencedLeaderEpochError, FetchSessionIdNotFoundError, InvalidFetchSessionEpochError, KafkaError,
                      NotLeaderOrFollowerError, OffsetOutOfRangeError, UnknownLeaderEpochError,
                      UnknownTopicOrPartitionError)
from ..metric_names import FENCED_FETCHES
from ..protocol.rpc.types import (FetchForgottenPartition, FetchPartition, FetchRequest, OffsetForLeaderPartition,
                                  OffsetsForLeaderEpochRequest, Request)
from ..replication.fetch_session import FetchSessionHandler, PartitionFetch
from ..rpc import R, request
from ..replication.partition import PartitionReplica, Role, TruncationMode
from .metrics import Metrics
from .services import PeerCall, Spawn
from .settings import FetcherSettings

if TYPE_CHECKING:
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

TP = tuple[str, int]

# A follower often learns of a new partition before its leader does (the controller sends
# both their LeaderAndIsr at once): the leader then answers its first fetches
# UNKNOWN_TOPIC_OR_PARTITION (or NOT_LEADER_OR_FOLLOWER). Such a partition, never answered
# yet, is asked again after NEW_PARTITION_RETRY_S, up to NEW_PARTITION_RETRIES times,
# before the fetcher backs off replica.fetch.backoff.ms as for any error: the first
# acks=all records to a new topic then wait milliseconds, not a second.
NEW_PARTITION_RETRY_S = 0.02
NEW_PARTITION_RETRIES = 50


class Fetcher:
    """Replicates a set of partitions from one leader broker.

    What each partition asks for (:class:`PartitionFetch`) is kept between rounds and
    read again from the partition only when it was touched (:meth:`touch`: the replica
    manager carried out one of its effects, or it was added or removed), so a round of
    an incremental session costs the partitions that changed, not every partition
    followed: idle ones cost nothing."""

    def __init__(self, manager: "FetcherManager", leader_id: int, endpoint: tuple[str, int], fetcher_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.endpoint = endpoint
        self.fetcher_id = fetcher_id
        self.partitions: set[TP] = set()
        self._touched: set[TP] = set()  # to read again before the next round
        self._changed_entries: set[TP] = set()  # entries changed since the last request built
        self._wanted: dict[TP, PartitionFetch] = {}  # the partitions ready to fetch, as asked
        self._asked: dict[TP, tuple[PartitionReplica, int, int]] = {}  # ... their replica, leader epoch and LEO
        self._truncating: dict[TP, PartitionReplica] = {}  # the partitions waiting for OffsetsForLeaderEpoch
        self._unanswered: dict[TP, int] = {}  # added, not answered yet: early retries so far
        self._max_bytes = manager.settings.replica_fetch_max_bytes
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.session = FetchSessionHandler()
        self._session_endpoint = endpoint
        self.rounds = 0
        self.entries_read = 0  # partitions read again by _refresh, all told

    def start(self) -> None:
        self._task = self.manager.spawn(self.run(), f"fetcher-{self.leader_id}-{self.fetcher_id}")

    async def stop(self) -> None:
        """Cancel the fetch loop and wait until it has ended (its failures are the task
        owner's to log)."""
        if self._task:
            self._task.cancel()
            await asyncio.wait([self._task])

    def add(self, tp: TP) -> None:
        """Replicate ``tp`` too, from the next round on.  A fetch parked at the leader names
        only the partitions it was sent with; it is not called off (a fetch without an
        answer makes the next one full, which reads every partition of the session at the
        leader: topics created one after another cost every follower a full fetch each).
        The leader answers it instead: given a partition, it wakes its followers' parked
        fetches, and parks theirs only briefly until their sessions hold it
        (``ReplicaManager._takes_up``), so acks=all to a new topic is not held back for
        replica.fetch.wait.max.ms."""
        self.partitions.add(tp)
        self._unanswered[tp] = 0
        self._touched.add(tp)
        self._changed.set()

    def remove(self, tp: TP) -> None:
        self.partitions.discard(tp)
        self._unanswered.pop(tp, None)
        self._touched.add(tp)

    def touch(self, tp: TP) -> None:
        """``tp``'s replica changed: read its fetch state again before the next round."""
        self._touched.add(tp)

    def _refresh(self) -> None:
        """Bring the fetch entries of the touched partitions up to date: a partition this
        fetcher no longer follows (removed, or no longer a follower of this leader) leaves
        them, one waiting for truncation waits apart from the fetch."""
        if not self._touched:
            return
        rm = self.manager.replica_manager
        # high_watermark truncation is a broker from before leader epochs (Kafka < 0.11):
        # its fetches name no leader epoch, so the leader cannot fence a zombie (KIP-320)
        fenced = rm.truncation is TruncationMode.LEADER_EPOCH
        touched, self._touched = self._touched, set()
        self._changed_entries |= touched
        self.entries_read += len(touched)
        for tp in touched:
            self._wanted.pop(tp, None)
            self._asked.pop(tp, None)
            self._truncating.pop(tp, None)
            if tp not in self.partitions:
                continue
            p = rm.partitions.get(tp)
            if p is None or p.role is not Role.FOLLOWER or p.leader_id != self.leader_id:
                self.partitions.discard(tp)
                self._unanswered.pop(tp, None)
            elif p.needs_truncation:
                self._truncating[tp] = p
            else:
                epoch, leo = p.leader_epoch, p.log_end_offset
                self._asked[tp] = (p, epoch, leo)
                self._wanted[tp] = PartitionFetch(leo, p.log.log_start_offset, self._max_bytes, epoch if fenced else -1,
                                                  p.high_watermark)

    async def run(self) -> None:
        backoff = self.manager.settings.replica_fetch_backoff_ms / 1000.0
        while True:
            self._refresh()
            if not self.partitions:
                self._changed.clear()
                await self._changed.wait()
                continue
            try:
                await self.do_work()
            except asyncio.CancelledError:
                raise
            except KafkaError as exc:
                log.debug("fetcher from broker %d: %s", self.leader_id, exc)
                await asyncio.sleep(backoff)
            except Exception:
                log.exception("fetcher from broker %d failed", self.leader_id)
                await asyncio.sleep(backoff)

    async def do_work(self) -> None:
        """One round: truncate what needs truncating, then fetch the rest."""
        self.rounds += 1
        self._refresh()
        if self._truncating:
            await self._truncate(list(self._truncating.values()))
            self._refresh()  # the truncation awaited: roles may have moved meanwhile
        if self._wanted:
            await self._fetch()
    async def _call(self, req: Request[R], timeout_s: float) -> R:
        host, port = self.endpoint
        return await request(self.manager.call, host, port, req, timeout_s)

    async def _truncate(self, replicas: list[PartitionReplica]) -> None:
        rm = self.manager.replica_manager
        asked = {(p.topic, p.partition): (p, p.leader_epoch, p.truncation_epoch()) for p in replicas}
        req = OffsetsForLeaderEpochRequest(replica_id=self.manager.config.broker_id, partitions=[
            OffsetForLeaderPartition(topic=p.topic, partition=p.partition, current_leader_epoch=cur, leader_epoch=epoch)
            for p, cur, epoch in asked.values()])
        resp = await self._call(req, self.manager.settings.request_timeout_ms / 1000.0)
        for r in resp.partitions:
            tp = (r.topic, r.partition)
            p, cur, _ = asked[tp]
            if p.leader_epoch != cur or p.role is not Role.FOLLOWER:
                continue  # state changed while the request was out
            if r.error is not None:
                log.info("%s-%d: OffsetsForLeaderEpoch from broker %d: %s %s", tp[0], tp[1], self.leader_id,
                         r.error.code.name, r.error.message)
                continue
            done, eff = p.on_leader_epoch_end_offset(r.leader_epoch, r.end_offset)
            rm.apply(p, eff)

    async def _fetch(self) -> None:
        rm = self.manager.replica_manager
        settings = self.manager.settings
        wait_ms = settings.replica_fetch_wait_max_ms
        max_bytes = self._max_bytes
        sent = dict(self._asked)  # as asked now: an answer is applied only if nothing moved since
        if self.endpoint != self._session_endpoint:  # another leader process: its sessions are not ours
            self.session.reset()
            self._session_endpoint = self.endpoint
        data = self.session.build(self._wanted, self._changed_entries)
        self._changed_entries = set()
        req = FetchRequest(
            replica_id=self.manager.config.broker_id, broker_epoch=self.manager.broker_epoch(),
            max_wait_ms=wait_ms, min_bytes=settings.replica_fetch_min_bytes, max_bytes=10 * max_bytes,
            partitions=[FetchPartition(topic=tp[0], partition=tp[1], fetch_offset=f.fetch_offset,
                                       current_leader_epoch=f.current_leader_epoch, partition_max_bytes=f.max_bytes,
                                       log_start_offset=f.log_start_offset, high_watermark=f.high_watermark)
                        for tp, f in data.to_send.items()],
            session_id=data.session_id, session_epoch=data.epoch,  # 0 and FINAL_EPOCH: no session
            forgotten=[FetchForgottenPartition(topic=tp[0], partition=tp[1]) for tp in data.forgotten])
        # the answer leaves out the partitions with nothing new for us (see the fetch schema)
        try:
            resp = await self._call(req, wait_ms / 1000.0 + settings.request_timeout_ms / 1000.0)
        except (FetchSessionIdNotFoundError, InvalidFetchSessionEpochError) as exc:
            # the leader restarted, evicted the session, or lost count: a full fetch at once
            log.debug("fetch session with broker %d: %s", self.leader_id, exc)
            self.session.handle_response(0, exc.code.name)
            return
        except BaseException:
            self.session.handle_error()  # no answer (or the fetcher stops): the leader's epoch is unknown
            raise
        self.session.handle_response(resp.session_id)
        errors = early = 0
        for r in resp.partitions:
            tp = (r.topic, r.partition)
            if tp not in sent:
                continue  # no longer followed here
            p, epoch, leo = sent[tp]
            if p.role is not Role.FOLLOWER or p.leader_epoch != epoch or p.log_end_offset != leo:
                continue  # a LeaderAndIsr or truncation happened meanwhile
            err = r.error
            if err is None or isinstance(err, OffsetOutOfRangeError) and r.log_end_offset >= 0:
                self._unanswered.pop(tp, None)
            if err is None:
                rm.apply(p, p.append_as_follower(r.records, r.high_watermark, r.log_start_offset))
            elif isinstance(err, OffsetOutOfRangeError) and r.log_end_offset >= 0:
                rm.apply(p, p.handle_out_of_range(r.log_end_offset, r.log_start_offset))
            elif (isinstance(err, (UnknownTopicOrPartitionError, NotLeaderOrFollowerError))
                  and self._unanswered.get(tp, NEW_PARTITION_RETRIES) < NEW_PARTITION_RETRIES):
                self._unanswered[tp] += 1  # the leader has not taken it up yet: ask again soon
                early += 1
            else:
                errors += 1
                if isinstance(err, (FencedLeaderEpochError, UnknownLeaderEpochError)):
                    # Kafka logs these at INFO: the follower waits for the controller's
                    # LeaderAndIsr with the new epoch before fetching again
                    self.manager.metrics.count(FENCED_FETCHES)
                    log.info("%s-%d: fetch from broker %d at leader epoch %d refused: %s (%s); waiting for the new "
                             "LeaderAndIsr", tp[0], tp[1], self.leader_id, epoch, err.code.name, err.message)
                else:
                    log.debug("%s-%d: fetch from broker %d: %s %s", tp[0], tp[1], self.leader_id, err.code.name,
                              err.message)
        if errors and errors == len(sent):
            await asyncio.sleep(settings.replica_fetch_backoff_ms / 1000.0)
        elif early and errors + early == len(sent):
            await asyncio.sleep(NEW_PARTITION_RETRY_S)


class FetcherManager:
    """Which fetcher replicates which partition (Kafka's ReplicaFetcherManager)."""

    def __init__(self, config: BrokerConfig, replica_manager: "ReplicaManager", metrics: Metrics, call: PeerCall,
                 broker_epoch: Callable[[], int], spawn: Spawn) -> None:
        self.config = config
        self.settings = FetcherSettings.of(config)  # static settings only
        self.replica_manager = replica_manager
        self.metrics = metrics
        self.call = call
        self.broker_epoch = broker_epoch
        self.spawn = spawn
        self.fetchers: dict[tuple[int, int], Fetcher] = {}
        self.assigned: dict[TP, tuple[int, int]] = {}

    def _fetcher_id(self, tp: TP) -> int:
        n = self.settings.num_replica_fetchers
        return (hash(tp[0]) * 31 + tp[1]) % n

    def add_partition(self, tp: TP, leader_id: int, endpoint: tuple[str, int]) -> None:
        key = (leader_id, self._fetcher_id(tp))
        old = self.assigned.get(tp)
        if old is not None and old != key and old in self.fetchers:
            self.fetchers[old].remove(tp)
        f = self.fetchers.get(key)
        if f is None:
            f = Fetcher(self, leader_id, endpoint, key[1])
            self.fetchers[key] = f
            f.start()
        f.endpoint = endpoint
        f.add(tp)
        self.assigned[tp] = key

    def remove_partitions(self, tps: list[TP]) -> None:
        for tp in tps:
            key = self.assigned.pop(tp, None)
            if key is not None and key in self.fetchers:
                self.fetchers[key].remove(tp)

    def touch(self, tp: TP) -> None:
        """``tp``'s replica changed: its fetcher, if any, reads it again before its next round."""
        key = self.assigned.get(tp)
        if key is not None:
            f = self.fetchers.get(key)
            if f is not None:
                f.touch(tp)

    def update_endpoint(self, broker_id: int, endpoint: tuple[str, int]) -> None:
        for (leader, _), f in self.fetchers.items():
            if leader == broker_id:
                f.endpoint = endpoint

    async def stop(self) -> None:
        await asyncio.gather(*(f.stop() for f in self.fetchers.values()))
        self.fetchers.clear()
