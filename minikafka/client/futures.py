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

Delivery callbacks.  ``Producer.send(..., on_delivery=cb)`` keeps ``cb`` in the future's
own slot (no list, no closure, no lock); ``add_done_callback(fn)`` keeps its first
callback in a slot too and takes the producer's plain lock, not its condition.  The
thread that settles a batch (the producer's loop thread) marks the batch's records done
under one lock, wakes the waiters once, then walks the batch in offset order and calls
each record's callbacks: ``cb(metadata, error)`` (``metadata`` is the future itself, which
answers :class:`RecordMetadata`'s fields; None on failure, when ``error`` is the
exception) and ``fn(future)``.  No callback hops to another thread or through the event
loop's queue.  A callback that raises is logged (logger ``minikafka.client.futures``)
and the next callbacks and the producer go on.  The batch's settling also stamps each
record with one clock read (:attr:`RecordFuture.settled_at`), which is how
``minikafka bench produce`` times records without a callback per record
(docs/performance.md, "A delivery callback per record").
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import Any, Callable, Iterable

from .types import RecordMetadata, TopicPartition

_PENDING = 0
_DONE = 1

log = logging.getLogger(__name__)


class Completion:
    """The condition shared by the records of one producer: waiters sleep on it, and
    each resolved batch wakes them once."""

    __slots__ = ("cond", "lock")

    def __init__(self) -> None:
        # ``lock`` is the condition's own lock: taken alone (``with lock``, no Python-level
        # ``Condition.__enter__``) where nobody needs waking, as ``add_done_callback`` does.
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)


class RecordFuture:
    """The future of one record's :class:`RecordMetadata` (see the module docstring).

    Until the producer's loop takes it, the future also carries its record (topic,
    value, key, the partition asked for, headers, send time): ``Producer.send`` queues
    the future alone, one object per record, and the loop reads the record from it.
    """

    __slots__ = ("_completion", "_state", "_topic", "_partition", "_offset", "_timestamp", "_error", "_callbacks",
                 "_on_delivery", "_settled_at", "_value", "_key", "_headers", "_enqueued_ms")
    # set when the batch settles the record (not in __init__: one store fewer per record)
    _offset: int
    _settled_at: float

    def __init__(self, completion: Completion, timestamp_ms: int, topic: str | None = None,
                 value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
                 headers: Any = (), enqueued_ms: int = 0,
                 on_delivery: Callable[[Any, BaseException | None], Any] | None = None) -> None:
        self._completion = completion
        self._state = _PENDING
        self._timestamp = timestamp_ms
        self._topic = topic
        # The partition asked for (None: the partitioner's choice) until resolved, then
        # the record's partition; ``_offset`` is set when resolved.
        self._partition = partition
        self._error: BaseException | None = None
        # add_done_callback's callbacks: None, one callable, or a list of them
        self._callbacks: Any = None
        self._on_delivery = on_delivery
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
        topic, partition = self._topic, self._partition
        assert topic is not None and partition is not None  # a resolved record has both
        return RecordMetadata(topic, partition, self._offset, self._timestamp)

    get = result  # kafka-python's FutureRecordMetadata.get(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state != _DONE:
            self._wait(timeout)
        return self._error

    # ----- RecordMetadata's fields (once resolved) ---------------------------
    @property
    def topic(self) -> str | None:
        return self._topic

    @property
    def partition(self) -> int | None:
        """The record's partition once resolved (before: the partition asked for, or None)."""
        return self._partition

    @property
    def offset(self) -> int:
        """The record's offset once acknowledged (-1 with acks=0, or when it failed)."""
        return self._offset if self._state == _DONE and self._error is None else -1

    @property
    def timestamp(self) -> int:
        return self._timestamp

    @property
    def topic_partition(self) -> TopicPartition:
        """The record's partition once resolved (an error before: the partitioner may not have chosen yet)."""
        topic, partition = self._topic, self._partition
        assert topic is not None and partition is not None, "a record's partition is known once it is resolved"
        return TopicPartition(topic, partition)

    @property
    def settled_at(self) -> float | None:
        """``time.perf_counter()`` when the batch's answer (or failure) settled the record,
        read once per batch; None while pending."""
        return self._settled_at if self._state == _DONE else None

    def add_done_callback(self, fn: Callable[["RecordFuture"], Any]) -> None:
        """Call ``fn(future)`` once the record is resolved (at once, in this thread, if it
        is).  Otherwise it runs on the producer's thread, right after the record's
        ``on_delivery`` callback; an exception it raises is logged."""
        with self._completion.lock:
            if self._state != _DONE:
                cbs = self._callbacks
                if cbs is None:
                    self._callbacks = fn
                elif type(cbs) is list:
                    cbs.append(fn)
                else:
                    self._callbacks = [cbs, fn]
                return
        _call_done(fn, self)

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


_future_set_result = asyncio.Future.set_result
_future_set_exception = asyncio.Future.set_exception


class DeliveryFuture(asyncio.Future):
    """The asyncio future ``AIOProducer.send(..., on_delivery=cb)`` returns: as the loop's
    own future, and resolving it calls ``cb(metadata, None)`` (or ``cb(None, error)``)
    there and then, from the batch's settling, in offset order: no ``call_soon`` handle
    and no context copy per record, as ``add_done_callback`` takes.  An exception ``cb``
    raises is logged, and the producer goes on.  Made by :func:`delivery_future` (no
    ``__init__`` of its own: a Python-level one doubled the cost of making one)."""

    __slots__ = ("_on_delivery",)
    _on_delivery: Callable[[Any, BaseException | None], Any]

    def set_result(self, result: Any) -> None:
        _future_set_result(self, result)
        try:
            self._on_delivery(result, None)
        except Exception:
            log.exception("the on_delivery callback of the record future %r raised", self)

    def set_exception(self, exception: Any) -> None:
        _future_set_exception(self, exception)
        try:
            self._on_delivery(None, exception)
        except Exception:
            log.exception("the on_delivery callback of the record future %r raised", self)


def delivery_future(loop: asyncio.AbstractEventLoop,
                    on_delivery: Callable[[Any, BaseException | None], Any]) -> DeliveryFuture:
    """A :class:`DeliveryFuture` of ``loop`` that calls ``on_delivery``."""
    fut = DeliveryFuture(loop=loop)
    fut._on_delivery = on_delivery
    return fut


def _call_done(fn: Callable[["RecordFuture"], Any], fut: "RecordFuture") -> None:
    try:
        fn(fut)
    except Exception:  # a failing callback must not stop the others (as Future does), nor the producer
        log.exception("a done callback of the record future %r raised", fut)


def _run_callbacks(futures: list[RecordFuture]) -> None:
    """Call the records' callbacks, in order: each record's ``on_delivery(metadata, error)``
    (``metadata`` the future itself, None on failure), then its done callbacks."""
    for fut in futures:
        cb = fut._on_delivery
        if cb is not None:
            fut._on_delivery = None
            error = fut._error
            try:
                if error is None:
                    cb(fut, None)
                else:
                    cb(None, error)
            except Exception:
                log.exception("the on_delivery callback of the record future %r raised", fut)
        cbs = fut._callbacks
        if cbs is not None:
            fut._callbacks = None
            if type(cbs) is list:
                for fn in cbs:
                    _call_done(fn, fut)
            else:
                _call_done(cbs, fut)


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
    lock, wake the waiters once, then run the callbacks (outside the lock, in the
    batch's order)."""
    if type(futures) is not list:
        futures = list(futures)
    if not futures:
        return
    called = False
    step = 0 if base_offset < 0 else 1
    offset = base_offset
    settled_at = time.perf_counter()
    cond = futures[0]._completion.cond
    with cond:
        for fut in futures:
            if fut._state != _DONE:
                fut._settled_at = settled_at
                if exc is None:
                    fut._topic = topic
                    fut._partition = partition
                    fut._offset = offset
                    if log_append_time >= 0:
                        fut._timestamp = log_append_time
                else:
                    fut._error = exc
                fut._state = _DONE
                if fut._on_delivery is not None or fut._callbacks is not None:
                    called = True
            offset += step
        cond.notify_all()
    if called:
        # Settled just now or earlier, a record's callbacks are in its slots until run
        # (they are cleared as they run): once done, nothing adds to them.
        _run_callbacks(futures)
