"""A broker's timeline: its own recent events (elections, ISR changes, truncations...),
each also logged, and the whole cluster's timeline as this broker holds it.

* :class:`Timeline` is this broker's own record, what the ``events`` API answers.
* :class:`ClusterTimeline` adds every other broker's events: a task of the broker's
  (:meth:`ClusterTimeline.keep`) asks each other live broker for its new events every
  :data:`PULL_S` seconds and keeps them, so when a broker dies the others still hold its
  events up to its last second: the timeline of a failover survives the death of the
  controller that recorded it.  The ``events`` API with ``cluster`` and the dashboard's
  ``/api/events`` answer from it.
"""
from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any, Awaitable, Callable, Iterable

from ..protocol.rpc.types import EventsRequest
from ..rpc import request
from .services import Clock

log = logging.getLogger(__name__)

#: Every broker asks the other live brokers for their new events this often.
PULL_S = 1.0
#: A peer that does not answer within this is asked again at the next pull.
PULL_TIMEOUT_S = 0.8
#: A peer is asked again from a little before the newest of its events already held, and
#: the answer deduplicated, so an event recorded while an answer was in flight is not lost.
OVERLAP_S = 2.0
#: Events held per broker (the broker's own timeline holds as many).
SIZE = 2000

Endpoint = tuple[str, int]
Call = Callable[[str, int, str, dict, float], Awaitable[dict]]


class Timeline:
    """The last ``size`` events of one broker."""

    def __init__(self, broker_id: int, clock: Clock, size: int = SIZE) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.events: collections.deque[dict] = collections.deque(maxlen=size)

    def record(self, kind: str, text: str, **extra: Any) -> None:
        """Remember an event for the timeline and log it."""
        self.events.append({"ts": self.clock.time(), "broker": self.broker_id, "kind": kind, "text": text, **extra})
        log.info("[%s] %s", kind, text)


def event_key(e: dict) -> tuple:
    """What makes an event the same event when two answers carry it."""
    return (e["ts"], e["broker"], e["kind"], e["text"])


class ClusterTimeline:
    """Every broker's events as this broker holds them: its own :class:`Timeline` and the
    last ``size`` events pulled of each other broker, dead ones included.

    ``peers()`` gives the other live brokers' inter-broker endpoints; ``call`` is the
    broker transport's (host, port, api, body, timeout)."""

    def __init__(self, own: Timeline, peers: Callable[[], dict[int, Endpoint]], call: Call,
                 size: int = SIZE) -> None:
        self.own = own
        self.peers = peers
        self.call = call
        self.size = size
        self.remote: dict[int, collections.deque[dict]] = {}
        self._keys: dict[int, set[tuple]] = {}

    def remember(self, broker_id: int, events: Iterable[dict]) -> None:
        """Keep ``broker_id``'s ``events`` (those not held yet), in time order."""
        cache = self.remote.setdefault(broker_id, collections.deque(maxlen=self.size))
        keys = self._keys.setdefault(broker_id, set())
        added = False
        for e in events:
            k = event_key(e)
            if k not in keys:
                cache.append(e)
                keys.add(k)
                added = True
        if added:
            ordered = sorted(cache, key=lambda e: e["ts"])
            cache.clear()
            cache.extend(ordered)
            self._keys[broker_id] = {event_key(e) for e in cache}

    async def pull(self) -> None:
        """Ask every other live broker for its events newer than those held (a broker that
        does not answer is asked again the next time)."""
        async def pull_one(broker_id: int, host: str, port: int) -> None:
            cache = self.remote.get(broker_id)
            since = (cache[-1]["ts"] - OVERLAP_S) if cache else 0.0
            try:
                got = await request(self.call, host, port, EventsRequest(since=since, limit=self.size, cluster=False),
                                    PULL_TIMEOUT_S)
            except Exception:
                return
            self.remember(broker_id, ({"ts": e.ts, "broker": e.broker, "kind": e.kind, "text": e.text}
                                      for e in got.events))

        peers = {i: hp for i, hp in self.peers().items() if i != self.own.broker_id}
        await asyncio.gather(*(pull_one(i, *hp) for i, hp in peers.items()))

    async def keep(self, interval_s: float = PULL_S) -> None:
        """Pull every ``interval_s`` seconds until cancelled (the broker's task)."""
        while True:
            try:
                await self.pull()
            except Exception:  # never seen: each peer's failure is caught in pull
                log.exception("pulling the other brokers' events failed")
            await asyncio.sleep(interval_s)

    def held(self) -> dict[int, float]:
        """Broker id -> the time of the newest event held of it (this broker's own included)."""
        held = {bid: cache[-1]["ts"] for bid, cache in self.remote.items() if cache}
        if self.own.events:
            held[self.own.broker_id] = self.own.events[-1]["ts"]
        return held

    def merged(self, since: float, limit: int) -> list[dict]:
        """Every held event with ts > ``since``, oldest first: the newest ``limit`` of them."""
        merged: dict[tuple, dict] = {}
        for e in self.own.events:
            if e["ts"] > since:
                merged[event_key(e)] = e
        for cache in self.remote.values():
            for e in cache:
                if e["ts"] > since:
                    merged.setdefault(event_key(e), e)
        return sorted(merged.values(), key=lambda e: (e["ts"], e["broker"]))[-limit:] if limit > 0 else []

    async def events(self, since: float, limit: int) -> list[dict]:
        """:meth:`merged` after a fresh :meth:`pull`."""
        await self.pull()
        return self.merged(since, limit)
