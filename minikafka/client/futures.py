"""Per-record results of the blocking producer: Kafka's FutureRecordMetadata.

``Producer.send`` returns one of these for every record.  A
``concurrent.futures.Future`` per record costs a lock, a condition and its waiters
list; with 10^5 records in flight their creation and their garbage collection were
the producer's largest cost.  A :class:`RecordFuture` is one small object: a batch
resolves all of its records under one lock acquisition and wakes waiters once (Kafka's
producer likewise keeps one ProduceRequestResult per batch), and the
:class:`RecordMetadata` is built only when :meth:`RecordFuture.result` asks for it.

It answers the ``concurrent.futures.Future`` methods programs use: ``result``,
``exception``, ``done``, ``add_done_callback`` (callbacks run on the producer's
thread, as with a Future resolved there), ``cancel`` (always False: a record handed
to the producer cannot be taken back), and kafka-python's ``get``.
"""
from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Callable, Iterable

from .types import RecordMetadata

_PENDING = 0
_DONE = 1


class Completion:
    """The condition shared by the records of one producer: waiters sleep on it, and
    each resolved batch wakes them once."""

    __slots__ = ("cond",)

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.Lock())


class RecordFuture:
    """The future of one record's :class:`RecordMetadata` (see the module docstring)."""

    __slots__ = ("_completion", "_state", "_topic", "_partition", "_offset", "_timestamp", "_error", "_callbacks")

    def __init__(self, completion: Completion, timestamp_ms: int) -> None:
        self._completion = completion
        self._state = _PENDING
        self._timestamp = timestamp_ms
        self._topic: str | None = None
        self._partition = -1
        self._offset = -1
        self._error: BaseException | None = None
        self._callbacks: list | None = None

    # ----- the Future interface -------------------------------------------
    def done(self) -> bool:
        return self._state == _DONE

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return self._state != _DONE

    def cancel(self) -> bool:
        return False

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata once acknowledged; raises its error, or
        ``concurrent.futures.TimeoutError`` after ``timeout`` seconds."""
        if self._state != _DONE:
            self._wait(timeout)
        if self._error is not None:
            raise self._error
        return RecordMetadata(self._topic, self._partition, self._offset, self._timestamp)

    get = result  # kafka-python's FutureRecordMetadata.get(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state != _DONE:
            self._wait(timeout)
        return self._error

    def add_done_callback(self, fn: Callable[["RecordFuture"], Any]) -> None:
        """Call ``fn(future)`` once the record is resolved (at once if it is)."""
        with self._completion.cond:
            if self._state != _DONE:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        fn(self)

    def _wait(self, timeout: float | None) -> None:
        cond = self._completion.cond
        with cond:
            if not cond.wait_for(self.done, timeout):
                raise concurrent.futures.TimeoutError()

    # ----- resolving (the producer's thread) ------------------------------
    def set_result(self, meta: RecordMetadata) -> None:
        resolve_batch((self,), meta.topic, meta.partition, meta.offset)

    def set_exception(self, exc: BaseException) -> None:
        fail_batch((self,), exc)

    def __repr__(self) -> str:
        if self._state != _DONE:
            return "<RecordFuture pending>"
        if self._error is not None:
            return f"<RecordFuture failed: {self._error!r}>"
        return f"<RecordFuture {self._topic}-{self._partition}@{self._offset}>"


def _run_callbacks(futures: list[RecordFuture]) -> None:
    for fut in futures:
        callbacks, fut._callbacks = fut._callbacks, None
        for fn in callbacks or ():
            try:
                fn(fut)
            except Exception:  # a failing callback must not stop the others (as Future does)
                pass


def _settle_batch(futures: Iterable[RecordFuture], settle: Callable[[int, RecordFuture], None]) -> None:
    """Call ``settle(i, future)`` for every pending record of a batch under the shared
    lock, mark it done, wake the waiters once, then run the callbacks (outside the lock)."""
    futures = list(futures)
    if not futures:
        return
    called = []
    cond = futures[0]._completion.cond
    with cond:
        for i, fut in enumerate(futures):
            if fut._state == _DONE:
                continue
            settle(i, fut)
            fut._state = _DONE
            if fut._callbacks:
                called.append(fut)
        cond.notify_all()
    if called:
        _run_callbacks(called)


def resolve_batch(futures: Iterable[RecordFuture], topic: str, partition: int, base_offset: int,
                  log_append_time: int = -1) -> None:
    """Resolve a batch's records: record i gets ``base_offset + i`` (-1 for all when
    ``base_offset`` is -1, acks=0), and the broker's ``log_append_time`` as its timestamp
    when the topic uses LogAppendTime (not -1). One lock acquisition and one wake-up per batch."""
    def settle(i: int, fut: RecordFuture) -> None:
        fut._topic = topic
        fut._partition = partition
        fut._offset = -1 if base_offset < 0 else base_offset + i
        if log_append_time >= 0:
            fut._timestamp = log_append_time

    _settle_batch(futures, settle)


def fail_batch(futures: Iterable[RecordFuture], exc: BaseException) -> None:
    """Fail every still pending record of a batch with ``exc``."""
    def settle(i: int, fut: RecordFuture) -> None:
        fut._error = exc

    _settle_batch(futures, settle)
