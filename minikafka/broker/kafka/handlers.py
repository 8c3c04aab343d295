"""Kafka APIs translated to the broker's own operations.

Every handler takes the decoded request (a dict keyed by the snake_case names of
:mod:`minikafka.protocol.kafka.apis`) and returns the response dict, or ``None``
when Kafka sends no answer (Produce with acks=0).  The work itself is done by the
same code as the msgpack API (the replica manager's produce and fetch purgatories,
the topic handlers of :class:`~minikafka.broker.server.Broker`), so both listeners
follow the same rules: error codes are Kafka's numbers, consumers never read at or
above the high watermark, leader epochs fence stale requests.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

from ...errors import (
    ClusterAuthorizationFailedError,
    IllegalSaslStateError,
    UnsupportedSaslMechanismError,
    InvalidRequiredAcksError,
    TopicAuthorizationFailedError,
    KafkaError,
)
from ...protocol.kafka import apis
from ...protocol.kafka.apis import KafkaApi
from ...protocol.kafka.frames import RequestHeader, supported_versions
from ..security import current_principal
from .acls import KafkaAcls
from .admin import KafkaAdmin
from .groups import KafkaGroupHandlers

if TYPE_CHECKING:
    from ..server import Broker

log = logging.getLogger(__name__)

MAX_WAIT_MS = 300_000


@dataclass
class Connection:
    """What a handler may need to know about the connection a request came on."""

    external: bool
    peer: str
    client_id: str | None = None
    close_after: bool = False  # set by a handler to close the connection without answering
    listener: str = "KAFKA"
    sasl: bool = False  # a SASL_* listener: authenticate before anything else
    principal: str = "User:ANONYMOUS"
    mechanism: str | None = None  # chosen by SaslHandshake
    authenticated: bool = False
    raw_sasl_next: bool = False  # SaslHandshake v0: the next frame is the bare token
    close_after_answer: bool = False  # answer, then close (a failed SaslAuthenticate)

    def authenticate(self, principal: str) -> None:
        """The client proved who it is: its requests now run as ``principal``."""
        self.principal = principal
        self.authenticated = True
        current_principal.set(principal)


# What a client may send on a SASL listener before it has authenticated.
PRE_AUTHENTICATION_APIS = frozenset({apis.API_VERSIONS.key, apis.SASL_HANDSHAKE.key, apis.SASL_AUTHENTICATE.key})


def _group(entries: list[dict], key: str = "topic") -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in entries:
        out.setdefault(e[key], []).append(e)
    return out


class KafkaHandlers:
    """One broker's Kafka API handlers."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self.rm = broker.replica_manager
        self.admin = KafkaAdmin(broker)
        self.groups = KafkaGroupHandlers(broker)
        self.acls = KafkaAcls(broker)
        self.table: dict[int, Callable[[int, dict, Connection], Awaitable[dict | None]]] = {
            apis.PRODUCE.key: self.produce,
            apis.FETCH.key: self.fetch,
            apis.LIST_OFFSETS.key: self.list_offsets,
            apis.METADATA.key: self.metadata,
            apis.API_VERSIONS.key: self.api_versions,
            apis.SASL_HANDSHAKE.key: self.sasl_handshake,
            apis.SASL_AUTHENTICATE.key: self.sasl_authenticate,
            apis.CREATE_TOPICS.key: self.admin.create_topics,
            apis.DELETE_TOPICS.key: self.admin.delete_topics,
            apis.DELETE_RECORDS.key: self.admin.delete_records,
            apis.OFFSET_FOR_LEADER_EPOCH.key: self.offset_for_leader_epoch,
            apis.DESCRIBE_CONFIGS.key: self.admin.describe_configs,
            apis.ALTER_CONFIGS.key: self.admin.alter_configs,
            apis.CREATE_PARTITIONS.key: self.admin.create_partitions,
            apis.INCREMENTAL_ALTER_CONFIGS.key: self.admin.incremental_alter_configs,
            apis.DESCRIBE_CLUSTER.key: self.describe_cluster,
            apis.INIT_PRODUCER_ID.key: self.init_producer_id,
            apis.FIND_COORDINATOR.key: self.groups.find_coordinator,
            apis.JOIN_GROUP.key: self.groups.join_group,
            apis.SYNC_GROUP.key: self.groups.sync_group,
            apis.HEARTBEAT.key: self.groups.heartbeat,
            apis.LEAVE_GROUP.key: self.groups.leave_group,
            apis.OFFSET_COMMIT.key: self.groups.offset_commit,
            apis.OFFSET_FETCH.key: self.groups.offset_fetch,
            apis.LIST_GROUPS.key: self.groups.list_groups,
            apis.DESCRIBE_GROUPS.key: self.groups.describe_groups,
            apis.DELETE_GROUPS.key: self.groups.delete_groups,
            apis.DESCRIBE_ACLS.key: self.acls.describe_acls,
            apis.CREATE_ACLS.key: self.acls.create_acls,
            apis.DELETE_ACLS.key: self.acls.delete_acls,
        }
        assert set(self.table) == set(apis.APIS), set(self.table) ^ set(apis.APIS)

    async def handle(self, api: KafkaApi, header: RequestHeader, body: dict, conn: Connection) -> dict | None:
        """Run the handler; a bug answers UNKNOWN_SERVER_ERROR where the API has a top-level
        error code and closes the connection otherwise (as Kafka does)."""
        started = time.monotonic()
        try:
            return await self.table[api.key](header.api_version, body, conn)
        except KafkaError as exc:
            log.info("Kafka %s v%d from %s: %s", api.name, header.api_version, conn.peer, exc)
            conn.close_after = True
            return None
        except Exception:
            log.exception("Kafka %s v%d from %s failed", api.name, header.api_version, conn.peer)
            conn.close_after = True
            return None
        finally:
            self.broker.metrics.observe_request(f"kafka_{api.name}", time.monotonic() - started)

    # -- cluster ----------------------------------------------------------------------
    def _brokers(self, conn: Connection) -> list[dict]:
        return self.broker.listeners.kafka_brokers(self.broker.metadata.brokers, self.broker.broker_id, conn.external)

    async def api_versions(self, version: int, req: dict, conn: Connection) -> dict:
        return {"error_code": 0, "api_keys": supported_versions()}

    # -- SASL ---------------------------------------------------------------------------
    async def sasl_handshake(self, version: int, req: dict, conn: Connection) -> dict:
        if not conn.sasl or conn.mechanism is not None:
            return {"error_code": IllegalSaslStateError.code.code, "mechanisms": []}
        if req["mechanism"] != "PLAIN":
            return {"error_code": UnsupportedSaslMechanismError.code.code, "mechanisms": ["PLAIN"]}
        conn.mechanism = "PLAIN"
        conn.raw_sasl_next = version == 0
        return {"error_code": 0, "mechanisms": ["PLAIN"]}

    async def sasl_authenticate(self, version: int, req: dict, conn: Connection) -> dict:
        def answer(exc: KafkaError | None) -> dict:
            return {"error_code": exc.code.code if exc else 0, "error_message": exc.message if exc else None,
                    "auth_bytes": b"", "session_lifetime_ms": 0}
        if not conn.sasl or conn.mechanism is None or conn.authenticated:
            conn.close_after_answer = True
            return answer(IllegalSaslStateError("SaslAuthenticate needs a SaslHandshake first, once"))
        try:
            conn.authenticate(self.broker.security.plain(req["auth_bytes"]))
        except KafkaError as exc:
            log.warning("Kafka connection from %s: %s", conn.peer, exc)
            conn.close_after_answer = True
            return answer(exc)
        return answer(None)

    async def metadata(self, version: int, req: dict, conn: Connection) -> dict:
        md = self.broker.metadata
        wanted = req["topics"]
        if wanted is None or (version == 0 and not wanted):
            wanted_names = None  # v0: an empty list means every topic; v1+: null does
        else:
            wanted_names = [t["name"] for t in wanted]
        names, refused = self.broker.security.describable(wanted_names, md.topics())
        live = set(md.brokers) or {self.broker.broker_id}
        unknown = [n for n in names if not md.partitions_of(n) and n not in refused]
        created: dict[str, int] = {n: TopicAuthorizationFailedError.code.code for n in refused}
        if unknown and wanted and (version < 4 or req["allow_auto_topic_creation"]) \
                and self.broker.config.get("auto.create.topics.enable"):
            created = await self.broker.auto_create_topics(unknown)
        topics = []
        for name in names:
            states = md.partitions_of(name)
            if not states or name in refused:
                # UNKNOWN_TOPIC_OR_PARTITION, or LEADER_NOT_AVAILABLE while an auto-created
                # topic gets its leaders (clients ask again), or why creation failed
                code = created.get(name, 3)
                topics.append({"error_code": code, "name": name, "partitions": []})
                continue
            parts = []
            for st in states:
                leader = st["leader"] if st["leader"] in live else -1
                parts.append({
                    "error_code": 0 if leader >= 0 else 5,  # LEADER_NOT_AVAILABLE
                    "partition_index": st["partition"], "leader_id": leader, "leader_epoch": st["leader_epoch"],
                    "replica_nodes": list(st["replicas"]), "isr_nodes": list(st["isr"]),
                    "offline_replicas": [r for r in st["replicas"] if r not in live],
                })
            topics.append({"error_code": 0, "name": name, "is_internal": name.startswith("__"), "partitions": parts})
        brokers = [{"node_id": b["id"], "host": b["host"], "port": b["port"]} for b in self._brokers(conn)]
        return {"brokers": brokers, "cluster_id": self.broker.cluster_id or None,
                "controller_id": md.controller_id, "topics": topics}

    async def describe_cluster(self, version: int, req: dict, conn: Connection) -> dict:
        brokers = [{"broker_id": b["id"], "host": b["host"], "port": b["port"]} for b in self._brokers(conn)]
        return {"error_code": 0, "endpoint_type": 1, "cluster_id": self.broker.cluster_id,
                "controller_id": self.broker.metadata.controller_id, "brokers": brokers}

    async def init_producer_id(self, version: int, req: dict, conn: Connection) -> dict:
        """Idempotent producers get a new producer id with epoch 0, as Kafka does when the
        transactional id is null (also when an older id and epoch are given, v3+)."""
        try:
            answer = await self.broker.h_init_producer_id({"transactional_id": req["transactional_id"]})
        except KafkaError as exc:
            return {"error_code": exc.code.code, "producer_id": -1, "producer_epoch": -1}
        return {"error_code": 0, "producer_id": answer["producer_id"], "producer_epoch": answer["producer_epoch"]}

    # -- produce ------------------------------------------------------------------------
    async def produce(self, version: int, req: dict, conn: Connection) -> dict | None:
        acks = req["acks"]
        flat = [{"topic": t["name"], "partition": p["index"], "records": p["records"]}
                for t in req["topic_data"] for p in t["partition_data"]]
        if acks not in (-1, 0, 1):
            exc: KafkaError = InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
            results = [{"topic": m["topic"], "partition": m["partition"], "base_offset": -1, "log_start_offset": -1,
                        "error_code": exc.code.code, "message": exc.message} for m in flat]
        else:
            ok = [m for m in flat if m["records"] is not None]
            results = await self.rm.produce({"acks": acks, "timeout_ms": max(0, req["timeout_ms"]), "partitions": ok})
            for m in flat:
                if m["records"] is None:
                    results.append({"topic": m["topic"], "partition": m["partition"], "base_offset": -1,
                                    "log_start_offset": -1, "error_code": 87, "message": "no records"})  # INVALID_RECORD
        if acks == 0:
            # Kafka answers nothing; on an error it closes the connection so that the
            # client refreshes its metadata.
            if any(r["error_code"] for r in results):
                conn.close_after = True
            return None
        responses = []
        for topic, entries in _group(results).items():
            responses.append({"name": topic, "partition_responses": [{
                "index": e["partition"], "error_code": e["error_code"], "base_offset": e["base_offset"],
                "log_append_time_ms": -1, "log_start_offset": e["log_start_offset"],
                "error_message": e.get("message") or None,
            } for e in entries]})
        return {"responses": responses}

    # -- fetch --------------------------------------------------------------------------
    async def fetch(self, version: int, req: dict, conn: Connection) -> dict:
        parts = [{"topic": t["topic"], "partition": p["partition"], "fetch_offset": p["fetch_offset"],
                  "current_leader_epoch": p["current_leader_epoch"], "partition_max_bytes": max(0, p["partition_max_bytes"])}
                 for t in req["topics"] for p in t["partitions"]]
        if req["replica_id"] >= 0:
            # Replication stays on the brokers' own protocol; a replica fetch here is
            # refused as Kafka refuses one without the ClusterAction permission.
            exc = ClusterAuthorizationFailedError(
                "replica fetches are served on the inter-broker (msgpack/HTTP) listener only")
            results = [{**m, "error_code": exc.code.code, "high_watermark": -1, "log_start_offset": -1, "records": None}
                       for m in parts]
        else:
            results = await self.rm.fetch({
                "replica_id": -1, "max_wait_ms": min(max(0, req["max_wait_ms"]), MAX_WAIT_MS),
                "min_bytes": max(0, req["min_bytes"]), "max_bytes": max(0, req["max_bytes"]), "partitions": parts,
            })
        responses = []
        for topic, entries in _group(results).items():
            responses.append({"topic": topic, "partitions": [{
                "partition_index": e["partition"], "error_code": e["error_code"],
                "high_watermark": e["high_watermark"], "last_stable_offset": e["high_watermark"],
                "log_start_offset": e["log_start_offset"], "aborted_transactions": None,
                "preferred_read_replica": -1, "records": e["records"] if e["error_code"] == 0 else None,
            } for e in entries]})
        return {"error_code": 0, "session_id": 0, "responses": responses}

    # -- offsets --------------------------------------------------------------------------
    async def list_offsets(self, version: int, req: dict, conn: Connection) -> dict:
        parts = [{"topic": t["name"], "partition": p["partition_index"], "timestamp": p["timestamp"],
                  "current_leader_epoch": p["current_leader_epoch"]}
                 for t in req["topics"] for p in t["partitions"]]
        # Replication stays on the inter-broker listener: here everyone is a consumer (-1),
        # whatever replica id it claims (a replica's view needs the cluster credential).
        results = self.rm.list_offsets({"replica_id": -1, "partitions": parts})
        topics = []
        for topic, entries in _group(results).items():
            topics.append({"name": topic, "partitions": [{
                "partition_index": e["partition"], "error_code": e["error_code"],
                "old_style_offsets": [e["offset"]] if e["error_code"] == 0 and e["offset"] >= 0 else [],
                "timestamp": e.get("timestamp", -1), "offset": e["offset"], "leader_epoch": e["leader_epoch"],
            } for e in entries]})
        return {"topics": topics}

    async def offset_for_leader_epoch(self, version: int, req: dict, conn: Connection) -> dict:
        parts = [{"topic": t["topic"], "partition": p["partition"], "current_leader_epoch": p["current_leader_epoch"],
                  "leader_epoch": p["leader_epoch"]}
                 for t in req["topics"] for p in t["partitions"]]
        results = self.rm.offsets_for_leader_epoch({"replica_id": -1, "partitions": parts})  # as list_offsets
        topics = []
        for topic, entries in _group(results).items():
            topics.append({"topic": topic, "partitions": [{
                "error_code": e["error_code"], "partition": e["partition"],
                "leader_epoch": e["leader_epoch"], "end_offset": e["end_offset"],
            } for e in entries]})
        return {"topics": topics}

