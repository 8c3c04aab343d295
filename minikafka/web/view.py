"""What the dashboard routes may see of their broker: a few values and callables, not the
Broker object (so web/ does not depend on broker/server.py).

Everything that changes while the broker runs is a callable, read when a request is
answered; endpoints are given for the listener the current request came in on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Protocol

from ..protocol.rpc.types import ReplicaState

Endpoint = tuple[str, int]


class Metadata(Protocol):
    """The broker's metadata cache as the dashboard reads it."""

    controller_id: int
    controller_epoch: int
    brokers: dict[int, Endpoint]  # live broker id -> inter-broker endpoint
    partitions: dict[tuple[str, int], dict]  # UpdateMetadata's partition states

    def topic_id(self, topic: str) -> str: ...  # the topic's id (KIP-516), the zero id when unknown

    # (MetadataCache also has ``version``, bumped by every UpdateMetadata: the dashboard keeps
    # its index of the partitions while it stays the same; read with getattr, 0 if absent)


@dataclass(frozen=True)
class BrokerView:
    """The serving broker, read-only."""

    broker_id: int
    advertised: Endpoint  # this broker's inter-broker endpoint, for before its first UpdateMetadata
    metadata: Callable[[], Metadata]  # brokers, controller and partition states as the controller published them
    broker_endpoints: Callable[[dict[int, Endpoint]], list[dict[str, Any]]]  # live id -> endpoint, as Metadata's brokers
    kafka_endpoints: Callable[[], dict[int, Endpoint]]  # broker id -> Kafka-protocol endpoint, this broker's included
    cluster_id: Callable[[], str]
    controller_epoch: Callable[[], int | None]  # its controller epoch while this broker is the active controller
    # this broker's replica_state entries: of the given (topic, partition, None) triples, or all with None
    local_replicas: Callable[..., list[ReplicaState]]
    # every broker's events as this one holds them (broker/timeline.py's ClusterTimeline):
    # those newer than ``since``, the newest ``limit``, after asking the live ones for theirs
    cluster_events: Callable[[float, int], Awaitable[list[dict]]]
    timeline_held: Callable[[], dict[int, float]]  # broker id -> the newest event held of it
    keep_timeline: Callable[[], Awaitable[None]]  # pulls the others' events every second until cancelled
    call: Callable[[str, int, str, dict, float], Awaitable[dict]]  # another broker's API (host, port, api, body, timeout)
    prometheus: Callable[[], str]  # /metrics text
    # the principal of a request (its headers and TLS client certificate) on the current
    # listener, as the msgpack API authenticates it; SaslAuthenticationFailedError when
    # the listener wants a user and password and got none or wrong ones
    authenticate: Callable[[Mapping[str, str], dict | None], str]
    # awaited before answering a failed login (then the connection closes): the same
    # connection.failed.authentication.delay.ms as the msgpack API's (ConnectionPolicy.failed_login_delay_s)
    failed_login_pause: Callable[[], Awaitable[None]]
    acls_enabled: bool = False  # an authorizer is on: the record browser would read around the ACLs
    zookeeper_session: Callable[[], str] = lambda: ""  # this broker's: connected, suspended, lost
    zookeeper_connect: str = ""  # zookeeper.connect: the dashboard asks each server its mode
