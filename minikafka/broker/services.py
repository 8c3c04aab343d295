"""The narrow interfaces the broker's services and request handlers are built with.

Each service is given, in :mod:`.assembly` (the one composition root), exactly the
collaborators it uses: these protocols for the ones that would otherwise tie services to
each other (or to the :class:`~.server.Broker`), concrete classes for the rest.  No
module but the composition root and the entry points imports :mod:`.server`.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine, Protocol

TP = tuple[str, int]


class Clock(Protocol):
    """Wall and monotonic time, in seconds (the broker's clock port, :mod:`.ports`)."""

    def time(self) -> float: ...

    def monotonic(self) -> float: ...


class EventLog(Protocol):
    """Remember an event for the timeline (``events`` API, dashboard) and log it."""

    def __call__(self, kind: str, text: str, **extra: Any) -> None: ...


class Spawn(Protocol):
    """Start a task owned by the broker's :class:`~.tasks.TaskOwner` (awaited at shutdown)."""

    def __call__(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task: ...


class PeerCall(Protocol):
    """Call another broker's msgpack API (the transport's ``call``)."""

    async def __call__(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict: ...


class FetcherControl(Protocol):
    """What the replica manager tells the follower fetchers."""

    def add_partition(self, tp: TP, leader_id: int, endpoint: tuple[str, int]) -> None: ...

    def remove_partitions(self, tps: list[TP]) -> None: ...

    def touch(self, tp: TP) -> None:
        """Something of ``tp``'s replica changed (its log end, log start, high watermark,
        leader epoch, role or truncation state): its fetcher reads it again."""


# Told when this broker becomes (True) or stops being (False) leader of a
# ``__consumer_offsets`` partition (Kafka's onLeadershipChange: the group coordinator
# loads or unloads its groups).
LeadershipListener = Callable[[int, bool], None]
# A transaction marker reached __consumer_offsets-N: (N, producer id, committed)
TxnMarkerListener = Callable[[int, int, bool], None]
# Told the topics an UpdateMetadata says were deleted (Kafka's onPartitionsDeleted: the
# group coordinator removes the groups' offsets of their partitions)
TopicsDeletedListener = Callable[[list[str]], None]


class Identity(Protocol):
    """Who this broker is right now: its id, its registration's epoch, the cluster id."""

    broker_id: int

    @property
    def broker_epoch(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...


NowMs = Callable[[], int]
