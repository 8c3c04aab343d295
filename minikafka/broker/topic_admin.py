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
import json
from typing import Any, Callable

from .. import config as cfg
from ..config import BrokerConfig, LiveConfig, validate_topic_config
from ..errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicExceptionError,
    KafkaError,
    ReassignmentInProgressError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from ..protocol.topic_ids import ZERO_TOPIC_ID
from ..replication import rules
from ..zk import layout
from ..zk.errors import BadVersionError, NodeExistsError
from ..zk.session import ZkSession
from .metadata_cache import MetadataCache
from .services import EventLog
from .settings import TopicAdminSettings

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
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_DOUBLE, TYPE_LIST, TYPE_PASSWORD = 1, 2, 3, 6, 7, 9
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

    @property
    def is_sensitive(self) -> bool:
        """A password (Kafka's Type.PASSWORD): its value and its synonyms' are never told."""
        return self.config_type == TYPE_PASSWORD


def _entry(c: cfg.ConfigDef, value: str | None, source: int, read_only: bool,
           synonyms: tuple[tuple[str, str | None, int], ...]) -> ConfigEntry:
    """One DescribeConfigs entry; a sensitive setting's values are left out (null)."""
    if c.name in cfg.SENSITIVE_CONFIGS:
        value = None
        synonyms = tuple((n, None, s) for n, _, s in synonyms)
    return ConfigEntry(c.name, value, source, read_only, _type_of(c), c.doc, synonyms)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _type_of(c: cfg.ConfigDef) -> int:
    if c.name in cfg.SENSITIVE_CONFIGS:
        return TYPE_PASSWORD
    if c.parse is int:
        return TYPE_INT
    if c.name in cfg.LIST_CONFIGS:
        return TYPE_LIST
    if c.name.endswith("ratio"):
        return TYPE_DOUBLE
    return TYPE_BOOLEAN if c.parse is cfg._bool else TYPE_STRING


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: either a count and a replication factor, or an explicit
    assignment (partition id -> replicas, keys as strings as the wire carries them)."""

    name: str
    num_partitions: int
    replication_factor: int
    config: dict[str, str]
    assignment: dict[str, list[int]] | None = None


def _broker_source(config: BrokerConfig, name: str) -> int:
    """Where the broker's value of ``name`` comes from: a dynamic layer, the broker's own
    settings (STATIC_BROKER_CONFIG, even when equal to the default), or the default."""
    if name in config.dynamic_sources:
        return _DYNAMIC_SOURCES[config.dynamic_sources[name]]
    return SOURCE_STATIC_BROKER if name in config.explicit else SOURCE_DEFAULT


class TopicAdmin:
    """Topic creation and deletion, settings, partition counts and reassignments: the
    operations behind both listeners' admin APIs, written once.  Each writes ZooKeeper;
    the controller's watches do the rest."""

    def __init__(self, config: BrokerConfig | LiveConfig, zk: ZkSession, metadata: MetadataCache,
                 record_event: EventLog, new_topic_id: Callable[[], str]) -> None:
        """``config``: the broker's :class:`~minikafka.config.LiveConfig` (DescribeConfigs
        tells the dynamic settings in effect), or a config that never changes."""
        self.live = LiveConfig.of(config)
        self.broker_id = self.config.broker_id
        self.zk = zk
        self.metadata = metadata
        self.record_event = record_event
        self.new_topic_id = new_topic_id  # a fresh random topic id (KIP-516) for each topic created

    @property
    def config(self) -> BrokerConfig:
        """The broker's configuration in effect now."""
        return self.live.current

    @property
    def settings(self) -> TopicAdminSettings:
        """The topic creation and deletion defaults in effect now."""
        return self.live.view(TopicAdminSettings)

    # -- describe -------------------------------------------------------------------
    async def describe_topic(self, topic: str) -> list[ConfigEntry]:
        """Every topic setting: the override, else the broker's value, else the default."""
        got = await self.zk.get(layout.topic_config_path(topic))
        if got is None or await self.zk.exists(layout.topic_path(topic)) is None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        overrides = layout.decode_topic_config(got[0])
        config = self.config  # one value throughout
        out = []
        for c in cfg.TOPIC_CONFIGS:
            if cfg.topic_only(c.name):  # no broker-wide default: the override, else Kafka's default
                default = _text(c.default)
                synonyms_only = [(c.name, overrides[c.name], SOURCE_TOPIC)] if c.name in overrides else []
                value, source = (overrides[c.name], SOURCE_TOPIC) if c.name in overrides else (default, SOURCE_DEFAULT)
                out.append(_entry(c, value, source, False, tuple(synonyms_only)))
                continue
            broker_name = cfg.BROKER_NAME_OF_TOPIC_CONFIG.get(c.name, c.name)
            effective = config.get(broker_name)
            if effective is None and broker_name in cfg.MS_FALLBACKS:
                # log.retention.ms unset: log.retention.minutes or .hours give it, as in Kafka
                effective = cfg.broker_ms_setting(config, broker_name)
                broker_name = next((n for n, _ in cfg.MS_FALLBACKS[broker_name] if config.get(n) is not None), broker_name)
            broker_value = config.get(broker_name)
            broker_default = cfg.broker_default(broker_name)
            broker_source = _broker_source(config, broker_name)
            synonyms: list[tuple[str, str | None, int]] = []
            if c.name in overrides:
                synonyms.append((c.name, overrides[c.name], SOURCE_TOPIC))
            if broker_source != SOURCE_DEFAULT:
                synonyms.append((broker_name, _text(broker_value), broker_source))
            synonyms.append((broker_name, _text(broker_default), SOURCE_DEFAULT))
            value, source = (overrides[c.name], SOURCE_TOPIC) if c.name in overrides else (_text(effective), broker_source)
            out.append(_entry(c, value, source, False, tuple(synonyms)))
        return out

    def check_broker_name(self, name: str) -> None:
        """A DescribeConfigs of broker settings may name this broker or none ("")."""
        if name not in ("", str(self.broker_id)):
            raise InvalidRequestError(f"broker {self.broker_id} describes its own configs, not broker {name!r}")

    def describe_broker(self, name: str) -> list[ConfigEntry]:
        """This broker's settings as Kafka's DescribeConfigs answers them: each value in
        effect with its source, DYNAMIC_BROKER_CONFIG (/config/brokers/<id>),
        DYNAMIC_DEFAULT_BROKER_CONFIG (/config/brokers/<default>), STATIC_BROKER_CONFIG (the
        broker's --config, --config-file or command line: broker.id, zookeeper.connect,
        log.dirs, listeners, advertised.listeners) or DEFAULT_CONFIG, and as synonyms every
        layer that sets it in that order, the default last; read_only marks the settings
        that cannot change live."""
        self.check_broker_name(name)
        config = self.config
        given: dict[str, str | None] = {
            "broker.id": _text(config.broker_id), "zookeeper.connect": config.zookeeper_connect,
            "log.dirs": config.data_dir, "listeners": config.listeners_text(),
            "advertised.listeners": config.listeners_text(advertised=True)}
        out = []
        for c in cfg.COMMAND_LINE_CONFIGS:
            synonyms: list[tuple[str, str | None, int]] = [(c.name, given[c.name], SOURCE_STATIC_BROKER)]
            if c.default is not None:
                synonyms.append((c.name, _text(c.default), SOURCE_DEFAULT))
            out.append(_entry(c, given[c.name], SOURCE_STATIC_BROKER, True, tuple(synonyms)))
        layers = ((config.dynamic_layers["dynamic_broker"], SOURCE_DYNAMIC_BROKER),
                  (config.dynamic_layers["dynamic_default"], SOURCE_DYNAMIC_DEFAULT))
        for c in cfg.BROKER_CONFIGS:
            value: str | None
            if c.name in given:  # the listeners, however they were given
                value = given[c.name]
                synonyms = [(c.name, value, SOURCE_STATIC_BROKER)]
            else:
                value = _text(config.get(c.name))
                names = [c.name] + [n for n, _ in cfg.MS_FALLBACKS.get(c.name, ())]
                synonyms = []
                for layer, source in layers:
                    synonyms += [(n, layer[n], source) for n in names if n in layer]
                synonyms += [(n, _text(config.static[n]), SOURCE_STATIC_BROKER) for n in names if n in config.explicit]
                synonyms += [(n, _text(cfg.broker_default(n)), SOURCE_DEFAULT) for n in names
                             if cfg.broker_default(n) is not None]
                while synonyms and synonyms[0][0] != c.name:  # as Kafka: from the setting's own name on
                    synonyms.pop(0)
            source = synonyms[0][2] if synonyms else SOURCE_DEFAULT
            out.append(_entry(c, value, source, c.name not in cfg.DYNAMIC_BROKER_CONFIGS, tuple(synonyms)))
        return out

    async def alter_broker(self, name: str, change: Any, validate_only: bool) -> None:
        """Apply ``change(current) -> new`` to the dynamic configs of broker ``name`` (its id)
        or of every broker (``name`` "" : /config/brokers/<default>), as kafka-configs.sh
        --entity-type brokers does: a conditional write, then a /config/changes notification."""
        entity = layout.BROKER_DEFAULT_ENTITY if name == "" else name
        if entity != layout.BROKER_DEFAULT_ENTITY and not (name.isdigit() and int(name) >= 0):
            raise InvalidRequestError(f"broker resource name must be a broker id or empty (every broker), not {name!r}")
        zk = self.zk
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
            self.record_event("broker_config_changed", f"broker configs of {entity}: {new}")
            return
        raise InvalidRequestError(f"broker configs of {entity} kept changing under this request; try again")

    # -- alter ------------------------------------------------------------------------
    async def alter_topic(self, topic: str, change: Any, validate_only: bool) -> None:
        """Apply ``change(current_overrides) -> new_overrides`` to a topic's overrides.

        The write is conditional on the config znode's version and retried on a
        conflict, then announced on /config/changes."""
        zk = self.zk
        for _ in range(10):
            got = await zk.get(layout.topic_config_path(topic))
            assignment = await zk.get(layout.topic_path(topic))
            if got is None or assignment is None:
                raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
            new = cfg.validate_topic_config(change(layout.decode_topic_config(got[0])))
            # min.insync.replicas may exceed the replication factor, as in Kafka: acks=all
            # produces are then refused with NOT_ENOUGH_REPLICAS
            if validate_only:
                return
            try:
                await zk.set(layout.topic_config_path(topic), layout.encode_topic_config(new), got[1].version)
            except BadVersionError:
                continue
            await zk.create(layout.CONFIG_CHANGE_PREFIX, layout.encode_config_change(f"topics/{topic}"),
                            sequence=True, makepath=True)
            self.record_event("topic_config_changed", f"topic {topic}: overrides {new}")
            return
        raise InvalidRequestError(f"topic {topic!r}: its config kept changing under this request; try again")

    # -- partitions ---------------------------------------------------------------------
    async def create_partitions(self, topic: str, count: int, assignments: list[list[int]] | None,
                                validate_only: bool) -> list[int]:
        """Raise ``topic``'s partition count to ``count``; returns the new partition ids."""
        zk = self.zk
        got = await zk.get(layout.topic_path(topic))
        if got is None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        if await zk.exists(f"{layout.DELETE_TOPICS}/{topic}") is not None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} is being deleted")
        znode = layout.TopicZnode.decode(got[0])
        current = znode.partitions
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
            # the topic keeps its id; one stored without an id gets it from the controller
            await zk.set(layout.topic_path(topic), layout.TopicZnode({**current, **new}, znode.topic_id, znode.adding,
                                                                     znode.removing).encode(), got[1].version)
        except BadVersionError:
            raise InvalidRequestError(f"topic {topic!r} changed during the request (another reassignment "
                                      "or partition increase); try again") from None
        self.record_event("partitions_created", f"topic {topic}: partitions {added} added with "
                                                       f"assignment { {p: new[p] for p in added} }")
        return added

    async def wait_led(self, topic: str, count: int, timeout_ms: int) -> None:
        """Wait until this broker's metadata shows ``count`` partitions of ``topic``, all led."""
        def ready() -> bool:
            states = self.metadata.partitions_of(topic)
            return len(states) >= count and all(s["leader"] >= 0 for s in states)
        if timeout_ms > 0 and not await self.metadata.wait_until(ready, timeout_ms / 1000.0):
            raise RequestTimedOutError(f"topic {topic!r}: the new partitions were written but have no leader "
                                       f"within {timeout_ms} ms")

    # -- topics ---------------------------------------------------------------------------
    async def create_topics(self, topics: list[NewTopic], validate_only: bool, timeout_ms: int,
                            ids: list[str] | None = None) -> list[KafkaError | None]:
        """Validate each topic and write /config/topics/T and /brokers/topics/T in one
        transaction, the latter with a fresh random topic id (KIP-516); the controller's
        watch on /brokers/topics elects the leaders.  The caller is trusted: the request
        layer refuses what a client may not create (``apis.admin.creatable``), a coordinator
        creates its internal topic (``__`` names) here.  With ``timeout_ms`` > 0, waits until every
        created partition has a leader here (REQUEST_TIMED_OUT for those that have none by
        then).  One error (or None) per topic; ``ids``, when given, is filled with each
        created topic's id (the zero id for the others), as CreateTopics v7 answers."""
        results: list[KafkaError | None] = []
        if ids is not None:
            ids[:] = [ZERO_TOPIC_ID] * len(topics)
        created = []
        live = sorted(int(b) for b in await self.zk.children(layout.BROKER_IDS))
        existing = await self.zk.children(layout.BROKER_TOPICS)
        for t in topics:
            name = t.name
            try:
                layout.check_topic_name(name)
                collides = [e for e in existing if e != name and e.replace(".", "_") == name.replace(".", "_")]
                if collides:
                    raise InvalidTopicExceptionError(f"topic {name!r} collides with existing topic {collides[0]!r}: "
                                                     "'.' and '_' are alike in metric names")
                # Kafka looks for the topic before anything else is checked: an existing topic is
                # TOPIC_ALREADY_EXISTS, whatever counts or configs the request asks for
                if await self.zk.exists(layout.topic_path(name)) is not None:
                    raise TopicAlreadyExistsError(f"topic {name!r} already exists")
                config = validate_topic_config(t.config)
                if t.assignment is not None:
                    assignment = check_assignment(t.assignment, live)
                else:
                    # -1: the broker's defaults, as Kafka's CreateTopics without a count or a factor
                    defaults = self.settings
                    count = defaults.num_partitions if t.num_partitions == -1 else t.num_partitions
                    factor = (defaults.default_replication_factor if t.replication_factor == -1
                              else t.replication_factor)
                    check_partition_count(count)
                    if factor > len(live):
                        raise InvalidReplicationFactorError(
                            f"replication factor {factor} is larger than the {len(live)} live "
                            f"broker{'s' if len(live) != 1 else ''} {live}")
                    assignment = rules.assign_replicas(live, count, factor)
                if not validate_only:
                    topic_id = self.new_topic_id()

                    def build(tx: Any, name: str = name, config: dict = config, assignment: dict = assignment,
                              topic_id: str = topic_id) -> None:
                        tx.create(layout.topic_config_path(name), layout.encode_topic_config(config))
                        tx.create(layout.topic_path(name), layout.encode_assignment(assignment, topic_id))
                    try:
                        await self.zk.transaction(build)
                    except NodeExistsError:
                        raise TopicAlreadyExistsError(f"topic {name!r} already exists") from None
                    created.append((len(results), name, len(assignment)))
                    if ids is not None:
                        ids[len(results)] = topic_id
                    self.record_event("topic_created", f"topic {name} created with id {topic_id} and assignment "
                                                       f"{ {p: r for p, r in sorted(assignment.items())} }")
                results.append(None)
            except KafkaError as exc:
                results.append(exc)
        if created and timeout_ms > 0:
            def all_led() -> bool:
                for _, name, n in created:
                    states = self.metadata.partitions_of(name)
                    if len(states) < n or any(s["leader"] < 0 for s in states):
                        return False
                return True
            if not await self.metadata.wait_until(all_led, timeout_ms / 1000.0):
                for i, _, _ in created:
                    results[i] = RequestTimedOutError("topic was created but its leaders were not elected within timeout_ms")
        return results

    def check_deletable(self, name: str) -> None:
        """Raise why topic ``name`` cannot be deleted, whoever asks: delete.topic.enable is
        false, or it is an internal topic (the request layer asks this before it checks
        the caller's Delete, as the errors come in that order)."""
        if not self.settings.delete_topic_enable:
            raise TopicDeletionDisabledError("delete.topic.enable is false on this cluster")
        if name.startswith("__"):
            raise InvalidTopicExceptionError(f"{name} is an internal topic and cannot be deleted")

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[KafkaError | None]:
        """Mark topics for deletion under /admin/delete_topics (the controller deletes
        them); with ``timeout_ms`` > 0, wait until they left this broker's metadata."""
        results: list[KafkaError | None] = []
        marked = []
        for name in names:
            try:
                self.check_deletable(name)
                if await self.zk.exists(layout.topic_path(name)) is None:
                    raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
                try:
                    await self.zk.create(f"{layout.DELETE_TOPICS}/{name}", b"", makepath=True)
                except NodeExistsError:
                    pass
                marked.append((len(results), name))
                results.append(None)
            except KafkaError as exc:
                results.append(exc)
        if marked and timeout_ms > 0:
            gone = lambda: all(not self.metadata.partitions_of(n) for _, n in marked)  # noqa: E731
            if not await self.metadata.wait_until(gone, timeout_ms / 1000.0):
                for i, _ in marked:
                    results[i] = RequestTimedOutError("deletion not finished within timeout_ms")
        return results

    async def reassign(self, moves: list[tuple[str, int, list[int]]]) -> list[KafkaError | None]:
        """Write /admin/reassign_partitions for the valid ``(topic, partition, replicas)``;
        the controller moves them.  One error (or None) per move."""
        live = {int(b) for b in await self.zk.children(layout.BROKER_IDS)}
        results: list[KafkaError | None] = []
        accepted = []
        existing = await self.zk.get(layout.REASSIGN_PARTITIONS)
        for t, p, replicas in moves:
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
                results.append(None)
            except KafkaError as exc:
                results.append(exc)
        if accepted:
            try:
                await self.zk.create(layout.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": accepted}).encode(),
                                     makepath=True)
            except NodeExistsError:
                results = [r if r is not None else ReassignmentInProgressError("a reassignment is already in progress")
                           for r in results]
        return results

    async def reassignments(self, partitions: list[tuple[str, int]] | None) -> list[tuple[str, int, list[int], list[int], list[int]]]:
        """The reassignments still moving, as ``(topic, partition, replicas, adding, removing)``:
        /admin/reassign_partitions holds the targets, the metadata the current replicas
        (target plus old while moving) and the ISR; adding are target replicas not yet in
        the ISR, removing the current replicas not in the target."""
        got = await self.zk.get(layout.REASSIGN_PARTITIONS)
        if got is None:
            return []
        try:
            entries = json.loads(got[0].decode())["partitions"]
            targets = {(e["topic"], int(e["partition"])): [int(r) for r in e["replicas"]] for e in entries}
        except (ValueError, KeyError, TypeError):
            return []
        wanted = set(partitions) if partitions is not None else None
        out = []
        for (t, p), target in sorted(targets.items()):
            if wanted is not None and (t, p) not in wanted:
                continue
            st = self.metadata.partitions.get((t, p))
            current = list(st["replicas"]) if st is not None else list(target)
            isr = set(st["isr"]) if st is not None else set()
            out.append((t, p, current, [r for r in target if r not in isr], [r for r in current if r not in target]))
        return out


def check_assignment(assignment: dict[str, list[int]], live: list[int]) -> dict[int, list[int]]:
    """An explicit replica assignment, checked: partitions 0..n-1, the same non-zero
    number of distinct live brokers each (INVALID_REPLICA_ASSIGNMENT otherwise)."""
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
