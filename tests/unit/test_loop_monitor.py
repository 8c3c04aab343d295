"""The loop watchdog: a stall is logged with the loop thread's stack, and no thread but the
loop thread itself ever reads that stack (reading a running thread's frames from another
thread can crash CPython 3.11: a broker fed decompression bombs died that way)."""
from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import time

import pytest

from minikafka import metric_names as M
from minikafka.broker.loop_monitor import STALL_SIGNAL, LoopMonitor
from minikafka.broker.metrics import Metrics


def _hold_the_loop_in_python(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _hold_the_loop_in_c(seconds: float) -> None:
    time.sleep(seconds)  # one C call, the GIL released, as a decompression is


async def _stall_once(monitor: LoopMonitor, hold) -> None:
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.05)
    hold(0.6)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture
def frame_readers(monkeypatch):
    """Every thread that calls sys._current_frames() while the test runs."""
    readers: list[str] = []
    real = sys._current_frames

    def recording():
        readers.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(sys, "_current_frames", recording)
    return readers


@pytest.mark.parametrize("hold", [_hold_the_loop_in_python, _hold_the_loop_in_c])
def test_a_stall_is_logged_with_the_stack_the_loop_thread_read_itself(hold, frame_readers, caplog):
    metrics = Metrics()
    monitor = LoopMonitor(metrics, interval_s=0.01, stall_s=0.1)
    with caplog.at_level(logging.WARNING, logger="minikafka.broker.loop_monitor"):
        asyncio.run(_stall_once(monitor, hold))
    stalls = [r.getMessage() for r in caplog.records if "event loop held" in r.getMessage()]
    assert len(stalls) == 1, stalls
    assert hold.__name__ in stalls[0], stalls[0]
    assert frame_readers == [], f"threads read another thread's frames: {frame_readers}"
    assert metrics.value(M.EVENT_LOOP_STALLS) == 1  # one stall, logged once however long it lasts
    ((_, buckets, total),) = metrics.histogram_samples(M.EVENT_LOOP_LAG_SECONDS)
    assert total >= 0.5  # the held tick's lateness is in the histogram
    late = sum(buckets[M.LOOP_LAG_BUCKETS.index(0.5) + 1:])  # ticks later than 500 ms (and +Inf)
    assert late == 1 and sum(buckets) >= 5


def test_the_handler_is_removed_when_the_monitor_stops():
    before = signal.getsignal(STALL_SIGNAL)
    asyncio.run(_stall_once(LoopMonitor(Metrics(), stall_s=0.1), lambda s: None))
    assert signal.getsignal(STALL_SIGNAL) == before


def test_a_loop_off_the_main_thread_logs_its_stalls_without_a_stack(frame_readers, caplog):
    metrics = Metrics()
    monitor = LoopMonitor(metrics, interval_s=0.01, stall_s=0.1)
    with caplog.at_level(logging.WARNING, logger="minikafka.broker.loop_monitor"):
        t = threading.Thread(target=asyncio.run, args=(_stall_once(monitor, _hold_the_loop_in_python),))
        t.start()
        t.join(10)
    stalls = [r.getMessage() for r in caplog.records if "event loop held" in r.getMessage()]
    assert len(stalls) == 1 and "main thread" in stalls[0], stalls
    assert frame_readers == []
    assert metrics.value(M.EVENT_LOOP_STALLS) == 1
