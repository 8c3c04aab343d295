"""What the dashboard, its JSON and ``/metrics`` may see of one broker: a
:class:`~minikafka.web.view.BrokerView` built from the broker's services, each field a
read of the service that owns it, so that ``web/`` knows no service and the Broker's
lifecycle (:mod:`.server`) knows nothing of the dashboard."""
from __future__ import annotations

import asyncio
import functools

from ..config import BrokerConfig
from ..protocol.rpc.types import decode_ReplicaState
from ..web.view import BrokerView
from .assembly import Services
from .listeners import current_listener
from .metrics import MetricSources, render_prometheus


def dashboard_view(config: BrokerConfig, s: Services) -> BrokerView:
    """The view of the broker whose configuration and services are given."""
    broker_id = config.broker_id

    def controller_epoch() -> int | None:
        ctl = s.controller.active
        return ctl.epoch if ctl is not None else None

    return BrokerView(
        broker_id=broker_id, advertised=config.advertised, metadata=lambda: s.metadata,
        broker_endpoints=lambda live: s.listeners.brokers(live, broker_id),
        kafka_endpoints=lambda: s.listeners.kafka_endpoints(broker_id),
        cluster_id=lambda: s.identity.cluster_id,
        controller_epoch=controller_epoch,
        local_replicas=lambda partitions=None: [
            decode_ReplicaState(r) for r in s.layer.cluster.replica_state(partitions, None)],
        cluster_events=s.cluster_timeline.events, timeline_held=s.cluster_timeline.held,
        keep_timeline=s.cluster_timeline.keep, call=s.transport.call,
        prometheus=functools.partial(render_prometheus, s.metrics, MetricSources(
            info=lambda: {"broker_id": broker_id, "storage": config.storage, "cluster_id": s.identity.cluster_id},
            replicas=lambda: s.replica_manager.partitions,
            min_insync_replicas=lambda topic: int(s.replica_manager.setting(topic, "min.insync.replicas")),
            controller_epoch=lambda: s.metadata.controller_epoch,
            live_brokers=lambda: len(s.metadata.brokers),
            cluster_counts=s.kafka_controller.cluster_counts,
            controller_queue_size=lambda: s.kafka_controller.queue_size,
            zookeeper_watches=lambda: len(s.zk.watches),
            acls=lambda: len(s.security.authorizer.bindings),
            groups=s.coordinator.list_groups)),
        authenticate=lambda headers, peercert: s.security.http_principal(current_listener.get(), headers, peercert),
        failed_login_pause=lambda: asyncio.sleep(s.kafka.policy.failed_login_delay_s),
        acls_enabled=s.security.enabled,
        zookeeper_session=lambda: getattr(s.zk, "session_state", ""),
        zookeeper_connect=config.zookeeper_connect)
