"""What the controller's queue carries (Kafka's ControllerEvent subclasses).

The shell (:mod:`.controller`) handles one of these at a time.  Some are about the
controller itself (the race for ``/controller``, resigning, stopping); the others say
"look again" (a watch fired) or carry a :data:`~.core.Event` for the pure core to plan.
:data:`QueueEvent` is their union: the shell dispatches on it with ``match``, and mypy
fails when a member has no case.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from . import core


# -- the controller itself ------------------------------------------------------------------------
@dataclass(frozen=True)
class Startup:
    """The component started: watch ``/controller`` (its first read races for it)."""


@dataclass(frozen=True)
class Shutdown:
    """The broker stops: resign if active, then set ``done``."""

    done: asyncio.Future[None]


@dataclass(frozen=True)
class Elect:
    """Race for ``/controller`` (the session came back, or a hold-back ended)."""


@dataclass(frozen=True)
class Resign:
    """Stop acting as controller for ``reason`` (the ZooKeeper session was lost)."""

    reason: str


@dataclass(frozen=True)
class ControllerZnodeChanged:
    """``/controller`` as the watch read it (None: deleted)."""

    data: bytes | None


# -- the active controller: the core decides -----------------------------------------------------
@dataclass(frozen=True)
class Decide:
    """A core event to plan as it is (a topic's or the broker's configs changed, the
    leader-imbalance timer fired)."""

    event: core.Event


@dataclass(frozen=True)
class Request:
    """A core event asked for by an API (controlled shutdown, leader elections); the
    plan's reply, or NOT_CONTROLLER, goes to ``reply``."""

    event: core.Event
    reply: asyncio.Future[core.Reply]


# Watch firings only say "look again": the handler reads the znodes as they are when it
# runs, never what the watch saw, which may be older than what an earlier event read.
@dataclass(frozen=True)
class BrokerIdsChanged:
    """The children of ``/brokers/ids`` changed."""


@dataclass(frozen=True)
class TopicChildrenChanged:
    """The children of ``/brokers/topics`` changed."""


@dataclass(frozen=True)
class TopicZnodeChanged:
    """``/brokers/topics/<topic>`` changed (partitions added)."""

    topic: str


@dataclass(frozen=True)
class IsrNotificationsChanged:
    """The children of ``/isr_change_notification`` changed."""


@dataclass(frozen=True)
class DeleteTopicsChanged:
    """The children of ``/admin/delete_topics`` changed."""


@dataclass(frozen=True)
class ReassignZnodeChanged:
    """``/admin/reassign_partitions`` as the watch read it (None: absent)."""

    data: bytes | None


@dataclass(frozen=True)
class PreferredZnodeChanged:
    """``/admin/preferred_replica_election`` as the watch read it (None: absent)."""

    data: bytes | None


QueueEvent = (Startup | Shutdown | Elect | Resign | ControllerZnodeChanged | Decide | Request | BrokerIdsChanged
              | TopicChildrenChanged | TopicZnodeChanged | IsrNotificationsChanged | DeleteTopicsChanged
              | ReassignZnodeChanged | PreferredZnodeChanged)

__all__ = [
    "BrokerIdsChanged", "ControllerZnodeChanged", "Decide", "DeleteTopicsChanged", "Elect", "IsrNotificationsChanged",
    "PreferredZnodeChanged", "QueueEvent", "ReassignZnodeChanged", "Request", "Resign", "Shutdown", "Startup",
    "TopicChildrenChanged", "TopicZnodeChanged",
]
