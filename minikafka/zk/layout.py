"""Kafka's ZooKeeper znode layout and JSON values (ZooKeeper-era Kafka, 2.x).

Pure: paths and (de)serialisers only, with no clock (the caller passes the time of a
``timestamp`` field); zk/session.py does the I/O.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..errors import InvalidTopicExceptionError
from ..protocol import topic_ids

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = ISR_CHANGE_NOTIFICATION + "/isr_change_"
CONFIG_TOPICS = "/config/topics"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
CLUSTER_ID = "/cluster/id"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"  # producer id blocks (idempotent producers)
FEATURE = "/feature"  # finalized feature versions (KIP-584), written by the controller

# Created at broker start, as Kafka's KafkaZkClient.createTopLevelPaths does (tools that
# read or watch them expect them to exist), with every config entity type's path
# (topics, clients, users, brokers, ips).
PERSISTENT_PATHS = (BROKER_IDS, BROKER_TOPICS, ISR_CHANGE_NOTIFICATION, CONFIG_TOPICS, DELETE_TOPICS, "/cluster",
                    "/brokers/seqid", "/config/changes", "/config/brokers", "/config/clients", "/config/users",
                    "/config/ips", "/admin", "/consumers", "/log_dir_event_notification", PRODUCER_ID_BLOCK)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic_name(topic: str) -> str:
    """``topic`` if it is a legal topic name; INVALID_TOPIC_EXCEPTION otherwise (an empty
    name would otherwise name /brokers/topics itself)."""
    if not isinstance(topic, str) or not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
        raise InvalidTopicExceptionError(f"topic name {topic!r} is illegal: use 1-249 characters from "
                                         "[a-zA-Z0-9._-], not '.' or '..'")
    return topic


def is_internal_topic(topic: str) -> bool:
    """An internal topic of the cluster (``__consumer_offsets``, later ``__transaction_state``):
    a name starting with ``__``, which only the brokers may create.  Views list them after
    the others, and ``--exclude-internal`` leaves them out, as Kafka's tools do."""
    return topic.startswith("__")


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{check_topic_name(topic)}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{check_topic_name(topic)}"


CONFIG_BROKERS = "/config/brokers"
BROKER_DEFAULT_ENTITY = "<default>"  # /config/brokers/<default>: dynamic configs of every broker


def broker_config_path(entity: str) -> str:
    """/config/brokers/<id> or /config/brokers/<default> (same JSON as a topic's config)."""
    return f"{CONFIG_BROKERS}/{entity}"


def _dumps(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _timestamp(now_ms: int) -> str:
    """Kafka's informational ``timestamp`` field: ``now_ms``, the writer's clock in milliseconds."""
    return str(int(now_ms))


EXTERNAL_LISTENER = "EXTERNAL"  # listener name of a broker's optional second endpoint in /brokers/ids/N
# With a Kafka binary-protocol listener, PLAINTEXT (and host/port) name it, as Kafka's own
# tools expect, and the msgpack/HTTP endpoints move to these names:
HTTP_LISTENER = "MINIKAFKA"
HTTP_EXTERNAL_LISTENER = "MINIKAFKA_EXTERNAL"
KAFKA_EXTERNAL_LISTENER = "KAFKA_EXTERNAL"


# registration endpoint name -> listener of listener.security.protocol.map
_OUR_LISTENER = {"PLAINTEXT": "INTERNAL", EXTERNAL_LISTENER: "EXTERNAL", KAFKA_EXTERNAL_LISTENER: "KAFKA_EXTERNAL",
                 HTTP_LISTENER: "INTERNAL", HTTP_EXTERNAL_LISTENER: "EXTERNAL"}


def _join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class BrokerInfo:
    """/brokers/ids/N: where a live broker listens; ``epoch`` is its znode's czxid.

    ``host``/``port`` is the inter-broker msgpack/HTTP endpoint and ``external`` its
    optional EXTERNAL twin; ``kafka``/``kafka_external`` are the optional Kafka
    binary-protocol endpoints.  In the znode, a broker without a Kafka listener
    registers its HTTP endpoint as PLAINTEXT (host/port), as before; a broker with one
    registers the Kafka endpoint as PLAINTEXT (host/port), so tools that read
    /brokers/ids and speak Kafka's protocol reach the right port, and lists the HTTP
    endpoints as MINIKAFKA:// and MINIKAFKA_EXTERNAL://."""

    id: int
    host: str
    port: int
    epoch: int = -1
    rack: str | None = None
    storage: str = "disk"
    external: tuple[str, int] | None = None  # the EXTERNAL listener, for clients outside the broker network
    kafka: tuple[str, int] | None = None  # Kafka binary protocol
    kafka_external: tuple[str, int] | None = None
    # The broker epoch of this process's first registration: a memory-storage log is as
    # old as that.  -1 on a first registration (the log starts with this one).
    log_since: int = -1
    # listener (INTERNAL, EXTERNAL, KAFKA, KAFKA_EXTERNAL) -> security protocol, written to
    # listener_security_protocol_map; PLAINTEXT for a listener not named.  Not read back.
    protocols: dict[str, str] | None = field(default=None, compare=False)

    @property
    def memory_log_is_new(self) -> bool:
        """A memory-storage broker registered by a process that started with this very
        registration: its log is empty, whatever ISRs still list it.  False for disk
        storage, and for a running process that re-registered after losing its ZooKeeper
        session (its log is intact)."""
        return self.storage == "memory" and (self.log_since < 0 or self.log_since >= self.epoch)

    @property
    def log_born(self) -> int:
        """The broker epoch from which this broker's log is known to be kept."""
        return self.log_since if self.log_since >= 0 else self.epoch

    def encode(self, now_ms: int) -> bytes:
        # "storage" and "log_since" are minikafka's own fields: a broker with memory
        # storage comes back empty after a restart (not after a re-registration by the
        # same process), so the controller must not trust its old ISR entries.
        if self.kafka is None:
            named = [("PLAINTEXT", (self.host, self.port)), (EXTERNAL_LISTENER, self.external)]
            host, port = self.host, self.port
        else:
            named = [("PLAINTEXT", self.kafka), (KAFKA_EXTERNAL_LISTENER, self.kafka_external),
                     (HTTP_LISTENER, (self.host, self.port)), (HTTP_EXTERNAL_LISTENER, self.external)]
            host, port = self.kafka
        listed = [(n, hp) for n, hp in named if hp is not None]
        # With a Kafka listener, PLAINTEXT names it; the protocol map says what each speaks.
        ours = {**_OUR_LISTENER, "PLAINTEXT": "KAFKA" if self.kafka is not None else "INTERNAL"}
        # version 5, as Kafka 2.7+ registers: ``features``, the supported feature versions
        # (KIP-584), is empty, as a ZooKeeper-mode Kafka 3.9 broker writes it
        data = {
            "features": {}, "listener_security_protocol_map": {n: (self.protocols or {}).get(ours[n], "PLAINTEXT")
                                                               for n, _ in listed},
            "endpoints": [f"{n}://{_join_host_port(*hp)}" for n, hp in listed],
            "jmx_port": -1, "port": port, "host": host, "version": 5, "timestamp": _timestamp(now_ms),
            "storage": self.storage,
        }
        if self.log_since >= 0:
            data["log_since"] = self.log_since
        if self.rack is not None:
            data["rack"] = self.rack  # left out when unset, as Kafka writes it
        return _dumps(data)

    @classmethod
    def decode(cls, broker_id: int, data: bytes, epoch: int = -1) -> "BrokerInfo":
        d = json.loads(data)
        endpoints: dict[str, tuple[str, int]] = {}
        for endpoint in d.get("endpoints") or ():
            name, sep, address = str(endpoint).partition("://")
            at, colon, port_text = address.rpartition(":")
            if sep and colon and port_text.isdigit():
                endpoints[name] = (at.strip("[]"), int(port_text))
        if HTTP_LISTENER in endpoints:
            host, port = endpoints[HTTP_LISTENER]
            return cls(broker_id, host, port, epoch, d.get("rack"), d.get("storage", "disk"),
                       endpoints.get(HTTP_EXTERNAL_LISTENER), endpoints.get("PLAINTEXT", (d["host"], int(d["port"]))),
                       endpoints.get(KAFKA_EXTERNAL_LISTENER), int(d.get("log_since", -1)))
        return cls(broker_id, d["host"], int(d["port"]), epoch, d.get("rack"), d.get("storage", "disk"),
                   endpoints.get(EXTERNAL_LISTENER), log_since=int(d.get("log_since", -1)))


@dataclass(frozen=True)
class LeaderIsr:
    """/brokers/topics/T/partitions/P/state (the znode version travels separately)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def encode(self) -> bytes:
        return _dumps({"controller_epoch": self.controller_epoch, "leader": self.leader, "version": 1,
                       "leader_epoch": self.leader_epoch, "isr": list(self.isr)})

    @classmethod
    def decode(cls, data: bytes) -> "LeaderIsr":
        d = json.loads(data)
        return cls(int(d["leader"]), int(d["leader_epoch"]), tuple(int(b) for b in d["isr"]), int(d["controller_epoch"]))


def encode_controller(broker_id: int, now_ms: int) -> bytes:
    """/controller, version 2 as Kafka 3.x writes it; ``kraftControllerEpoch`` -1 says a
    ZooKeeper-mode controller holds it (only a migration to KRaft writes another)."""
    return _dumps({"version": 2, "brokerid": broker_id, "timestamp": _timestamp(now_ms), "kraftControllerEpoch": -1})


def encode_feature() -> bytes:
    """/feature as a ZooKeeper-mode Kafka 3.x controller creates it (KIP-584's FeatureZNode
    version 2): feature versioning enabled (status 1), no finalized features."""
    return _dumps({"version": 2, "status": 1, "features": {}})


def decode_controller(data: bytes) -> int:
    return int(json.loads(data)["brokerid"])


TOPIC_ZNODE_VERSION = 3  # /brokers/topics/T as Kafka 2.8+ writes it (KIP-516's topic_id)


@dataclass(frozen=True)
class TopicZnode:
    """/brokers/topics/T, Kafka's TopicZNode: the replicas of each partition, the topic's
    id (KIP-516; None in a znode an older writer left, version 1 or 2) and, per partition
    being reassigned, the replicas it is adding and removing (empty otherwise)::

        {"partitions":{"0":[1,2,3]},"topic_id":"<22 characters>",
         "adding_replicas":{},"removing_replicas":{},"version":3}
    """

    partitions: dict[int, list[int]]
    topic_id: str | None = None
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        def per_partition(m: dict[int, list[int]]) -> dict[str, list[int]]:
            return {str(p): list(r) for p, r in sorted(m.items()) if r}  # Kafka lists only moving partitions
        body: dict = {"partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())}}
        if self.topic_id is not None:
            body["topic_id"] = self.topic_id
        body.update({"adding_replicas": per_partition(self.adding), "removing_replicas": per_partition(self.removing),
                     "version": TOPIC_ZNODE_VERSION})
        return _dumps(body)

    @classmethod
    def decode(cls, data: bytes) -> "TopicZnode":
        """Any version: 1 (partitions only), 2 (adding/removing), 3 (topic_id).  A
        malformed topic id raises ValueError, as any malformed field does."""
        d = json.loads(data)

        def per_partition(key: str) -> dict[int, list[int]]:
            return {int(p): [int(b) for b in r] for p, r in (d.get(key) or {}).items()}
        topic_id = d.get("topic_id")
        if topic_id is not None and not topic_ids.is_topic_id(topic_id):
            raise ValueError(f"malformed topic_id {topic_id!r}")
        return cls(per_partition("partitions"), topic_id, per_partition("adding_replicas"),
                   per_partition("removing_replicas"))


def encode_assignment(assignment: dict[int, list[int]], topic_id: str,
                      adding: dict[int, list[int]] | None = None, removing: dict[int, list[int]] | None = None) -> bytes:
    """/brokers/topics/T (version 3, see :class:`TopicZnode`)."""
    return TopicZnode(assignment, topic_id, adding or {}, removing or {}).encode()


def decode_assignment(data: bytes) -> dict[int, list[int]]:
    """The partitions of /brokers/topics/T (any version)."""
    return TopicZnode.decode(data).partitions


def encode_topic_config(config: dict[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes) -> dict[str, str]:
    return {str(k): str(v) for k, v in json.loads(data).get("config", {}).items()}


def encode_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_isr_change(data: bytes) -> list[tuple[str, int]]:
    return [(d["topic"], int(d["partition"])) for d in json.loads(data)["partitions"]]


# Config change notifications, as Kafka 2.x writes them: a sequential znode per change
# naming the changed entity; every broker watches the parent and re-reads that entity.
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = CONFIG_CHANGES + "/config_change_"


def encode_config_change(entity_path: str) -> bytes:
    """/config/changes/config_change_N: {"version":2,"entity_path":"topics/T"}."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    return str(json.loads(data)["entity_path"])
