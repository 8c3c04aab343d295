"""The Kafka listener's codec: Kafka's requests into the request layer's types, and back.

Every handler takes the decoded request (a dict keyed by the snake_case names of
:mod:`minikafka.protocol.kafka.apis`), builds the typed request of
:mod:`minikafka.protocol.rpc.types`, calls the one handler of
:mod:`minikafka.broker.apis` that the msgpack listener calls too, and shapes the typed
answer as the API version wants it; ``None`` when Kafka sends no answer (Produce with
acks=0).  So both listeners follow the same rules: error codes are Kafka's numbers,
consumers never read at or above the high watermark, leader epochs fence stale requests.
What is Kafka's own lives here: version differences, SASL on the connection, and the
replica requests this listener refuses (replication stays on the msgpack listener).
"""
from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Iterable, Protocol, TypeVar

from ...errors import (
    RECORD_VALIDATION_ERRORS,
    ClusterAuthorizationFailedError,
    FetchSessionIdNotFoundError,
    IllegalSaslStateError,
    InvalidFetchSessionEpochError,
    InvalidRecordError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    KafkaError,
    ReplicaNotAvailableError,
    UnknownTopicIdError,
    UnsupportedSaslMechanismError,
)
from ...metric_names import REQUEST_ERRORS
from ...protocol.kafka import apis
from ...protocol.kafka.apis import KafkaApi
from ...protocol.kafka.error_response import error_response
from ...protocol.kafka.frames import RequestHeader, supported_versions
from ...protocol.topic_ids import ZERO_TOPIC_ID, from_uuid, to_uuid
from ...protocol.rpc.types import (
    FetchForgottenPartition,
    FetchPartition,
    FetchRequest,
    ListOffsetsPartition,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpochRequest,
    ProducePartition,
    ProduceRequest,
)
from ..apis.layer import RequestLayer
from ..connection_policy import request_failure
from ..metrics import Metrics
from ..security import Security
from ..services import Clock
from .acls import KafkaAcls
from .connection import Connection
from .admin import KafkaAdmin
from .groups import KafkaGroupHandlers
from .transactions import KafkaTransactionHandlers
from . import topic_ids

log = logging.getLogger(__name__)

MAX_WAIT_MS = 300_000


# What a client may send on a SASL listener before it has authenticated.
PRE_AUTHENTICATION_APIS = frozenset({apis.API_VERSIONS.key, apis.SASL_HANDSHAKE.key, apis.SASL_AUTHENTICATE.key})

# Kafka refuses a partition it has no metadata for (or may not describe) before reading any
# log, with the answer's defaults: an empty list of aborted transactions, not null
_REFUSED_BEFORE_READING = ("UNKNOWN_TOPIC_OR_PARTITION", "TOPIC_AUTHORIZATION_FAILED")


def fetched_partition(e: Any) -> dict:
    """One partition of a consumer's Fetch answer as Kafka writes it.  A refused partition
    carries no offsets (high watermark, last stable offset and log start -1: its read
    failed) and no records; its aborted transactions are null, or an empty list when Kafka
    refused it before reading (unknown topic or partition, not authorized)."""
    refused = e.error is not None
    if e.aborted_transactions is not None:
        aborted: list[dict] | None = [{"producer_id": a.producer_id, "first_offset": a.first_offset}
                                      for a in e.aborted_transactions]
    else:
        aborted = [] if refused and e.error.code.name in _REFUSED_BEFORE_READING else None
    return {"partition_index": e.partition, "error_code": _code(e.error),
            "high_watermark": e.high_watermark,
            "last_stable_offset": e.last_stable_offset if e.last_stable_offset >= 0 else e.high_watermark,
            "log_start_offset": -1 if refused else e.log_start_offset,
            "aborted_transactions": aborted, "preferred_read_replica": -1,
            "records": e.records if not refused and e.records is not None else b""}


class _PerTopic(Protocol):
    @property
    def topic(self) -> str: ...


E = TypeVar("E", bound=_PerTopic)


def _record_errors(exc: KafkaError | None) -> list[dict]:
    """ProduceResponse v8+ ``record_errors`` (KIP-467): the records of a refused batch that
    caused the refusal, by their index in the batch (empty for any other answer)."""
    if exc is None or not exc.record_errors:
        return []
    return [{"batch_index": i, "batch_index_error_message": m} for i, m in exc.record_errors]


def _code(exc: KafkaError | None) -> int:
    return 0 if exc is None else exc.code.code


def _by_topic(entries: Iterable[E], make: Callable[[E], dict]) -> dict[str, list[dict]]:
    """Entries with a ``topic``, made into Kafka's per-topic lists (in first-seen order)."""
    out: dict[str, list[dict]] = {}
    for e in entries:
        out.setdefault(e.topic, []).append(make(e))
    return out


class KafkaHandlers:
    """One broker's Kafka API handlers."""

    def __init__(self, layer: RequestLayer, security: Security, metrics: Metrics, clock: Clock) -> None:
        self.layer = layer
        self.security = security
        self.metrics = metrics
        self.clock = clock
        self.admin = KafkaAdmin(layer.admin, layer.data, layer.control)
        self.groups = KafkaGroupHandlers(layer.groups, layer.find_coordinator)
        self.acls = KafkaAcls(layer.acls)
        self.txn = KafkaTransactionHandlers(layer)
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
            apis.OFFSET_DELETE.key: self.groups.offset_delete,
            apis.ELECT_LEADERS.key: self.admin.elect_leaders,
            apis.ALTER_PARTITION_REASSIGNMENTS.key: self.admin.alter_partition_reassignments,
            apis.LIST_PARTITION_REASSIGNMENTS.key: self.admin.list_partition_reassignments,
            apis.DESCRIBE_LOG_DIRS.key: self.admin.describe_log_dirs,
            apis.DESCRIBE_ACLS.key: self.acls.describe_acls,
            apis.CREATE_ACLS.key: self.acls.create_acls,
            apis.DELETE_ACLS.key: self.acls.delete_acls,
            apis.TXN_OFFSET_COMMIT.key: self.groups.txn_offset_commit,
        }
        self.table.update({  # transactions
            apis.INIT_PRODUCER_ID.key: self.txn.init_producer_id,
            apis.ADD_PARTITIONS_TO_TXN.key: self.txn.add_partitions_to_txn,
            apis.ADD_OFFSETS_TO_TXN.key: self.txn.add_offsets_to_txn,
            apis.END_TXN.key: self.txn.end_txn,
            apis.DESCRIBE_TRANSACTIONS.key: self.txn.describe_transactions,
            apis.LIST_TRANSACTIONS.key: self.txn.list_transactions,
        })
        assert set(self.table) == set(apis.APIS), set(self.table) ^ set(apis.APIS)

    async def handle(self, api: KafkaApi, header: RequestHeader, body: dict, conn: Connection) -> dict | None:
        """Run the handler.  A failure of the whole request is answered as the connection
        policy says (:func:`~..connection_policy.request_failure`): ZooKeeper that cannot
        answer is REQUEST_TIMED_OUT in the request's own shape (every entry, or the
        top-level error code), the connection kept, as on the msgpack listener; any other
        error, and a bug (logged), closes the connection."""
        started = self.clock.monotonic()
        try:
            return await self.table[api.key](header.api_version, body, conn)
        except Exception as exc:  # noqa: BLE001 - the policy tells errors from bugs
            failure = request_failure(api.name, exc)
            if failure.bug:
                log.exception("Kafka %s v%d from %s failed", api.name, header.api_version, conn.peer)
            else:
                log.info("Kafka %s v%d from %s: %s", api.name, header.api_version, conn.peer, failure.error)
            acks_0 = api.key == apis.PRODUCE.key and body.get("acks") == 0  # no answer: the close tells
            if failure.keeps_connection and not acks_0:
                answer = error_response(api, header.api_version, body, failure.error.code.code,
                                        failure.error.message)
                if answer is not None:
                    self.metrics.count(REQUEST_ERRORS, error=failure.error.code.name)
                    return answer
            conn.close_after = True
            return None
        finally:
            self.metrics.observe_request(f"kafka_{api.name}", self.clock.monotonic() - started)

    # -- cluster ----------------------------------------------------------------------
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
            conn.authenticate(self.security.plain(req["auth_bytes"]))
        except KafkaError as exc:
            log.warning("Kafka connection from %s: %s", conn.peer, exc)
            conn.close_after_answer = True
            return answer(exc)
        return answer(None)

    async def metadata(self, version: int, req: dict, conn: Connection) -> dict:
        wanted = req["topics"]
        md = self.layer.cluster.metadata
        by_id: list[str] = []  # v12+: topics named by id (KIP-516), as Kafka's KafkaApis reads them
        for t in wanted or ():
            topic_id = from_uuid(t.get("topic_id"))
            if version < 12 and (t["name"] is None or topic_id != ZERO_TOPIC_ID):
                raise InvalidRequestError(f"Metadata v{version} names topics by name only (topic ids: v12+)")
            if topic_id != ZERO_TOPIC_ID:
                by_id.append(topic_id)
            elif t["name"] is None:
                raise InvalidRequestError("a topic named by neither name nor id")
        unknown_ids = [i for i in dict.fromkeys(by_id) if md.topic_name(i) is None]
        names: list[str] | None
        if by_id:  # the names are left aside, no topic is created
            names = [n for n in dict.fromkeys(md.topic_name(i) for i in by_id) if n is not None]
        else:
            # v0: an empty list means every topic; v1+: null does
            names = None if wanted is None or (version == 0 and not wanted) else [t["name"] for t in wanted]
        answer = await self.layer.cluster.metadata_(MetadataRequest(
            topics=names, allow_auto_topic_creation=not by_id and (version < 4 or req["allow_auto_topic_creation"])),
            conn.context())
        topics: list[dict[str, Any]] = [{"error_code": UnknownTopicIdError.code.code, "name": None,
                                         "topic_id": to_uuid(i), "partitions": []} for i in unknown_ids]
        alive = {b.id for b in answer.brokers}
        for t in answer.topics:
            if t.error is not None:
                # UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, or LEADER_NOT_AVAILABLE
                # while an auto-created topic gets its leaders (clients ask again); a topic named
                # by id keeps its id and loses its name (Kafka: ids are not secret, names are)
                topics.append({"error_code": _code(t.error), "name": None if by_id else t.name,
                               "topic_id": to_uuid(md.topic_id(t.name) if by_id else ZERO_TOPIC_ID),
                               "partitions": []})
                continue
            partitions = []
            for p in t.partitions:
                error, replicas, isr = p.error, p.replicas, p.isr
                if version == 0:
                    # As Kafka's ZooKeeper-mode broker answers v0 (KafkaApis' errorUnavailableEndpoints):
                    # replicas on brokers that are not alive are left out, and a partition
                    # with a leader but such a replica is REPLICA_NOT_AVAILABLE.
                    replicas, isr = [r for r in replicas if r in alive], [r for r in isr if r in alive]
                    if error is None and (len(replicas) < len(p.replicas) or len(isr) < len(p.isr)):
                        error = ReplicaNotAvailableError(f"brokers {sorted(set(p.replicas) - alive)} are not available")
                partitions.append({
                    "error_code": _code(error), "partition_index": p.partition,
                    "leader_id": p.leader if p.error is None else -1, "leader_epoch": p.leader_epoch,
                    "replica_nodes": replicas, "isr_nodes": isr, "offline_replicas": p.offline_replicas})
            topics.append({"error_code": 0, "name": t.name, "topic_id": to_uuid(t.topic_id),
                           "is_internal": t.name.startswith("__"), "partitions": partitions})
        return {"brokers": [{"node_id": b.id, "host": b.host, "port": b.port} for b in answer.brokers],
                "cluster_id": answer.cluster_id or None, "controller_id": answer.controller_id, "topics": topics}

    async def describe_cluster(self, version: int, req: dict, conn: Connection) -> dict:
        cluster = self.layer.cluster
        brokers = [{"broker_id": b.id, "host": b.host, "port": b.port} for b in cluster.endpoints.brokers(conn.context())]
        return {"error_code": 0, "endpoint_type": 1, "cluster_id": cluster.cluster_id(),
                "controller_id": cluster.metadata.controller_id, "brokers": brokers}

    # -- produce ------------------------------------------------------------------------
    async def produce(self, version: int, req: dict, conn: Connection) -> dict | None:
        acks = req["acks"]
        flat = [(t["name"], p["index"], p["records"]) for t in req["topic_data"] for p in t["partition_data"]]
        results: list[dict] = []
        if acks not in (-1, 0, 1):
            exc: KafkaError = InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
            results = [{"topic": t, "index": p, "error_code": exc.code.code, "error_message": None,
                        "base_offset": -1, "log_start_offset": -1} for t, p, _ in flat]
        else:
            ok = [ProducePartition(topic=t, partition=p, records=r) for t, p, r in flat if r is not None]
            answer = await self.layer.data.produce(ProduceRequest(acks=acks, timeout_ms=max(0, req["timeout_ms"]),
                                                                  partitions=ok), conn.context())
            # as Kafka: an error message only with a record validation refusal (and its log start)
            results = [{"topic": e.topic, "index": e.partition, "error_code": _code(e.error),
                        "error_message": e.error.message if isinstance(e.error, RECORD_VALIDATION_ERRORS) else None,
                        "base_offset": e.base_offset,
                        "log_start_offset": e.log_start_offset, "log_append_time_ms": e.log_append_time,
                        "record_errors": _record_errors(e.error)}
                       for e in answer.partitions]
            missing = InvalidRecordError("no records")
            results += [{"topic": t, "index": p, "error_code": _code(missing), "error_message": missing.message,
                         "base_offset": -1, "log_start_offset": -1} for t, p, r in flat if r is None]
        if acks == 0:
            # Kafka answers nothing; on an error it closes the connection so that the
            # client refreshes its metadata.
            if any(r["error_code"] for r in results):
                conn.close_after = True
            return None
        by_topic: dict[str, list[dict]] = {}
        for r in results:
            topic = r.pop("topic")
            r.setdefault("log_append_time_ms", -1)
            by_topic.setdefault(topic, []).append(r)
        return {"responses": [{"name": t, "partition_responses": ps} for t, ps in by_topic.items()]}

    # -- fetch --------------------------------------------------------------------------
    async def fetch(self, version: int, req: dict, conn: Connection) -> dict:
        """v13+ names topics by id (KIP-516): translated to names and back around the
        layer's fetch (:mod:`.topic_ids`)."""
        if version < 13:
            return await self._fetch_by_name(version, req, conn)
        md = self.layer.cluster.metadata
        by_name, unknown = topic_ids.fetch_request_by_name(req, md)
        return topic_ids.fetch_response_by_id(await self._fetch_by_name(version, by_name, conn), unknown, md)

    async def _fetch_by_name(self, version: int, req: dict, conn: Connection) -> dict:
        parts = [FetchPartition(topic=t["topic"], partition=p["partition"], fetch_offset=p["fetch_offset"],
                                current_leader_epoch=p["current_leader_epoch"],
                                partition_max_bytes=max(0, p["partition_max_bytes"]))
                 for t in req["topics"] for p in t["partitions"]]
        if req["replica_id"] >= 0:
            # Replication stays on the brokers' own protocol; a replica fetch here is
            # refused as Kafka refuses one without the ClusterAction permission.
            refused = ClusterAuthorizationFailedError(
                "replica fetches are served on the inter-broker (msgpack/HTTP) listener only")
            topics = _by_topic(parts, lambda m: {
                "partition_index": m.partition, "error_code": _code(refused),
                "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                "aborted_transactions": None, "preferred_read_replica": -1, "records": b""})
        else:
            # v7+: incremental fetch sessions (KIP-227), the same cache as the followers'
            session_id, session_epoch = req.get("session_id", 0), req.get("session_epoch", -1)
            if session_id < 0 or session_epoch < -1:
                # a session id Kafka never hands out, or an epoch below FINAL_EPOCH
                return {"error_code": _code(InvalidFetchSessionEpochError(
                    f"session id {session_id}, epoch {session_epoch}")), "session_id": 0, "responses": []}
            forgotten = [FetchForgottenPartition(topic=t["topic"], partition=p)
                         for t in req.get("forgotten_topics_data") or () for p in t["partitions"] if p >= 0]
            try:
                answer = await self.layer.data.fetch(FetchRequest(
                    replica_id=-1, max_wait_ms=min(max(0, req["max_wait_ms"]), MAX_WAIT_MS),
                    min_bytes=max(0, req["min_bytes"]), max_bytes=max(0, req["max_bytes"]),
                    isolation_level=1 if req.get("isolation_level", 0) == 1 else 0, partitions=parts,
                    session_id=session_id, session_epoch=session_epoch, forgotten=forgotten),
                    conn.context())
            except (FetchSessionIdNotFoundError, InvalidFetchSessionEpochError) as exc:
                # the whole request is refused: the consumer starts over with a full fetch
                return {"error_code": _code(exc), "session_id": 0, "responses": []}
            topics = _by_topic(answer.partitions, fetched_partition)
            return {"error_code": 0, "session_id": answer.session_id,
                    "responses": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
        return {"error_code": 0, "session_id": 0,
                "responses": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}

    # -- offsets --------------------------------------------------------------------------
    async def list_offsets(self, version: int, req: dict, conn: Connection) -> dict:
        parts = [ListOffsetsPartition(topic=t["name"], partition=p["partition_index"], timestamp=p["timestamp"],
                                      current_leader_epoch=p["current_leader_epoch"])
                 for t in req["topics"] for p in t["partitions"]]
        # Replication stays on the inter-broker listener: here everyone is a consumer (-1),
        # whatever replica id it claims (a replica's view needs the cluster credential).
        answer = await self.layer.data.list_offsets(ListOffsetsRequest(
            replica_id=-1, isolation_level=1 if req.get("isolation_level", 0) == 1 else 0, partitions=parts),
            conn.context())
        topics = _by_topic(answer.partitions, lambda e: {
            "partition_index": e.partition, "error_code": _code(e.error),
            "old_style_offsets": [e.offset] if e.error is None and e.offset >= 0 else [],
            "timestamp": e.timestamp, "offset": e.offset, "leader_epoch": e.leader_epoch})
        return {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    async def offset_for_leader_epoch(self, version: int, req: dict, conn: Connection) -> dict:
        parts = [OffsetForLeaderPartition(topic=t["topic"], partition=p["partition"],
                                          current_leader_epoch=p["current_leader_epoch"], leader_epoch=p["leader_epoch"])
                 for t in req["topics"] for p in t["partitions"]]
        answer = await self.layer.data.offsets_for_leader_epoch(  # everyone is a consumer, as in list_offsets
            OffsetsForLeaderEpochRequest(replica_id=-1, partitions=parts), conn.context())
        topics = _by_topic(answer.partitions, lambda e: {
            "error_code": _code(e.error), "partition": e.partition,
            "leader_epoch": e.leader_epoch, "end_offset": e.end_offset})
        return {"topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
