"""Kafka's consumer-group APIs on the Kafka listener: FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
DescribeGroups, DeleteGroups, OffsetDelete and TxnOffsetCommit.

They run the request layer's group handlers (:mod:`minikafka.broker.apis.groups`), the
same code as the msgpack API, so Kafka's clients (kcat -G, kafka-python,
confluent-kafka, aiokafka) and ours share groups and committed offsets.  Errors are
put where each API version carries them (top level, per group or per partition).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

from ...errors import KafkaError
from ...protocol.rpc.types import (
    OffsetDeleteRequest,
    DeleteGroupsRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    JoinGroupProtocol,
    JoinGroupRequest,
    LeavingMember,
    LeaveGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupAssignment,
    SyncGroupRequest,
    TopicPartition,
    TxnOffsetCommitPartition,
    TxnOffsetCommitRequest,
)
from ..apis.context import RequestContext
from ..apis.groups import GroupApis

if TYPE_CHECKING:
    from .connection import Connection


Find = Callable[[FindCoordinatorRequest, RequestContext], Awaitable[FindCoordinatorResponse]]


def _commit_answer(offsets: list, errs: list[KafkaError | None]) -> list[dict]:
    """OffsetCommit's and TxnOffsetCommit's answer: each partition's error, by topic."""
    by_topic: dict[str, list[dict]] = {}
    for o, e in zip(offsets, errs):
        by_topic.setdefault(o.topic, []).append({"partition_index": o.partition, "error_code": _code(e)})
    return [{"name": t, "partitions": ps} for t, ps in by_topic.items()]


def _code(exc: KafkaError | None) -> int:
    return 0 if exc is None else exc.code.code


class KafkaGroupHandlers:
    """One broker's group APIs for Kafka clients."""

    def __init__(self, groups: GroupApis, find: Find | None = None) -> None:
        self.groups = groups
        self.find = find or groups.find_coordinator  # the request layer's: groups and transactional ids

    async def _find(self, key: str, key_type: int, conn: "Connection") -> dict:
        try:
            a = await self.find(FindCoordinatorRequest(key=key, key_type=key_type), conn.context())
            return {"key": key, "node_id": a.node_id, "host": a.host, "port": a.port, "error_code": 0,
                    "error_message": None}
        except KafkaError as exc:
            return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": _code(exc), "error_message": exc.message}

    async def find_coordinator(self, version: int, req: dict, conn: "Connection") -> dict:
        if version >= 4:
            return {"coordinators": [await self._find(k, req["key_type"], conn) for k in req["coordinator_keys"]]}
        return await self._find(req["key"], req["key_type"], conn)

    async def join_group(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            a = await self.groups.join_group(JoinGroupRequest(
                group_id=req["group_id"], member_id=req["member_id"], group_instance_id=req["group_instance_id"],
                client_id=conn.client_id or "", session_timeout_ms=req["session_timeout_ms"],
                rebalance_timeout_ms=req["rebalance_timeout_ms"], protocol_type=req["protocol_type"],
                protocols=[JoinGroupProtocol(name=p["name"], metadata=p["metadata"]) for p in req["protocols"]]),
                conn.context(), require_known_id=version >= 4)
        except KafkaError as exc:
            return {"error_code": _code(exc), "generation_id": -1, "protocol_name": "" if version < 7 else None,
                    "leader": "", "member_id": req["member_id"], "members": []}
        return {"error_code": _code(a.error), "generation_id": a.generation_id, "protocol_type": a.protocol_type or None,
                "protocol_name": a.protocol_name or ("" if version < 7 else None),
                "leader": a.leader, "member_id": a.member_id,
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
                            for m in a.members]}

    async def sync_group(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            a = await self.groups.sync_group(SyncGroupRequest(
                group_id=req["group_id"], member_id=req["member_id"], group_instance_id=req["group_instance_id"],
                generation_id=req["generation_id"],
                assignments=[SyncGroupAssignment(member_id=x["member_id"], assignment=x["assignment"])
                             for x in req["assignments"]]), conn.context())
        except KafkaError as exc:
            return {"error_code": _code(exc), "assignment": b""}
        return {"error_code": _code(a.error), "protocol_type": a.protocol_type or None,
                "protocol_name": a.protocol_name or None, "assignment": a.assignment}

    async def heartbeat(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            await self.groups.heartbeat(HeartbeatRequest(
                group_id=req["group_id"], member_id=req["member_id"], group_instance_id=req["group_instance_id"],
                generation_id=req["generation_id"]), conn.context())
            return {"error_code": 0}
        except KafkaError as exc:
            return {"error_code": _code(exc)}

    async def leave_group(self, version: int, req: dict, conn: "Connection") -> dict:
        members = ([LeavingMember(member_id=m["member_id"], group_instance_id=m["group_instance_id"])
                    for m in req["members"]] if version >= 3 else [LeavingMember(member_id=req["member_id"])])
        try:
            a = await self.groups.leave_group(LeaveGroupRequest(group_id=req["group_id"], members=members),
                                              conn.context())
        except KafkaError as exc:
            return {"error_code": _code(exc), "members": []}
        if version < 3:
            return {"error_code": _code(a.members[0].error)}
        return {"error_code": 0, "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                              "error_code": _code(m.error)} for m in a.members]}

    async def offset_commit(self, version: int, req: dict, conn: "Connection") -> dict:
        offsets = [OffsetCommitPartition(topic=t["name"], partition=p["partition_index"], offset=p["committed_offset"],
                                         leader_epoch=p["committed_leader_epoch"], metadata=p["committed_metadata"])
                   for t in req["topics"] for p in t["partitions"]]
        try:
            a = await self.groups.offset_commit(OffsetCommitRequest(
                group_id=req["group_id"], member_id=req["member_id"], group_instance_id=req["group_instance_id"],
                generation_id=req["generation_id_or_member_epoch"], offsets=offsets), conn.context())
            errs = [x.error for x in a.partitions]
        except KafkaError as exc:
            errs = [exc] * len(offsets)
        return {"topics": _commit_answer(offsets, errs)}

    async def offset_fetch(self, version: int, req: dict, conn: "Connection") -> dict:
        wanted = None if req["topics"] is None else [TopicPartition(topic=t["name"], partition=p)
                                                     for t in req["topics"] for p in t["partition_indexes"]]
        top: KafkaError | None = None
        try:
            a = await self.groups.offset_fetch(OffsetFetchRequest(
                group_id=req["group_id"], partitions=wanted, require_stable=bool(req.get("require_stable"))),
                conn.context())
            got = [(x.topic, x.partition, x.offset, x.leader_epoch, x.metadata, x.error) for x in a.partitions]
        except KafkaError as exc:
            got, top = [(x.topic, x.partition, -1, -1, "", None) for x in (wanted or [])], exc
        by_topic: dict[str, list[dict]] = {}
        for topic, partition, offset, epoch, metadata, error in got:
            by_topic.setdefault(topic, []).append({
                "partition_index": partition, "committed_offset": offset, "committed_leader_epoch": epoch,
                "metadata": metadata,
                # v1 has no top-level error: the partitions carry it
                "error_code": _code(error) or (_code(top) if version < 2 else 0)})
        return {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()], "error_code": _code(top)}

    async def list_groups(self, version: int, req: dict, conn: "Connection") -> dict:
        wanted = {s.lower() for s in req["states_filter"]}
        groups = [g for g in self.groups.visible_groups(conn.context())
                  if not wanted or g.state.value.lower() in wanted]
        return {"error_code": 0, "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                                             "group_state": g.state.value} for g in sorted(groups, key=lambda g: g.group_id)]}

    async def describe_groups(self, version: int, req: dict, conn: "Connection") -> dict:
        out = []
        for gid in req["groups"]:
            d = self.groups.describe(gid, conn.context())
            out.append({"error_code": _code(d.error), "group_id": gid, "group_state": d.state,
                        "protocol_type": d.protocol_type, "protocol_data": d.protocol,
                        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                     "client_id": m.client_id, "client_host": m.client_host,
                                     "member_metadata": m.metadata, "member_assignment": m.assignment}
                                    for m in d.members]})
        return {"groups": out}

    async def delete_groups(self, version: int, req: dict, conn: "Connection") -> dict:
        a = await self.groups.delete_groups(DeleteGroupsRequest(groups=list(req["groups_names"])), conn.context())
        return {"results": [{"group_id": g.group_id, "error_code": _code(g.error)} for g in a.groups]}

    async def offset_delete(self, version: int, req: dict, conn: "Connection") -> dict:
        parts = [TopicPartition(topic=t["name"], partition=p["partition_index"])
                 for t in req["topics"] for p in t["partitions"]]
        try:
            a = await self.groups.offset_delete(OffsetDeleteRequest(group_id=req["group_id"], partitions=parts),
                                                conn.context())
        except KafkaError as exc:
            return {"error_code": _code(exc), "topics": []}
        topics: dict[str, list] = {}
        for r in a.partitions:
            topics.setdefault(r.topic, []).append({"partition_index": r.partition, "error_code": _code(r.error)})
        return {"error_code": 0, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    async def txn_offset_commit(self, version: int, req: dict, conn: "Connection") -> dict:
        """TxnOffsetCommit v0-v3: errors per partition (a request-wide one on every partition)."""
        offsets = [TxnOffsetCommitPartition(topic=t["name"], partition=p["partition_index"],
                                            offset=p["committed_offset"], leader_epoch=p["committed_leader_epoch"],
                                            metadata=p["committed_metadata"])
                   for t in req["topics"] for p in t["partitions"]]
        try:
            a = await self.groups.txn_offset_commit(TxnOffsetCommitRequest(
                transactional_id=req["transactional_id"], group_id=req["group_id"], producer_id=req["producer_id"],
                producer_epoch=req["producer_epoch"], generation_id=req["generation_id"], member_id=req["member_id"],
                group_instance_id=req["group_instance_id"], offsets=offsets), conn.context())
            errs = [x.error for x in a.partitions]
        except KafkaError as exc:
            errs = [exc] * len(offsets)
        return {"throttle_time_ms": 0, "topics": _commit_answer(offsets, errs)}
