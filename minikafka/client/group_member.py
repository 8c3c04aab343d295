"""A consumer's side of the group protocol: find the coordinator, join, sync,
heartbeat, leave, commit and fetch committed offsets.

The consumer (:class:`~minikafka.client.consumer.AIOConsumer`) calls
:meth:`GroupMember.ensure_active` from ``poll``; it (re)joins when needed and returns
the new assignment.  A heartbeat task, owned by this object, keeps the member alive
within ``session_timeout_ms`` and flags a rejoin when the coordinator answers
REBALANCE_IN_PROGRESS; if ``poll`` is not called for ``max_poll_interval_ms`` the
member leaves the group, as Kafka's consumer does, and joins again at the next poll.

When this member is elected **group leader** (the coordinator's JoinGroup answer
lists every member), it runs the agreed assignor over the members' subscriptions
and sends the result in its SyncGroup.  Subscriptions and assignments use Kafka's
consumer protocol bytes, so Kafka's own clients could share the group.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, TypeVar

from .. import errors
from ..groups.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ..protocol.rpc.types import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupMember,
    JoinGroupProtocol,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeavingMember,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
    SyncGroupAssignment,
    SyncGroupRequest,
)
from ..protocol.rpc.types import TopicPartition as RpcTopicPartition
from ..rpc import request
from .assignors import assignor
from .metadata import Metadata
from .types import TopicPartition

R = TypeVar("R")

log = logging.getLogger(__name__)

# Errors after which the coordinator must be looked up again.
_MOVED = (errors.NotCoordinatorError, errors.CoordinatorNotAvailableError, errors.CoordinatorLoadInProgressError,
          errors.NetworkExceptionError, errors.RequestTimedOutError)


class GroupMember:
    """Membership of one consumer in group ``group_id``."""

    def __init__(self, meta: Metadata, group_id: str, client_id: str, *, session_timeout_ms: int,
                 heartbeat_interval_ms: int, max_poll_interval_ms: int, strategies: list[str],
                 group_instance_id: str | None, request_timeout_ms: int, retry_backoff_ms: int) -> None:
        for name in strategies:
            try:
                assignor(name)  # unknown names fail here, before any request
            except ValueError as exc:
                raise errors.ClientError(str(exc)) from None
        if not strategies:
            raise errors.ClientError("partition_assignment_strategy needs at least one assignor")
        if heartbeat_interval_ms >= session_timeout_ms:
            raise errors.ClientError("heartbeat_interval_ms must be smaller than session_timeout_ms")
        self.meta = meta
        self.group_id = group_id
        self.client_id = client_id
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.strategies = list(strategies)
        self.group_instance_id = group_instance_id
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.protocol: str | None = None
        self.topics: list[str] = []
        self.assignment: list[TopicPartition] = []
        self.need_rejoin = False
        self.last_poll = self.meta.clock.monotonic()
        self._coordinator: tuple[int, str, int] | None = None
        self._heartbeat: asyncio.Task | None = None
        self._join_task: asyncio.Task | None = None
        self._joining = False

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader

    # -- coordinator -------------------------------------------------------------
    async def coordinator(self) -> tuple[int, str, int]:
        """(node id, host, port) of the group's coordinator, looked up until one answers."""
        deadline = self.meta.clock.monotonic() + self.request_timeout_ms / 1000
        while self._coordinator is None:
            try:
                got = await self.meta.request_any(FindCoordinatorRequest(key=self.group_id),
                                                  self.request_timeout_ms / 1000)
                self._coordinator = (got.node_id, got.host, got.port)
            except errors.KafkaError as exc:
                if not exc.retriable or self.meta.clock.monotonic() > deadline:
                    raise
                await asyncio.sleep(self.retry_backoff_ms / 1000)
        return self._coordinator

    async def request(self, req: Request[R], timeout_s: float | None = None) -> R:
        """Send ``req`` to the coordinator; a coordinator that moved is looked up again and
        the request retried until ``request_timeout_ms`` runs out."""
        deadline = self.meta.clock.monotonic() + self.request_timeout_ms / 1000
        while True:
            node = await self.coordinator()
            try:
                return await request(self.meta.conn.call, node[1], node[2], req,
                                     timeout_s or self.request_timeout_ms / 1000)
            except _MOVED as exc:
                self._coordinator = None
                if self.meta.clock.monotonic() > deadline:
                    raise
                log.debug("group %s: %s from coordinator %s; looking it up again", self.group_id, exc, node[0])
                await asyncio.sleep(self.retry_backoff_ms / 1000)

    # -- membership ----------------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        if sorted(topics) != sorted(self.topics):
            self.topics = sorted(set(topics))
            self.need_rejoin = True

    def active(self) -> bool:
        return self.generation >= 0 and not self.need_rejoin

    async def ensure_active(self, revoke: Callable[[list[TopicPartition]], Any],
                            timeout_s: float | None = None) -> list[TopicPartition] | None:
        """Join and sync if needed; returns the new assignment, or None when nothing
        changed or the rebalance has not finished within ``timeout_s`` (it goes on in the
        background, and a later call picks up its result, like Kafka's ``poll``).
        ``revoke(old assignment)`` runs before the join (commit there)."""
        self.last_poll = self.meta.clock.monotonic()
        if self.active() and self._join_task is None:
            return None
        if self._join_task is None:
            self._join_task = asyncio.get_running_loop().create_task(self._rejoin(revoke))
        done, _ = await asyncio.wait({self._join_task}, timeout=timeout_s)
        if not done:
            return None
        task, self._join_task = self._join_task, None
        return task.result()

    async def _rejoin(self, revoke: Callable[[list[TopicPartition]], Any]) -> list[TopicPartition]:
        await revoke(list(self.assignment))
        while True:
            try:
                self._joining = True
                await self._join_and_sync()
                break
            except errors.UnknownMemberIdError:
                self.member_id = ""
                self.generation = -1
            except (errors.RebalanceInProgressError, errors.IllegalGenerationError):
                pass
            except errors.KafkaError as exc:
                if not exc.retriable:
                    raise
            finally:
                self._joining = False
            await asyncio.sleep(self.retry_backoff_ms / 1000)
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeat_loop())
        return list(self.assignment)

    async def _join_and_sync(self) -> None:
        self.need_rejoin = False
        owned = [(tp.topic, tp.partition) for tp in self.assignment]
        meta = encode_subscription(Subscription(list(self.topics), owned_partitions=owned))
        rebalance_s = self.max_poll_interval_ms / 1000
        joined = await self.request(JoinGroupRequest(
            group_id=self.group_id, member_id=self.member_id, group_instance_id=self.group_instance_id,
            client_id=self.client_id, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.max_poll_interval_ms, protocol_type="consumer",
            protocols=[JoinGroupProtocol(name=n, metadata=meta) for n in self.strategies],
        ), timeout_s=rebalance_s + 5 + self.request_timeout_ms / 1000)
        self.member_id, self.generation = joined.member_id, joined.generation_id
        self.leader, self.protocol = joined.leader, joined.protocol_name
        assignments: list[SyncGroupAssignment] = []
        if self.is_leader:
            assignments = await self._assign(joined.members)
        synced = await self.request(SyncGroupRequest(
            group_id=self.group_id, member_id=self.member_id, group_instance_id=self.group_instance_id,
            generation_id=self.generation, assignments=assignments,
        ), timeout_s=rebalance_s + 5 + self.request_timeout_ms / 1000)
        got: Assignment = decode_assignment(synced.assignment)
        self.assignment = [TopicPartition(t, p) for t, p in got.partitions]
        log.info("group %s generation %d: member %s%s assigned %s", self.group_id, self.generation, self.member_id,
                 " (group leader)" if self.is_leader else "", self.assignment)

    async def _assign(self, members: list[JoinGroupMember]) -> list[SyncGroupAssignment]:
        """The group leader's job: run the chosen assignor over every member's subscription."""
        subs = {m.member_id: decode_subscription(m.metadata) for m in members}
        wanted = sorted({t for s in subs.values() for t in s.topics})
        await self.meta.refresh()
        counts = {}
        for t in wanted:
            info = self.meta.topic(t)
            if info is not None and not info.error_code:
                counts[t] = len(info.partition_ids)
        result = assignor(self.protocol or self.strategies[0]).assign(counts, subs)
        return [SyncGroupAssignment(member_id=mid, assignment=encode_assignment(Assignment(list(tps))))
                for mid, tps in result.items()]

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval_ms / 1000)
            if self.generation < 0 or self.need_rejoin or self._joining:
                continue
            if self.meta.clock.monotonic() - self.last_poll > self.max_poll_interval_ms / 1000:
                log.warning("group %s: poll() not called for max_poll_interval_ms=%d: leaving the group",
                            self.group_id, self.max_poll_interval_ms)
                await self.leave()
                continue
            generation = self.generation
            try:
                await request(self.meta.conn.call, *(await self.coordinator())[1:], HeartbeatRequest(
                    group_id=self.group_id, member_id=self.member_id, group_instance_id=self.group_instance_id,
                    generation_id=generation), self.request_timeout_ms / 1000)
            except (errors.RebalanceInProgressError, errors.IllegalGenerationError):
                if generation == self.generation and not self._joining:
                    self.need_rejoin = True
            except (errors.UnknownMemberIdError, errors.FencedInstanceIdError) as exc:
                if generation == self.generation and not self._joining:
                    log.warning("group %s: %s", self.group_id, exc)
                    self.member_id, self.generation, self.need_rejoin = "", -1, True
            except errors.KafkaError as exc:
                if isinstance(exc, _MOVED) or exc.retriable:
                    self._coordinator = None
                else:
                    log.warning("group %s: heartbeat failed: %s", self.group_id, exc)
            except asyncio.CancelledError:
                raise

    async def leave(self) -> None:
        """Leave the group now (the others rebalance without waiting for our session)."""
        if self.member_id and self.group_instance_id is None:
            try:
                await self.request(LeaveGroupRequest(group_id=self.group_id,
                                                     members=[LeavingMember(member_id=self.member_id)]), timeout_s=5)
            except errors.KafkaError as exc:
                log.info("group %s: LeaveGroup failed: %s", self.group_id, exc)
        self.member_id, self.generation, self.need_rejoin = "", -1, True

    async def close(self, leave: bool = True) -> None:
        for task in (self._join_task, self._heartbeat):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._join_task = None
        if leave:
            await self.leave()

    # -- offsets -------------------------------------------------------------------
    async def commit(self, offsets: dict[TopicPartition, tuple[int, int, str]]) -> None:
        """Commit ``tp -> (offset, leader_epoch, metadata)``; raises the first error."""
        if not offsets:
            return
        in_group = self.generation >= 0
        got = await self.request(OffsetCommitRequest(
            group_id=self.group_id, member_id=self.member_id if in_group else "",
            group_instance_id=self.group_instance_id if in_group else None,
            generation_id=self.generation if in_group else -1,
            offsets=[OffsetCommitPartition(topic=tp.topic, partition=tp.partition, offset=o, leader_epoch=e, metadata=m)
                     for tp, (o, e, m) in offsets.items()]))
        for p in got.partitions:
            if p.error is not None:
                err = p.error
                if isinstance(err, (errors.RebalanceInProgressError, errors.IllegalGenerationError, errors.UnknownMemberIdError)):
                    self.need_rejoin = True
                raise err

    async def committed(self, tps: list[TopicPartition],
                        require_stable: bool = False) -> dict[TopicPartition, tuple[int, int, str] | None]:
        """The committed offsets of ``tps``.  ``require_stable`` (read_committed consumers,
        KIP-447): while a transaction holds offsets of one of them the coordinator answers
        UNSTABLE_OFFSET_COMMIT, and the request is repeated until the transaction ends."""
        req = OffsetFetchRequest(group_id=self.group_id, require_stable=require_stable,
                                 partitions=[RpcTopicPartition(topic=tp.topic, partition=tp.partition) for tp in tps])
        deadline = self.meta.clock.monotonic() + self.request_timeout_ms / 1000
        while True:
            got = await self.request(req)
            unstable = [p for p in got.partitions if isinstance(p.error, errors.UnstableOffsetCommitError)]
            if not unstable:
                break
            if self.meta.clock.monotonic() > deadline:
                p = unstable[0]
                assert p.error is not None
                raise type(p.error)(f"{p.topic}-{p.partition}: {p.error.message}")
            await asyncio.sleep(self.retry_backoff_ms / 1000)
        out: dict[TopicPartition, tuple[int, int, str] | None] = {}
        for p in got.partitions:
            out[TopicPartition(p.topic, p.partition)] = (p.offset, p.leader_epoch, p.metadata) if p.offset >= 0 else None
        return out
