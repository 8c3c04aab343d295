"""ZkSession's watches are made off the event loop: kazoo's DataWatch and ChildrenWatch
read their znode once, blocking, when they are made, and a new controller makes one per
topic.  A kazoo client whose recipes block until released stands in for a slow server."""
from __future__ import annotations

import asyncio
import threading

from minikafka.zk.session import ZkSession


class _BlockingRecipes:
    """DataWatch / ChildrenWatch that wait for ``release`` and then call back once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.made_on: list[str] = []

    def DataWatch(self, path, func):
        self.made_on.append(threading.current_thread().name)
        self.release.wait(10)
        func(path.encode(), "stat")

    def ChildrenWatch(self, path, func, send_event=False):
        self.made_on.append(threading.current_thread().name)
        self.release.wait(10)
        func(["a", "b"])


def _session() -> tuple[ZkSession, _BlockingRecipes]:
    """A session on the running loop whose kazoo client is the blocking recipes."""
    zk = ZkSession("127.0.0.1:1")
    zk.loop = asyncio.get_running_loop()
    recipes = _BlockingRecipes()
    zk.client = recipes  # type: ignore[assignment]
    return zk, recipes


def test_making_a_watch_never_blocks_the_loop_and_its_first_value_arrives_once_it_is_set():
    async def main() -> None:
        zk, recipes = _session()
        got: list[object] = []
        try:
            data = zk.watch_data("/brokers/topics/t", lambda value, stat: got.append(value))
            kids = zk.watch_children("/brokers/ids", lambda children: got.append(children))
            await asyncio.sleep(0.05)  # the loop runs on while both recipes wait for the server
            assert got == []
            recipes.release.set()
            for _ in range(200):
                if len(got) == 2:
                    break
                await asyncio.sleep(0.01)
            assert sorted(map(str, got)) == ["['a', 'b']", "b'/brokers/topics/t'"]
            assert all(name.startswith("zk-watch-setup") for name in recipes.made_on)
            assert threading.current_thread().name not in recipes.made_on
            data.cancel()
            kids.cancel()
            assert zk.watches == set()
        finally:
            recipes.release.set()
            zk._watch_setup.shutdown(wait=True)
    asyncio.run(main())


def test_a_cancelled_watch_delivers_nothing_even_when_it_is_set_later():
    async def main() -> None:
        zk, recipes = _session()
        got: list[object] = []
        try:
            zk.watch_data("/controller", lambda value, stat: got.append(value)).cancel()
            recipes.release.set()
            zk._watch_setup.shutdown(wait=True)
            await asyncio.sleep(0.05)
            assert got == []
        finally:
            recipes.release.set()
    asyncio.run(main())
