"""ZkSession.get_many against a real ZooKeeper: many getData reads in one multiRead request,
each with its own outcome, the same as single reads give."""
from __future__ import annotations

import asyncio

import pytest

from minikafka.zk.session import ZkSession

pytestmark = pytest.mark.process


def test_get_many_reads_like_get_and_gives_none_for_a_missing_znode(zookeeper):
    async def main() -> None:
        zk = ZkSession(zookeeper.connect)
        await zk.start()
        try:
            base = "/multi-read-test"
            paths = [f"{base}/n{i}" for i in range(300)]
            for i, path in enumerate(paths):
                await zk.create(path, f"value {i}".encode() * (i % 5), makepath=True)
            await zk.set(paths[7], b"changed")  # version 1
            asked = [*paths[:256], f"{base}/missing", paths[7], f"{base}/n299"]
            many = await zk.get_many(asked)
            single = [await zk.get(p) for p in asked]
            assert zk._multi_read, "ZooKeeper refused multiRead"
            assert [None if g is None else (g[0], g[1]) for g in many] == single
            assert many[256] is None and many[257][0] == b"changed" and many[257][1].version == 1
            assert many[0][0] == b"" and many[3][0] == b"value 3" * 3
            assert await zk.get_many([]) == []
            assert await zk.get_many(["no-slash"]) == [await zk.get("no-slash")]  # as ZooKeeper answers a get
        finally:
            await zk.stop()
    asyncio.run(main())
