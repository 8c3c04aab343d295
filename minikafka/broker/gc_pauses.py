"""Python's garbage collector in a broker process: its pauses measured, and fewer of them.

CPython's cyclic collector stops the whole process while it runs: every request, fetch
answer and timer of the broker waits, as under a JVM's stop-the-world pause.  Two things
here, both for a broker that runs alone in its process (``minikafka broker``), never for
brokers that share a process (the simulation, tests), since the collector is the
process's:

- :class:`GcPauses` times each collection through ``gc.callbacks`` into the
  ``minikafka_gc_pause_seconds`` histogram (/metrics), per generation, as the JVM's GC
  pause metrics do;
- :func:`settle` runs once the broker has started: it collects, then moves every object
  alive at that moment (modules, classes, the broker's long-lived services) out of the
  collector's sight (``gc.freeze()``), so that later full collections do not walk them
  again and again.  The thresholds stay CPython's: measured under 1,000 acks=all
  records/s, the youngest generation is collected a few times a second for well under a
  millisecond each, while a threshold of 10,000 made each of those pauses 10-15 ms.
"""
from __future__ import annotations

import gc
import time

from .. import metric_names as M
from .metrics import Metrics


class GcPauses:
    """Times every collection of this process into ``minikafka_gc_pause_seconds``."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._started = 0.0

    def install(self) -> None:
        gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started:
            self.metrics.observe(M.GC_PAUSE_SECONDS, time.perf_counter() - self._started,
                                 generation=str(info.get("generation", "")))
            self._started = 0.0


def settle() -> None:
    """Collect once, then freeze what is alive: the start-up's objects leave the
    collector's generations for good."""
    gc.collect()
    gc.freeze()
