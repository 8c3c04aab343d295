"""The msgpack API's consumer-group requests, answered by the group coordinator."""
from __future__ import annotations

import contextvars
from typing import Awaitable, Callable

from ..errors import CoordinatorNotAvailableError, KafkaError
from ..protocol.rpc import codec
from .coordinator import GroupCoordinator

# The client address of the request being handled (a member's client_host).
PEER: contextvars.ContextVar[str] = contextvars.ContextVar("peer", default="")


def describe(coordinator: GroupCoordinator, group_id: str) -> dict:
    """A DescribeGroups entry (Dead, with no members, for a group not known here)."""
    try:
        g = coordinator.describe_group(group_id)
    except KafkaError as exc:
        return {"group_id": group_id, "state": "Dead", "generation": -1, "protocol_type": "", "protocol": "",
                "leader": "", "members": [], **codec.partition_error(exc)}
    if g is None:
        return {"group_id": group_id, "state": "Dead", "generation": -1, "protocol_type": "", "protocol": "",
                "leader": "", "members": [], **codec.partition_error(None)}
    d = g.describe()
    return {"group_id": group_id, "state": d["state"], "generation": d["generation"], "protocol_type": d["protocol_type"],
            "protocol": d["protocol"], "leader": d["leader"], "members": d["members"], **codec.partition_error(None)}


class GroupHandlers:
    """find_coordinator, join_group, sync_group, heartbeat, leave_group, offset_commit,
    offset_fetch, list_groups, describe_groups and delete_groups."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.c = coordinator

    def handlers(self) -> dict[str, Callable[[dict], Awaitable[dict]]]:
        return {"find_coordinator": self.find_coordinator, "join_group": self.join_group, "sync_group": self.sync_group,
                "heartbeat": self.heartbeat, "leave_group": self.leave_group, "offset_commit": self.offset_commit,
                "offset_fetch": self.offset_fetch, "list_groups": self.list_groups,
                "describe_groups": self.describe_groups, "delete_groups": self.delete_groups}

    async def find_coordinator(self, req: dict) -> dict:
        node = await self.c.find_coordinator(req["key"])
        host, port = self._endpoint(node)
        return codec.ok(node_id=node, host=host, port=port)

    def _endpoint(self, node: int) -> tuple[str, int]:
        for b in self.c.broker.listeners.brokers(self.c.broker.metadata.brokers, self.c.broker.broker_id):
            if b["id"] == node:
                return b["host"], b["port"]
        raise CoordinatorNotAvailableError(f"coordinator broker {node} is not alive")

    async def join_group(self, req: dict) -> dict:
        a = await self.c.join_group(req["group_id"], req["member_id"], req["group_instance_id"], req["client_id"],
                                    PEER.get(), req["session_timeout_ms"], req["rebalance_timeout_ms"],
                                    req["protocol_type"], [(p["name"], p["metadata"]) for p in req["protocols"]],
                                    require_known_id=False)
        body = dict(generation_id=a.generation, protocol_type=a.protocol_type or "", protocol_name=a.protocol or "",
                    leader=a.leader, member_id=a.member_id,
                    members=[{"member_id": m, "group_instance_id": i, "metadata": md} for m, i, md in a.members])
        return codec.error_response(a.error, **body) if a.error else codec.ok(**body)

    async def sync_group(self, req: dict) -> dict:
        assignments = {a["member_id"]: a["assignment"] for a in req["assignments"]} or None
        a = await self.c.sync_group(req["group_id"], req["member_id"], req["group_instance_id"], req["generation_id"],
                                    assignments)
        body = dict(protocol_type=a.protocol_type or "", protocol_name=a.protocol or "", assignment=a.assignment)
        return codec.error_response(a.error, **body) if a.error else codec.ok(**body)

    async def heartbeat(self, req: dict) -> dict:
        self.c.heartbeat(req["group_id"], req["member_id"], req["group_instance_id"], req["generation_id"])
        return codec.ok()

    async def leave_group(self, req: dict) -> dict:
        members = [(m["member_id"], m["group_instance_id"]) for m in req["members"]]
        errs = self.c.leave_group(req["group_id"], members)
        return codec.ok(members=[{"member_id": m, "group_instance_id": i, **codec.partition_error(e)}
                                 for (m, i), e in zip(members, errs)])

    async def offset_commit(self, req: dict) -> dict:
        entries = [(o["topic"], o["partition"], o["offset"], o["leader_epoch"], o["metadata"]) for o in req["offsets"]]
        errs = await self.c.commit_offsets(req["group_id"], req["member_id"], req["group_instance_id"],
                                           req["generation_id"], entries)
        return codec.ok(partitions=[{"topic": t, "partition": p, **codec.partition_error(e)}
                                    for (t, p, *_), e in zip(entries, errs)])

    async def offset_fetch(self, req: dict) -> dict:
        wanted = None if req["partitions"] is None else [(x["topic"], x["partition"]) for x in req["partitions"]]
        got = self.c.fetch_offsets(req["group_id"], wanted)
        return codec.ok(partitions=[{"topic": t, "partition": p, "offset": v.offset if v else -1,
                                     "leader_epoch": v.leader_epoch if v else -1, "metadata": v.metadata if v else "",
                                     **codec.partition_error(None)} for t, p, v in got])

    async def list_groups(self, req: dict) -> dict:
        return codec.ok(groups=[{"group_id": g.group_id, "protocol_type": g.protocol_type or "", "state": g.state.value}
                                for g in sorted(self.c.list_groups(), key=lambda g: g.group_id)])

    async def describe_groups(self, req: dict) -> dict:
        return codec.ok(groups=[describe(self.c, gid) for gid in req["groups"]])

    async def delete_groups(self, req: dict) -> dict:
        out = []
        for gid in req["groups"]:
            try:
                await self.c.delete_group(gid)
                out.append({"group_id": gid, **codec.partition_error(None)})
            except KafkaError as exc:
                out.append({"group_id": gid, **codec.partition_error(exc)})
        return codec.ok(groups=out)

