"""Polling a condition until it holds: the one loop behind the waits of the test harness,
the reference tools and the benchmarks.

:func:`poll` calls a condition every ``interval_s`` until it returns something truthy or
``timeout_s`` has passed, and says what it saw last; each caller turns a timeout into its
own error (the harness's :class:`~minikafka.testing.waits.WaitTimeout`, a reference tool's
``TimeoutError``, a benchmark's :class:`~minikafka.errors.ClientError`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


@dataclass
class Polled(Generic[T]):
    """The outcome of :func:`poll`: ``value`` is the condition's first truthy answer (None
    after a timeout), ``last`` what it answered or raised last, ``seconds`` how long it took."""

    value: T | None
    last: Any
    seconds: float

    def __bool__(self) -> bool:
        return self.value is not None


def poll(condition: Callable[[], T], timeout_s: float, interval_s: float = 0.1,
         not_yet: tuple[type[BaseException], ...] = ()) -> Polled[T]:
    """Call ``condition`` until it returns something truthy (at least once, then every
    ``interval_s`` until ``timeout_s`` has passed).  An exception of a class in ``not_yet``
    counts as "not yet" (a broker or ZooKeeper not answering for a moment); any other
    propagates."""
    start = time.monotonic()
    deadline = start + timeout_s
    last: Any = None
    while True:
        try:
            last = condition()
            if last:
                return Polled(last, last, time.monotonic() - start)
        except not_yet as exc:
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            return Polled(None, last, time.monotonic() - start)
        time.sleep(interval_s)
