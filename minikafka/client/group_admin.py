"""Consumer-group administration for :class:`~minikafka.client.admin.AIOAdmin`: list,
describe and delete groups, read and reset their committed offsets (what Kafka's
kafka-consumer-groups tool does)."""
from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from .. import errors
from ..protocol.rpc.types import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
)
from ..rpc import request
from .metadata import Metadata
from .ports import Transport
from .types import GroupDescription, MemberDescription, TopicPartition

R = TypeVar("R")


class GroupAdminMixin:
    """Group operations; each one asks the group's coordinator."""

    _conn: Transport
    _meta: Metadata
    request_timeout_ms: int

    def _check_open(self) -> None:  # provided by AIOAdmin
        raise NotImplementedError

    async def _coordinator_request(self, group_id: str, req: Request[R]) -> tuple[int, R]:
        """Find ``group_id``'s coordinator and send it ``req`` (retried while the
        coordinator is being created, loaded or moved): its node id and typed answer."""
        self._check_open()
        if not isinstance(group_id, str) or not group_id:
            raise errors.InvalidGroupIdError(f"group id must be a non-empty string, got {group_id!r}")
        loop = asyncio.get_running_loop()
        timeout_s = self.request_timeout_ms / 1000
        deadline = loop.time() + timeout_s
        while True:
            try:
                found = await self._meta.request_any(FindCoordinatorRequest(key=group_id), timeout_s)
                return found.node_id, await request(self._conn.call, found.host, found.port, req, timeout_s)
            except (errors.NotCoordinatorError, errors.CoordinatorNotAvailableError,
                    errors.CoordinatorLoadInProgressError):
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def list_groups(self) -> list[tuple[str, str, str]]:
        """``(group_id, state, protocol_type)`` of every group, from every live broker."""
        self._check_open()
        await self._meta.refresh()
        answers = await asyncio.gather(*(request(self._conn.call, h, p, ListGroupsRequest(), self.request_timeout_ms / 1000)
                                         for h, p in self._meta.brokers.values()), return_exceptions=True)
        out: dict[str, tuple[str, str, str]] = {}
        for a in answers:
            if isinstance(a, BaseException):
                continue
            for g in a.groups:
                out[g.group_id] = (g.group_id, g.state, g.protocol_type)
        return [out[k] for k in sorted(out)]

    async def describe_group(self, group_id: str) -> GroupDescription:
        """State, generation, assignor, group leader and members of ``group_id``
        (state Dead when the group does not exist)."""
        from ..groups.consumer_protocol import decode_assignment

        node, got = await self._coordinator_request(group_id, DescribeGroupsRequest(groups=[group_id]))
        g = got.groups[0]
        if g.error is not None:
            raise g.error
        members = []
        for m in g.members:
            try:
                tps = [TopicPartition(t, p) for t, p in decode_assignment(m.assignment).partitions]
            except (errors.KafkaError, ValueError):
                tps = []  # not a consumer-protocol assignment
            members.append(MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host, tps))
        return GroupDescription(group_id, g.state, g.generation, g.protocol_type, g.protocol, g.leader, node, members)

    async def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """Every committed offset of ``group_id``."""
        _, got = await self._coordinator_request(group_id, OffsetFetchRequest(group_id=group_id, partitions=None))
        return {TopicPartition(p.topic, p.partition): p.offset for p in got.partitions if p.offset >= 0}

    async def alter_group_offsets(self, group_id: str, offsets: dict[Any, int]) -> None:
        """Set committed offsets of a group that has no active members (Kafka's
        ``kafka-consumer-groups --reset-offsets --execute``); refused while members are
        in the group."""
        from .consumer import as_tp

        entries = []
        for tp, off in offsets.items():
            if not isinstance(off, int) or off < 0:
                raise errors.ClientError(f"offsets must be ints >= 0, got {off!r} for {tp}")
            t = as_tp(tp)
            entries.append(OffsetCommitPartition(topic=t.topic, partition=t.partition, offset=off))
        try:
            _, got = await self._coordinator_request(group_id, OffsetCommitRequest(
                group_id=group_id, generation_id=-1, offsets=entries))
        except errors.UnknownMemberIdError:
            raise errors.NonEmptyGroupError(f"group {group_id!r} has active members: stop them before resetting "
                                            "its offsets") from None
        for p in got.partitions:
            if p.error is not None:
                raise type(p.error)(f"{p.topic}-{p.partition}: {p.error.message}")

    async def delete_group(self, group_id: str) -> None:
        """Delete an empty group and its committed offsets (NON_EMPTY_GROUP while members
        remain, GROUP_ID_NOT_FOUND if it does not exist)."""
        _, got = await self._coordinator_request(group_id, DeleteGroupsRequest(groups=[group_id]))
        g = got.groups[0]
        if g.error is not None:
            raise g.error
