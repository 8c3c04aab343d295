"""The controller's requests to brokers (LeaderAndIsr, UpdateMetadata, StopReplica) and
the requests brokers and tools send the controller (ControlledShutdown, ElectLeaders).

Every controller request is fenced twice: by its controller epoch (older than one seen:
STALE_CONTROLLER_EPOCH; newer than /controller_epoch in ZooKeeper: a forgery, refused)
and, for LeaderAndIsr, by the broker epoch it is addressed to (KIP-380)."""
from __future__ import annotations

import logging
from typing import Callable

from ... import errors
from ...auth.acls import CLUSTER_NAME
from ...controller.controller import KafkaController
from ...controller.core import ControlledShutdown, PreferredElection, UncleanElection
from ...errors import NotControllerError, StaleBrokerEpochError, StaleControllerEpochError
from ...metric_names import FORGED_CONTROLLER_EPOCHS, STALE_BROKER_EPOCH_REQUESTS
from ...protocol.rpc.messages import UNCLEAN_ELECTION
from ...protocol.rpc.types import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    ElectLeadersPartitionResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    TopicPartition,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from ...rpc import request
from ...zk import layout
from ...zk.session import ZkSession
from ..fetcher import FetcherManager
from ..listeners import Listeners
from ..metadata_cache import MetadataCache
from ..metrics import Metrics
from ..replica_manager import ReplicaManager
from ..security import Security
from ..services import PeerCall, TopicsDeletedListener
from .context import RequestContext

log = logging.getLogger(__name__)


class ControllerLink:
    """Where the active controller is, and this broker's controller while it is the one."""

    def __init__(self, broker_id: int, zk: ZkSession, controller: KafkaController) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.kafka_controller = controller

    @property
    def active(self) -> KafkaController | None:
        """This broker's controller while it is the active controller, else None."""
        return self.kafka_controller if self.kafka_controller.active else None

    def require_active(self) -> KafkaController:
        if (c := self.active) is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return c

    async def endpoint(self) -> tuple[int, str, int]:
        """The active controller's id and msgpack endpoint, from ZooKeeper."""
        got = await self.zk.get(layout.CONTROLLER)
        if got is None:
            raise NotControllerError("no controller is elected right now")
        cid = layout.decode_controller(got[0])
        info = await self.zk.get(layout.broker_path(cid))
        if info is None:
            raise NotControllerError(f"controller {cid} is not registered")
        b = layout.BrokerInfo.decode(cid, info[0])
        return cid, b.host, b.port


class ControlApis:
    """Controller requests in, controller requests out."""

    def __init__(self, broker_id: int, broker_epoch: Callable[[], int], zk: ZkSession, metrics: Metrics,
                 replicas: ReplicaManager, metadata: MetadataCache, listeners: Listeners, fetchers: FetcherManager,
                 controller: ControllerLink, security: Security, call: PeerCall,
                 on_topics_deleted: TopicsDeletedListener) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.zk = zk
        self.metrics = metrics
        self.replicas = replicas
        self.metadata = metadata
        self.listeners = listeners
        self.fetchers = fetchers
        self.controller = controller
        self.security = security
        self.call = call
        self.on_topics_deleted = on_topics_deleted
        self._verified_controller_epoch = -1  # highest controller epoch checked against ZooKeeper

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

    def check_broker_epoch(self, epoch: int) -> None:
        """Refuse a LeaderAndIsr addressed to an earlier registration of this broker id
        (KIP-380): the controller sent it to this id's previous process (which crashed
        before its session expired), or this process has not registered yet.  Obeying
        it would make a restarted broker, which may have lost its log, a leader.

        A newer epoch than this broker's own is its own new registration (after its
        session expired), which the controller saw before this broker read the czxid
        back: it is obeyed, as Kafka's isBrokerEpochStale does (refused, the controller
        would never send the broker its partitions again and it would stay out of
        every ISR)."""
        mine = self.broker_epoch()
        if epoch >= 0 and (mine < 0 or epoch < mine):
            self.metrics.count(STALE_BROKER_EPOCH_REQUESTS)
            raise StaleBrokerEpochError(
                f"broker {self.broker_id}: request for broker epoch {epoch}, but this broker's epoch is "
                f"{mine if mine >= 0 else 'not known yet (not registered)'}")

    async def leader_and_isr(self, req: LeaderAndIsrRequest, ctx: RequestContext) -> LeaderAndIsrResponse:
        await self.verify_controller_epoch(req.controller_epoch)
        self.check_broker_epoch(req.broker_epoch)
        return LeaderAndIsrResponse(partitions=await self.replicas.leader_and_isr(req))

    async def stop_replica(self, req: StopReplicaRequest, ctx: RequestContext) -> StopReplicaResponse:
        await self.verify_controller_epoch(req.controller_epoch)
        return StopReplicaResponse(partitions=self.replicas.stop_replica(req))

    async def update_metadata(self, req: UpdateMetadataRequest, ctx: RequestContext) -> UpdateMetadataResponse:
        await self.verify_controller_epoch(req.controller_epoch)
        self.replicas.check_controller_epoch(req.controller_epoch)
        self.listeners.update(req.live_brokers)
        for b in req.live_brokers:
            self.fetchers.update_endpoint(b.id, (b.host, b.port))
        for topic in req.deleted_topics:
            self.replicas.topic_configs.pop(topic, None)
        self.metadata.update(req)
        if req.deleted_topics:  # as Kafka's handleUpdateMetadataRequest: the groups lose their offsets
            self.on_topics_deleted(list(req.deleted_topics))
        return UpdateMetadataResponse()

    async def controlled_shutdown(self, req: ControlledShutdownRequest,
                                  ctx: RequestContext) -> ControlledShutdownResponse:
        remaining = await self.controller.require_active().request(ControlledShutdown(req.broker_id))
        return ControlledShutdownResponse(remaining_partitions=[TopicPartition(topic=t, partition=p)
                                                                for t, p in remaining])

    async def elect_leaders(self, req: ElectLeadersRequest, ctx: RequestContext) -> ElectLeadersResponse:
        """Preferred or unclean leader election on the controller; another broker forwards
        the request."""
        self.security.require(ctx, "Alter", "Cluster", CLUSTER_NAME)
        if self.controller.active is None:
            cid, host, port = await self.controller.endpoint()
            if cid != self.broker_id:
                return await request(self.call, host, port, req, req.timeout_ms / 1000.0 + 5)
        controller = self.controller.require_active()
        tps = tuple((x.topic, x.partition) for x in req.partitions) if req.partitions is not None else None
        election = UncleanElection(tps) if req.election_type == UNCLEAN_ELECTION else PreferredElection(tps)
        results = await controller.request(election)
        out = []
        for (t, p), name in sorted(results.items()):
            exc = None if name == "NONE" else errors.error_class(name)(f"{t}-{p}: {name}")
            out.append(ElectLeadersPartitionResponse(topic=t, partition=p, error=exc))
        return ElectLeadersResponse(partitions=out)
