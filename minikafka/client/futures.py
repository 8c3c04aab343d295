"""Per-record results of the blocking producer: Kafka's FutureRecordMetadata.

``Producer.send`` returns one of these for every record.  A
``concurrent.futures.Future`` per record costs a lock, a condition and its waiters
list; with 10^5 records in flight their creation and their garbage collection were
the producer's largest cost.  A :class:`RecordFuture` is one small object: a batch
resolves all of its records under one lock acquisition and wakes waiters once (Kafka's
producer likewise keeps one ProduceRequestResult per batch), and the
:class:`RecordMetadata` is built only when :meth:`RecordFuture.result` asks for it.

The future is also the record's only object on its way: ``send`` queues the future,
which carries the record to the producer's loop, and the batch keeps its records in
columns (:class:`~minikafka.client.accumulator.ProducerBatch`).  Python's garbage
collector runs a pass every 700 container objects created and a full pass, over every
object alive, after enough of them; a program that keeps 200,000 futures pays for each
extra object per record many times over (docs/performance.md, "One object per record").

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
    """The future of one record's :class:`RecordMetadata` (see the module docstring).

    Until the producer's loop takes it, the future also carries its record (topic,
    value, key, the partition asked for, headers, send time): ``Producer.send`` queues
    the future alone, one object per record, and the loop reads the record from it.
    """

    __slots__ = ("_completion", "_state", "_topic", "_partition", "_offset", "_timestamp", "_error", "_callbacks",
                 "_value", "_key", "_headers", "_enqueued_ms")

    def __init__(self, completion: Completion, timestamp_ms: int, topic: str | None = None,
                 value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
                 headers: Any = (), enqueued_ms: int = 0) -> None:
        self._completion = completion
        self._state = _PENDING
        self._timestamp = timestamp_ms
        self._topic = topic
        # The partition asked for (None: the partitioner's choice) until resolved, then
        # the record's partition; ``_offset`` is set when resolved.
        self._partition = partition
        self._error: BaseException | None = None
        self._callbacks: list | None = None
        self._value = value
        self._key = key
        self._headers = headers
        self._enqueued_ms = enqueued_ms

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


def fail_batch(futures: Iterable[RecordFuture], exc: BaseException) -> None:
    """Fail every still pending record of a batch with ``exc``."""
    _settle_batch(futures, None, -1, -1, -1, exc)


def resolve_batch(futures: Iterable[RecordFuture], topic: str, partition: int, base_offset: int,
                  log_append_time: int = -1) -> None:
    """Resolve a batch's records: record i gets ``base_offset + i`` (-1 for all when
    ``base_offset`` is -1, acks=0), and the broker's ``log_append_time`` as its timestamp
    when the topic uses LogAppendTime (not -1). One lock acquisition and one wake-up per batch."""
    _settle_batch(futures, topic, partition, base_offset, log_append_time, None)


def _settle_batch(futures: Iterable[RecordFuture], topic: str | None, partition: int, base_offset: int,
                  log_append_time: int, exc: BaseException | None) -> None:
    """Resolve (``exc`` None) or fail every pending record of a batch under the shared
    lock, wake the waiters once, then run the callbacks (outside the lock)."""
    if type(futures) is not list:
        futures = list(futures)
    if not futures:
        return
    called = []
    step = 0 if base_offset < 0 else 1
    offset = base_offset
    cond = futures[0]._completion.cond
    with cond:
        for fut in futures:
            if fut._state != _DONE:
                if exc is None:
                    fut._topic = topic
                    fut._partition = partition
                    fut._offset = offset
                    if log_append_time >= 0:
                        fut._timestamp = log_append_time
                else:
                    fut._error = exc
                fut._state = _DONE
                if fut._callbacks:
                    called.append(fut)
            offset += step
        cond.notify_all()
    if called:
        _run_callbacks(called)
