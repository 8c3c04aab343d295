"""The broker's ports: what it needs from the world, chosen at the entry point.

A :class:`~.server.Broker` reads no clock, opens no socket, starts no ZooKeeper client and
touches no file by itself: it asks its :class:`Ports`.

* ``clock`` — wall time (record timestamps, group deadlines) and monotonic time (ISR
  lag).  Timers and sleeps go through the asyncio loop, whose ``time()`` is the
  monotonic clock.
* ``transport`` — serves the broker's msgpack API and calls other brokers'.
* ``coordinator`` — makes the ZooKeeper session (znodes, versions, multi ops,
  ephemeral nodes, sessions, watches).
* ``storage`` — makes the log storage (memory or disk).
* ``random`` — the only source of randomness (cluster id, member ids).

:func:`real_ports` gives the real ones (``time``, aiohttp, kazoo, files).  The
deterministic simulation (:mod:`minikafka.sim`) gives twins: virtual time, an
in-process network with faults, an in-memory ZooKeeper and a disk that loses what was
not synced.  The broker code is the same in both worlds.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..config import BrokerConfig
from .services import Clock

if TYPE_CHECKING:
    from .served import ServedBroker
    from .storage import Storage

__all__ = ["Clock", "Ports", "RealClock", "Transport", "real_ports"]


class RealClock:
    """The machine's clocks."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class Transport(Protocol):
    """How a broker is reached and how it reaches other brokers."""

    async def serve(self, served: "ServedBroker") -> None:
        """Start answering requests for a broker (``served.dispatch``)."""

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        """Call ``api`` on the broker at ``host:port``; raise its error, or a transport
        error (:class:`~minikafka.rpc.BrokerUnreachableError`, :class:`~minikafka.rpc.NoResponseError`)."""

    async def close(self) -> None:
        """Stop serving and calling."""


@dataclass
class Ports:
    """The broker's view of the world (see the module docstring)."""

    clock: Clock
    transport: Transport
    coordinator: Callable[[BrokerConfig, tuple[str, str] | None], Any]
    storage: Callable[[BrokerConfig], "Storage"]
    random: random.Random = field(default_factory=random.Random)


def real_ports(config: BrokerConfig) -> Ports:
    """Real time, HTTP over TCP (aiohttp), kazoo and files: what ``minikafka broker`` runs on."""
    from ..zk.session import ZkSession
    from .http_transport import HttpTransport
    from .settings import BrokerSettings
    from .storage import DiskStorage, Storage

    def coordinator(cfg: BrokerConfig, digest: tuple[str, str] | None) -> ZkSession:
        return ZkSession(cfg.zookeeper_connect, BrokerSettings.of(cfg).zookeeper_session_timeout_ms, digest=digest)

    def storage(cfg: BrokerConfig) -> Storage:
        cls = DiskStorage if cfg.storage == "disk" else Storage
        return cls(cfg.data_dir, broker_id=cfg.broker_id)

    return Ports(clock=RealClock(), transport=HttpTransport(config), coordinator=coordinator, storage=storage)
