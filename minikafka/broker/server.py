"""The broker: its ZooKeeper registration, its request dispatch and its timers.

``POST /v1/<api>`` takes a msgpack map and answers a msgpack map (see
docs/protocol.md).  Every answer carries ``error_code``/``error``/``message``;
bad input never changes stored state and never stops the broker.
"""
from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import json
import logging
import time
from typing import Any, Awaitable, Callable

from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, OperationTimeoutError, SessionExpiredError

from ..config import BrokerConfig, validate_topic_config
from .. import errors
from ..auth.acls import ANONYMOUS, CLUSTER_NAME
from ..errors import (
    ClientError,
    ClusterAuthorizationFailedError,
    CoordinatorLoadInProgressError,
    InvalidConfigError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicExceptionError,
    KafkaError,
    NotControllerError,
    ReassignmentInProgressError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from ..protocol import codec
from ..protocol.messages import APIS
from ..replication import rules
from ..zk import layout
from ..zk.session import NodeExistsError, ZkSession
from ..controller.controller import ControllerHost, KafkaController
from ..controller.core import ControlledShutdown, PreferredElection
from ..web.view import BrokerView
from .coordinator import GroupCoordinator
from .fetcher import FetcherManager
from .acl_handlers import AclHandlers
from .acl_store import AclStore
from .group_handlers import PEER, GroupHandlers
from .security import Security, current_host, current_principal, refusal
from .kafka.server import KafkaServer
from .listeners import Listeners
from .producer_ids import ProducerIdManager
from .metadata_cache import MetadataCache
from ..metric_names import (CLUSTER_AUTHORIZATION_FAILURES, FORGED_CONTROLLER_EPOCHS, REQUEST_ERRORS,
                            STALE_BROKER_EPOCH_REQUESTS)
from .metrics import Metrics, MetricSources, render_prometheus
from .replica_manager import ReplicaManager
from .ports import Ports, real_ports
from . import cluster_auth
from .config_changes import ConfigChangeListener
from .topic_admin import CONFIG_SOURCE_NAMES, TopicAdmin, check_partition_count

log = logging.getLogger(__name__)

# kazoo's "ZooKeeper cannot answer now" errors (a retriable condition, not a bug)
ZK_UNREACHABLE = (ConnectionLoss, SessionExpiredError, ConnectionClosedError, OperationTimeoutError)
ZK_ACL_USER = "minikafka-broker"  # the digest user of zookeeper.set.acl (docs/security.md)


class Broker:
    """One broker: replica manager, fetchers, metadata cache, controller elector, HTTP server."""

    def __init__(self, config: BrokerConfig, ports: Ports | None = None) -> None:
        """``ports`` are the clock, transport, ZooKeeper session, storage and randomness the
        broker runs on (:mod:`.ports`); the real ones by default."""
        self.config = config
        self.broker_id = config.broker_id
        self.ports = ports if ports is not None else real_ports(config)
        self.clock = self.ports.clock
        self.random = self.ports.random
        self.transport = self.ports.transport
        self.storage = self.ports.storage(config)
        self.metrics = Metrics()
        self.events: collections.deque[dict] = collections.deque(maxlen=2000)
        self.metadata = MetadataCache()
        self.zk: ZkSession = self.ports.coordinator(config, (ZK_ACL_USER, config.cluster_secret)
                                                    if config.get("zookeeper.set.acl") and config.cluster_secret else None)
        self.replica_manager = ReplicaManager(self)
        self.fetchers = FetcherManager(self)
        self.listeners = Listeners(config)
        self.security = Security(config, self.metrics)  # raises INVALID_CONFIG on bad security settings
        self.acls = AclStore(self.zk, self.security.authorizer,
                             on_reload=lambda n: self.record_event("acls_loaded", f"broker {self.broker_id}: {n} ACLs"))
        self.topic_admin = TopicAdmin(self)  # config and partition changes, for both protocols
        self.acl_api = AclHandlers(self)
        self.kafka = KafkaServer(self)
        self.producer_ids = ProducerIdManager(self.zk, self.broker_id)
        self.config_changes = ConfigChangeListener(self)
        self.coordinator = GroupCoordinator(self)
        self.groups_api = GroupHandlers(self.coordinator)
        self.broker_epoch = -1
        self._first_broker_epoch = -1  # czxid of this process's first registration
        self._verified_controller_epoch = -1  # highest controller epoch checked against ZooKeeper
        self.cluster_id = ""
        self.kafka_controller = KafkaController(ControllerHost(
            broker_id=self.broker_id, config=config, zk=self.zk, record_event=self.record_event,
            count=self.metrics.count, call=self.call, stopping=self._stopping_now,
            now_ms=lambda: int(self.clock.time() * 1000)))
        self._tasks: list[asyncio.Task] = []
        self._stopping = asyncio.Event()
        self._metadata_changed = asyncio.Event()
        self.handlers: dict[str, Callable[[dict], Awaitable[dict]]] = {
            "metadata": self.h_metadata, "produce": self.h_produce, "fetch": self.h_fetch,
            "list_offsets": self.h_list_offsets, "create_topics": self.h_create_topics,
            "leader_and_isr": self.h_leader_and_isr, "update_metadata": self.h_update_metadata,
            "stop_replica": self.h_stop_replica, "offsets_for_leader_epoch": self.h_offsets_for_leader_epoch,
            "replica_state": self.h_replica_state, "api_versions": self.h_api_versions,
            "events": self.h_events, "controlled_shutdown": self.h_controlled_shutdown,
            "elect_leaders": self.h_elect_leaders, "delete_topics": self.h_delete_topics,
            "alter_partition_reassignments": self.h_alter_partition_reassignments,
            "init_producer_id": self.h_init_producer_id,
            "create_partitions": self.h_create_partitions, "delete_records": self.h_delete_records,
            "describe_configs": self.h_describe_configs,
            "alter_configs": self.h_alter_configs,
            **self.groups_api.handlers(),
            **self.acl_api.handlers(),
        }
        assert set(self.handlers) == set(APIS), set(APIS) ^ set(self.handlers)

    @property
    def controller(self) -> KafkaController | None:
        """This broker's controller while it is the active controller, else None."""
        return self.kafka_controller if self.kafka_controller.active else None

    def _stopping_now(self) -> bool:
        return self._stopping.is_set()

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        """Call another broker's msgpack API through the transport."""
        return await self.transport.call(host, port, api, body, timeout_s)

    def web_view(self) -> BrokerView:
        """What the dashboard routes may see of this broker."""
        return BrokerView(
            broker_id=self.broker_id, advertised=self.config.advertised, metadata=lambda: self.metadata,
            broker_endpoints=lambda live: self.listeners.brokers(live, self.broker_id),
            kafka_endpoints=lambda: self.listeners.kafka_endpoints(self.broker_id),
            cluster_id=lambda: self.cluster_id,
            controller_epoch=lambda: ctl.epoch if (ctl := self.controller) is not None else None,
            local_replicas=lambda: self.replica_state({"partitions": None, "checksum_upto": None}),
            local_events=lambda: list(self.events), call=self.call,
            prometheus=functools.partial(render_prometheus, self.metrics, MetricSources(
                info=lambda: {"broker_id": self.broker_id, "storage": self.config.storage, "cluster_id": self.cluster_id},
                replicas=lambda: self.replica_manager.partitions,
                min_insync_replicas=lambda topic: int(self.replica_manager.setting(topic, "min.insync.replicas")),
                controller_epoch=lambda: self.metadata.controller_epoch,
                live_brokers=lambda: len(self.metadata.brokers),
                cluster_counts=self.kafka_controller.cluster_counts,
                controller_queue_size=lambda: self.kafka_controller.queue_size,
                zookeeper_watches=lambda: len(self.zk.watches),
                acls=lambda: len(self.security.authorizer.bindings),
                groups=self.coordinator.list_groups)),
            acls_enabled=self.security.enabled)

    # -- events --------------------------------------------------------------------
    def record_event(self, kind: str, text: str, **extra: Any) -> None:
        """Remember an event for the timeline and log it."""
        self.events.append({"ts": self.clock.time(), "broker": self.broker_id, "kind": kind, "text": text, **extra})
        log.info("[%s] %s", kind, text)

    # -- lifecycle -----------------------------------------------------------------
    async def start(self) -> None:
        if self.config.get("zookeeper.set.acl") and self.config.cluster_secret is None:
            raise ClientError("zookeeper.set.acl=true needs the cluster credential "
                              "(--cluster-secret-file or MINIKAFKA_CLUSTER_SECRET)")
        await self.transport.serve(self)
        await self.zk.start()
        self.zk.on_state_change(self._on_zk_state)
        for path in layout.PERSISTENT_PATHS:
            await self.zk.ensure_path(path)
        await self._load_cluster_id()
        await self.config_changes.start()
        if self.security.enabled:
            await self.acls.start()
        await self.register()
        self.kafka_controller.start()
        self.coordinator.start()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._every(self.config.get("replica.lag.time.max.ms") / 2000.0,
                                                        self.replica_manager.shrink_isr_check)))
        self._tasks.append(loop.create_task(self._every(self.config.get("replica.high.watermark.checkpoint.interval.ms") / 1000.0,
                                                        self.replica_manager.checkpoint_hws_in_background)))
        self._tasks.append(loop.create_task(self._every(self.config.get("log.retention.check.interval.ms") / 1000.0,
                                                        self.replica_manager.retention_check)))
        if self.config.get("log.cleaner.enable"):
            self._tasks.append(loop.create_task(self._every(self.config.get("log.cleaner.backoff.ms") / 1000.0,
                                                            self.replica_manager.clean_logs)))
        self.record_event("broker_started", f"broker {self.broker_id} listening on {self.listeners.describe()} "
                                            f"(storage {self.config.storage}, epoch {self.broker_epoch})")

    async def _load_cluster_id(self) -> None:
        got = await self.zk.get(layout.CLUSTER_ID)
        if got is None:
            try:
                await self.zk.create(layout.CLUSTER_ID, json.dumps({"version": "1", "id": "%022x" % self.random.getrandbits(88)}).encode(), makepath=True)
            except NodeExistsError:
                pass
            got = await self.zk.get(layout.CLUSTER_ID)
        self.cluster_id = json.loads(got[0])["id"] if got else ""

    async def register(self) -> None:
        """Create the ephemeral /brokers/ids/N; its czxid is this registration's broker epoch."""
        host, port = self.config.advertised
        info = layout.BrokerInfo(self.broker_id, host, port, storage=self.config.storage,
                                 external=self.config.advertised_external, kafka=self.config.advertised_kafka,
                                 kafka_external=self.config.advertised_kafka_external,
                                 log_since=self._first_broker_epoch, protocols=self.security.protocols)
        path = layout.broker_path(self.broker_id)
        # A registration left by this id's previous process vanishes when its session
        # expires; wait that long before concluding that another broker holds the id.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.get("zookeeper.session.timeout.ms") / 1000.0 + 2.0
        while True:
            try:
                await self.zk.create(path, info.encode(int(self.clock.time() * 1000)), ephemeral=True)
                break
            except NodeExistsError:
                got = await self.zk.get(path)
                if got is not None and got[1].ephemeralOwner == self.zk.session_id:
                    break
                if loop.time() > deadline:
                    raise ClientError(f"broker id {self.broker_id} is already registered in ZooKeeper "
                                      f"({got[0].decode() if got else 'just now'}): another broker runs with this id") from None
                await asyncio.sleep(0.2)
        got = await self.zk.get(path)
        self.broker_epoch = got[1].czxid if got else -1
        if self._first_broker_epoch < 0:
            self._first_broker_epoch = self.broker_epoch

    def _on_zk_state(self, state: str) -> None:
        if state == "LOST":
            self.record_event("zk_session_lost", f"broker {self.broker_id} lost its ZooKeeper session")
            self.kafka_controller.session_lost()
        elif state == "CONNECTED" and not self._stopping.is_set():
            asyncio.get_running_loop().create_task(self._reregister())

    async def _reregister(self) -> None:
        try:
            stat = await self.zk.exists(layout.broker_path(self.broker_id))
            if stat is None:
                await self.register()
                self.record_event("broker_registered", f"broker {self.broker_id} re-registered with epoch {self.broker_epoch}")
                self.kafka_controller.session_regained()
        except Exception as exc:
            log.warning("re-registration failed: %s", exc)

    async def _every(self, interval_s: float, fn: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                result = fn()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("periodic task %s failed", getattr(fn, "__name__", fn))

    async def stop(self) -> None:
        """Clean shutdown: stop fetchers and timers, checkpoint HWs, leave ZooKeeper."""
        self._stopping.set()
        for t in self._tasks:
            t.cancel()
        await self.kafka.stop()
        await self.config_changes.stop()
        await self.acls.stop()
        await self.coordinator.stop()
        await self.fetchers.stop()
        await self.kafka_controller.stop()
        self.replica_manager.cancel_isr_writes()
        self.replica_manager.checkpoint_hws()
        self.replica_manager.produce_purgatory.wake_all()
        self.replica_manager.fetch_purgatory.wake_all()
        try:
            await self.zk.stop()
        except Exception:
            pass
        await self.transport.close()
        self.storage.close()

    # -- requests --------------------------------------------------------------------
    async def dispatch(self, api: str, body: bytes, *, remote: str, credential: str | None,
                       principal: Callable[[], Any]) -> bytes:
        """Answer one msgpack request: the transport's entry point.  ``remote`` is the
        caller's address, ``credential`` the cluster credential it sent (or None) and
        ``principal()`` authenticates it.  Every outcome is an answer map, packed."""
        # the principal is this request's only (a keep-alive connection serves several)
        token = current_principal.set(ANONYMOUS)
        try:
            return codec.pack(await self._dispatch(api, body, remote, credential, principal))
        finally:
            current_principal.reset(token)

    async def _dispatch(self, api: str, body: bytes, remote: str, credential: str | None,
                        principal: Callable[[], Any]) -> dict:
        try:
            msg = codec.decode_request(api, body)
            PEER.set(remote)
            current_host.set(remote or "*")
            # as in Kafka, ApiVersions needs no authentication
            current_principal.set(ANONYMOUS if api == "api_versions" else principal())
            if cluster_auth.needs_cluster_action(api, msg) and not cluster_auth.allowed(self.config.cluster_secret, credential):
                self.metrics.count(CLUSTER_AUTHORIZATION_FAILURES)
                log.warning("refused %s from %s: no valid cluster credential", api, remote)
                raise ClusterAuthorizationFailedError(
                    f"{api} is a controller or replica request: it needs the cluster credential")
            started = time.monotonic()
            resp = await self.handlers[api](msg)
            self.metrics.observe_request(api, time.monotonic() - started)
        except KafkaError as exc:
            self.metrics.count(REQUEST_ERRORS, error=exc.code.name)
            resp = codec.error_response(exc)
        except ZK_UNREACHABLE as exc:  # ZooKeeper is down or the session moved: retriable
            self.metrics.count(REQUEST_ERRORS, error="REQUEST_TIMED_OUT")
            resp = codec.error_response(RequestTimedOutError(
                f"{api} needs ZooKeeper, which does not answer ({exc.__class__.__name__}); try again"))
        except Exception as exc:  # a bug: answer UNKNOWN_SERVER_ERROR, keep serving
            log.exception("%s failed", api)
            resp = codec.error_response(UnknownServerError(f"{exc.__class__.__name__}: {exc}"))
        return resp

    # -- handlers ----------------------------------------------------------------------
    async def h_delete_records(self, req: dict) -> dict:
        return codec.ok(partitions=await self.replica_manager.delete_records(req))

    async def h_create_partitions(self, req: dict) -> dict:
        added = await self.topic_admin.create_partitions(req["topic"], req["count"], req["assignments"],
                                                         req["validate_only"])
        if added and not req["validate_only"] and req["timeout_ms"] > 0:
            await self.topic_admin.wait_led(req["topic"], req["count"], req["timeout_ms"])
        return codec.ok(partitions=added)

    async def h_describe_configs(self, req: dict) -> dict:
        if (req["topic"] is None) == (req["broker"] is None):
            raise InvalidRequestError("give either topic or broker")
        if req["topic"] is not None:
            entries = await self.topic_admin.describe_topic(req["topic"])
        else:
            entries = self.topic_admin.describe_broker(req["broker"])
        return codec.ok(configs=[{"name": e.name, "value": e.value, "source": CONFIG_SOURCE_NAMES[e.source],
                                  "documentation": e.documentation, "read_only": e.read_only} for e in entries])

    async def h_alter_configs(self, req: dict) -> dict:
        overlap = set(req["set"]) & set(req["delete"])
        if overlap:
            raise InvalidRequestError(f"configs both set and deleted: {', '.join(sorted(overlap))}")

        def change(current: dict) -> dict:
            new = {k: v for k, v in current.items() if k not in req["delete"]}
            new.update(req["set"])
            return new

        if (req["topic"] is None) == (req["broker"] is None):
            raise InvalidRequestError("give either topic or broker")
        if req["topic"] is not None:
            await self.topic_admin.alter_topic(req["topic"], change, req["validate_only"])
        else:
            await self.topic_admin.alter_broker(req["broker"], change, req["validate_only"])
        return codec.ok()

    async def h_init_producer_id(self, req: dict) -> dict:
        if req["transactional_id"] is not None:
            raise InvalidRequestError("transactions are not supported: only idempotent producers "
                                      "(transactional_id nil) get a producer id")
        try:
            pid = await self.producer_ids.generate()
        except ZK_UNREACHABLE as exc:
            raise CoordinatorLoadInProgressError(
                f"broker {self.broker_id} has no producer ids left and ZooKeeper, which hands out the next block, "
                f"does not answer ({exc.__class__.__name__}); try again") from None
        return codec.ok(producer_id=pid, producer_epoch=0)

    async def h_api_versions(self, req: dict) -> dict:
        return codec.ok(apis=sorted(APIS), broker_id=self.broker_id)

    async def h_metadata(self, req: dict) -> dict:
        md = self.metadata
        names, refused = self.security.describable(req["topics"], md.topics())
        created: dict[str, int] = {t: errors.TopicAuthorizationFailedError.code.code for t in refused}
        unknown = [t for t in names if not md.partitions_of(t) and t not in refused]
        if unknown and req["topics"] and req["allow_auto_topic_creation"] and self.config.get("auto.create.topics.enable"):
            created = await self.auto_create_topics(unknown)
        brokers = self.listeners.brokers(md.brokers, self.broker_id)
        topics = []
        for t in names:
            code = created.get(t)
            if code is not None and (t in refused or not md.partitions_of(t)):
                why = {5: "created; waiting for its leaders", 29: "not authorized to Describe (or Create) it"}
                topics.append({"name": t, "error_code": code, "error": errors.error_name(code), "partitions": [],
                               "message": why.get(code, "auto-creation failed")})
            else:
                topics.append(md.topic_metadata(t))
        return codec.ok(cluster_id=self.cluster_id, controller_id=md.controller_id, controller_epoch=md.controller_epoch,
                        brokers=brokers, topics=topics)

    async def auto_create_topics(self, names: list[str]) -> dict[str, int]:
        """Kafka's auto.create.topics.enable: create ``names`` with the broker defaults
        (num.partitions, default.replication.factor), as a Metadata request naming them does.

        Returns each name's Metadata error code: LEADER_NOT_AVAILABLE (5) when it was
        created or already exists, else the creation's error (e.g. INVALID_TOPIC_EXCEPTION,
        INVALID_REPLICATION_FACTOR when fewer brokers are alive)."""
        resp = await self.h_create_topics({
            "topics": [{"name": n, "num_partitions": self.config.get("num.partitions"),
                        "replication_factor": self.config.get("default.replication.factor"), "config": {},
                        "assignment": None} for n in names],
            "timeout_ms": 0, "validate_only": False})
        return {r["name"]: 5 if r["error_code"] in (0, 36) else r["error_code"]  # 36: TOPIC_ALREADY_EXISTS
                for r in resp["topics"]}  # TOPIC_AUTHORIZATION_FAILED without Create

    async def h_produce(self, req: dict) -> dict:
        parts = await self.replica_manager.produce(req)
        if req["acks"] == 0:
            return codec.ok(partitions=[])
        return codec.ok(partitions=parts)

    async def h_fetch(self, req: dict) -> dict:
        return codec.ok(partitions=await self.replica_manager.fetch(req))

    async def h_list_offsets(self, req: dict) -> dict:
        return codec.ok(partitions=self.replica_manager.list_offsets(req))

    async def h_offsets_for_leader_epoch(self, req: dict) -> dict:
        return codec.ok(partitions=self.replica_manager.offsets_for_leader_epoch(req))

    async def h_replica_state(self, req: dict) -> dict:
        return codec.ok(broker_id=self.broker_id, replicas=self.replica_state(req))

    def replica_state(self, req: dict) -> list[dict]:
        """The replica_state entries, each with what consumers fetched from it as leader
        (``fetched_records``, ``fetched_bytes``: counters the dashboard turns into rates)."""
        out = self.replica_manager.replica_state(req)
        for r in out:
            r["fetched_records"], r["fetched_bytes"] = self.metrics.consumer_fetched.get((r["topic"], r["partition"]), (0, 0))
        return out

    async def verify_controller_epoch(self, epoch: int) -> None:
        """Refuse a controller epoch newer than /controller_epoch in ZooKeeper: a forged
        epoch must not fence the real controller (the broker would then refuse it as stale).
        Each new epoch is checked once, after a ZooKeeper sync."""
        if epoch <= self._verified_controller_epoch:
            return
        await self.zk.sync(layout.CONTROLLER_EPOCH)
        got = await self.zk.get(layout.CONTROLLER_EPOCH)
        current = int(got[0]) if got else 0
        if epoch > current:
            self.metrics.count(FORGED_CONTROLLER_EPOCHS)
            log.warning("refused a request from controller epoch %d: /controller_epoch is %d", epoch, current)
            raise StaleControllerEpochError(f"controller epoch {epoch} is newer than /controller_epoch ({current}): "
                                            "no controller has it")
        self._verified_controller_epoch = current

    async def h_leader_and_isr(self, req: dict) -> dict:
        await self.verify_controller_epoch(req["controller_epoch"])
        self.check_broker_epoch(req["broker_epoch"])
        return codec.ok(partitions=await self.replica_manager.leader_and_isr(req))

    def check_broker_epoch(self, epoch: int) -> None:
        """Refuse a LeaderAndIsr addressed to another registration of this broker id
        (KIP-380): the controller sent it to this id's previous process (which crashed
        before its session expired), or this process has not registered yet.  Obeying
        it would make a restarted broker, which may have lost its log, a leader."""
        if epoch >= 0 and epoch != self.broker_epoch:
            self.metrics.count(STALE_BROKER_EPOCH_REQUESTS)
            raise StaleBrokerEpochError(
                f"broker {self.broker_id}: request for broker epoch {epoch}, but this broker's epoch is "
                f"{self.broker_epoch if self.broker_epoch >= 0 else 'not known yet (not registered)'}")

    async def h_stop_replica(self, req: dict) -> dict:
        await self.verify_controller_epoch(req["controller_epoch"])
        return codec.ok(partitions=self.replica_manager.stop_replica(req))

    async def h_update_metadata(self, req: dict) -> dict:
        await self.verify_controller_epoch(req["controller_epoch"])
        self.replica_manager.check_controller_epoch(req["controller_epoch"])
        self.metadata.update(req)
        self.listeners.update(req["live_brokers"])
        for b in req["live_brokers"]:
            self.fetchers.update_endpoint(b["id"], (b["host"], b["port"]))
        for topic in req.get("deleted_topics", ()):
            self.replica_manager.topic_configs.pop(topic, None)
        self._metadata_changed.set()
        self._metadata_changed = asyncio.Event()
        return codec.ok()

    async def wait_metadata(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``ready()`` holds after some UpdateMetadata, or the timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not ready():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._metadata_changed.wait(), remaining)
            except asyncio.TimeoutError:
                return ready()
        return True

    async def h_create_topics(self, req: dict, internal: bool = False) -> dict:
        """Validate and write /config/topics/T and /brokers/topics/T in one transaction; the
        controller's watch on /brokers/topics does the rest (leaders, LeaderAndIsr).
        Names starting with ``__`` are the cluster's own (``internal``) topics."""
        results = []
        created = []
        live = sorted(int(b) for b in await self.zk.children(layout.BROKER_IDS))
        existing = await self.zk.children(layout.BROKER_TOPICS)
        for t in req["topics"]:
            name = t["name"]
            try:
                layout.check_topic_name(name)
                if name.startswith("__") and not internal:
                    raise InvalidTopicExceptionError(f"topic name {name!r} is reserved: names starting with '__' "
                                                     "are the cluster's internal topics")
                if not internal and not self.security.allowed("Create", "Topic", name, ("Cluster", CLUSTER_NAME)):
                    raise refusal("Create", "Topic", name)
                collides = [e for e in existing if e != name and e.replace(".", "_") == name.replace(".", "_")]
                if collides:
                    raise InvalidTopicExceptionError(f"topic {name!r} collides with existing topic {collides[0]!r}: "
                                                     "'.' and '_' are alike in metric names")
                config = validate_topic_config(t["config"])
                if t["assignment"] is not None:
                    assignment = self._check_assignment(t["assignment"], live)
                else:
                    check_partition_count(t["num_partitions"])
                    if t["replication_factor"] > len(live):
                        raise InvalidReplicationFactorError(
                            f"replication factor {t['replication_factor']} is larger than the {len(live)} live brokers {live}")
                    assignment = rules.assign_replicas(live, t["num_partitions"], t["replication_factor"])
                if "min.insync.replicas" in config and int(config["min.insync.replicas"]) > len(next(iter(assignment.values()))):
                    raise InvalidConfigError(
                        f"min.insync.replicas={config['min.insync.replicas']} is larger than the replication factor")
                if await self.zk.exists(layout.topic_path(name)) is not None:
                    raise TopicAlreadyExistsError(f"topic {name!r} already exists")
                if not req["validate_only"]:
                    def build(tx: Any, name: str = name, config: dict = config, assignment: dict = assignment) -> None:
                        tx.create(layout.topic_config_path(name), layout.encode_topic_config(config))
                        tx.create(layout.topic_path(name), layout.encode_assignment(assignment))
                    try:
                        await self.zk.transaction(build)
                    except NodeExistsError:
                        raise TopicAlreadyExistsError(f"topic {name!r} already exists") from None
                    created.append((name, len(assignment)))
                    self.record_event("topic_created", f"topic {name} created with assignment "
                                                       f"{ {p: r for p, r in sorted(assignment.items())} }")
                results.append({"name": name, **codec.partition_error(None)})
            except KafkaError as exc:
                results.append({"name": name, **codec.partition_error(exc)})
        if created and req["timeout_ms"] > 0:
            def all_led() -> bool:
                for name, n in created:
                    states = self.metadata.partitions_of(name)
                    if len(states) < n or any(s["leader"] < 0 for s in states):
                        return False
                return True
            if not await self.wait_metadata(all_led, req["timeout_ms"] / 1000.0):
                for r in results:
                    if any(r["name"] == n for n, _ in created):
                        r.update(codec.partition_error(RequestTimedOutError(
                            "topic was created but its leaders were not elected within timeout_ms")))
        return codec.ok(topics=results)

    @staticmethod
    def _check_assignment(assignment: dict[str, list[int]], live: list[int]) -> dict[int, list[int]]:
        try:
            parts = {int(p): list(r) for p, r in assignment.items()}
        except ValueError:
            raise InvalidReplicaAssignmentError("partition ids must be integers") from None
        if sorted(parts) != list(range(len(parts))) or not parts:
            raise InvalidReplicaAssignmentError("partitions must be numbered 0..n-1")
        check_partition_count(len(parts))
        sizes = {len(r) for r in parts.values()}
        if len(sizes) != 1 or 0 in sizes:
            raise InvalidReplicaAssignmentError("every partition needs the same, non-zero number of replicas")
        for p, r in parts.items():
            if len(set(r)) != len(r):
                raise InvalidReplicaAssignmentError(f"partition {p} lists a broker twice: {r}")
            unknown = [b for b in r if b not in live]
            if unknown:
                raise InvalidReplicaAssignmentError(f"partition {p} names brokers that are not live: {unknown}")
        return parts

    def require_controller(self) -> Any:
        if self.controller is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return self.controller

    # -- cluster-wide operations ------------------------------------------------------------
    async def h_events(self, req: dict) -> dict:
        since, limit = req["since"], req["limit"]
        events = [e for e in self.events if e["ts"] > since]
        if req["cluster"]:
            async def remote(b: int, host: str, port: int) -> list[dict]:
                try:
                    r = await self.call(host, port, "events", {"since": since, "limit": limit}, 2.0)
                    return r["events"]
                except KafkaError:
                    return []
            others = [(b, h, p) for b, (h, p) in self.metadata.brokers.items() if b != self.broker_id]
            for got in await asyncio.gather(*(remote(*o) for o in others)):
                events.extend(got)
        events.sort(key=lambda e: (e["ts"], e["broker"]))
        out = [{"ts": e["ts"], "broker": e["broker"], "kind": e["kind"], "text": e["text"]} for e in events[-limit:]]
        return codec.ok(events=out)

    async def h_controlled_shutdown(self, req: dict) -> dict:
        controller = self.require_controller()
        remaining = await controller.request(ControlledShutdown(req["broker_id"]))
        return codec.ok(remaining_partitions=[{"topic": t, "partition": p} for t, p in remaining])

    async def _controller_endpoint(self) -> tuple[int, str, int]:
        got = await self.zk.get(layout.CONTROLLER)
        if got is None:
            raise NotControllerError("no controller is elected right now")
        cid = layout.decode_controller(got[0])
        info = await self.zk.get(layout.broker_path(cid))
        if info is None:
            raise NotControllerError(f"controller {cid} is not registered")
        b = layout.BrokerInfo.decode(cid, info[0])
        return cid, b.host, b.port

    async def h_elect_leaders(self, req: dict) -> dict:
        self.security.require("Alter", "Cluster", CLUSTER_NAME)
        if self.controller is None:
            cid, host, port = await self._controller_endpoint()
            if cid != self.broker_id:
                return await self.call(host, port, "elect_leaders", req, req["timeout_ms"] / 1000.0 + 5)
        controller = self.require_controller()
        tps = [(x["topic"], x["partition"]) for x in req["partitions"]] if req["partitions"] is not None else None
        results = await controller.request(PreferredElection(tuple(tps) if tps is not None else None))
        out = []
        for (t, p), name in sorted(results.items()):
            exc = None if name == "NONE" else errors.error_class(name)(f"{t}-{p}: {name}")
            out.append({"topic": t, "partition": p, **codec.partition_error(exc)})
        return codec.ok(partitions=out)

    async def h_delete_topics(self, req: dict) -> dict:
        results, marked = [], []
        for name in req["topics"]:
            try:
                if not self.config.get("delete.topic.enable"):
                    raise TopicDeletionDisabledError("delete.topic.enable is false on this cluster")
                if name.startswith("__"):
                    raise InvalidTopicExceptionError(f"{name} is an internal topic and cannot be deleted")
                self.security.require("Delete", "Topic", name)
                if await self.zk.exists(layout.topic_path(name)) is None:
                    raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
                try:
                    await self.zk.create(f"{layout.DELETE_TOPICS}/{name}", b"", makepath=True)
                except NodeExistsError:
                    pass
                marked.append(name)
                results.append({"name": name, **codec.partition_error(None)})
            except KafkaError as exc:
                results.append({"name": name, **codec.partition_error(exc)})
        if marked and req["timeout_ms"] > 0:
            gone = lambda: all(not self.metadata.partitions_of(n) for n in marked)  # noqa: E731
            if not await self.wait_metadata(gone, req["timeout_ms"] / 1000.0):
                for r in results:
                    if r["name"] in marked:
                        r.update(codec.partition_error(RequestTimedOutError("deletion not finished within timeout_ms")))
        return codec.ok(topics=results)

    async def h_alter_partition_reassignments(self, req: dict) -> dict:
        self.security.require("Alter", "Cluster", CLUSTER_NAME)
        live = {int(b) for b in await self.zk.children(layout.BROKER_IDS)}
        results, accepted = [], []
        existing = await self.zk.get(layout.REASSIGN_PARTITIONS)
        for m in req["partitions"]:
            t, p, replicas = m["topic"], m["partition"], m["replicas"]
            try:
                got = await self.zk.get(layout.topic_path(t))
                if got is None or p not in layout.decode_assignment(got[0]):
                    raise UnknownTopicOrPartitionError(f"{t}-{p} does not exist")
                if existing is not None:
                    raise ReassignmentInProgressError("a reassignment is already in progress")
                if not replicas or len(set(replicas)) != len(replicas):
                    raise InvalidReplicaAssignmentError(f"replica list {replicas} is empty or repeats a broker")
                if any(b not in live for b in replicas):
                    raise InvalidReplicaAssignmentError(f"replica list {replicas} names brokers that are not live {sorted(live)}")
                accepted.append({"topic": t, "partition": p, "replicas": list(replicas)})
                results.append({"topic": t, "partition": p, **codec.partition_error(None)})
            except KafkaError as exc:
                results.append({"topic": t, "partition": p, **codec.partition_error(exc)})
        if accepted:
            try:
                await self.zk.create(layout.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": accepted}).encode(),
                                     makepath=True)
            except NodeExistsError:
                for r in results:
                    if not r["error_code"]:
                        r.update(codec.partition_error(ReassignmentInProgressError("a reassignment is already in progress")))
        return codec.ok(partitions=results)

    # -- controlled shutdown ---------------------------------------------------------------------
    async def shutdown(self) -> None:
        """SIGTERM: controlled shutdown (leaderships moved away first), then stop."""
        if self.config.get("controlled.shutdown.enable") and self.zk.connected:
            for attempt in range(3):
                try:
                    cid, host, port = await self._controller_endpoint()
                    r = await self.call(host, port, "controlled_shutdown",
                                   {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch}, 15.0)
                    left = r["remaining_partitions"]
                    self.record_event("controlled_shutdown", f"broker {self.broker_id}: controlled shutdown via controller "
                                                             f"{cid}; {len(left)} partitions could not move")
                    if not left:
                        break
                except KafkaError as exc:
                    log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, exc)
                await asyncio.sleep(0.5)
            # Let the LeaderAndIsr that demotes us arrive, so waiting produces are answered
            # with NOT_LEADER_OR_FOLLOWER rather than a dropped connection.
            await self.wait_until_not_leading(5.0)
        await self.stop()

    async def wait_until_not_leading(self, timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            leading = [p for p in self.replica_manager.partitions.values()
                       if p.is_leader and len(p.replicas) > 1 and len(p.isr) > 1]
            if not leading:
                return
            await asyncio.sleep(0.05)
