"""acks=all latency of our asyncio client: an ``AIOProducer`` and an ``AIOConsumer`` on one event loop.

This is how an asyncio application uses the client: ``send`` runs on the loop that does
the I/O, so a record needs no hand-off between threads.  The blocking ``Producer`` and
``Consumer`` (:func:`minikafka.bench.scenarios.acks_latency_python`) each run their core
on a loop thread of their own, and at a record per request those hand-offs cost about as
much CPU as the rest of the client's work.
"""
from __future__ import annotations

import asyncio
import struct
import time

from ..client.consumer import AIOConsumer
from ..client.producer import AIOProducer
from ..client.types import TopicPartition
from .figures import ack_and_arrival_ms


async def _measure(bootstrap: str, topic: str, rate: int, seconds: float, value_size: int) -> dict:
    pad = b"x" * max(0, value_size - 8)
    total = int(rate * seconds)
    acked: list[float] = []
    arrived: list[float] = []
    async with AIOConsumer(bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=500) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in sorted(await consumer.partitions_for_topic(topic))])
        await consumer.poll(timeout_ms=100)  # positions at the end before the first record

        async def read() -> None:
            while len(arrived) < total:
                for r in await consumer.poll(timeout_ms=200):
                    arrived.append(time.perf_counter() - struct.unpack(">d", r.value[:8])[0])

        reader = asyncio.get_running_loop().create_task(read())
        try:
            async with AIOProducer(bootstrap, acks="all", linger_ms=0) as producer:
                start = time.perf_counter()
                for i in range(total):
                    delay = start + i / rate - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    t = time.perf_counter()
                    fut = await producer.send(topic, struct.pack(">d", t) + pad)
                    fut.add_done_callback(lambda f, t=t: acked.append(time.perf_counter() - t))
                await producer.flush()
            await asyncio.wait([reader], timeout=30)
        finally:
            reader.cancel()
            await asyncio.wait([reader])
    return ack_and_arrival_ms(acked, arrived)


def acks_latency_asyncio(bootstrap: str, topic: str, rate: int, seconds: float, value_size: int) -> dict:
    """Our ``AIOProducer`` at acks=all with ``linger_ms=0`` sending ``rate`` records/s for
    ``seconds`` (paced on the loop's own timers), and an ``AIOConsumer`` of the same topic
    on the same loop (``fetch_max_wait_ms=500``): p50, p99 and p99.9 from ``send`` to the
    acknowledgement and, as ``e2e_*``, to the arrival."""
    return asyncio.run(_measure(bootstrap, topic, rate, seconds, value_size))
