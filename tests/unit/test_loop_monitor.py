"""The broker's event-loop monitor: lag in a histogram, and a held loop named in the log."""
from __future__ import annotations

import asyncio
import logging
import time

from minikafka import metric_names as M
from minikafka.broker.loop_monitor import LoopMonitor
from minikafka.broker.metrics import Metrics


def _hold_the_loop_with_a_slow_callback(seconds: float) -> None:
    time.sleep(seconds)  # what a blocking call inside a handler does to every other task


def test_a_held_loop_is_measured_counted_and_named(caplog):
    metrics = Metrics()

    async def scenario() -> None:
        monitor = LoopMonitor(metrics, interval_s=0.01, stall_s=0.1)
        task = asyncio.get_running_loop().create_task(monitor.run())
        await asyncio.sleep(0.05)
        _hold_the_loop_with_a_slow_callback(0.3)
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    with caplog.at_level(logging.WARNING, logger="minikafka.broker.loop_monitor"):
        asyncio.run(scenario())
    assert metrics.value(M.EVENT_LOOP_STALLS) == 1  # one stall, logged once however long it lasts
    (record,) = [r for r in caplog.records if "event loop held" in r.getMessage()]
    assert "_hold_the_loop_with_a_slow_callback" in record.getMessage()
    ((_, buckets, total),) = metrics.histogram_samples(M.EVENT_LOOP_LAG_SECONDS)
    assert total >= 0.25  # the held tick's lateness is in the histogram
    late = sum(buckets[M.LOOP_LAG_BUCKETS.index(0.25) + 1:])  # ticks later than 250 ms (and +Inf)
    assert late == 1 and sum(buckets) >= 5
