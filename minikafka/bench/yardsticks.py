"""Yardsticks measured in the same run as the scenarios.

* ``limit``: the produce scenario's batch bytes POSTed to a bare aiohttp handler in
  another process (:mod:`.limit_server`), with as many requests in flight as there are
  partitions, and the consume scenario's bytes fetched from it: what our transport
  allows on this machine, with no log, no replication and no decoding.
* ``mock``: librdkafka's built-in mock cluster (C, in one process) doing the produce
  scenario's work through kcat (``kcat -b x -X test.mock.num.brokers=3 -P``).
"""
from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import aiohttp

from .workload import BATCH_SIZE, Workload, kcat_path


class LimitServer:
    """The bare handler's process; a context manager that stops it."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "minikafka.bench.limit_server"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError("the limit yardstick's server did not start")
        self.url = f"http://127.0.0.1:{int(line)}"

    def close(self) -> None:
        if self.proc.poll() is None:
            if self.proc.stdin:
                self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "LimitServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _post_all(url: str, batches: list[bytes], concurrency: int) -> None:
    queue = list(reversed(batches))
    async with aiohttp.ClientSession() as session:
        async def sender() -> None:
            while queue:
                body = queue.pop()
                async with session.post(url + "/produce", data=body) as resp:
                    await resp.read()
        await asyncio.gather(*(sender() for _ in range(concurrency)))


async def _fetch_all(url: str, total_bytes: int, concurrency: int) -> None:
    left = [total_bytes]
    async with aiohttp.ClientSession() as session:
        async def fetcher() -> None:
            while left[0] > 0:
                size = min(BATCH_SIZE * 16, left[0])
                left[0] -= size
                async with session.get(url + "/fetch", params={"bytes": str(size)}) as resp:
                    await resp.read()
        await asyncio.gather(*(fetcher() for _ in range(concurrency)))


def limit_produce(server: LimitServer, work: Workload, concurrency: int) -> dict:
    """Records/s when the produce scenario's batches only cross the transport."""
    batches = work.batches()
    start = time.perf_counter()
    asyncio.run(_post_all(server.url, batches, concurrency))
    elapsed = time.perf_counter() - start
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed}


def limit_consume(server: LimitServer, work: Workload, concurrency: int) -> dict:
    """Records/s when the consume scenario's bytes only cross the transport."""
    total = sum(len(b) for b in work.batches())
    start = time.perf_counter()
    asyncio.run(_fetch_all(server.url, total, concurrency))
    elapsed = time.perf_counter() - start
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed}


def mock_produce(work: Workload, acks: str) -> dict | None:
    """Records/s of librdkafka's mock cluster (3 brokers) taking the same records; None
    without kcat."""
    kcat = kcat_path()
    if kcat is None:
        return None
    path = work.lines_file()
    start = time.perf_counter()
    done = subprocess.run([kcat, "-b", "mock", "-X", "test.mock.num.brokers=3", "-X", f"acks={acks}",
                           "-X", "linger.ms=5", "-P", "-t", "bench", "-l", path],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"kcat against the mock cluster failed: {done.stderr.strip()[-300:]}")
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed}
