"""Kafka's topic and cluster administration APIs on the Kafka listener.

Each runs the request layer's handler the msgpack API runs (:mod:`minikafka.broker.apis.admin`:
the same validation, ZooKeeper writes and controller reaction); IncrementalAlterConfigs
and AlterConfigs are the msgpack AlterConfigs' change, spelled Kafka's way.  Each topic
or resource gets its own error code and message, as in Kafka.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ... import config as cfg
from ...errors import (
    InvalidConfigError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError as _InvalidRF,
    NoReassignmentInProgressError,
    InvalidRequestError,
    KafkaError,
    OffsetOutOfRangeError,
)
from ...protocol.rpc.messages import PREFERRED_ELECTION, UNCLEAN_ELECTION
from ...protocol.topic_ids import ZERO_TOPIC_ID, from_uuid, to_uuid
from ...protocol.rpc.types import (
    AlterPartitionReassignmentsRequest,
    CreatableTopic,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeLogDirsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
    ReassignablePartition,
    TopicPartition,
)
from ..apis.admin import AdminApis
from ..apis.control import ControlApis
from ..apis.data import DataApis
from ..topic_admin import APPEND, BROKER, DELETE, SET, SUBTRACT, TOPIC

if TYPE_CHECKING:
    from .connection import Connection


def _err(exc: KafkaError | None) -> tuple[int, str | None]:
    return (0, None) if exc is None else (exc.code.code, exc.message)


def _duplicates(names: list[str]) -> set[str]:
    seen: set[str] = set()
    return {n for n in names if n in seen or seen.add(n)}  # type: ignore[func-returns-value]


class KafkaAdmin:
    """CreateTopics, DeleteTopics, CreatePartitions, the config APIs, DeleteRecords,
    ElectLeaders, the partition reassignment APIs and DescribeLogDirs."""

    def __init__(self, admin: AdminApis, data: DataApis, control: ControlApis) -> None:
        self.admin = admin
        self.data = data
        self.control = control

    @property
    def config(self) -> cfg.BrokerConfig:
        """The broker's configuration in effect now (list settings' values change live)."""
        return self.admin.topic_admin.config

    # -- topics ---------------------------------------------------------------------
    async def create_topics(self, version: int, req: dict, conn: "Connection") -> dict:
        dupes = _duplicates([t["name"] for t in req["topics"]])
        results: dict[str, dict] = {}
        internal = []
        for t in req["topics"]:
            name = t["name"]
            try:
                if name in dupes:
                    raise InvalidRequestError(f"topic {name!r} appears more than once in the request")
                configs = {}
                for c in t["configs"]:
                    if c["value"] is None:
                        raise InvalidConfigError(f"config {c['name']!r} has a null value")
                    configs[c["name"]] = c["value"]
                assignment = None
                if t["assignments"]:
                    if t["num_partitions"] != -1 or t["replication_factor"] != -1:
                        raise InvalidRequestError("with a replica assignment, num_partitions and "
                                                  "replication_factor must both be -1")
                    assignment = {str(a["partition_index"]): list(a["broker_ids"]) for a in t["assignments"]}
                    partitions, rf = len(assignment), len(t["assignments"][0]["broker_ids"])
                else:
                    defaults = self.admin.topic_admin.settings
                    partitions = t["num_partitions"] if t["num_partitions"] != -1 else defaults.num_partitions
                    rf = t["replication_factor"] if t["replication_factor"] != -1 else \
                        defaults.default_replication_factor
                    # a count below 1 is refused by the topic admin, after it looked for the topic (as Kafka)
                internal.append(CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                                               config=configs, assignment=assignment))
                results[name] = {"name": name, "num_partitions": partitions, "replication_factor": rf}
            except KafkaError as exc:
                code, msg = _err(exc)
                results[name] = {"name": name, "error_code": code, "error_message": msg}
        if internal:
            resp = await self.admin.create_topics(CreateTopicsRequest(
                topics=internal, timeout_ms=max(0, req["timeout_ms"]), validate_only=req["validate_only"]),
                conn.context())
            for r in resp.topics:
                entry = results[r.name]
                entry["error_code"], entry["error_message"] = _err(r.error)
                entry["topic_id"] = to_uuid(r.topic_id)  # v7+ (KIP-516): the zero id unless created
                if r.error is not None:
                    entry["num_partitions"] = entry["replication_factor"] = -1
                else:
                    entry["configs"] = [{"name": e.name, "value": e.value, "read_only": e.read_only,
                                         "config_source": e.source, "is_sensitive": e.is_sensitive}
                                        for e in await self._topic_entries(r.name, req["validate_only"], conn)]
        return {"topics": list(results.values())}

    async def _topic_entries(self, topic: str, validate_only: bool, conn: "Connection") -> list:
        if validate_only:
            return []
        try:
            return await self.admin.settings(topic, None, conn.context())
        except KafkaError:
            return []

    async def delete_topics(self, version: int, req: dict, conn: "Connection") -> dict:
        timeout_ms = max(0, req["timeout_ms"])
        if version < 6:
            resp = await self.admin.delete_topics(DeleteTopicsRequest(topics=list(req["topic_names"]),
                                                                      timeout_ms=timeout_ms), conn.context())
            return {"responses": [dict(zip(("error_code", "error_message"), _err(r.error)), name=r.name)
                                  for r in resp.topics]}
        # v6+: each topic by name or by id (KIP-516), answered in request order
        names: list[str] = []
        ids: list[str] = []
        answers: list[tuple[str, Any]] = []
        for t in req["topics"]:
            topic_id = from_uuid(t["topic_id"])
            if t["name"] is not None and topic_id != ZERO_TOPIC_ID:
                answers.append(("bad", t))
            elif t["name"] is not None:
                answers.append(("name", len(names)))
                names.append(t["name"])
            else:
                answers.append(("id", len(ids)))
                ids.append(topic_id)
        resp = await self.admin.delete_topics(DeleteTopicsRequest(topics=names, topic_ids=ids, timeout_ms=timeout_ms),
                                              conn.context())
        out = []
        for kind, at in answers:
            if kind == "bad":
                code, msg = _err(InvalidRequestError("You may not specify both topic name and topic id."))
                out.append({"name": at["name"], "topic_id": at["topic_id"], "error_code": code, "error_message": msg})
                continue
            r = resp.topics[at if kind == "name" else len(names) + at]
            code, msg = _err(r.error)
            out.append({"name": r.name or None, "topic_id": to_uuid(r.topic_id), "error_code": code,
                        "error_message": msg})
        return {"responses": out}

    async def delete_records(self, version: int, req: dict, conn: "Connection") -> dict:
        parts = [{"topic": t["name"], "partition": p["partition_index"], "offset": p["offset"]}
                 for t in req["topics"] for p in t["partitions"]]
        bad = [p for p in parts if p["offset"] < -1 or p["partition"] < 0]
        good = [p for p in parts if p not in bad]
        resp = await self.data.delete_records(DeleteRecordsRequest(
            partitions=[DeleteRecordsPartition(topic=p["topic"], partition=p["partition"], offset=p["offset"]) for p in good],
            timeout_ms=max(0, req["timeout_ms"])), conn.context())
        answers = {(r.topic, r.partition): (r.low_watermark, _err(r.error)[0]) for r in resp.partitions}
        for p in bad:  # Kafka: OFFSET_OUT_OF_RANGE for an offset below -1
            answers[(p["topic"], p["partition"])] = (-1, OffsetOutOfRangeError.code.code)
        topics: dict[str, list] = {}
        for p in parts:
            low, code = answers[(p["topic"], p["partition"])]
            topics.setdefault(p["topic"], []).append(
                {"partition_index": p["partition"], "low_watermark": low, "error_code": code})
        return {"topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}

    async def create_partitions(self, version: int, req: dict, conn: "Connection") -> dict:
        dupes = _duplicates([t["name"] for t in req["topics"]])
        results = []
        for t in req["topics"]:
            name = t["name"]
            try:
                if name in dupes:
                    raise InvalidRequestError(f"topic {name!r} appears more than once in the request")
                assignments = None if t["assignments"] is None else [list(a["broker_ids"]) for a in t["assignments"]]
                await self.admin.create_partitions(CreatePartitionsRequest(
                    topic=name, count=t["count"], assignments=assignments, validate_only=req["validate_only"],
                    timeout_ms=max(0, req["timeout_ms"])), conn.context())
                exc = None
            except KafkaError as e:
                exc = e
            code, msg = _err(exc)
            results.append({"name": name, "error_code": code, "error_message": msg})
        return {"results": results}

    # -- configs ----------------------------------------------------------------------
    async def describe_configs(self, version: int, req: dict, conn: "Connection") -> dict:
        results = []
        for r in req["resources"]:
            rtype, name, keys = r["resource_type"], r["resource_name"], r["configuration_keys"]
            entry: dict[str, Any] = {"resource_type": rtype, "resource_name": name, "configs": []}
            try:
                if rtype == TOPIC:
                    entries = await self.admin.settings(name, None, conn.context())
                elif rtype == BROKER:
                    entries = await self.admin.settings(None, name, conn.context())
                else:
                    raise InvalidRequestError(f"resource type {rtype} is not supported (2 = topic, 4 = broker)")
                wanted = set(keys) if keys else None  # null or empty: every setting, as Kafka does
                entry["configs"] = [{
                    "name": e.name, "value": e.value, "read_only": e.read_only, "is_default": e.is_default,
                    "config_source": e.source, "is_sensitive": e.is_sensitive,
                    "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in e.synonyms] if req["include_synonyms"] else [],
                    "config_type": e.config_type,
                    "documentation": e.documentation if req["include_documentation"] else None,
                } for e in entries if wanted is None or e.name in wanted]
                entry.update(error_code=0, error_message=None)
            except KafkaError as exc:
                code, msg = _err(exc)
                entry.update(error_code=code, error_message=msg)
            results.append(entry)
        return {"results": results}

    async def _alter(self, req: dict, change_of: Callable[[list[dict], int], Callable[[dict], dict]],
                     conn: "Connection") -> dict:
        responses = []
        for r in req["resources"]:
            rtype, name = r["resource_type"], r["resource_name"]
            try:
                if rtype == BROKER:
                    await self.admin.alter(None, name, change_of(r["configs"], rtype), req["validate_only"],
                                           conn.context())
                elif rtype == TOPIC:
                    await self.admin.alter(name, None, change_of(r["configs"], rtype), req["validate_only"],
                                           conn.context())
                else:
                    raise InvalidRequestError(f"resource type {rtype} is not supported (2 = topic, 4 = broker)")
                exc = None
            except KafkaError as e:
                exc = e
            code, msg = _err(exc)
            responses.append({"error_code": code, "error_message": msg, "resource_type": rtype, "resource_name": name})
        return {"responses": responses}

    async def alter_configs(self, version: int, req: dict, conn: "Connection") -> dict:
        """Kafka's AlterConfigs: the given settings replace every override of the topic."""
        def change_of(configs: list[dict], rtype: int) -> Callable[[dict], dict]:
            new = {}
            for c in configs:
                if c["value"] is None:
                    raise InvalidConfigError(f"config {c['name']!r} has a null value")
                new[c["name"]] = c["value"]
            return lambda current: new
        return await self._alter(req, change_of, conn)

    def _list_in_effect(self, name: str, rtype: int) -> str:
        """A list setting's value in effect without an override: the broker's."""
        if rtype == TOPIC:
            name = cfg.BROKER_NAME_OF_TOPIC_CONFIG.get(name, name)
        try:
            value = self.config.get(name)
        except KeyError:  # a topic-only setting (the throttled replica lists): empty by default
            return ""
        return "" if value is None else str(value)

    async def incremental_alter_configs(self, version: int, req: dict, conn: "Connection") -> dict:
        def change_of(configs: list[dict], rtype: int) -> Callable[[dict], dict]:
            names = [c["name"] for c in configs]
            if _duplicates(names):
                raise InvalidRequestError(f"configs {sorted(_duplicates(names))} appear more than once")
            for c in configs:
                op = c["config_operation"]
                if op not in (SET, DELETE, APPEND, SUBTRACT):
                    raise InvalidRequestError(f"{c['name']}: unknown config operation {op}")
                if op in (APPEND, SUBTRACT) and c["name"] not in cfg.LIST_CONFIGS:
                    raise InvalidConfigError(f"{c['name']}: APPEND and SUBTRACT apply to list settings only "
                                             f"({', '.join(sorted(cfg.LIST_CONFIGS))})")
                if op != DELETE and c["value"] is None:
                    raise InvalidConfigError(f"config {c['name']!r} has a null value")
                if op == DELETE and rtype == TOPIC:
                    cfg.validate_topic_config({c["name"]: cfg.topic_config_default_text(c["name"])})
                elif op == DELETE and c["name"] not in cfg.DYNAMIC_BROKER_CONFIGS:
                    cfg.validate_dynamic_broker_config({c["name"]: cfg.broker_config_sample_text(c["name"])})

            def change(current: dict) -> dict:
                new = dict(current)
                for c in configs:
                    op, name = c["config_operation"], c["name"]
                    if op == SET:
                        new[name] = c["value"]
                    elif op == DELETE:
                        new.pop(name, None)
                    else:  # as Kafka: on the set value, else the value in effect
                        items = cfg.list_items(new[name] if name in new else self._list_in_effect(name, rtype))
                        given = cfg.list_items(c["value"])
                        items = items + [i for i in given if i not in items] if op == APPEND else \
                            [i for i in items if i not in given]
                        new[name] = ",".join(items)
                return new
            return change
        return await self._alter(req, change_of, conn)

    # -- leaders, reassignments, log dirs ------------------------------------------------
    async def elect_leaders(self, version: int, req: dict, conn: "Connection") -> dict:
        """ElectLeaders (KIP-183, KIP-460): preferred or unclean, run by the controller."""
        kind = req["election_type"] if version >= 1 else PREFERRED_ELECTION
        parts = None if req["topic_partitions"] is None else [
            TopicPartition(topic=t["topic"], partition=p) for t in req["topic_partitions"] for p in t["partitions"]]
        try:
            if kind not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
                raise InvalidRequestError(f"unknown election type {kind} (0 preferred, 1 unclean)")
            resp = await self.control.elect_leaders(ElectLeadersRequest(
                partitions=parts, election_type=kind, timeout_ms=max(0, req["timeout_ms"])), conn.context())
        except KafkaError as exc:
            code, _ = _err(exc)
            return {"error_code": code, "replica_election_results": []}
        topics: dict[str, list] = {}
        for r in resp.partitions:
            code, msg = _err(r.error)
            topics.setdefault(r.topic, []).append({"partition_id": r.partition, "error_code": code, "error_message": msg})
        return {"error_code": 0, "replica_election_results": [
            {"topic": t, "partition_result": ps} for t, ps in topics.items()]}

    async def alter_partition_reassignments(self, version: int, req: dict, conn: "Connection") -> dict:
        """AlterPartitionReassignments (KIP-455) onto the msgpack API's reassignment; a
        cancellation (null replicas) is refused, and with allow_replication_factor_change
        false (v1) a new replica count is INVALID_REPLICATION_FACTOR."""
        entries = [(t["name"], p["partition_index"], p["replicas"]) for t in req["topics"] for p in t["partitions"]]
        answers: dict[tuple[str, int], KafkaError | None] = {}
        moves = []
        try:
            listed = await self.admin.list_partition_reassignments(ListPartitionReassignmentsRequest(partitions=None),
                                                                   conn.context())
            moving = {(m.topic, m.partition) for m in listed.partitions}
        except KafkaError as exc:
            code, msg = _err(exc)
            return {"error_code": code, "error_message": msg, "responses": []}
        current = self.admin.topic_admin.metadata.partitions
        for t, p, replicas in entries:
            if replicas is None:
                answers[(t, p)] = (InvalidReplicaAssignmentError(
                    f"{t}-{p}: a reassignment in progress cannot be cancelled here") if (t, p) in moving
                    else NoReassignmentInProgressError(f"{t}-{p} is not being reassigned"))
            elif (version >= 1 and not req["allow_replication_factor_change"] and (t, p) in current
                  and len(replicas) != len(current[(t, p)]["replicas"])):
                answers[(t, p)] = _InvalidRF(f"{t}-{p}: the replication factor would change from "
                                             f"{len(current[(t, p)]['replicas'])} to {len(replicas)}")
            else:
                moves.append(ReassignablePartition(topic=t, partition=p, replicas=list(replicas)))
        if moves:
            try:
                resp = await self.admin.alter_partition_reassignments(
                    AlterPartitionReassignmentsRequest(partitions=moves), conn.context())
            except KafkaError as exc:
                code, msg = _err(exc)
                return {"error_code": code, "error_message": msg, "responses": []}
            for r in resp.partitions:
                answers[(r.topic, r.partition)] = r.error
        topics: dict[str, list] = {}
        for t, p, _ in entries:
            code, msg = _err(answers[(t, p)])
            topics.setdefault(t, []).append({"partition_index": p, "error_code": code, "error_message": msg})
        return {"error_code": 0, "error_message": None, "allow_replication_factor_change": req["allow_replication_factor_change"],
                "responses": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    async def list_partition_reassignments(self, version: int, req: dict, conn: "Connection") -> dict:
        parts = None if req["topics"] is None else [
            TopicPartition(topic=t["name"], partition=p) for t in req["topics"] for p in t["partition_indexes"]]
        try:
            resp = await self.admin.list_partition_reassignments(
                ListPartitionReassignmentsRequest(partitions=parts), conn.context())
        except KafkaError as exc:
            code, msg = _err(exc)
            return {"error_code": code, "error_message": msg, "topics": []}
        topics: dict[str, list] = {}
        for r in resp.partitions:
            topics.setdefault(r.topic, []).append({
                "partition_index": r.partition, "replicas": r.replicas,
                "adding_replicas": r.adding_replicas, "removing_replicas": r.removing_replicas})
        return {"error_code": 0, "error_message": None,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    async def describe_log_dirs(self, version: int, req: dict, conn: "Connection") -> dict:
        parts = None if req["topics"] is None else [
            TopicPartition(topic=t["topic"], partition=p) for t in req["topics"] for p in t["partitions"]]
        try:
            resp = await self.data.describe_log_dirs(DescribeLogDirsRequest(partitions=parts), conn.context())
        except KafkaError as exc:
            code, _ = _err(exc)
            if version >= 3:
                return {"error_code": code, "results": []}
            return {"results": [{"error_code": code, "log_dir": "", "topics": []}]}
        results = []
        for d in resp.log_dirs:
            topics: dict[str, list] = {}
            for p in d.partitions:
                topics.setdefault(p.topic, []).append({"partition_index": p.partition, "partition_size": p.size,
                                                       "offset_lag": p.offset_lag, "is_future_key": False})
            results.append({"error_code": 0, "log_dir": d.log_dir, "total_bytes": d.total_bytes,
                            "usable_bytes": d.usable_bytes,
                            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
        return {"error_code": 0, "results": results}
