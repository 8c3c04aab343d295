"""Purgatories: requests that wait for a condition on some partitions.

Kafka keeps delayed produce and fetch requests in purgatories keyed by partition
and completes them when an append or a high-watermark move touches that key.
Here a waiter registers a future under its keys; ``wake(key)`` resolves every
future under that key, and the waiter re-checks its condition.  No polling.

A request that is about to park calls :func:`parking`: the caller that runs it (the
Kafka listener's connection) may then start on its next request while this one waits,
as everything the request changes is already in place.
"""
from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Callable, Hashable, Iterable

# Set by whoever runs a request and wants to know when the request only waits any more.
on_parking: ContextVar[Callable[[], None] | None] = ContextVar("on_parking", default=None)


def parking() -> None:
    """Say that the running request has made all its changes and now only waits in a
    purgatory (an acks=all produce after its appends)."""
    hook = on_parking.get()
    if hook is not None:
        hook()


class Purgatory:
    """Futures keyed by partition, woken by appends, HW moves and leadership changes.

    Each waiter registers its condition with its future, and :meth:`wake` checks it
    there and then: only the waiters whose condition now holds are resumed.  A parked
    consumer fetch is not resumed by every append (it waits for the HW), a follower's by
    an HW move, nor every acks=all produce of a partition by each HW step below its
    records (Kafka's purgatories check a delayed operation's condition when its key is
    touched, the same way)."""

    def __init__(self) -> None:
        self._waiters: dict[Hashable, dict[asyncio.Future, Callable[[], bool]]] = {}

    def wake(self, key: Hashable) -> None:
        """Something changed under ``key``: resume its waiters whose condition holds now."""
        waiters = self._waiters.get(key)
        if not waiters:
            return
        for fut, ready in list(waiters.items()):
            if not fut.done():
                try:
                    now_ready = ready()
                except Exception:  # noqa: BLE001 - the waiter's own check raises it in its context
                    now_ready = True
                if not now_ready:
                    continue
                fut.set_result(None)
            del waiters[fut]
        if not waiters:
            self._waiters.pop(key, None)

    def wake_all(self) -> None:
        """:meth:`wake` every key."""
        for key in list(self._waiters):
            self.wake(key)

    async def wait_until(self, keys: Iterable[Hashable], ready: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``ready()`` is true (checked now and at every wake of a key) or the
        timeout passes.  Returns the last value of ``ready()``."""
        keys = list(keys)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            if ready():
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            fut = loop.create_future()
            timer = loop.call_later(remaining, _expire, fut)
            for k in keys:
                self._waiters.setdefault(k, {})[fut] = ready
            try:
                await fut
            finally:
                timer.cancel()
                for k in keys:
                    w = self._waiters.get(k)
                    if w is not None:
                        w.pop(fut, None)
                        if not w:
                            self._waiters.pop(k, None)

    def __len__(self) -> int:
        return sum(len(w) for w in self._waiters.values())


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)
