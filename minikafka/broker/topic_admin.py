"""Topic settings and partition counts: describe, alter, add partitions (any broker).

These are the broker-side operations behind Kafka's DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs and CreatePartitions, kept free of any wire format so that
both listeners share them.  As in Kafka 2.x:

* a topic's overrides live in ``/config/topics/T``; a change is written there
  (conditionally on the znode's version) and announced by a sequential
  ``/config/changes/config_change_N`` holding ``{"version":2,"entity_path":"topics/T"}``.
  Every broker watches ``/config/changes`` and re-reads the named topic's overrides
  (see :mod:`minikafka.broker.config_changes`), and so does the controller.
* dynamic broker configs (the topic defaults) live in ``/config/brokers/<default>`` and
  ``/config/brokers/<id>``, announced the same way with ``"entity_path":"brokers/<id>"``.
* adding partitions rewrites ``/brokers/topics/T`` (conditionally); the controller's
  watch on that znode elects leaders for the new partitions.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import config as cfg
from ..auth.acls import CLUSTER_NAME
from ..errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidRequestError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from ..replication import rules
from ..zk import layout
from ..zk.session import BadVersionError, NodeExistsError

if TYPE_CHECKING:
    from .server import Broker

log = logging.getLogger(__name__)

# Most partitions a topic may have: its assignment znode must fit ZooKeeper's 1 MB limit
# (jute.maxbuffer), and every partition costs a state znode and an election.
MAX_PARTITIONS = 10000


def check_partition_count(count: int) -> None:
    """INVALID_PARTITIONS unless 1 <= count <= MAX_PARTITIONS."""
    if count < 1:
        raise InvalidPartitionsError(f"number of partitions must be at least 1, not {count}")
    if count > MAX_PARTITIONS:
        raise InvalidPartitionsError(f"a topic may have at most {MAX_PARTITIONS} partitions, not {count}")


# Kafka's ConfigResource types, DescribeConfigs sources and config types.
TOPIC, BROKER = 2, 4
SOURCE_TOPIC, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 2, 3, 4, 5
_DYNAMIC_SOURCES = {"dynamic_broker": SOURCE_DYNAMIC_BROKER, "dynamic_default": SOURCE_DYNAMIC_DEFAULT}
# the msgpack API's names of Kafka's config sources
CONFIG_SOURCE_NAMES = {SOURCE_TOPIC: "topic", SOURCE_DYNAMIC_BROKER: "dynamic_broker",
                       SOURCE_DYNAMIC_DEFAULT: "dynamic_default", SOURCE_STATIC_BROKER: "broker", SOURCE_DEFAULT: "default"}
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_DOUBLE, TYPE_LIST = 1, 2, 3, 6, 7
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@dataclass(frozen=True)
class ConfigEntry:
    """One setting as DescribeConfigs reports it."""

    name: str
    value: str | None
    source: int
    read_only: bool
    config_type: int
    documentation: str
    synonyms: tuple[tuple[str, str | None, int], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == SOURCE_DEFAULT


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _type_of(c: cfg.ConfigDef) -> int:
    if c.parse is int:
        return TYPE_INT
    if c.name.endswith("cleanup.policy"):
        return TYPE_LIST
    if c.name.endswith("ratio"):
        return TYPE_DOUBLE
    return TYPE_BOOLEAN if c.parse is cfg._bool else TYPE_STRING


class TopicAdmin:
    """Config and partition operations of one broker."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    # -- describe -------------------------------------------------------------------
    async def describe_topic(self, topic: str) -> list[ConfigEntry]:
        """Every topic setting: the override, else the broker's value, else the default."""
        self.broker.security.require("DescribeConfigs", "Topic", topic)
        got = await self.broker.zk.get(layout.topic_config_path(topic))
        if got is None or await self.broker.zk.exists(layout.topic_path(topic)) is None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        overrides = layout.decode_topic_config(got[0])
        out = []
        for c in cfg.TOPIC_CONFIGS:
            broker_name = cfg.BROKER_NAME_OF_TOPIC_CONFIG.get(c.name, c.name)
            effective = self.broker.config.get(broker_name)
            if effective is None and broker_name in cfg.MS_FALLBACKS:
                # log.retention.ms unset: log.retention.minutes or .hours give it, as in Kafka
                effective = cfg.broker_ms_setting(self.broker.config, broker_name)
                broker_name = next((n for n, _ in cfg.MS_FALLBACKS[broker_name] if self.broker.config.get(n) is not None), broker_name)
            broker_value = self.broker.config.get(broker_name)
            broker_default = cfg.broker_default(broker_name)
            broker_source = self._broker_source(broker_name)
            synonyms = []
            if c.name in overrides:
                synonyms.append((c.name, overrides[c.name], SOURCE_TOPIC))
            if broker_source != SOURCE_DEFAULT:
                synonyms.append((broker_name, _text(broker_value), broker_source))
            synonyms.append((broker_name, _text(broker_default), SOURCE_DEFAULT))
            value, source = (overrides[c.name], SOURCE_TOPIC) if c.name in overrides else (_text(effective), broker_source)
            out.append(ConfigEntry(c.name, value, source, False, _type_of(c), c.doc, tuple(synonyms)))
        return out

    def _broker_source(self, name: str) -> int:
        config = self.broker.config
        if name in config.dynamic_sources:
            return _DYNAMIC_SOURCES[config.dynamic_sources[name]]
        return SOURCE_DEFAULT if config.get(name) == cfg.broker_default(name) else SOURCE_STATIC_BROKER

    def describe_broker(self, name: str) -> list[ConfigEntry]:
        """This broker's settings: static (--config at start) or dynamic (the topic defaults,
        changed live through /config/brokers); read_only marks the static-only ones."""
        self.broker.security.require("DescribeConfigs", "Cluster", CLUSTER_NAME)
        if name not in ("", str(self.broker.broker_id)):
            raise InvalidRequestError(f"broker {self.broker.broker_id} describes its own configs, not broker {name!r}")
        config = self.broker.config
        out = []
        for c in cfg.BROKER_CONFIGS:
            value = config.get(c.name)
            source = self._broker_source(c.name)
            synonyms = [(c.name, _text(value), source)]
            static = config.static[c.name]
            if source in (SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT) and static != c.default:
                synonyms.append((c.name, _text(static), SOURCE_STATIC_BROKER))
            if source != SOURCE_DEFAULT:
                synonyms.append((c.name, _text(c.default), SOURCE_DEFAULT))
            out.append(ConfigEntry(c.name, _text(value), source, c.name not in cfg.DYNAMIC_BROKER_CONFIGS,
                                   _type_of(c), c.doc, tuple(synonyms)))
        return out

    async def alter_broker(self, name: str, change: Any, validate_only: bool) -> None:
        """Apply ``change(current) -> new`` to the dynamic configs of broker ``name`` (its id)
        or of every broker (``name`` "" : /config/brokers/<default>), as kafka-configs.sh
        --entity-type brokers does: a conditional write, then a /config/changes notification."""
        self.broker.security.require("AlterConfigs", "Cluster", CLUSTER_NAME)
        entity = layout.BROKER_DEFAULT_ENTITY if name == "" else name
        if entity != layout.BROKER_DEFAULT_ENTITY and not (name.isdigit() and int(name) >= 0):
            raise InvalidRequestError(f"broker resource name must be a broker id or empty (every broker), not {name!r}")
        zk = self.broker.zk
        path = layout.broker_config_path(entity)
        for _ in range(10):
            got = await zk.get(path)
            current = layout.decode_topic_config(got[0]) if got else {}
            new = cfg.validate_dynamic_broker_config(change(current))
            if validate_only:
                return
            try:
                if got is None:
                    await zk.create(path, layout.encode_topic_config(new), makepath=True)
                else:
                    await zk.set(path, layout.encode_topic_config(new), got[1].version)
            except (BadVersionError, NodeExistsError):
                continue
            await zk.create(layout.CONFIG_CHANGE_PREFIX, layout.encode_config_change(f"brokers/{entity}"),
                            sequence=True, makepath=True)
            self.broker.record_event("broker_config_changed", f"broker configs of {entity}: {new}")
            return
        raise InvalidRequestError(f"broker configs of {entity} kept changing under this request; try again")

    # -- alter ------------------------------------------------------------------------
    async def alter_topic(self, topic: str, change: Any, validate_only: bool) -> None:
        """Apply ``change(current_overrides) -> new_overrides`` to a topic's overrides.

        The write is conditional on the config znode's version and retried on a
        conflict, then announced on /config/changes."""
        self.broker.security.require("AlterConfigs", "Topic", topic)
        zk = self.broker.zk
        for _ in range(10):
            got = await zk.get(layout.topic_config_path(topic))
            assignment = await zk.get(layout.topic_path(topic))
            if got is None or assignment is None:
                raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
            new = cfg.validate_topic_config(change(layout.decode_topic_config(got[0])))
            rf = len(next(iter(layout.decode_assignment(assignment[0]).values()), []))
            if "min.insync.replicas" in new and int(new["min.insync.replicas"]) > rf:
                raise InvalidConfigError(f"min.insync.replicas={new['min.insync.replicas']} is larger than "
                                         f"the replication factor {rf}")
            if validate_only:
                return
            try:
                await zk.set(layout.topic_config_path(topic), layout.encode_topic_config(new), got[1].version)
            except BadVersionError:
                continue
            await zk.create(layout.CONFIG_CHANGE_PREFIX, layout.encode_config_change(f"topics/{topic}"),
                            sequence=True, makepath=True)
            self.broker.record_event("topic_config_changed", f"topic {topic}: overrides {new}")
            return
        raise InvalidRequestError(f"topic {topic!r}: its config kept changing under this request; try again")

    # -- partitions ---------------------------------------------------------------------
    async def create_partitions(self, topic: str, count: int, assignments: list[list[int]] | None,
                                validate_only: bool) -> list[int]:
        """Raise ``topic``'s partition count to ``count``; returns the new partition ids."""
        self.broker.security.require("Alter", "Topic", topic)
        zk = self.broker.zk
        got = await zk.get(layout.topic_path(topic))
        if got is None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        if await zk.exists(f"{layout.DELETE_TOPICS}/{topic}") is not None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} is being deleted")
        current = layout.decode_assignment(got[0])
        n = len(current)
        if count <= n:
            raise InvalidPartitionsError(f"topic {topic!r} has {n} partitions; the new count {count} must be larger")
        check_partition_count(count)
        rf = len(current[0])
        live = sorted(int(b) for b in await zk.children(layout.BROKER_IDS))
        added = list(range(n, count))
        if assignments is not None:
            if len(assignments) != len(added):
                raise InvalidReplicaAssignmentError(
                    f"{len(assignments)} assignments given for {len(added)} new partitions")
            new = {}
            for p, replicas in zip(added, assignments):
                if len(replicas) != rf or len(set(replicas)) != rf:
                    raise InvalidReplicaAssignmentError(
                        f"partition {p}: {replicas} must name {rf} distinct brokers (the replication factor)")
                unknown = [b for b in replicas if b not in live]
                if unknown:
                    raise InvalidReplicaAssignmentError(f"partition {p} names brokers that are not live: {unknown}")
                new[p] = list(replicas)
        else:
            placed = rules.assign_replicas(live, count, rf)
            new = {p: placed[p] for p in added}
        if validate_only:
            return added
        try:
            await zk.set(layout.topic_path(topic), layout.encode_assignment({**current, **new}), got[1].version)
        except BadVersionError:
            raise InvalidRequestError(f"topic {topic!r} changed during the request (another reassignment "
                                      "or partition increase); try again") from None
        self.broker.record_event("partitions_created", f"topic {topic}: partitions {added} added with "
                                                       f"assignment { {p: new[p] for p in added} }")
        return added

    async def wait_led(self, topic: str, count: int, timeout_ms: int) -> None:
        """Wait until this broker's metadata shows ``count`` partitions of ``topic``, all led."""
        def ready() -> bool:
            states = self.broker.metadata.partitions_of(topic)
            return len(states) >= count and all(s["leader"] >= 0 for s in states)
        if timeout_ms > 0 and not await self.broker.wait_metadata(ready, timeout_ms / 1000.0):
            raise RequestTimedOutError(f"topic {topic!r}: the new partitions were written but have no leader "
                                       f"within {timeout_ms} ms")
