"""Config change notifications: every broker applies topic and broker config changes live.

Kafka 2.x's way: a config is written to ``/config/topics/T`` or ``/config/brokers/<id>``
(``<default>`` for every broker), then announced by a sequential
``/config/changes/config_change_N`` holding ``{"version":2,"entity_path":"topics/T"}`` (or
``"brokers/<id>"``).  Each broker watches ``/config/changes`` and re-reads the named
entity.  Dynamic broker configs are also read once at start, before the broker registers.
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from ..zk import layout
from .change_follower import ChangeFollower

if TYPE_CHECKING:
    from .server import Broker

log = logging.getLogger(__name__)


class ConfigChangeListener:
    """Watches /config/changes; refreshes topic overrides and dynamic broker configs."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self._seen: set[str] = set()
        self._follower = ChangeFollower(broker.zk, "config-changes", (layout.CONFIG_CHANGES,), self._process)

    async def start(self) -> None:
        zk = self.broker.zk
        await zk.ensure_path(layout.CONFIG_CHANGES)
        self._seen = set(await zk.children(layout.CONFIG_CHANGES))
        await self.load_broker_configs()
        self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    async def _process(self) -> None:
        zk = self.broker.zk
        for name in sorted(await zk.children(layout.CONFIG_CHANGES)):
            if name in self._seen:
                continue
            self._seen.add(name)
            got = await zk.get(f"{layout.CONFIG_CHANGES}/{name}")
            if got is None:
                continue
            try:
                entity = layout.decode_config_change(got[0])
            except (ValueError, KeyError, json.JSONDecodeError):
                log.warning("ignoring malformed config change %s: %r", name, got[0][:200])
                continue
            kind, _, which = entity.partition("/")
            if kind == "topics" and which:
                await self._topic_changed(which)
            elif kind == "brokers" and which in (layout.BROKER_DEFAULT_ENTITY, str(self.broker.broker_id)):
                await self.load_broker_configs()

    async def _topic_changed(self, topic: str) -> None:
        got = await self.broker.zk.get(layout.topic_config_path(topic))
        overrides = layout.decode_topic_config(got[0]) if got else {}
        rm = self.broker.replica_manager
        if topic in rm.topic_configs or any(t == topic for t, _ in rm.partitions):
            rm.topic_configs[topic] = overrides
            rm.configs_changed(topic)
        self.broker.kafka_controller.config_changed(topic, overrides)
        self.broker.record_event("topic_config_loaded", f"broker {self.broker.broker_id}: topic {topic} "
                                                        f"overrides now {overrides}")

    async def load_broker_configs(self) -> None:
        """Read /config/brokers/<default> and /config/brokers/<own id> and apply them."""
        zk = self.broker.zk
        layers = []
        for entity in (layout.BROKER_DEFAULT_ENTITY, str(self.broker.broker_id)):
            got = await zk.get(layout.broker_config_path(entity))
            try:
                layers.append(layout.decode_topic_config(got[0]) if got else {})
            except (ValueError, KeyError, json.JSONDecodeError):
                log.warning("ignoring malformed %s", layout.broker_config_path(entity))
                layers.append({})
        changed = self.broker.config.apply_dynamic(*layers)
        if changed:
            self.broker.record_event("broker_config_loaded", f"broker {self.broker.broker_id}: dynamic configs now "
                                                             f"{ {k: v for k, v in sorted(changed.items())} }")
            self.broker.kafka_controller.broker_config_changed()
            self.broker.replica_manager.configs_changed()
