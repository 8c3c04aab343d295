"""What a transport serves for one broker: its msgpack listener, its Kafka listener and
the dashboard, with the few services the HTTP side needs (listener choice, TLS and
principals, error counts)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..web.view import BrokerView
from .connection_policy import ConnectionPolicy
from .kafka.server import KafkaServer
from .limits import ConnectionLimits, RequestMemory
from .listeners import Listeners
from .metrics import Metrics
from .rpc_listener import RpcListener
from .security import Security


@dataclass
class ServedBroker:
    """A broker as its transport sees it."""

    broker_id: int
    rpc: RpcListener
    kafka: KafkaServer
    listeners: Listeners
    security: Security
    metrics: Metrics
    web_view: Callable[[], BrokerView]
    policy: ConnectionPolicy  # the rules of every client connection, on both listeners
    limits: ConnectionLimits  # shared by both client listeners
    memory: RequestMemory

    async def dispatch(self, api: str, body: bytes | bytearray, *, remote: str, credential: str | None,
                       principal: Callable[[], Any]) -> bytes:
        """Answer one msgpack request (:meth:`RpcListener.dispatch`)."""
        return await self.rpc.dispatch(api, body, remote=remote, credential=credential, principal=principal)
