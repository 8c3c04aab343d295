"""The cost of a delivery callback per record: each client sends the same records twice in
one run, with and without a callback per record, the order alternating from run to run,
and the run's ratio (with over without) is its figure.

* ``python``: our blocking ``Producer``, ``send`` per record with the futures kept, and
  the same with ``send(..., on_delivery=cb)``;
* ``python asyncio``: our ``AIOProducer`` on one event loop, ``await send`` per record with
  the futures kept, and the same with ``on_delivery=cb``;
* ``confluent-kafka``: librdkafka through the Kafka listener, ``produce`` per record
  without a callback, and with ``on_delivery=cb`` (librdkafka's delivery report).

``cb`` is one :class:`~.scenarios.DeliveryCount` for all records, as an application's
callback would be: no closure per record.  Alternating which half goes first spreads
what a busy machine does to the figures over both halves.
"""
from __future__ import annotations

import asyncio
import time

from .. import errors
from ..client.producer import AIOProducer
from . import scenarios as sc
from .workload import Workload

CLIENTS = ("python", "python asyncio", "confluent-kafka")


async def _produce_asyncio(bootstrap: str, work: Workload, topic: str, on_delivery: bool) -> dict:
    value = work.value
    count = sc.DeliveryCount() if on_delivery else None
    async with AIOProducer(bootstrap, acks="all") as producer:
        send = producer.send
        start = time.perf_counter()
        if count is None:
            futures = [await send(topic, value) for _ in range(work.records)]
        else:
            futures = [await send(topic, value, on_delivery=count) for _ in range(work.records)]
        await producer.flush()
        elapsed = time.perf_counter() - start
    failed = sum(1 for f in futures if f.exception() is not None)
    if failed or (count is not None and count.delivered != work.records):
        raise errors.ClientError(f"{failed} of {work.records} records were not acknowledged")
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed}


def produce_asyncio(target: sc.Target, work: Workload, topic: str, on_delivery: bool = False) -> dict:
    """Our ``AIOProducer`` (acks=all, idempotent by default, linger 5 ms), ``await send``
    per record with the futures kept, then ``flush``; with ``on_delivery`` a delivery
    callback per record too.  records/s, MB/s."""
    return asyncio.run(_produce_asyncio(target.bootstrap, work, topic, on_delivery))


def produce(target: sc.Target, work: Workload, topic: str, client: str, on_delivery: bool) -> dict | None:
    """One half of a pair: ``client`` (one of :data:`CLIENTS`) sending ``work`` to ``topic``
    (RF 3, acks=all), with or without a delivery callback per record."""
    if client == "python":
        return sc.produce_python(target, work, topic, "all", on_delivery=on_delivery)
    if client == "python asyncio":
        return produce_asyncio(target, work, topic, on_delivery)
    return sc.produce_confluent(target, work, topic, False, on_delivery=on_delivery)


def callback_cost(target: sc.Target, work: Workload, topics: tuple[str, str], client: str, run: int) -> dict | None:
    """One run of the pair: ``client`` without a callback (to ``topics[0]``) and with one
    per record (to ``topics[1]``), the one without first in even runs; both records/s and
    ``ratio`` (with over without).  None when the client cannot run."""
    order = (False, True) if run % 2 == 0 else (True, False)
    out: dict[bool, dict] = {}
    for with_cb in order:
        figures = produce(target, work, topics[1] if with_cb else topics[0], client, with_cb)
        if figures is None:
            return None
        out[with_cb] = figures
    return {"plain_records_per_s": out[False]["records_per_s"], "records_per_s": out[True]["records_per_s"],
            "ratio": out[True]["records_per_s"] / out[False]["records_per_s"]}
