"""The one owner of a broker's background tasks.

Timers, fetchers, ISR writes, group loads, re-registration, Kafka connections: every
task a broker starts is spawned here, named, and awaited at shutdown.  Unlike
:class:`asyncio.TaskGroup`, a task that fails is logged and does not cancel its siblings
(one timer's bug must not stop a broker); like it, :meth:`TaskOwner.close` cancels what
is left and waits until every task has ended.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Coroutine

log = logging.getLogger(__name__)


class TaskOwner:
    """Spawns named tasks, remembers them until they end, and ends them all on close."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task] = set()
        self._closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task:
        """Run ``coro`` as a task of this owner.  After :meth:`close` nothing new starts."""
        if self._closed:
            coro.close()
            raise RuntimeError(f"{self.name}: closed, cannot start {name}")
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.name}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task %s failed", task.get_name(), exc_info=task.exception())

    def __len__(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        """Cancel every task still running and wait until all have ended."""
        self._closed = True
        while self._tasks:
            pending = list(self._tasks)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
