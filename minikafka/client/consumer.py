"""The asyncio consumer: manual assignment or a consumer group, positions, long-poll fetches.

Partitions are assigned with :meth:`AIOConsumer.assign`, or by the group: with a
``group_id``, :meth:`AIOConsumer.subscribe` joins the group and ``poll`` takes the
partitions the group leader assigned (client/group_member.py); offsets are committed
to the group's coordinator (automatically every ``auto_commit_interval_ms`` unless
``enable_auto_commit=False``), and a partition without a position starts from the
group's committed offset.  The position of a partition is the offset of the next record :meth:`poll`
returns.  An unknown position is resolved with ``list_offsets`` according to
``auto_offset_reset`` (``earliest``: the log start, ``latest``: the high
watermark; ``none``: raise OFFSET_OUT_OF_RANGE).  One fetch per leader is in
flight at a time; an answer that arrives after a :meth:`seek` is discarded for
the partitions whose position changed.  A consumer only ever sees records below
the high watermark (committed records): the broker does not return others.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .. import errors
from ..protocol.rpc.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from ..protocol.rpc.types import (FetchPartition, FetchRequest, FetchResponse, ListOffsetsPartition, ListOffsetsRequest,
                                  ListOffsetsResponse, OffsetForLeaderPartition, OffsetsForLeaderEpochRequest)
from ..rpc import request
from ..protocol.records.batch import split_batches
from .aborted import AbortedFilter
from .batches import ConsumerBatch
from .connection import ClientSecurity, Connection
from .ports import SYSTEM_CLOCK, Clock, Transport
from .group_member import GroupMember
from .metadata import Metadata, group_by_leader, needs_refresh
from .types import ConsumerGroupMetadata, ConsumerRecord, OffsetAndTimestamp, TopicPartition

log = logging.getLogger(__name__)

RESETS = ("earliest", "latest", "none")
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}  # Kafka's isolation.level
_RESET_TS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}


def as_tp(tp: Any) -> TopicPartition:
    if isinstance(tp, TopicPartition):
        return tp
    if isinstance(tp, (tuple, list)) and len(tp) == 2 and isinstance(tp[0], str) and isinstance(tp[1], int):
        return TopicPartition(tp[0], tp[1])
    raise TypeError(f"expected a TopicPartition, got {tp!r}")


@dataclass
class _PartitionState:
    position: int | None = None
    reset: str | None = None  # pending reset strategy when position is None
    high_watermark: int = -1
    log_end_offset: int = -1
    buffer: deque = field(default_factory=deque)  # ConsumerBatch, fetched and not yet handed out
    backoff_until: float = 0.0
    in_flight: bool = False
    # KIP-320: the leader epoch of the last consumed record, and the partition leader
    # epoch the position was last checked against (a newer one means a leader change:
    # the position is validated with OffsetsForLeaderEpoch before fetching on).
    epoch: int = -1
    checked_epoch: int = -1
    use_committed: bool = False  # start from the group's committed offset, if any
    paused: bool = False


class AIOConsumer:
    """Reads records of assigned partitions from their leaders (asyncio)."""

    def __init__(
        self,
        bootstrap_servers: Any,
        *,
        group_id: str | None = None,
        client_id: str | None = None,
        auto_offset_reset: str = "latest",
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52428800,
        max_partition_fetch_bytes: int = 1048576,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        check_crcs: bool = True,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        session_timeout_ms: int = 10000,
        heartbeat_interval_ms: int = 3000,
        max_poll_interval_ms: int = 300000,
        partition_assignment_strategy: Iterable[str] = ("range",),
        group_instance_id: str | None = None,
        isolation_level: str = "read_uncommitted",
        transport: Transport | None = None,
        clock: Clock = SYSTEM_CLOCK,
        **security: Any,
    ) -> None:
        if isolation_level not in ISOLATION_LEVELS:
            raise errors.ClientError(f"isolation_level must be one of {', '.join(ISOLATION_LEVELS)}, "
                                     f"got {isolation_level!r}")
        if auto_offset_reset not in RESETS:
            raise errors.ClientError(f"auto_offset_reset must be one of {', '.join(RESETS)}, got {auto_offset_reset!r}")
        if group_id is not None and (not isinstance(group_id, str) or not group_id):
            raise errors.ClientError(f"group_id must be a non-empty string or None, got {group_id!r}")
        self.group_id = group_id
        self.client_id = client_id
        self.auto_offset_reset = auto_offset_reset
        self.fetch_max_wait_ms = int(fetch_max_wait_ms)
        self.fetch_min_bytes = int(fetch_min_bytes)
        self.fetch_max_bytes = int(fetch_max_bytes)
        self.max_partition_fetch_bytes = int(max_partition_fetch_bytes)
        self.request_timeout_ms = int(request_timeout_ms)
        self.retry_backoff_ms = int(retry_backoff_ms)
        self.check_crcs = check_crcs
        # Kafka's isolation.level: read_committed reads below the last stable offset and
        # drops the records of aborted transactions
        self.isolation_level = isolation_level
        self._isolation = ISOLATION_LEVELS[isolation_level]
        self.clock = clock
        self._conn: Transport = transport or Connection(client_id, ClientSecurity.of(security))
        self._meta = Metadata(self._conn, bootstrap_servers, self.request_timeout_ms, clock)
        self._state: dict[TopicPartition, _PartitionState] = {}
        # leader id -> task returning (sent {tp: fetch_offset}, answer or exception)
        self._fetches: dict[int, asyncio.Task] = {}
        self._need_meta = False
        self._last_meta_try = 0.0
        self._started = False
        self._closed = False
        self._polling = False
        self._woken = False
        self._wake: asyncio.Future | None = None  # set while a poll waits for fetches
        self.enable_auto_commit = bool(enable_auto_commit) and group_id is not None
        self.auto_commit_interval_ms = int(auto_commit_interval_ms)
        self._last_commit = self.clock.monotonic()
        self._subscribed: list[str] | None = None
        self._listener: Any = None
        self._group: GroupMember | None = None
        if group_id is not None:
            self._group = GroupMember(
                self._meta, group_id, client_id or "minikafka-consumer", session_timeout_ms=int(session_timeout_ms),
                heartbeat_interval_ms=int(heartbeat_interval_ms), max_poll_interval_ms=int(max_poll_interval_ms),
                strategies=[partition_assignment_strategy] if isinstance(partition_assignment_strategy, str)
                else list(partition_assignment_strategy),
                group_instance_id=group_instance_id, request_timeout_ms=self.request_timeout_ms,
                retry_backoff_ms=self.retry_backoff_ms)

    # ----- lifecycle ----------------------------------------------------
    async def start(self) -> None:
        """Fetch metadata from a bootstrap server."""
        if self._started:
            return
        try:
            await self._meta.refresh()
        except BaseException:
            await self._conn.close()
            raise
        self._started = True

    async def __aenter__(self) -> "AIOConsumer":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop fetching; a group member commits (with auto commit) and leaves its group."""
        if self._closed:
            return
        if self._group is not None and self._started:
            if self.enable_auto_commit and self._group.active():
                await self._commit_quietly()
            await self._group.close(leave=self._subscribed is not None)
        self._closed = True
        for t in self._fetches.values():
            t.cancel()
        await asyncio.gather(*self._fetches.values(), return_exceptions=True)
        self._fetches.clear()
        await self._conn.close()

    # ----- assignment and positions ---------------------------------------
    def assign(self, partitions: Iterable[Any]) -> None:
        """Replace the assignment (positions of partitions kept stay as they are)."""
        if self._subscribed is not None:
            raise errors.ClientError("this consumer is subscribed to topics; unsubscribe() before assign()")
        self._set_assignment([as_tp(tp) for tp in partitions])

    def _set_assignment(self, tps: list[TopicPartition]) -> None:
        new: dict[TopicPartition, _PartitionState] = {}
        for tp in tps:
            new[tp] = self._state.get(tp) or _PartitionState(reset=self.auto_offset_reset,
                                                             use_committed=self._group is not None)
        self._state = new

    # ----- groups -----------------------------------------------------------
    def subscribe(self, topics: Iterable[str], listener: Any = None) -> None:
        """Join the group (``group_id``) and consume ``topics``: the partitions come from
        the group leader's assignment at the next :meth:`poll`.

        ``listener`` may have ``on_partitions_revoked(partitions)`` (called before a
        rebalance, after the auto commit) and ``on_partitions_assigned(partitions)``
        (called after it); plain functions or coroutines."""
        if self._group is None:
            raise errors.ClientError("subscribe() needs a group_id: consumers without one use assign()")
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise errors.ClientError(f"subscribe() needs a list of topic names, got {topics!r}")
        if self._subscribed is None and self._state:
            raise errors.ClientError("this consumer has manually assigned partitions; assign([]) before subscribe()")
        self._subscribed = sorted(set(names))
        self._listener = listener
        self._group.subscribe(self._subscribed)

    def subscription(self) -> set[str]:
        """The topics this consumer is subscribed to (empty when it is not)."""
        return set(self._subscribed or ())

    async def unsubscribe(self) -> None:
        """Leave the group and drop the assignment."""
        if self._group is not None and self._subscribed is not None:
            if self.enable_auto_commit and self._group.active():
                await self._commit_quietly()
            await self._group.leave()
        self._subscribed = None
        self._state = {}

    async def _revoke(self, old: list[TopicPartition]) -> None:
        if old and self.enable_auto_commit and self._group is not None and self._group.generation >= 0:
            await self._commit_quietly()
        await self._notify("on_partitions_revoked", old)

    async def _notify(self, name: str, tps: list[TopicPartition]) -> None:
        fn = getattr(self._listener, name, None)
        if fn is None:
            return
        got = fn(set(tps))
        if asyncio.iscoroutine(got):
            await got

    async def _maybe_rejoin(self, timeout_s: float) -> None:
        if self._group is None or self._subscribed is None:
            return
        new = await self._group.ensure_active(self._revoke, timeout_s)
        if new is not None:
            self._state = {}
            self._set_assignment(new)
            await self._notify("on_partitions_assigned", new)

    def _positions_to_commit(self) -> dict[TopicPartition, tuple[int, int, str]]:
        return {tp: (st.position, st.epoch, "") for tp, st in self._state.items() if st.position is not None}

    async def _commit_quietly(self) -> None:
        try:
            await self.commit()
        except errors.KafkaError as exc:
            log.warning("group %s: commit failed: %s", self.group_id, exc)

    async def commit(self, offsets: dict[Any, Any] | None = None) -> None:
        """Commit offsets to the group: ``offsets`` maps a partition to the offset of the
        next record to read (an int, or an :class:`OffsetAndMetadata`-like ``(offset,
        metadata)``); by default every assigned partition's position.  A member of a
        group that rebalanced meanwhile gets REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION
        (its partitions may be someone else's now) and rejoins at the next poll."""
        if self._group is None:
            raise errors.ClientError("commit() needs a group_id")
        if offsets is None:
            todo = self._positions_to_commit()
        else:
            todo = {}
            for tp, v in offsets.items():
                off, meta = (v, "") if isinstance(v, int) else (v[0], v[1] if len(v) > 1 else "")
                if not isinstance(off, int) or off < 0:
                    raise errors.ClientError(f"commit offsets must be ints >= 0, got {v!r} for {tp}")
                st = self._state.get(as_tp(tp))
                todo[as_tp(tp)] = (off, st.epoch if st is not None and st.position == off else -1, meta or "")
        await self._group.commit(todo)
        self._last_commit = self.clock.monotonic()

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group id, generation and member id (for a transactional producer's
        ``send_offsets_to_transaction``)."""
        if self.group_id is None or self._group is None:
            raise errors.ClientError("group_metadata needs a consumer with a group_id")
        g = self._group
        return ConsumerGroupMetadata(self.group_id, g.generation, g.member_id, g.group_instance_id)

    async def committed(self, tp: Any) -> int | None:
        """The group's committed offset of ``tp`` (None when nothing is committed)."""
        if self._group is None:
            raise errors.ClientError("committed() needs a group_id")
        got = await self._group.committed([as_tp(tp)], require_stable=self._isolation == 1)
        v = got.get(as_tp(tp))
        return None if v is None else v[0]

    def pause(self, *tps: Any) -> None:
        """Stop returning and fetching records of ``tps`` until :meth:`resume`."""
        for tp in tps:
            self._st(tp).paused = True

    def resume(self, *tps: Any) -> None:
        for tp in tps:
            self._st(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, st in self._state.items() if st.paused}

    def __aiter__(self) -> "AIOConsumer":
        return self

    async def __anext__(self) -> ConsumerRecord:
        """``async for record in consumer``: records one by one, forever (until close)."""
        while True:
            if self._closed:
                raise StopAsyncIteration
            got = await self.poll(timeout_ms=1000, max_records=1)
            if got:
                return got[0]

    def assignment(self) -> set[TopicPartition]:
        return set(self._state)

    def _st(self, tp: Any) -> _PartitionState:
        tp = as_tp(tp)
        st = self._state.get(tp)
        if st is None:
            raise errors.ClientError(f"partition {tp} is not assigned to this consumer")
        return st

    def seek(self, tp: Any, offset: int) -> None:
        """Make ``offset`` the next record :meth:`poll` returns for ``tp``."""
        if not isinstance(offset, int) or offset < 0:
            raise errors.ClientError(f"offset must be an int >= 0, got {offset!r}")
        st = self._st(tp)
        st.position, st.reset = offset, None
        st.buffer.clear()

    def seek_to_beginning(self, *tps: Any) -> None:
        """Move to the log start offset of ``tps`` (every assigned partition if none given)."""
        self._reset(tps, "earliest")

    def seek_to_end(self, *tps: Any) -> None:
        """Move to the high watermark of ``tps`` (every assigned partition if none given)."""
        self._reset(tps, "latest")

    def _reset(self, tps: tuple, how: str) -> None:
        targets = [as_tp(tp) for tp in tps] if tps else list(self._state)
        for tp in targets:
            st = self._st(tp)
            st.position, st.reset, st.use_committed = None, how, False
            st.buffer.clear()

    async def position(self, tp: Any) -> int:
        """The offset of the next record to return for ``tp`` (resolved now if unknown)."""
        st = self._st(tp)
        deadline = self.clock.monotonic() + self.request_timeout_ms / 1000
        while st.position is None:
            await self._resolve_positions(raise_errors=self.clock.monotonic() >= deadline)
            if st.position is None:
                if self.clock.monotonic() >= deadline:
                    raise errors.RequestTimedOutError(f"the position of {as_tp(tp)} could not be resolved within {self.request_timeout_ms} ms")
                await asyncio.sleep(self.retry_backoff_ms / 1000)
        return st.position

    def highwater(self, tp: Any) -> int | None:
        """The high watermark in the last fetch answer for ``tp`` (None before one arrived)."""
        hw = self._st(tp).high_watermark
        return None if hw < 0 else hw

    async def partitions_for_topic(self, topic: str) -> set[int]:
        """The partition numbers of ``topic`` (UNKNOWN_TOPIC_OR_PARTITION if it does not exist,
        TOPIC_AUTHORIZATION_FAILED if an ACL hides it)."""
        self._check_open()
        if self._meta.topic(topic) is None:
            await self._meta.refresh()
        info = self._meta.topic(topic)
        if info is None:
            fatal = await self._meta.ask_for_topics([topic], auto_create=False)
            if topic in fatal:
                raise fatal[topic]
            raise errors.UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        return set(info.partition_ids)

    async def topics(self) -> set[str]:
        """Every topic name in fresh metadata."""
        self._check_open()
        await self._meta.refresh()
        return {name for name, t in self._meta.topics.items() if not t.error_code}

    async def beginning_offsets(self, tps: Iterable[Any]) -> dict[TopicPartition, int]:
        """Log start offsets of ``tps`` (asked from their leaders)."""
        return await self._list_offsets([as_tp(tp) for tp in tps], EARLIEST_TIMESTAMP)

    async def end_offsets(self, tps: Iterable[Any]) -> dict[TopicPartition, int]:
        """High watermarks of ``tps`` (the offset the next committed record will get)."""
        return await self._list_offsets([as_tp(tp) for tp in tps], LATEST_TIMESTAMP)

    async def offsets_for_times(self, timestamps: dict[Any, int]) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the first committed offset whose record timestamp is at least
        the given one (ms), with that timestamp; None where no committed record is that late."""
        by_time: dict[int, list[TopicPartition]] = {}
        for tp, ts in timestamps.items():
            if int(ts) < 0:
                raise errors.ClientError(f"timestamps must be >= 0, got {ts} for {tp}")
            by_time.setdefault(int(ts), []).append(as_tp(tp))
        out: dict[TopicPartition, OffsetAndTimestamp | None] = {}
        for ts, tps in by_time.items():
            found: dict[TopicPartition, int] = {}
            offsets = await self._list_offsets(tps, ts, timestamps_out=found)
            for tp, off in offsets.items():
                out[tp] = OffsetAndTimestamp(off, found.get(tp, -1)) if off >= 0 else None
        return out

    # ----- poll ---------------------------------------------------------
    async def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records after the current positions, at most ``max_records``, ordered per partition.

        Waits up to ``timeout_ms`` for records to arrive; returns an empty list if none did.
        """
        return await self._poll(timeout_ms, lambda: self._drain(max_records))

    async def poll_batches(self, timeout_ms: int = 0, max_batches: int | None = None) -> list[ConsumerBatch]:
        """Whole record batches after the current positions, at most ``max_batches``,
        ordered per partition, decoded only when asked (:class:`ConsumerBatch`: ``raw``,
        ``records()``, ``values()``, ``to_arrow()``).  The positions move past every batch
        returned, as ``poll()`` moves them past every record.  Transaction markers are
        stepped over.  The fastest way to read: no object per record is made here."""
        return await self._poll(timeout_ms, lambda: self._drain_batches(max_batches))

    def wakeup(self) -> None:
        """Cut the poll in progress short (or, when none is, the next one): it raises
        :class:`~minikafka.errors.WakeupError` and hands out nothing (Kafka's
        ``KafkaConsumer.wakeup``).  Call it on the consumer's loop."""
        self._woken = True
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _interrupt_poll(self) -> None:
        """:meth:`wakeup` for the poll in progress only (nothing when no poll runs)."""
        if self._polling:
            self.wakeup()

    def _check_wakeup(self) -> None:
        if self._woken:
            self._woken = False
            raise errors.WakeupError("the consumer was woken up during poll")

    async def _poll(self, timeout_ms: int, drain: Callable[[], list]) -> list:
        self._check_open()
        self._check_wakeup()
        self._polling = True
        try:
            return await self._poll_until(timeout_ms, drain)
        finally:
            self._polling = False

    async def _poll_until(self, timeout_ms: int, drain: Callable[[], list]) -> list:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, timeout_ms) / 1000
        await self._maybe_rejoin(max(0.0, deadline - loop.time()))
        if self.enable_auto_commit and self.clock.monotonic() - self._last_commit >= self.auto_commit_interval_ms / 1000:
            if self._group is not None and (self._subscribed is None or self._group.active()):
                await self._commit_quietly()
            self._last_commit = self.clock.monotonic()
        while True:
            if self._group is not None and self._subscribed is not None and not self._group.active():
                return []  # a rebalance is due: the next poll rejoins
            if self._need_meta:
                await self._refresh_meta()
            if any(st.position is None for st in self._state.values()):
                await self._resolve_positions()
            if self._needs_validation():
                await self._validate_positions()
            out = drain()
            if out:
                return out
            self._start_fetches()
            remaining = deadline - loop.time()
            if remaining <= 0:
                self._collect()
                return drain()
            self._check_wakeup()
            wake = self._wake = loop.create_future()
            try:
                if self._fetches:
                    await asyncio.wait([*self._fetches.values(), wake], timeout=remaining,
                                       return_when=asyncio.FIRST_COMPLETED)
                    self._collect()
                else:
                    await asyncio.wait([wake], timeout=min(remaining, max(self.retry_backoff_ms, 1) / 1000))
            finally:
                self._wake = None
            self._check_wakeup()

    def _drain(self, max_records: int | None) -> list[ConsumerRecord]:
        """Decode buffered batches into records, at most ``max_records``."""
        out: list[ConsumerRecord] = []
        for st in self._state.values():
            if st.paused:
                continue
            buf = st.buffer
            while buf:
                batch = buf[0]
                recs = batch.records()
                room = None if max_records is None else max_records - len(out)
                if room is not None and room < len(recs):
                    if room > 0:
                        out.extend(recs[:room])
                        st.position = recs[room - 1].offset + 1
                        st.epoch = batch.leader_epoch
                        batch._advance(st.position)
                    return out
                out.extend(recs)
                buf.popleft()
                st.position = max(st.position, batch.next_offset)
                if recs:
                    st.epoch = batch.leader_epoch
            if max_records is not None and len(out) >= max_records:
                break
        return out

    def _drain_batches(self, max_batches: int | None) -> list[ConsumerBatch]:
        """Hand out buffered batches whole, at most ``max_batches``."""
        out: list[ConsumerBatch] = []
        for st in self._state.values():
            if st.paused:
                continue
            buf = st.buffer
            while buf and (max_batches is None or len(out) < max_batches):
                batch = buf.popleft()
                st.position = max(st.position, batch.next_offset)
                if not batch.hidden:
                    out.append(batch)
                    st.epoch = batch.leader_epoch
            if max_batches is not None and len(out) >= max_batches:
                break
        return out

    def _start_fetches(self) -> None:
        now = self.clock.monotonic()
        wanted: list[tuple[str, int]] = []
        for tp, st in self._state.items():
            if st.position is None or st.buffer or st.in_flight or st.backoff_until > now or st.paused:
                continue
            if self._validation_due(tp, st):
                continue  # a leader change since the last record: validate first (KIP-320)
            wanted.append((tp.topic, tp.partition))
        if not wanted:
            return
        groups, missing = group_by_leader(self._meta, wanted)
        if missing:
            self._need_meta = True
        loop = asyncio.get_running_loop()
        for leader, tps in groups.items():
            if leader in self._fetches:
                continue
            sent = {}
            parts = []
            for topic, partition in tps:
                tp = TopicPartition(topic, partition)
                st = self._state[tp]
                info = self._meta.partition(topic, partition)
                if info is not None:
                    st.checked_epoch = max(st.checked_epoch, info.leader_epoch)
                position = st.position
                assert position is not None  # only partitions with a position are wanted (above)
                sent[tp] = position
                st.in_flight = True
                parts.append(FetchPartition(topic=topic, partition=partition, fetch_offset=position,
                                            current_leader_epoch=info.leader_epoch if info else -1,
                                            partition_max_bytes=self.max_partition_fetch_bytes))
            host, port = self._meta.brokers[leader]
            req = FetchRequest(max_wait_ms=self.fetch_max_wait_ms, min_bytes=self.fetch_min_bytes,
                               max_bytes=self.fetch_max_bytes, isolation_level=self._isolation, partitions=parts)
            self._fetches[leader] = loop.create_task(self._fetch(host, port, req, sent))

    async def _fetch(self, host: str, port: int, req: FetchRequest, sent: dict) -> tuple[dict, Any]:
        timeout_s = (self.request_timeout_ms + self.fetch_max_wait_ms) / 1000
        try:
            return sent, await request(self._conn.call, host, port, req, timeout_s)
        except errors.KafkaError as exc:
            return sent, exc

    def _collect(self) -> None:
        """Take the answers of finished fetches into the partition buffers."""
        for leader, task in list(self._fetches.items()):
            if not task.done():
                continue
            del self._fetches[leader]
            sent, answer = task.result()
            for tp in sent:
                st = self._state.get(tp)
                if st is not None:
                    st.in_flight = False
            if isinstance(answer, Exception):
                self._need_meta = True
                until = self.clock.monotonic() + self.retry_backoff_ms / 1000
                for tp in sent:
                    st = self._state.get(tp)
                    if st is not None:
                        st.backoff_until = until
                continue
            self._handle_fetch(sent, answer)

    def _handle_fetch(self, sent: dict, answer: FetchResponse) -> None:
        now = self.clock.monotonic()
        for p in answer.partitions:
            tp = TopicPartition(p.topic, p.partition)
            st = self._state.get(tp)
            if st is None or tp not in sent or st.position is None or st.position != sent[tp]:
                continue  # unassigned or sought since the request was sent
            exc = p.error
            if exc is None:
                st.high_watermark = p.high_watermark
                st.log_end_offset = p.log_end_offset
                data = p.records
                if data:
                    position = st.position
                    append = st.buffer.append
                    topic, partition = tp.topic, tp.partition
                    aborted = AbortedFilter(p.aborted_transactions)
                    for h, raw in split_batches(data, validate=self.check_crcs):
                        skip = aborted.skips(h, raw)
                        if h.last_offset >= position:  # decoded when handed out
                            append(ConsumerBatch(topic, partition, h, raw, max(position, h.base_offset), skip))
                continue
            if isinstance(exc, errors.OffsetOutOfRangeError):
                if self.auto_offset_reset == "none":
                    raise errors.OffsetOutOfRangeError(f"{tp}: offset {st.position} is out of range ({exc.message})")
                st.position, st.reset = None, self.auto_offset_reset
            elif needs_refresh(exc) or exc.retriable:
                if needs_refresh(exc):
                    self._need_meta = True
                st.backoff_until = now + self.retry_backoff_ms / 1000
            else:
                raise exc

    # ----- KIP-320: detecting a truncated log after a leader change --------------------
    def _validation_due(self, tp: TopicPartition, st: _PartitionState) -> bool:
        if st.epoch < 0 or st.position is None:
            return False  # nothing consumed yet: nothing to validate
        info = self._meta.partition(tp.topic, tp.partition)
        return info is not None and info.leader_epoch > st.checked_epoch >= 0

    def _needs_validation(self) -> bool:
        return any(self._validation_due(tp, st) for tp, st in self._state.items() if not st.buffer)

    async def _validate_positions(self) -> None:
        """Ask each new leader where the epoch of the last consumed record ends
        (OffsetsForLeaderEpoch).  An end below the position means the records consumed
        from there on were truncated away (an unclean election): with
        ``auto_offset_reset="none"`` that raises :class:`LogTruncationError`, otherwise
        the position moves back to the divergent offset, as Kafka's consumer does."""
        due = {tp: st for tp, st in self._state.items() if not st.buffer and self._validation_due(tp, st)}
        groups, leaderless = group_by_leader(self._meta, [(tp.topic, tp.partition) for tp in due])
        if leaderless:  # validated once a leader is known: until then, metadata again (not a stall)
            self._need_meta = True
        truncated: dict[TopicPartition, int] = {}
        consumed: dict[TopicPartition, int] = {}  # the position each truncation was found below
        for leader, items in groups.items():
            host, port = self._meta.brokers[leader]
            parts = []
            for t, p in items:
                tp = TopicPartition(t, p)
                info = self._meta.partition(t, p)
                parts.append(OffsetForLeaderPartition(topic=t, partition=p, leader_epoch=due[tp].epoch,
                                                      current_leader_epoch=info.leader_epoch if info else -1))
            try:
                answer = await request(self._conn.call, host, port, OffsetsForLeaderEpochRequest(partitions=parts),
                                       self.request_timeout_ms / 1000)
            except errors.KafkaError:
                self._need_meta = True
                continue
            for r in answer.partitions:
                tp = TopicPartition(r.topic, r.partition)
                st = due.get(tp)
                if st is None or r.error is not None:
                    self._need_meta = True
                    continue
                info = self._meta.partition(tp.topic, tp.partition)
                position = st.position
                if position is not None and 0 <= r.end_offset < position:
                    truncated[tp], consumed[tp] = r.end_offset, position
                elif position is not None and r.end_offset < 0:
                    truncated[tp], consumed[tp] = -1, position  # the leader knows no epoch that old: reset by policy
                if info is not None:
                    st.checked_epoch = info.leader_epoch
        # A partition sought, reset or unassigned while a later leader answered is left as it
        # now is: what was found applies to the position it was found below (as Kafka's
        # consumer drops a validation whose position changed meanwhile).
        truncated = {tp: off for tp, off in truncated.items()
                     if self._state.get(tp) is due[tp] and due[tp].position == consumed[tp]}
        if not truncated:
            return
        if self.auto_offset_reset == "none":
            raise errors.LogTruncationError(
                "truncation detected: records consumed were truncated from the log after a leader change ("
                + ", ".join(f"{tp.topic}-{tp.partition} from offset {off}" for tp, off in sorted(truncated.items()))
                + ")", truncated)
        for tp, off in truncated.items():
            st = self._state[tp]
            if off >= 0:
                log.warning("truncation detected for %s-%d: consumed up to %d, the leader's log diverges at %d; "
                            "resetting the position to %d", tp.topic, tp.partition, consumed[tp] - 1, off, off)
                st.position, st.epoch = off, -1
            else:
                st.position, st.reset, st.epoch = None, self.auto_offset_reset, -1

    # ----- offsets --------------------------------------------------------
    async def _resolve_positions(self, raise_errors: bool = False) -> None:
        from_group = [tp for tp, st in self._state.items() if st.position is None and st.use_committed]
        if from_group and self._group is not None:
            try:
                committed = await self._group.committed(from_group, require_stable=self._isolation == 1)
            except errors.KafkaError:
                if raise_errors:
                    raise
                return
            for tp in from_group:
                st = self._state.get(tp)
                if st is None or st.position is not None:
                    continue
                st.use_committed = False
                got = committed.get(tp)
                if got is not None:
                    st.position, st.reset, st.epoch = got[0], None, got[1]
                    st.buffer.clear()
        pending: dict[str, list[TopicPartition]] = {}
        for tp, st in self._state.items():
            if st.position is None:
                how = st.reset or self.auto_offset_reset
                if how == "none":
                    raise errors.OffsetOutOfRangeError(f"{tp}: no position and auto_offset_reset is 'none'")
                pending.setdefault(how, []).append(tp)
        for how, tps in pending.items():
            try:
                offsets = await self._list_offsets(tps, _RESET_TS[how], partial=True)
            except errors.KafkaError:
                if raise_errors:
                    raise
                self._need_meta = True
                continue
            for tp, off in offsets.items():
                st = self._state.get(tp)
                if st is not None and st.position is None and st.reset in (how, None):
                    st.position, st.reset = off, None
                    st.buffer.clear()

    async def _list_offsets(self, tps: list[TopicPartition], timestamp: int, partial: bool = False,
                            timestamps_out: dict[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
        """Offsets from each partition's leader; with ``partial`` failures are left out.

        Retriable errors (no leader yet, a leader that moved, stale metadata) are retried
        with ``retry_backoff_ms`` until ``request_timeout_ms``, as Kafka's consumer does."""
        deadline = self.clock.monotonic() + self.request_timeout_ms / 1000
        while True:
            try:
                return await self._list_offsets_once(tps, timestamp, partial, timestamps_out)
            except errors.KafkaError as exc:
                if partial or not exc.retriable or self.clock.monotonic() >= deadline:
                    raise
                self._need_meta = True
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                await self._refresh_meta(force=True)

    async def _list_offsets_once(self, tps: list[TopicPartition], timestamp: int, partial: bool,
                                 timestamps_out: dict[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
        self._check_open()
        if not tps:
            return {}
        keys = [(tp.topic, tp.partition) for tp in tps]
        groups, missing = group_by_leader(self._meta, keys)
        if missing:
            await self._refresh_meta(force=True)
            groups, missing = group_by_leader(self._meta, keys)
            if missing and not partial:
                t, p = missing[0]
                if self._meta.topic(t) is None:
                    raise errors.UnknownTopicOrPartitionError(f"topic {t!r} does not exist")
                raise errors.LeaderNotAvailableError(f"{t}-{p} has no leader")

        async def ask(leader: int, items: list[tuple[str, int]]) -> ListOffsetsResponse:
            host, port = self._meta.brokers[leader]
            req = ListOffsetsRequest(isolation_level=self._isolation, partitions=[
                ListOffsetsPartition(topic=t, partition=p, timestamp=timestamp, current_leader_epoch=(
                    info.leader_epoch if (info := self._meta.partition(t, p)) else -1))
                for t, p in items])
            return await request(self._conn.call, host, port, req, self.request_timeout_ms / 1000)

        leaders = list(groups)
        answers = await asyncio.gather(*(ask(leader, groups[leader]) for leader in leaders), return_exceptions=True)
        out: dict[TopicPartition, int] = {}
        first_error: BaseException | None = None
        for answer in answers:
            if isinstance(answer, BaseException):
                if not isinstance(answer, errors.KafkaError):
                    raise answer
                self._need_meta = True
                first_error = first_error or answer
                continue
            for p in answer.partitions:
                exc = p.error
                if exc is not None:
                    if needs_refresh(exc):
                        self._need_meta = True
                    if not exc.retriable and partial:
                        raise exc
                    first_error = first_error or exc
                    continue
                out[TopicPartition(p.topic, p.partition)] = p.offset
                if timestamps_out is not None:
                    timestamps_out[TopicPartition(p.topic, p.partition)] = p.timestamp
        if not partial and len(out) < len(tps):
            raise first_error or errors.UnknownServerError("list_offsets answers are missing partitions")
        return out

    async def _refresh_meta(self, force: bool = False) -> None:
        now = self.clock.monotonic()
        if not force and now - self._last_meta_try < self.retry_backoff_ms / 1000:
            return
        self._last_meta_try = now
        fatal: dict[str, errors.KafkaError] = {}
        try:
            await self._meta.refresh()
            self._need_meta = False
            missing = sorted({tp.topic for tp in self._state} - set(self._meta.topics))
            if missing:  # a listing leaves out what we may not see: ask by name to learn why
                fatal = await self._meta.ask_for_topics(missing, auto_create=False)
        except errors.KafkaError:
            self._need_meta = True
        if fatal:  # e.g. TOPIC_AUTHORIZATION_FAILED: waiting will not help
            raise next(iter(fatal.values()))

    def _check_open(self) -> None:
        if self._closed:
            raise errors.ClientError("the consumer is closed")
        if not self._started:
            raise errors.ClientError("the consumer is not started")

    @property
    def metadata(self) -> Metadata:
        return self._meta
