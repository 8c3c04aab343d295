"""Event-loop lag: how late the broker's loop runs what is due, and what held it.

A broker does everything on one asyncio loop, so one slow callback delays every request,
fetch answer and timer of that broker at once.  :class:`LoopMonitor` measures it two ways:

- a task of the broker's wakes every ``interval_s`` and records how late it woke in the
  ``minikafka_event_loop_lag_seconds`` histogram (/metrics);
- a watchdog thread notices when the loop has not woken that task for ``stall_s``
  (``minikafka.loop.stall.ms``) and logs, once per stall, the loop thread's Python stack
  at that moment: what was running while everything else waited.  Each such stall also
  counts in ``minikafka_event_loop_stalls_total``.

The watchdog only reads ``sys._current_frames()``; it never touches the loop or the
broker's state.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback

from .. import metric_names as M
from .metrics import Metrics

log = logging.getLogger(__name__)

_STACK_FRAMES = 12  # innermost frames logged per stall


class LoopMonitor:
    """Measures the running loop's lag; :meth:`run` is the task, :meth:`stop` ends the watchdog."""

    def __init__(self, metrics: Metrics, *, interval_s: float = 0.01, stall_s: float = 0.1) -> None:
        self.metrics = metrics
        self.interval_s = interval_s
        self.stall_s = stall_s
        self._last_tick = time.monotonic()
        self._loop_thread = threading.get_ident()
        self._stopped = threading.Event()
        self._watchdog: threading.Thread | None = None

    async def run(self) -> None:
        """Tick every ``interval_s`` and record each tick's lateness, until cancelled."""
        self._loop_thread = threading.get_ident()
        self._last_tick = time.monotonic()
        if self.stall_s > 0 and self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
            self._watchdog.start()
        try:
            while True:
                due = time.monotonic() + self.interval_s
                await asyncio.sleep(self.interval_s)
                now = time.monotonic()
                self._last_tick = now
                self.metrics.observe(M.EVENT_LOOP_LAG_SECONDS, max(0.0, now - due))
        finally:
            self.stop()

    def stop(self) -> None:
        """End the watchdog thread (the task ends by cancellation)."""
        self._stopped.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join(1.0)

    def _watch(self) -> None:
        logged_for = 0.0  # the tick whose stall was already logged
        while not self._stopped.wait(self.stall_s / 4):
            last = self._last_tick
            held = time.monotonic() - last
            if held < self.stall_s or last == logged_for:
                continue
            logged_for = last
            frame = sys._current_frames().get(self._loop_thread)
            stack = "".join(traceback.format_stack(frame, limit=_STACK_FRAMES)) if frame else "(no frame)\n"
            self.metrics.count(M.EVENT_LOOP_STALLS)
            log.warning("event loop held for %.0f ms so far; the loop thread was in:\n%s", held * 1000, stack.rstrip())
