"""Kafka's ZooKeeper znode layout and JSON values (ZooKeeper-era Kafka, 2.x).

Pure: paths and (de)serialisers only; zk/session.py does the I/O.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

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

PERSISTENT_PATHS = (BROKER_IDS, BROKER_TOPICS, ISR_CHANGE_NOTIFICATION, CONFIG_TOPICS, DELETE_TOPICS, "/cluster")


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def _dumps(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _timestamp() -> str:
    return str(int(time.time() * 1000))


EXTERNAL_LISTENER = "EXTERNAL"  # listener name of a broker's optional second endpoint in /brokers/ids/N


def _join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class BrokerInfo:
    """/brokers/ids/N: where a live broker listens; ``epoch`` is its znode's czxid."""

    id: int
    host: str
    port: int
    epoch: int = -1
    rack: str | None = None
    storage: str = "disk"
    external: tuple[str, int] | None = None  # the EXTERNAL listener, for clients outside the broker network

    def encode(self) -> bytes:
        # "storage" is minikafka's own field: a broker with memory storage comes back
        # empty after a restart, so the controller must not trust its old ISR entries.
        # host/port are the inter-broker (PLAINTEXT) listener, as in Kafka.
        endpoints = [f"PLAINTEXT://{self.host}:{self.port}"]
        protocols = {"PLAINTEXT": "PLAINTEXT"}
        if self.external is not None:
            endpoints.append(f"{EXTERNAL_LISTENER}://{_join_host_port(*self.external)}")
            protocols[EXTERNAL_LISTENER] = "PLAINTEXT"
        return _dumps({
            "version": 4, "host": self.host, "port": self.port, "jmx_port": -1, "storage": self.storage,
            "endpoints": endpoints, "listener_security_protocol_map": protocols,
            "rack": self.rack, "timestamp": _timestamp(),
        })

    @classmethod
    def decode(cls, broker_id: int, data: bytes, epoch: int = -1) -> "BrokerInfo":
        d = json.loads(data)
        external = None
        for endpoint in d.get("endpoints") or ():
            name, sep, address = str(endpoint).partition("://")
            host, colon, port = address.rpartition(":")
            if sep and colon and name == EXTERNAL_LISTENER and port.isdigit():
                external = (host.strip("[]"), int(port))
        return cls(broker_id, d["host"], int(d["port"]), epoch, d.get("rack"), d.get("storage", "disk"), external)


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


def encode_controller(broker_id: int) -> bytes:
    return _dumps({"version": 1, "brokerid": broker_id, "timestamp": _timestamp()})


def decode_controller(data: bytes) -> int:
    return int(json.loads(data)["brokerid"])


def encode_assignment(assignment: dict[int, list[int]]) -> bytes:
    """/brokers/topics/T: {"version":1,"partitions":{"0":[1,2,3],...}}."""
    return _dumps({"version": 1, "partitions": {str(p): list(r) for p, r in sorted(assignment.items())}})


def decode_assignment(data: bytes) -> dict[int, list[int]]:
    return {int(p): [int(b) for b in r] for p, r in json.loads(data)["partitions"].items()}


def encode_topic_config(config: dict[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes) -> dict[str, str]:
    return {str(k): str(v) for k, v in json.loads(data).get("config", {}).items()}


def encode_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_isr_change(data: bytes) -> list[tuple[str, int]]:
    return [(d["topic"], int(d["partition"])) for d in json.loads(data)["partitions"]]
