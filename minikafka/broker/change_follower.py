"""Follow ZooKeeper change notifications (Kafka's ZkNodeChangeNotificationListener).

Kafka announces a change by creating a sequential child under a notification path
(``/config/changes``, ``/kafka-acl-changes``...).  A :class:`ChangeFollower` watches the
children of such paths and runs its ``work`` coroutine once per burst of notifications,
in one task it owns; a failure (ZooKeeper trouble) is logged and the next notification
tries again.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Awaitable, Callable

if TYPE_CHECKING:
    from ..zk.session import ZkSession

log = logging.getLogger(__name__)


class ChangeFollower:
    """Runs ``work`` after every change of the children of ``paths``."""

    def __init__(self, zk: "ZkSession", name: str, paths: tuple[str, ...], work: Callable[[], Awaitable[None]]) -> None:
        self.zk = zk
        self.name = name
        self.paths = paths
        self.work = work
        self._pending = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)
        for path in self.paths:
            self.zk.watch_children(path, lambda children: self._pending.set())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._pending.wait()
            self._pending.clear()
            try:
                await self.work()
            except Exception as exc:  # ZooKeeper trouble: the next notification tries again
                log.warning("%s: processing a change failed: %s", self.name, exc)
