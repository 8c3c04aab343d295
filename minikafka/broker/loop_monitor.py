"""Event-loop lag: how late the broker's loop runs what is due, and what held it.

A broker does everything on one asyncio loop, so one slow callback delays every request,
fetch answer and timer of that broker at once.  :class:`LoopMonitor` measures it two ways:

- a task of the broker's wakes every ``interval_s`` and records how late it woke in the
  ``minikafka_event_loop_lag_seconds`` histogram (/metrics); a wake-up that comes
  ``stall_s`` (``minikafka.loop.stall.ms``) or more after the one before counts in
  ``minikafka_event_loop_stalls_total``;
- a watchdog thread notices when the loop has not woken that task for ``stall_s`` and
  has the loop thread log, once per stall, its own Python stack at that moment: what was
  running while everything else waited.

**No thread ever reads another thread's frames.**  Walking a running thread's frames
from a second thread (``sys._current_frames()`` and then ``f_back``, ``f_lineno``) is not
safe in CPython 3.11: the frames belong to the other thread's frame stack, which it
pushes, pops and frees while the reader, which drops the GIL whenever it reads a source
line, still holds them (CPython issues 111363, 106883).  A broker fed decompression bombs
died that way, its watchdog inside ``traceback.format_stack`` of the loop thread's frames.
So the watchdog only sends the loop thread a signal (``SIGURG``, which the process ignores
when no handler is set); Python runs the handler on the main thread, between two bytecodes
of whatever holds the loop, and the handler formats the stack it was given, its own.  A C
call that holds the loop (a decompression, a huge allocation) is shown when it returns,
still inside the stall, at the Python line that made it.  When the loop does not run on
the main thread (the handler would run elsewhere), a stall is logged without a stack.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
import traceback
from types import FrameType

from .. import metric_names as M
from .metrics import Metrics

log = logging.getLogger(__name__)

_STACK_FRAMES = 12  # innermost frames logged per stall
STALL_SIGNAL = signal.SIGURG  # ignored by default, so a late one after stop() is harmless


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
        self._signalled_for: float | None = None  # the tick whose stall the loop thread is asked to log
        self._old_handler: object = None
        self._handler_installed = False

    async def run(self) -> None:
        """Tick every ``interval_s`` and record each tick's lateness, until cancelled."""
        self._loop_thread = threading.get_ident()
        self._last_tick = time.monotonic()
        if self.stall_s > 0 and self._watchdog is None:
            self._install_handler()
            self._watchdog = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
            self._watchdog.start()
        try:
            while True:
                due = time.monotonic() + self.interval_s
                await asyncio.sleep(self.interval_s)
                now = time.monotonic()
                if self.stall_s > 0 and now - self._last_tick >= self.stall_s:
                    self.metrics.count(M.EVENT_LOOP_STALLS)
                self._last_tick = now
                self.metrics.observe(M.EVENT_LOOP_LAG_SECONDS, max(0.0, now - due))
        finally:
            self.stop()

    def stop(self) -> None:
        """End the watchdog thread (the task ends by cancellation), then remove the handler."""
        self._stopped.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join(1.0)
        if self._handler_installed and threading.current_thread() is threading.main_thread():
            signal.signal(STALL_SIGNAL, self._old_handler)  # type: ignore[arg-type]
            self._handler_installed = False

    def _install_handler(self) -> None:
        """The stack handler, when the loop runs on the main thread (where Python runs handlers)."""
        if threading.current_thread() is not threading.main_thread():
            return
        self._old_handler = signal.signal(STALL_SIGNAL, self._on_stall_signal)
        self._handler_installed = True

    def _watch(self) -> None:
        """The watchdog thread: reads two floats and sends a signal; touches no frame."""
        logged_for = 0.0  # the tick whose stall was already reported
        while not self._stopped.wait(self.stall_s / 4):
            last = self._last_tick
            held = time.monotonic() - last
            if held < self.stall_s or last == logged_for:
                continue
            logged_for = last
            if self._handler_installed:
                self._signalled_for = last
                signal.pthread_kill(self._loop_thread, STALL_SIGNAL)
            else:
                log.warning("event loop held for %.0f ms so far (its stack is shown only when the loop "
                            "runs on the main thread)", held * 1000)

    def _on_stall_signal(self, signum: int, frame: FrameType | None) -> None:
        """Runs on the loop thread itself, inside the stall: log its own stack."""
        stalled = self._signalled_for
        self._signalled_for = None
        if stalled is None or self._last_tick != stalled:
            return  # the loop ticked again before the handler ran: nothing is held now
        held = time.monotonic() - stalled
        stack = "".join(traceback.format_stack(frame, limit=_STACK_FRAMES)) if frame else "(no frame)\n"
        log.warning("event loop held for %.0f ms so far; the loop thread was in:\n%s", held * 1000, stack.rstrip())
