"""Kafka's consumer-group APIs on the Kafka listener: FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
DescribeGroups and DeleteGroups.

They run the broker's :class:`~minikafka.broker.coordinator.GroupCoordinator`, the
same code as the msgpack API, so Kafka's clients (kcat -G, kafka-python,
confluent-kafka, aiokafka) and ours share groups and committed offsets.  Errors are
put where each API version carries them (top level, per group or per partition).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import CoordinatorNotAvailableError, KafkaError
from ..group_handlers import describe

if TYPE_CHECKING:
    from ..coordinator import GroupCoordinator
    from ..server import Broker
    from .handlers import Connection


def _code(exc: KafkaError | None) -> int:
    return 0 if exc is None else exc.code.code


def _host(peer: str) -> str:
    """The client address of a connection's ``host:port`` peer string."""
    return peer.rsplit(":", 1)[0].strip("[]") if ":" in peer else peer


class KafkaGroupHandlers:
    """One broker's group APIs for Kafka clients."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    @property
    def c(self) -> "GroupCoordinator":
        return self.broker.coordinator

    def _endpoint(self, node: int, conn: "Connection") -> tuple[str, int]:
        for b in self.broker.listeners.kafka_brokers(self.broker.metadata.brokers, self.broker.broker_id, conn.external):
            if b["id"] == node:
                return b["host"], b["port"]
        raise CoordinatorNotAvailableError(f"coordinator broker {node} has no Kafka listener or is not alive")

    async def _find(self, key: str, key_type: int, conn: "Connection") -> dict:
        try:
            if key_type != 0:
                raise CoordinatorNotAvailableError("transactions are not supported: there is no transaction coordinator")
            node = await self.c.find_coordinator(key)
            host, port = self._endpoint(node, conn)
            return {"key": key, "node_id": node, "host": host, "port": port, "error_code": 0, "error_message": None}
        except KafkaError as exc:
            return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": _code(exc), "error_message": exc.message}

    async def find_coordinator(self, version: int, req: dict, conn: "Connection") -> dict:
        if version >= 4:
            return {"coordinators": [await self._find(k, req["key_type"], conn) for k in req["coordinator_keys"]]}
        return await self._find(req["key"], req["key_type"], conn)

    async def join_group(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            a = await self.c.join_group(req["group_id"], req["member_id"], req["group_instance_id"], conn.client_id or "",
                                        _host(conn.peer), req["session_timeout_ms"], req["rebalance_timeout_ms"],
                                        req["protocol_type"], [(p["name"], p["metadata"]) for p in req["protocols"]],
                                        require_known_id=version >= 4)
        except KafkaError as exc:
            return {"error_code": _code(exc), "generation_id": -1, "protocol_name": "" if version < 7 else None,
                    "leader": "", "member_id": req["member_id"], "members": []}
        return {"error_code": _code(a.error), "generation_id": a.generation, "protocol_type": a.protocol_type,
                "protocol_name": a.protocol if a.protocol is not None or version >= 7 else "",
                "leader": a.leader, "member_id": a.member_id,
                "members": [{"member_id": m, "group_instance_id": i, "metadata": md} for m, i, md in a.members]}

    async def sync_group(self, version: int, req: dict, conn: "Connection") -> dict:
        assignments = {a["member_id"]: a["assignment"] for a in req["assignments"]} or None
        try:
            a = await self.c.sync_group(req["group_id"], req["member_id"], req["group_instance_id"],
                                        req["generation_id"], assignments)
        except KafkaError as exc:
            return {"error_code": _code(exc), "assignment": b""}
        return {"error_code": _code(a.error), "protocol_type": a.protocol_type, "protocol_name": a.protocol,
                "assignment": a.assignment}

    async def heartbeat(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            self.c.heartbeat(req["group_id"], req["member_id"], req["group_instance_id"], req["generation_id"])
            return {"error_code": 0}
        except KafkaError as exc:
            return {"error_code": _code(exc)}

    async def leave_group(self, version: int, req: dict, conn: "Connection") -> dict:
        members = ([(m["member_id"], m["group_instance_id"]) for m in req["members"]] if version >= 3
                   else [(req["member_id"], None)])
        try:
            errs = self.c.leave_group(req["group_id"], members)
        except KafkaError as exc:
            return {"error_code": _code(exc), "members": []}
        if version < 3:
            return {"error_code": _code(errs[0])}
        return {"error_code": 0, "members": [{"member_id": m, "group_instance_id": i, "error_code": _code(e)}
                                             for (m, i), e in zip(members, errs)]}

    async def offset_commit(self, version: int, req: dict, conn: "Connection") -> dict:
        entries = [(t["name"], p["partition_index"], p["committed_offset"], p["committed_leader_epoch"],
                    p["committed_metadata"]) for t in req["topics"] for p in t["partitions"]]
        try:
            errs: list[KafkaError | None] = await self.c.commit_offsets(
                req["group_id"], req["member_id"], req["group_instance_id"], req["generation_id_or_member_epoch"], entries)
        except KafkaError as exc:
            errs = [exc] * len(entries)
        by_topic: dict[str, list[dict]] = {}
        for (topic, partition, *_), e in zip(entries, errs):
            by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": _code(e)})
        return {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}

    async def offset_fetch(self, version: int, req: dict, conn: "Connection") -> dict:
        wanted = None if req["topics"] is None else [(t["name"], p) for t in req["topics"] for p in t["partition_indexes"]]
        try:
            got = self.c.fetch_offsets(req["group_id"], wanted)
            top: KafkaError | None = None
        except KafkaError as exc:
            got, top = [(t, p, None) for t, p in (wanted or [])], exc
        by_topic: dict[str, list[dict]] = {}
        for topic, partition, v in got:
            by_topic.setdefault(topic, []).append({
                "partition_index": partition, "committed_offset": v.offset if v else -1,
                "committed_leader_epoch": v.leader_epoch if v else -1, "metadata": v.metadata if v else "",
                # v1 has no top-level error: the partitions carry it
                "error_code": _code(top) if version < 2 else 0})
        return {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()], "error_code": _code(top)}

    async def list_groups(self, version: int, req: dict, conn: "Connection") -> dict:
        wanted = {s.lower() for s in req["states_filter"]}
        groups = [g for g in self.c.list_groups() if not wanted or g.state.value.lower() in wanted]
        return {"error_code": 0, "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                                             "group_state": g.state.value} for g in sorted(groups, key=lambda g: g.group_id)]}

    async def describe_groups(self, version: int, req: dict, conn: "Connection") -> dict:
        out = []
        for gid in req["groups"]:
            d = describe(self.c, gid)
            out.append({"error_code": d["error_code"], "group_id": gid, "group_state": d["state"],
                        "protocol_type": d["protocol_type"], "protocol_data": d["protocol"],
                        "members": [{"member_id": m["member_id"], "group_instance_id": m["group_instance_id"],
                                     "client_id": m["client_id"], "client_host": m["client_host"],
                                     "member_metadata": m["metadata"], "member_assignment": m["assignment"]}
                                    for m in d["members"]]})
        return {"groups": out}

    async def delete_groups(self, version: int, req: dict, conn: "Connection") -> dict:
        results = []
        for gid in req["groups_names"]:
            try:
                await self.c.delete_group(gid)
                results.append({"group_id": gid, "error_code": 0})
            except KafkaError as exc:
                results.append({"group_id": gid, "error_code": _code(exc)})
        return {"results": results}
