"""The live fault suite's side of the transactional consume-transform-produce workload
(what Kafka's TransactionalMessageCopier does in its exactly-once system tests).

The copiers and the input's filler are :mod:`minikafka.workloads.copier`, the code the
simulation runs too; here they run against the broker processes, on real sockets and
the real clock, on an event loop of their own in one thread (the fault suite's runner is
synchronous).  Before the faults, :func:`fill_input` writes ``in-<p>-<i>`` records to the
input topic.  Then :class:`Copiers` runs one copier per share of the input partitions,
each with its transactional id, at most ``rate`` input records per second each, so that
the copying lasts through the faults; once the faults are over (:meth:`Copiers.wait_done`)
they go as fast as they can.  Every abort that completed is recorded: its outputs must
never be visible (:mod:`minikafka.faults.txn_checker` checks the whole run).
"""
from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Callable

from ..workloads.copier import Copier, CopierSettings, TxnFigures
from ..workloads.copier import fill_input as fill_copier_input

GROUP_PREFIX = "copier"
CALL_MS = 15000  # one request's timeout (request.timeout.ms)
TXN_TIMEOUT_MS = 30000  # transaction.timeout.ms
GIVE_UP_S = 60.0  # max.block.ms and delivery.timeout.ms


def _settings(bootstrap: str, input_topic: str, output_topic: str, partitions: int,
              rate: float | None = None) -> CopierSettings:
    return CopierSettings(bootstrap, input_topic, output_topic, partitions, f"{GROUP_PREFIX}-{input_topic}",
                          rate=rate, call_ms=CALL_MS, txn_timeout_ms=TXN_TIMEOUT_MS, give_up_s=GIVE_UP_S)


def fill_input(bootstrap: str, topic: str, partitions: int, per_partition: int) -> dict[int, list[str]]:
    """Write ``per_partition`` records to each input partition (acks=all, idempotent);
    returns partition -> values by offset."""
    async def fill() -> dict[int, list[str]] | None:
        deadline = asyncio.get_running_loop().time() + 120
        return await fill_copier_input(_settings(bootstrap, topic, f"{topic}-out", partitions), partitions,
                                       per_partition, deadline)

    values = asyncio.run(fill())
    if values is None:
        raise RuntimeError(f"the input topic {topic} could not be filled with {per_partition} records per partition "
                           f"within 120 s")
    return values


class Copiers:
    """The copiers, on one event loop in a thread, and what they did (:attr:`figures`)."""

    def __init__(self, bootstrap: str, input_topic: str, output_topic: str, partitions: int, copiers: int,
                 ends: dict[int, int], seed: int, log: Callable[[str], None], rate: float | None = None) -> None:
        settings = _settings(bootstrap, input_topic, output_topic, partitions, rate)
        self.group = settings.group
        self.figures = TxnFigures()
        self.problems: list[str] = []
        rng = random.Random(seed)
        assignment = {c: [p for p in range(partitions) if p % copiers == c] for c in range(copiers)}
        self.copiers = [Copier(settings, c, parts, ends, self.figures, rng, note=log)
                        for c, parts in assignment.items() if parts]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task] = []
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name="copiers", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._started.wait(10)

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._run_all(loop))
        except BaseException as exc:  # a bug: the run reports it
            self.problems.append(f"the copiers' loop failed: {type(exc).__name__}: {exc}")
        finally:
            loop.close()

    async def _run_all(self, loop: asyncio.AbstractEventLoop) -> None:
        self._tasks = [loop.create_task(c.run(float("inf")), name=c.name) for c in self.copiers]
        self._loop = loop
        self._started.set()
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        for c, r in zip(self.copiers, results):
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                self.problems.append(f"{c.name} crashed: {type(r).__name__}: {r}")

    def _on_loop(self, fn: Callable[[], None]) -> None:
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop closed meanwhile: the copiers are over
                pass

    def wait_done(self, timeout_s: float) -> bool:
        """Whether every copier committed all its input within ``timeout_s`` (the faults are
        over: they no longer keep to their rate)."""
        def hurry() -> None:
            for c in self.copiers:
                c.hurry = True
        self._on_loop(hurry)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._thread.is_alive():
            if all(c.done for c in self.copiers):
                return True
            time.sleep(0.1)
        return all(c.done for c in self.copiers)

    def stop(self) -> None:
        """Tell the copiers to stop at the end of their current transaction (without waiting)."""
        def stop() -> None:
            for c in self.copiers:
                c.until = float("-inf")
        self._on_loop(stop)

    def close(self, timeout_s: float = 60.0) -> None:
        """Stop the copiers (at the end of their current transaction, or cancelled after ``timeout_s``)."""
        self.stop()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            def cancel() -> None:
                for t in self._tasks:
                    t.cancel()
            self._on_loop(cancel)
            self._thread.join(10)
        if self._thread.is_alive():
            self.problems.append(f"the copiers did not stop within {timeout_s:g}s")
