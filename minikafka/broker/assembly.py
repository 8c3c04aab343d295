"""The composition root: every service of one broker, built once, each given only what it uses.

Nothing else constructs the services.  The order follows their dependencies: the ports
(clock, storage, ZooKeeper session, transport), then the stores (metadata cache,
security and ACLs), the replica manager, the fetchers and the group coordinator (wired
back to the replica manager with :meth:`~.replica_manager.ReplicaManager.connect`), the
controller, the request layer (:mod:`.apis`) and the two listeners in front of it.

The services that read dynamic broker configs (the replica manager, the topic admin, the
controller) share one :class:`~minikafka.config.LiveConfig`, which the config change
listener replaces on each change; the others read static settings and get the
:class:`~minikafka.config.BrokerConfig` the broker started with.
"""
from __future__ import annotations

import asyncio
from random import Random
from dataclasses import dataclass, field

from ..config import BrokerConfig, LiveConfig
from ..controller.controller import ControllerHost, KafkaController
from ..protocol import topic_ids
from ..zk.session import ZkSession
from .acl_store import AclStore
from .apis.acls import AclApis
from .apis.admin import AdminApis
from .apis.cluster import ClusterApis
from .apis.control import ControlApis, ControllerLink
from .apis.data import DataApis
from .apis.endpoints import Endpoints
from .apis.groups import GroupApis
from .apis.layer import RequestLayer
from .apis.transactions import TransactionApis
from .config_changes import ConfigChangeListener
from .coordinator import GroupCoordinator
from .fetcher import FetcherManager
from .kafka.handlers import KafkaHandlers
from .kafka.server import KafkaServer
from .connection_policy import ConnectionPolicy
from .limits import ConnectionLimits, RequestMemory, open_file_limit
from .listeners import Listeners
from .metadata_cache import MetadataCache
from .metrics import Metrics
from .ports import Ports, Transport
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager
from .rpc_listener import RpcListener
from .security import Security
from .services import Clock
from .settings import BrokerSettings
from .storage import Storage
from .tasks import TaskOwner
from .timeline import ClusterTimeline, Timeline
from .topic_admin import TopicAdmin
from .txn_coordinator import TransactionCoordinator

ZK_ACL_USER = "minikafka-broker"  # the digest user of zookeeper.set.acl (docs/security.md)


@dataclass
class Identity:
    """Who the broker is right now: set by its registration in ZooKeeper."""

    broker_id: int
    broker_epoch: int = -1  # czxid of the current /brokers/ids/N
    cluster_id: str = ""
    stopping: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Services:
    """One broker's services (see the module docstring for who gets what)."""

    config: BrokerConfig  # as the broker started: read static settings from it
    live: LiveConfig  # the configuration in effect, with the dynamic broker configs
    identity: Identity
    clock: Clock
    random: Random
    transport: Transport
    storage: Storage
    tasks: TaskOwner
    timeline: Timeline
    cluster_timeline: ClusterTimeline  # every broker's events as this one holds them
    metrics: Metrics
    metadata: MetadataCache
    zk: ZkSession
    listeners: Listeners
    security: Security
    acls: AclStore
    replica_manager: ReplicaManager
    fetchers: FetcherManager
    topic_admin: TopicAdmin
    producer_ids: ProducerIdManager
    coordinator: GroupCoordinator
    txn_coordinator: TransactionCoordinator
    kafka_controller: KafkaController
    controller: ControllerLink
    config_changes: ConfigChangeListener
    layer: RequestLayer
    rpc: RpcListener
    kafka: KafkaServer


def assemble(config: BrokerConfig, ports: Ports) -> Services:
    """Build every service of a broker on ``ports``; nothing runs until the broker starts."""
    identity = Identity(config.broker_id)
    clock = ports.clock
    transport = ports.transport
    storage = ports.storage(config)
    tasks = TaskOwner(f"broker-{config.broker_id}")
    timeline = Timeline(config.broker_id, clock)
    record = timeline.record
    metrics = Metrics()
    metadata = MetadataCache()
    acl = BrokerSettings.of(config).zookeeper_set_acl
    digest = (ZK_ACL_USER, config.cluster_secret) if acl and config.cluster_secret else None
    zk: ZkSession = ports.coordinator(config, digest)
    listeners = Listeners(config)
    security = Security(config, metrics)  # raises INVALID_CONFIG on bad security settings
    acls = AclStore(zk, security.authorizer, on_reload=lambda n: record("acls_loaded", f"broker {config.broker_id}: {n} ACLs"))

    live = LiveConfig(config)  # replaced by each change of the dynamic broker configs
    replica_manager = ReplicaManager(live, clock, storage, zk, metrics, record,
                                     session_ids=iter(lambda: ports.random.randrange(1, 2 ** 31), None))
    fetchers = FetcherManager(config, replica_manager, metrics, transport.call, lambda: identity.broker_epoch, tasks.spawn)
    def new_topic_id() -> str:  # KIP-516: a random id for each topic created, from the broker's randomness
        return topic_ids.new_topic_id(lambda: ports.random.getrandbits(128))
    topic_admin = TopicAdmin(live, zk, metadata, record, new_topic_id)
    producer_ids = ProducerIdManager(zk, config.broker_id)
    coordinator = GroupCoordinator(config, clock, ports.random, zk, metadata, metrics, record, replica_manager,
                                   topic_admin, tasks.spawn)
    replica_manager.connect(fetchers, coordinator.on_leadership, coordinator.on_txn_marker)
    txn_coordinator = TransactionCoordinator(config, clock, zk, metadata, metrics, record, replica_manager,
                                             topic_admin, producer_ids.generate, transport.call, tasks.spawn)
    replica_manager.connect_transactions(txn_coordinator.on_leadership)

    kafka_controller = KafkaController(ControllerHost(
        broker_id=config.broker_id, config=live, zk=zk, record_event=record, count=metrics.count,
        call=transport.call, stopping=identity.stopping.is_set, now_ms=lambda: int(clock.time() * 1000),
        new_topic_id=new_topic_id))
    controller = ControllerLink(config.broker_id, zk, kafka_controller)
    config_changes = ConfigChangeListener(live, zk, replica_manager, record, kafka_controller.config_changed,
                                          kafka_controller.broker_config_changed)

    endpoints = Endpoints(config.broker_id, metadata, listeners)
    cluster_timeline = ClusterTimeline(timeline, lambda: metadata.brokers, transport.call)
    layer = RequestLayer(
        data=DataApis(config.broker_id, replica_manager, producer_ids, security),
        cluster=ClusterApis(config, metadata, endpoints, security, topic_admin, replica_manager, metrics,
                            cluster_timeline, lambda: identity.cluster_id, transport.call,
                            lambda: getattr(zk, "session_state", "")),
        admin=AdminApis(topic_admin, security, config_changes.load_broker_configs),
        control=ControlApis(config.broker_id, lambda: identity.broker_epoch, zk, metrics, replica_manager, metadata,
                            listeners, fetchers, controller, security, transport.call, coordinator.on_topics_deleted),
        groups=GroupApis(coordinator, endpoints, security),
        acls=AclApis(security, acls),
        txn=TransactionApis(txn_coordinator, endpoints, security))
    rpc = RpcListener(config, layer, metrics, clock)
    policy = ConnectionPolicy.of(config.get, open_file_limit())  # one policy for every client connection
    limits = ConnectionLimits(policy, metrics)
    memory = RequestMemory(policy, metrics)
    kafka = KafkaServer(config, security, metrics, KafkaHandlers(layer, security, metrics, clock), policy, limits,
                        memory)
    return Services(config=config, live=live, identity=identity, clock=clock, random=ports.random, transport=transport,
                    storage=storage, tasks=tasks, timeline=timeline,
                    cluster_timeline=cluster_timeline, metrics=metrics, metadata=metadata, zk=zk,
                    listeners=listeners, security=security, acls=acls, replica_manager=replica_manager,
                    fetchers=fetchers, topic_admin=topic_admin, producer_ids=producer_ids, coordinator=coordinator,
                    txn_coordinator=txn_coordinator,
                    kafka_controller=kafka_controller, controller=controller, config_changes=config_changes,
                    layer=layer, rpc=rpc, kafka=kafka)
