"""The consumer-group APIs, answered by the broker's :class:`~..coordinator.GroupCoordinator`
once the caller's access is checked here (Read, Describe or Delete on the group, Read or
Describe on the topics, Write on a transactional id), as Kafka's KafkaApis does."""
from __future__ import annotations

from ...auth.acls import CLUSTER_NAME
from ...errors import KafkaError, TransactionalIdAuthorizationFailedError, UnstableOffsetCommitError
from ...protocol.rpc.types import (
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeletePartition,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitPartitionResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from ...groups.group import Group
from ..coordinator import GroupCoordinator
from ..security import Security
from .access import merge, split
from .context import RequestContext
from .endpoints import Endpoints

Entry = tuple[str, int, int, int, "str | None"]  # a committed offset: topic, partition, offset, leader epoch, metadata


def _dead(group_id: str, error: KafkaError | None) -> DescribedGroup:
    return DescribedGroup(group_id=group_id, state="Dead", generation=-1, protocol_type="", protocol="", leader="",
                          members=[], error=error)


class GroupApis:
    """FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
    OffsetFetch, ListGroups, DescribeGroups, DeleteGroups, OffsetDelete and TxnOffsetCommit."""

    def __init__(self, coordinator: GroupCoordinator, endpoints: Endpoints, security: Security) -> None:
        self.c = coordinator
        self.endpoints = endpoints
        self.security = security

    def _readable(self, entries: list[Entry], ctx: RequestContext) -> tuple[list[Entry], dict[int, KafkaError]]:
        """The entries whose topic the caller may Read, and the refusals of the others."""
        return split(entries, lambda e: self.security.refused(ctx, "Read", "Topic", e[0]))

    async def find_coordinator(self, req: FindCoordinatorRequest, ctx: RequestContext) -> FindCoordinatorResponse:
        return self.endpoints.coordinator(await self.c.find_coordinator(req.key), ctx, "coordinator")

    async def join_group(self, req: JoinGroupRequest, ctx: RequestContext,
                         require_known_id: bool = False) -> JoinGroupResponse:
        """``require_known_id``: a first join gets MEMBER_ID_REQUIRED with its new id
        (KIP-394, Kafka's JoinGroup v4+).  Needs Read on the group, as the other
        membership requests."""
        self.security.require(ctx, "Read", "Group", req.group_id)
        a = await self.c.join_group(req.group_id, req.member_id, req.group_instance_id, req.client_id or ctx.client_id,
                                    ctx.client_host, req.session_timeout_ms, req.rebalance_timeout_ms,
                                    req.protocol_type, [(p.name, p.metadata) for p in req.protocols],
                                    require_known_id=require_known_id)
        return JoinGroupResponse(
            generation_id=a.generation, protocol_type=a.protocol_type or "", protocol_name=a.protocol or "",
            leader=a.leader, member_id=a.member_id,
            members=[JoinGroupMember(member_id=m, group_instance_id=i, metadata=md) for m, i, md in a.members],
            error=a.error)

    async def sync_group(self, req: SyncGroupRequest, ctx: RequestContext) -> SyncGroupResponse:
        self.security.require(ctx, "Read", "Group", req.group_id)
        assignments = {a.member_id: a.assignment for a in req.assignments} or None
        a = await self.c.sync_group(req.group_id, req.member_id, req.group_instance_id, req.generation_id, assignments)
        return SyncGroupResponse(protocol_type=a.protocol_type or "", protocol_name=a.protocol or "",
                                 assignment=a.assignment, error=a.error)

    async def heartbeat(self, req: HeartbeatRequest, ctx: RequestContext) -> HeartbeatResponse:
        self.security.require(ctx, "Read", "Group", req.group_id)
        self.c.heartbeat(req.group_id, req.member_id, req.group_instance_id, req.generation_id)
        return HeartbeatResponse()

    async def leave_group(self, req: LeaveGroupRequest, ctx: RequestContext) -> LeaveGroupResponse:
        self.security.require(ctx, "Read", "Group", req.group_id)
        members = [(m.member_id, m.group_instance_id) for m in req.members]
        errs = self.c.leave_group(req.group_id, members)
        return LeaveGroupResponse(members=[LeaveGroupMemberResponse(member_id=m, group_instance_id=i, error=e)
                                           for (m, i), e in zip(members, errs)])

    async def offset_commit(self, req: OffsetCommitRequest, ctx: RequestContext) -> OffsetCommitResponse:
        """Needs Read on the group, and on each topic (TOPIC_AUTHORIZATION_FAILED per entry)."""
        self.security.require(ctx, "Read", "Group", req.group_id)
        entries: list[Entry] = [(o.topic, o.partition, o.offset, o.leader_epoch, o.metadata) for o in req.offsets]
        ok, refusals = self._readable(entries, ctx)
        errs = merge(entries, refusals, await self.c.commit_offsets(
            req.group_id, req.member_id, req.group_instance_id, req.generation_id, ok), lambda e, err: err)
        return OffsetCommitResponse(partitions=[OffsetCommitPartitionResponse(topic=t, partition=p, error=e)
                                                for (t, p, *_), e in zip(entries, errs)])

    async def offset_fetch(self, req: OffsetFetchRequest, ctx: RequestContext) -> OffsetFetchResponse:
        """With ``require_stable``, partitions an open transaction holds offsets of are
        answered UNSTABLE_OFFSET_COMMIT with offset -1 (the consumer retries).  Needs
        Describe on the group; asked for every committed offset, topics the caller may not
        Describe are left out."""
        self.security.require(ctx, "Describe", "Group", req.group_id)
        wanted = None if req.partitions is None else [(x.topic, x.partition) for x in req.partitions]
        got = self.c.fetch_offsets(req.group_id, wanted)
        if wanted is None:
            got = [(t, p, v) for t, p, v in got if self.security.allowed(ctx, "Describe", "Topic", t, quiet=True)]
        unstable = self.c.unstable_partitions(req.group_id) if req.require_stable else set()
        out = []
        for t, p, v in got:
            if (t, p) in unstable:
                out.append(OffsetFetchPartition(topic=t, partition=p, offset=-1, leader_epoch=-1, metadata="",
                                                error=UnstableOffsetCommitError(
                                                    f"a transaction holds offsets of {t}-{p} in group {req.group_id!r}")))
            else:
                out.append(OffsetFetchPartition(topic=t, partition=p, offset=v.offset if v else -1,
                                                leader_epoch=v.leader_epoch if v else -1,
                                                metadata=v.metadata if v else ""))
        return OffsetFetchResponse(partitions=out)

    async def txn_offset_commit(self, req: TxnOffsetCommitRequest, ctx: RequestContext) -> TxnOffsetCommitResponse:
        """Needs Write on the transactional id, Read on the group and on each topic."""
        if not self.security.allowed(ctx, "Write", "TransactionalId", req.transactional_id):
            raise TransactionalIdAuthorizationFailedError(
                f"not authorized to Write TransactionalId {req.transactional_id!r}")
        self.security.require(ctx, "Read", "Group", req.group_id)
        entries: list[Entry] = [(o.topic, o.partition, o.offset, o.leader_epoch, o.metadata) for o in req.offsets]
        ok, refusals = self._readable(entries, ctx)
        errs = merge(entries, refusals, await self.c.txn_commit_offsets(
            req.transactional_id, req.group_id, req.producer_id, req.producer_epoch, req.member_id,
            req.group_instance_id, req.generation_id, ok), lambda e, err: err)
        return TxnOffsetCommitResponse(partitions=[TxnOffsetCommitPartitionResponse(topic=t, partition=p, error=e)
                                                   for (t, p, *_), e in zip(entries, errs)])

    def visible_groups(self, ctx: RequestContext) -> list[Group]:
        """The live groups here that the caller may Describe (all of them with Describe on
        the cluster); the others are left out, not refused."""
        every = self.security.allowed(ctx, "Describe", "Cluster", CLUSTER_NAME, quiet=True)
        return [g for g in self.c.list_groups()
                if every or self.security.allowed(ctx, "Describe", "Group", g.group_id, quiet=True)]

    async def list_groups(self, req: ListGroupsRequest, ctx: RequestContext) -> ListGroupsResponse:
        return ListGroupsResponse(groups=[
            ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "", state=g.state.value)
            for g in sorted(self.visible_groups(ctx), key=lambda g: g.group_id)])

    def describe(self, group_id: str, ctx: RequestContext) -> DescribedGroup:
        """One group as DescribeGroups answers it (Dead, with no members, when not known
        here; with GROUP_AUTHORIZATION_FAILED without Describe on it)."""
        try:
            self.security.require(ctx, "Describe", "Group", group_id)
            g = self.c.describe_group(group_id)
        except KafkaError as exc:
            return _dead(group_id, exc)
        if g is None:
            return _dead(group_id, None)
        d = g.describe()
        return DescribedGroup(group_id=group_id, state=d["state"], generation=d["generation"],
                              protocol_type=d["protocol_type"], protocol=d["protocol"], leader=d["leader"],
                              members=[DescribedMember(**m) for m in d["members"]])

    async def describe_groups(self, req: DescribeGroupsRequest, ctx: RequestContext) -> DescribeGroupsResponse:
        return DescribeGroupsResponse(groups=[self.describe(gid, ctx) for gid in req.groups])

    async def delete_groups(self, req: DeleteGroupsRequest, ctx: RequestContext) -> DeleteGroupsResponse:
        out = []
        for gid in req.groups:
            try:
                self.security.require(ctx, "Delete", "Group", gid)
                await self.c.delete_group(gid)
                out.append(DeletedGroup(group_id=gid))
            except KafkaError as exc:
                out.append(DeletedGroup(group_id=gid, error=exc))
        return DeleteGroupsResponse(groups=out)

    async def offset_delete(self, req: OffsetDeleteRequest, ctx: RequestContext) -> OffsetDeleteResponse:
        """Needs Delete on the group and Read on each topic."""
        self.security.require(ctx, "Delete", "Group", req.group_id)
        tps = [(x.topic, x.partition) for x in req.partitions]
        ok, refusals = split(tps, lambda tp: self.security.refused(ctx, "Read", "Topic", tp[0]))
        errs = merge(tps, refusals, await self.c.delete_offsets(req.group_id, ok), lambda tp, err: err)
        return OffsetDeleteResponse(partitions=[OffsetDeletePartition(topic=t, partition=p, error=e)
                                                for (t, p), e in zip(tps, errs)])
