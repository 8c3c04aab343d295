"""The broker: its lifecycle and its registration in ZooKeeper.

Every service is built by :func:`~.assembly.assemble` (the composition root) and every
request is answered by the request layer (:mod:`.apis`) behind the two listeners; the
Broker starts them in order, registers ``/brokers/ids/N`` (its epoch is the znode's
czxid), runs the periodic timers, and stops everything again, awaiting every task it
owns (:class:`~.tasks.TaskOwner`).
"""
from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import Any, Callable

from ..config import BrokerConfig
from ..controller.controller import KafkaController
from ..errors import ClientError, KafkaError
from ..protocol.rpc.types import ControlledShutdownRequest
from ..rpc import request
from ..web.view import BrokerView
from ..zk import layout
from ..zk.errors import NodeExistsError
from .assembly import ZK_ACL_USER, Services, assemble
from .dashboard_view import dashboard_view
from .loop_monitor import LoopMonitor
from .ports import Ports, real_ports
from .served import ServedBroker
from .settings import BrokerSettings

__all__ = ["Broker", "ZK_ACL_USER"]

log = logging.getLogger(__name__)
# pause before a failed re-registration in ZooKeeper is tried again
REREGISTER_RETRY_S = 1.0


class Broker:
    """One broker process's lifecycle around its services (:class:`~.assembly.Services`)."""

    def __init__(self, config: BrokerConfig, ports: Ports | None = None) -> None:
        """``ports`` are the clock, transport, ZooKeeper session, storage and randomness the
        broker runs on (:mod:`.ports`); the real ones by default."""
        self.config = config
        self.settings = BrokerSettings.of(config)  # static settings only
        self.broker_id = config.broker_id
        self.ports = ports if ports is not None else real_ports(config)
        self.services: Services = assemble(config, self.ports)
        s = self.services
        self.clock, self.random, self.transport, self.storage = s.clock, s.random, s.transport, s.storage
        self.metrics, self.metadata, self.zk, self.security = s.metrics, s.metadata, s.zk, s.security
        self.replica_manager, self.fetchers, self.coordinator = s.replica_manager, s.fetchers, s.coordinator
        self.kafka_controller, self.listeners, self.kafka = s.kafka_controller, s.listeners, s.kafka
        self.events = s.timeline.events
        self.record_event = s.timeline.record
        self._first_broker_epoch = -1  # czxid of this process's first registration
        self._reregistering: asyncio.Task | None = None  # the re-registration under way, if any

    @property
    def broker_epoch(self) -> int:
        """The czxid of this broker's current registration (-1 before it registered)."""
        return self.services.identity.broker_epoch

    @property
    def cluster_id(self) -> str:
        return self.services.identity.cluster_id

    @property
    def controller(self) -> KafkaController | None:
        """This broker's controller while it is the active controller, else None."""
        return self.services.controller.active

    def _served(self) -> ServedBroker:
        s = self.services
        return ServedBroker(broker_id=self.broker_id, rpc=s.rpc, kafka=s.kafka, listeners=s.listeners,
                            security=s.security, metrics=s.metrics, web_view=self.web_view,
                            policy=s.kafka.policy, limits=s.kafka.limits, memory=s.kafka.memory)

    def web_view(self) -> BrokerView:
        """What the dashboard routes may see of this broker (:mod:`.dashboard_view`)."""
        return dashboard_view(self.config, self.services)

    # -- lifecycle -----------------------------------------------------------------
    async def start(self) -> None:
        s = self.services
        if self.settings.zookeeper_set_acl and self.config.cluster_secret is None:
            raise ClientError("zookeeper.set.acl=true needs the cluster credential "
                              "(--cluster-secret-file or MINIKAFKA_CLUSTER_SECRET)")
        s.tasks.spawn(LoopMonitor(s.metrics).run(), "loop-monitor")
        await self.transport.serve(self._served())
        await self.zk.start()
        self.zk.on_state_change(self._on_zk_state)
        for path in layout.PERSISTENT_PATHS:
            await self.zk.ensure_path(path)
        await self._load_cluster_id()
        await s.config_changes.start()
        if self.security.enabled:
            await s.acls.start()
        await self.register()
        self.kafka_controller.start()
        self.coordinator.start()
        s.txn_coordinator.start()
        rm, st = self.replica_manager, self.settings
        self._every("isr-shrink", st.replica_lag_time_max_ms / 2000.0, rm.shrink_isr_check)
        self._every("hw-checkpoint", st.replica_high_watermark_checkpoint_interval_ms / 1000.0,
                    rm.checkpoint_hws_in_background)
        self._every("log-start-checkpoint", st.log_flush_start_offset_checkpoint_interval_ms / 1000.0,
                    rm.checkpoint_log_starts_in_background)
        self._every("retention", st.log_retention_check_interval_ms / 1000.0, rm.retention_check)
        self._every("producer-expiration", st.producer_id_expiration_check_interval_ms / 1000.0, rm.expire_producers)
        if st.log_cleaner_enable:
            self._every("log-cleaner", st.log_cleaner_backoff_ms / 1000.0, rm.clean_logs)
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
        self.services.identity.cluster_id = json.loads(got[0])["id"] if got else ""

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
        deadline = loop.time() + self.settings.zookeeper_session_timeout_ms / 1000.0 + 2.0
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
        self.services.identity.broker_epoch = got[1].czxid if got else -1
        if self._first_broker_epoch < 0:
            self._first_broker_epoch = self.broker_epoch

    def _on_zk_state(self, state: str) -> None:
        if state == "LOST":
            self.record_event("zk_session_lost", f"broker {self.broker_id} lost its ZooKeeper session")
            self.kafka_controller.session_lost()
        elif state == "CONNECTED" and not self.services.identity.stopping.is_set():
            if self._reregistering is None or self._reregistering.done():
                self._reregistering = self.services.tasks.spawn(self._reregister(), "re-register")

    async def _reregister(self) -> None:
        """Register again once connected, if this session holds no registration (a new
        session after the old one expired), and tell the controller.  Tried again every
        REREGISTER_RETRY_S until it is done or the broker stops, as Kafka's ZooKeeper
        client retries its requests until connected: a link to ZooKeeper lost again just
        after the connection came back would otherwise leave the broker unregistered, out
        of every ISR for good, with no state change left to try again."""
        stopping = self.services.identity.stopping
        while not stopping.is_set():
            try:
                stat = await self.zk.exists(layout.broker_path(self.broker_id))
                if stat is None or stat.ephemeralOwner != self.zk.session_id:
                    await self.register()
                    self.record_event("broker_registered", f"broker {self.broker_id} re-registered with broker "
                                                           f"epoch {self.broker_epoch} (the czxid of "
                                                           f"/brokers/ids/{self.broker_id})")
                    self.kafka_controller.session_regained()
                return
            except Exception as exc:
                log.warning("re-registration failed: %s; trying again in %g s", exc, REREGISTER_RETRY_S)
                await asyncio.sleep(REREGISTER_RETRY_S)

    def _every(self, name: str, interval_s: float, fn: Callable[[], Any]) -> None:
        """Run ``fn`` every ``interval_s`` in a task of the broker's; a failure is logged
        and the timer goes on."""
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_s)
                try:
                    result = fn()
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("periodic task %s failed", name)
        self.services.tasks.spawn(loop(), name)

    async def stop(self) -> None:
        """Clean shutdown: stop listeners, fetchers and timers, checkpoint HWs, leave ZooKeeper,
        and wait until every task of the broker has ended."""
        s = self.services
        s.identity.stopping.set()
        await self.kafka.stop()
        await s.config_changes.stop()
        await s.acls.stop()
        await self.coordinator.stop()
        await s.txn_coordinator.stop()
        await self.fetchers.stop()
        await self.kafka_controller.stop()
        await s.tasks.close()
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

    # -- controlled shutdown ---------------------------------------------------------------------
    async def shutdown(self) -> None:
        """SIGTERM: controlled shutdown (leaderships moved away first), then stop."""
        if self.settings.controlled_shutdown_enable and self.zk.connected:
            for attempt in range(3):
                try:
                    cid, host, port = await self.services.controller.endpoint()
                    r = await request(self.transport.call, host, port,
                                      ControlledShutdownRequest(broker_id=self.broker_id, broker_epoch=self.broker_epoch),
                                      15.0)
                    left = r.remaining_partitions
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
