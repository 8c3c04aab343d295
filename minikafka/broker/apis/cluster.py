"""Metadata, ApiVersions, Events and ReplicaState: what the cluster looks like from here."""
from __future__ import annotations

from typing import Callable

from ...errors import (
    KafkaError,
    LeaderNotAvailableError,
    TopicAuthorizationFailedError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from ...protocol.rpc.messages import APIS
from ...protocol.rpc.types import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    Event,
    EventsRequest,
    EventsResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    ReplicaStateRequest,
    ReplicaStateResponse,
    TopicMetadata,
    decode_ReplicaState,
)
from ..metadata_cache import MetadataCache
from ..metrics import Metrics
from ..replica_manager import ReplicaManager
from ..security import Security
from ..services import PeerCall
from ..timeline import ClusterTimeline
from ..topic_admin import NewTopic, TopicAdmin
from ...config import BrokerConfig
from .admin import create_topics
from .context import RequestContext
from .endpoints import Endpoints


class ClusterApis:
    """The cluster as this broker knows it: its metadata cache, its events, its replicas."""

    def __init__(self, config: BrokerConfig, metadata: MetadataCache, endpoints: Endpoints, security: Security,
                 topic_admin: TopicAdmin, replicas: ReplicaManager, metrics: Metrics, timeline: ClusterTimeline,
                 cluster_id: Callable[[], str], call: PeerCall,
                 zookeeper_session: Callable[[], str] = lambda: "") -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.metadata = metadata
        self.endpoints = endpoints
        self.security = security
        self.topic_admin = topic_admin
        self.replicas = replicas
        self.metrics = metrics
        self.timeline = timeline
        self.cluster_id = cluster_id
        self.call = call
        self.zookeeper_session = zookeeper_session  # connected, suspended, lost (replica_state tells it)

    async def metadata_(self, req: MetadataRequest, ctx: RequestContext) -> MetadataResponse:
        """Brokers for the request's listener, the controller, and each topic's partitions
        from the metadata cache.  Topics the caller may not Describe are answered
        TOPIC_AUTHORIZATION_FAILED; with allow_auto_topic_creation and the broker's
        auto.create.topics.enable, unknown topics named in the request are created and
        answered LEADER_NOT_AVAILABLE until they have leaders (clients ask again)."""
        md = self.metadata
        names, refused = self.security.describable(ctx, req.topics, md.topics())
        failures: dict[str, KafkaError] = {t: TopicAuthorizationFailedError(
            f"not authorized to Describe (or Create) topic {t!r}") for t in refused}
        unknown = [t for t in names if not md.partitions_of(t) and t not in refused]
        auto_create = req.allow_auto_topic_creation and self.topic_admin.settings.auto_create_topics_enable
        if unknown and req.topics and auto_create:
            failures.update(await self.auto_create_topics(unknown, ctx))
        live = set(md.brokers) or {self.broker_id}
        topics = []
        for t in names:
            states = md.partitions_of(t)
            if t in refused or not states:
                err = failures.get(t) or UnknownTopicOrPartitionError(f"topic {t!r} does not exist")
                topics.append(TopicMetadata(name=t, partitions=[], error=err))
                continue
            parts = []
            for st in states:
                leader = st["leader"]
                err_p = None if leader >= 0 and leader in live else LeaderNotAvailableError("partition is offline")
                parts.append(PartitionMetadata(
                    partition=st["partition"], leader=leader, leader_epoch=st["leader_epoch"],
                    replicas=list(st["replicas"]), isr=list(st["isr"]),
                    offline_replicas=[r for r in st["replicas"] if r not in live], error=err_p))
            topics.append(TopicMetadata(name=t, topic_id=md.topic_id(t), partitions=parts))
        return MetadataResponse(cluster_id=self.cluster_id(), controller_id=md.controller_id,
                                controller_epoch=md.controller_epoch, brokers=self.endpoints.brokers(ctx), topics=topics)

    async def auto_create_topics(self, names: list[str], ctx: RequestContext) -> dict[str, KafkaError]:
        """Kafka's auto.create.topics.enable: create ``names`` with the broker defaults
        (num.partitions, default.replication.factor).  Each name's Metadata error:
        LEADER_NOT_AVAILABLE when it was created or already exists, else why creation
        failed (INVALID_TOPIC_EXCEPTION, INVALID_REPLICATION_FACTOR with too few brokers,
        TOPIC_AUTHORIZATION_FAILED without Create)."""
        defaults = self.topic_admin.settings
        new = [NewTopic(n, defaults.num_partitions, defaults.default_replication_factor, {}) for n in names]
        errors = await create_topics(self.topic_admin, self.security, ctx, new, validate_only=False, timeout_ms=0)
        out: dict[str, KafkaError] = {}
        for n, err in zip(names, errors):
            if err is None or isinstance(err, TopicAlreadyExistsError):
                out[n] = LeaderNotAvailableError("created; waiting for its leaders")
            else:
                out[n] = err
        return out

    async def api_versions(self, req: ApiVersionsRequest, ctx: RequestContext) -> ApiVersionsResponse:
        return ApiVersionsResponse(apis=sorted(APIS), broker_id=self.broker_id)

    async def events(self, req: EventsRequest, ctx: RequestContext) -> EventsResponse:
        """This broker's recent events; with ``cluster``, every broker's as this one holds
        them (a dead broker's up to its last second), merged by time."""
        if req.cluster:
            events = await self.timeline.events(req.since, req.limit)
        else:
            events = [e for e in self.timeline.own.events if e["ts"] > req.since][-req.limit:] if req.limit > 0 else []
        return EventsResponse(events=[Event(ts=e["ts"], broker=e["broker"], kind=e["kind"], text=e["text"])
                                      for e in events])

    def replica_state(self, partitions: list[tuple[str, int, int | None]] | None,
                      checksum_upto: int | None) -> list[dict]:
        """The local replicas' snapshots, each with what consumers fetched from it as leader
        (``fetched_records``, ``fetched_bytes``: counters the dashboard turns into rates)."""
        out = self.replicas.replica_state(partitions, checksum_upto)
        for r in out:
            r["fetched_records"], r["fetched_bytes"] = self.metrics.consumer_fetched.get((r["topic"], r["partition"]), (0, 0))
        return out

    async def replica_state_(self, req: ReplicaStateRequest, ctx: RequestContext) -> ReplicaStateResponse:
        """The local replicas' LEO, HW, producer state and checksums.  With an authorizer a
        replica is told only to a principal that may Describe its topic (the cluster
        credential always may): named topics it may not are TOPIC_AUTHORIZATION_FAILED,
        and asked for every replica, those are left out (as Metadata does)."""
        wanted = None if req.partitions is None else [(x.topic, x.partition, x.checksum_upto) for x in req.partitions]
        if wanted is not None:
            for topic in sorted({w[0] for w in wanted}):
                self.security.require(ctx, "Describe", "Topic", topic)
        states = self.replica_state(wanted, req.checksum_upto)
        if wanted is None:
            visible: dict[str, bool] = {}
            states = [r for r in states if visible.setdefault(
                r["topic"], self.security.allowed(ctx, "Describe", "Topic", r["topic"], quiet=True))]
        return ReplicaStateResponse(broker_id=self.broker_id, zookeeper_session=self.zookeeper_session(),
                                    replicas=[decode_ReplicaState(r) for r in states])
