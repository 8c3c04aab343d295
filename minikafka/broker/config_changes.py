"""Config change notifications: every broker applies topic and broker config changes live.

Kafka 2.x's way: a config is written to ``/config/topics/T`` or ``/config/brokers/<id>``
(``<default>`` for every broker), then announced by a sequential
``/config/changes/config_change_N`` holding ``{"version":2,"entity_path":"topics/T"}`` (or
``"brokers/<id>"``).  Each broker watches ``/config/changes`` and re-reads the named
entity.  Dynamic broker configs are also read once at start, before the broker registers.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Callable

from ..config import LiveConfig
from ..zk import layout
from ..zk.session import ZkSession
from .change_follower import ChangeFollower
from .services import EventLog

if TYPE_CHECKING:
    from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)


class ConfigChangeListener:
    """Watches /config/changes; refreshes topic overrides and dynamic broker configs."""

    def __init__(self, live: LiveConfig, zk: ZkSession, replica_manager: "ReplicaManager", record_event: EventLog,
                 on_topic_config: Callable[[str, dict[str, str]], None], on_broker_config: Callable[[], None]) -> None:
        """A change of the dynamic broker configs replaces ``live.current`` (the services
        that read them hold ``live``).  ``on_topic_config(topic, overrides)`` and
        ``on_broker_config()`` tell the controller (it elects with the new settings, e.g.
        unclean.leader.election.enable)."""
        self.live = live
        self.broker_id = live.current.broker_id
        self.zk = zk
        self.replica_manager = replica_manager
        self.record_event = record_event
        self.on_topic_config = on_topic_config
        self.on_broker_config = on_broker_config
        self._seen: set[str] = set()
        self._loading = asyncio.Lock()  # one read-and-apply at a time: the last one reads the newest znodes
        self._follower = ChangeFollower(zk, "config-changes", (layout.CONFIG_CHANGES,), self._process)

    async def start(self) -> None:
        zk = self.zk
        await zk.ensure_path(layout.CONFIG_CHANGES)
        self._seen = set(await zk.children(layout.CONFIG_CHANGES))
        await self.load_broker_configs()
        self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    async def _process(self) -> None:
        zk = self.zk
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
            elif kind == "brokers" and which in (layout.BROKER_DEFAULT_ENTITY, str(self.broker_id)):
                await self.load_broker_configs()

    async def _topic_changed(self, topic: str) -> None:
        got = await self.zk.get(layout.topic_config_path(topic))
        overrides = layout.decode_topic_config(got[0]) if got else {}
        rm = self.replica_manager
        if topic in rm.topic_configs or any(t == topic for t, _ in rm.partitions):
            rm.topic_configs[topic] = overrides
            rm.configs_changed(topic)
        self.on_topic_config(topic, overrides)
        self.record_event("topic_config_loaded", f"broker {self.broker_id}: topic {topic} "
                                                        f"overrides now {overrides}")

    async def load_broker_configs(self) -> None:
        """Read /config/brokers/<default> and /config/brokers/<own id> and apply them (also
        called by the request layer after an AlterConfigs and before a DescribeConfigs of
        broker settings, so neither waits for the /config/changes watch)."""
        async with self._loading:
            await self._load_broker_configs()

    async def _load_broker_configs(self) -> None:
        zk = self.zk
        layers = []
        for entity in (layout.BROKER_DEFAULT_ENTITY, str(self.broker_id)):
            got = await zk.get(layout.broker_config_path(entity))
            try:
                layers.append(layout.decode_topic_config(got[0]) if got else {})
            except (ValueError, KeyError, json.JSONDecodeError):
                log.warning("ignoring malformed %s", layout.broker_config_path(entity))
                layers.append({})
        changed = self.live.update(*layers)
        if changed:
            self.record_event("broker_config_loaded", f"broker {self.broker_id}: dynamic configs now "
                                                             f"{ {k: v for k, v in sorted(changed.items())} }")
            self.on_broker_config()
            self.replica_manager.configs_changed()
