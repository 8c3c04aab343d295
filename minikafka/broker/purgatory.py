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
    """Futures keyed by partition, woken by appends, HW moves and leadership changes."""

    def __init__(self) -> None:
        self._waiters: dict[Hashable, set[asyncio.Future]] = {}

    def wake(self, key: Hashable) -> None:
        for fut in self._waiters.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def wake_all(self) -> None:
        for key in list(self._waiters):
            self.wake(key)

    async def wait_until(self, keys: Iterable[Hashable], ready: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``ready()`` is true (checked now and after every wake of a key) or the
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
            for k in keys:
                self._waiters.setdefault(k, set()).add(fut)
            try:
                await asyncio.wait_for(fut, remaining)
            except asyncio.TimeoutError:
                return ready()
            finally:
                for k in keys:
                    s = self._waiters.get(k)
                    if s is not None:
                        s.discard(fut)
                        if not s:
                            self._waiters.pop(k, None)

    def __len__(self) -> int:
        return sum(len(s) for s in self._waiters.values())
