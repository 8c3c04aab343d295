"""What the dashboard routes may see of their broker: a few values and callables, not the
Broker object (so web/ does not depend on broker/server.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

if TYPE_CHECKING:
    from ..broker.listeners import Listeners
    from ..broker.metadata_cache import MetadataCache
    from ..config import BrokerConfig


@dataclass(frozen=True)
class BrokerView:
    """The serving broker, read-only."""

    broker_id: int
    config: "BrokerConfig"
    metadata: "MetadataCache"  # brokers, controller and partition states as the controller published them
    listeners: "Listeners"  # endpoints per listener, and which listener a request came in on
    cluster_id: Callable[[], str]
    controller_epoch: Callable[[], int | None]  # its controller epoch while this broker is the active controller
    local_replicas: Callable[[], list[dict]]  # this broker's replica_state entries
    local_events: Callable[[], list[dict]]  # this broker's timeline
    call: Callable[[str, int, str, dict, float], Awaitable[dict]]  # another broker's API (host, port, api, body, timeout)
    prometheus: Callable[[], str]  # /metrics text
