"""A broker's listeners: the inter-broker one, an optional EXTERNAL one, and the Kafka ones.

Like Kafka's ``INTERNAL``/``EXTERNAL`` listeners: in a Docker network brokers reach
each other as ``broker-1:19092`` while programs on the host reach the same broker as
``localhost:9092``.  A broker always serves ``--listen`` (advertised as
``--advertise``); that endpoint is the ``host``/``port`` of its ``/brokers/ids/N``
registration and is what the controller, followers and other brokers use.  With
``--listen-external HOST:PORT [--advertise-external HOST:PORT]`` the same HTTP app is
also served on a second socket, the registration lists ``EXTERNAL://host:port`` among
its ``endpoints``, and the controller passes it on in UpdateMetadata's
``live_brokers[].external``.

A Metadata request answers each broker's endpoint *for the listener the request
arrived on*, told apart by the local port of the connection: a client that
bootstrapped on external ports is sent to external endpoints, everything else gets
the inter-broker ones.  A broker without an external listener is answered with its
inter-broker endpoint on both.

The Kafka binary-protocol listeners (``--kafka-listen``, ``--kafka-listen-external``,
served by :mod:`minikafka.broker.kafka`) follow the same rule: their advertised
endpoints travel in UpdateMetadata's ``live_brokers[].kafka`` / ``kafka_external``,
and a Kafka Metadata request on the external Kafka port is answered with external
Kafka endpoints (:meth:`Listeners.kafka_brokers`).

The four listeners are named INTERNAL, EXTERNAL, KAFKA and KAFKA_EXTERNAL in Kafka's
``listeners`` / ``advertised.listeners`` settings, of which the flags are shorthands
(:mod:`minikafka.listener_spec`, docs/deployment.md); INTERNAL is the
``inter.broker.listener.name``.
"""
from __future__ import annotations

import contextvars
from typing import Any, Awaitable, Callable

from aiohttp import web

from ..config import BrokerConfig
from ..protocol.rpc.types import LiveBroker

INTERNAL = "INTERNAL"
EXTERNAL = "EXTERNAL"

# The listener of the request being handled (set by Listeners.middleware).
current_listener: contextvars.ContextVar[str] = contextvars.ContextVar("minikafka_listener", default=INTERNAL)


class Listeners:
    """Which listener a request came in on, and the external endpoints of live brokers."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.external_port = config.external_listen_port
        self.external: dict[int, tuple[str, int]] = {}  # broker id -> advertised external endpoint
        self.kafka: dict[int, tuple[str, int]] = {}  # broker id -> advertised Kafka-protocol endpoint
        self.kafka_external: dict[int, tuple[str, int]] = {}

    def describe(self) -> str:
        """``host:port`` advertised, with the external endpoint if there is one (for logs)."""
        host, port = self.config.advertised
        ext = self.config.advertised_external
        return f"{host}:{port}" + (f" (external {ext[0]}:{ext[1]})" if ext else "")

    def listener_of(self, request: web.BaseRequest) -> str:
        if self.external_port is None or request.transport is None:
            return INTERNAL
        sockname = request.transport.get_extra_info("sockname")
        port = sockname[1] if isinstance(sockname, (tuple, list)) and len(sockname) >= 2 else None
        return EXTERNAL if port == self.external_port else INTERNAL

    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        token = current_listener.set(self.listener_of(request))
        try:
            return await handler(request)
        finally:
            current_listener.reset(token)

    def update(self, live_brokers: "list[LiveBroker]") -> None:
        """Remember the external endpoints of an UpdateMetadata's ``live_brokers``."""
        self.external = {b.id: (b.external.host, b.external.port) for b in live_brokers if b.external}
        self.kafka = {b.id: (b.kafka.host, b.kafka.port) for b in live_brokers if b.kafka}
        self.kafka_external = {b.id: (b.kafka_external.host, b.kafka_external.port)
                               for b in live_brokers if b.kafka_external}

    def brokers(self, internal: dict[int, tuple[str, int]], own_id: int) -> list[dict[str, Any]]:
        """Metadata's ``brokers`` for the current request's listener.

        ``internal`` is the metadata cache's id -> inter-broker endpoint; empty before the
        first UpdateMetadata, when the broker answers with itself only."""
        table = dict(internal) or {own_id: self.config.advertised}
        if current_listener.get() == EXTERNAL:
            external = dict(self.external)
            if self.config.advertised_external is not None:
                external[own_id] = self.config.advertised_external
            table = {b: external.get(b, hp) for b, hp in table.items()}
        return [{"id": b, "host": h, "port": p} for b, (h, p) in sorted(table.items())]

    def kafka_endpoints(self, own_id: int) -> dict[int, tuple[str, int]]:
        """Broker id -> Kafka-protocol endpoint for the current request's listener, of the
        brokers the last UpdateMetadata named with one and of this broker: on the external
        listener, external endpoints where brokers have them (the dashboard's brokers)."""
        table = dict(self.kafka)
        if self.config.advertised_kafka is not None:
            table[own_id] = self.config.advertised_kafka
        if current_listener.get() == EXTERNAL:
            table.update(self.kafka_external)
            if self.config.advertised_kafka_external is not None:
                table[own_id] = self.config.advertised_kafka_external
        return table

    def is_kafka_external_port(self, port: int | None) -> bool:
        """True when ``port`` (a connection's local port) is the external Kafka listener's."""
        return port is not None and port == self.config.kafka_external_listen_port

    def kafka_brokers(self, internal: dict[int, tuple[str, int]], own_id: int,
                      external: bool) -> list[dict[str, Any]]:
        """Kafka-protocol Metadata's ``brokers``: live brokers with a Kafka listener.

        ``internal`` (the metadata cache's live brokers) says who is alive; a connection on
        the external Kafka listener gets external endpoints where brokers have them.  A
        broker without a Kafka listener is left out: Kafka clients could not talk to it."""
        kafka = dict(self.kafka)
        kafka_external = dict(self.kafka_external)
        if self.config.advertised_kafka is not None:
            kafka[own_id] = self.config.advertised_kafka
        if self.config.advertised_kafka_external is not None:
            kafka_external[own_id] = self.config.advertised_kafka_external
        live = set(internal) | {own_id}
        out = []
        for b in sorted(live):
            hp = (kafka_external.get(b) or kafka.get(b)) if external else kafka.get(b)
            if hp is not None:
                out.append({"id": b, "host": hp[0], "port": hp[1]})
        return out
