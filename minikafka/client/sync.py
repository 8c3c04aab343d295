"""Blocking clients: each runs its asyncio core on a private loop in one daemon thread.

``Producer.send`` is cheap: it validates the record, puts its small
:class:`~minikafka.client.futures.RecordFuture` (which carries the record) on a deque
and returns it; the loop thread drains the deque in bulk, and a batch's answer
resolves all of its records at once.  The loop thread is woken for a send only when
its sender is not already due to wake within ``linger_ms`` (it takes the queued records
first thing when it does), or when a batch's worth of bytes is queued: a steady stream
of records costs one wake-up per batch, not one per record.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from typing import Any, Callable, Coroutine, Iterable, Iterator, TypeVar

from .. import errors
from ..protocol.rpc.types import ReplicaStateResponse
from .accumulator import RECORD_OVERHEAD
from .admin import AIOAdmin
from .batches import ConsumerBatch
from .consumer import AIOConsumer
from .futures import Completion, RecordFuture
from .producer import NO_HEADERS, AIOProducer, check_topic, normalize_headers, to_bytes
from .types import ClusterDescription, ConsumerGroupMetadata, ConsumerRecord, GroupDescription, TopicDescription, TopicPartition

T = TypeVar("T")

_UNCHECKED = object()  # no topic checked yet: no user's topic is this object


class LoopThread:
    """An asyncio event loop running in a daemon thread."""

    def __init__(self, name: str = "minikafka-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._closed = False
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> "concurrent.futures.Future[T]":
        """Start ``coro`` on the loop; its result arrives in the returned future."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a blocking minikafka client method was called from its own loop thread")
        if self._closed or self.loop.is_closed():
            if asyncio.iscoroutine(coro):
                coro.close()
            raise errors.ClientError("the client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            if fut.done():
                raise
            fut.cancel()
            raise errors.RequestTimedOutError(f"no result within {timeout} s") from None

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop the loop and join its thread."""
        if self._closed:
            return
        self._closed = True
        if threading.current_thread() is self._thread:
            self.loop.stop()
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # already closed
            pass
        self._thread.join(timeout)


async def _call(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


def _first_offsets(handed_out: list) -> dict[TopicPartition, int]:
    """The first offset per partition among records or batches (``first_offset``)."""
    out: dict[TopicPartition, int] = {}
    for x in handed_out:
        tp = TopicPartition(x.topic, x.partition)
        if tp not in out:
            out[tp] = x.first_offset if isinstance(x, ConsumerBatch) else x.offset
    return out


class _BlockingClient:
    """close() and the with-statement of a blocking client that wraps an asyncio core
    (``self._core``) running on its own loop thread (``self._lt``)."""

    _closed: bool
    _lt: LoopThread
    _core: Any

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._lt.run(self._core.close())
        finally:
            self._lt.close()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _handover(futures: list[RecordFuture]) -> Iterator[tuple]:
    """The records that ``send`` put in ``futures``, as the tuples ``append_many`` takes,
    one at a time: each lives only while it is read.  A future lets go of its record's
    bytes once handed over (its batch holds them until acknowledged)."""
    for fut in futures:
        yield (fut._topic, fut._value, fut._key, fut._partition, fut._headers, fut._timestamp, fut, fut._enqueued_ms)
        fut._value = fut._key = fut._headers = None


class Producer:
    """Blocking-friendly producer.

    >>> p = Producer("127.0.0.1:9092", acks="all")
    >>> fut = p.send("events", b"hello", key=b"user-1")
    >>> fut.result(timeout=10)          # RecordMetadata(topic, partition, offset, timestamp)
    >>> p.flush(); p.close()

    Keys, values and header values are bytes or None; str is accepted and
    encoded as UTF-8.  Keyword arguments are those of :class:`~minikafka.aio.AIOProducer`:
    ``acks`` ("all"/-1, 1, 0), ``linger_ms``, ``batch_size``, ``retries``,
    ``retry_backoff_ms``, ``request_timeout_ms``, ``delivery_timeout_ms``,
    ``max_block_ms``, ``client_id``, ``compression_type`` ("none", "gzip", "snappy", "lz4",
    "zstd"), ``enable_idempotence`` (default: on with acks="all" and retries >= 1),
    ``max_in_flight_requests_per_connection`` (default 5; used by idempotent producers,
    others keep one batch per partition in flight; while one is in flight, the next
    goes only when full), ``transactional_id`` and
    ``transaction_timeout_ms`` (default 60000): a transactional producer calls
    ``init_transactions()`` once, then ``begin_transaction()``, ``send``,
    ``send_offsets_to_transaction`` and ``commit_transaction()`` or
    ``abort_transaction()`` (docs/transactions.md).

    Delivery callbacks: ``send(..., on_delivery=cb)`` (librdkafka's ``on_delivery``,
    kafka-python's ``add_callback``/``add_errback`` in one) calls ``cb(metadata, None)``
    once the record is acknowledged, where ``metadata`` answers :class:`RecordMetadata`'s
    fields (``topic``, ``partition``, ``offset``, ``timestamp``: it is the record's
    future), or ``cb(None, error)`` once it failed.  ``cb`` runs on the producer's loop
    thread, right after the record's batch is settled, in offset order within a
    partition, before the record's ``add_done_callback`` callbacks; it should be quick
    and must not call this producer's blocking methods (``flush``, ``close``): that
    thread does the sending.  An exception a callback raises is logged (logger
    ``minikafka.client.futures``) and changes nothing else: the other callbacks run and
    the producer goes on.  A callback per record costs a few percent of ``send``'s
    throughput with one function for all records (docs/performance.md, "A delivery
    callback per record"); a new closure per record costs more.
    """

    def __init__(self, bootstrap_servers: Any, **config: Any) -> None:
        self._lt = LoopThread("minikafka-producer")
        self._queue: deque = deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._closed = False
        self._completion = Completion()
        self._queued_bytes = 0  # roughly, since the last hand-over
        self._last_topic: object = _UNCHECKED  # the last topic ``send`` checked

        async def create() -> AIOProducer:
            core = self._core = AIOProducer(bootstrap_servers, **config)
            core.before_step = self._take
            await core.start()
            return core

        try:
            self._core = self._lt.run(create())
        except BaseException:
            self._lt.close()
            raise
        self._linger_ms = self._core.linger_ms
        self._now_ms = self._core.clock.monotonic_ms  # the core's clock: its lingering counts from these
        self._wall_ms = self._core.clock.wall_ms
        self._txn = self._core._txn  # set once, when the core is made
        self._handover_bytes = self._core._acc.batch_size

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Any = None,
        timestamp_ms: int | None = None,
        on_delivery: Callable[[Any, BaseException | None], Any] | None = None,
    ) -> RecordFuture:
        """Queue one record; returns a future of its :class:`RecordMetadata`.

        The future is a :class:`~minikafka.client.futures.RecordFuture`: ``result(timeout)``
        (or kafka-python's ``get``), ``exception``, ``done`` and ``add_done_callback`` as
        on a ``concurrent.futures.Future``.  ``on_delivery(metadata, error)`` is called
        once the record is acknowledged or failed (see the class docstring for the thread
        it runs in and what an exception it raises does).
        """
        if self._closed:
            raise errors.ClientError("the producer is closed")
        if self._txn is not None:
            self._txn.check_send()
        # The usual record (the topic of the previous one, a bytes value, no key, no
        # headers) skips the checks' function calls: a few hundred ns of a few µs.
        if topic is not self._last_topic:
            topic = self._last_topic = check_topic(topic)
        if value is not None and type(value) is not bytes:
            value = to_bytes(value, "value")
        if key is not None:
            key = to_bytes(key, "key")
        headers = normalize_headers(headers) if headers else NO_HEADERS
        ts = self._wall_ms() if timestamp_ms is None else int(timestamp_ms)
        now = self._now_ms()
        fut = RecordFuture(self._completion, ts, topic, value, key, partition, headers, now, on_delivery)
        self._queue.append(fut)
        self._queued_bytes += RECORD_OVERHEAD + (len(value) if value else 0) + (len(key) if key else 0)
        if not self._scheduled:  # (the first check of _schedule, without its call)
            self._schedule(now)
        return fut

    def send_many(
        self,
        topic: str,
        values: Iterable[Any],
        keys: Iterable[Any] | None = None,
        partition: int | None = None,
        headers: Any = None,
        timestamp_ms: int | None = None,
        on_delivery: Callable[[Any, BaseException | None], Any] | None = None,
    ) -> list[RecordFuture]:
        """Queue many records of one topic at once; returns their futures in order.

        ``keys``, when given, pairs with ``values`` one to one.  The same ``partition``,
        ``headers``, ``timestamp_ms`` and ``on_delivery`` apply to every record.
        Equivalent to calling :meth:`send` for each, with less work per record.
        """
        if self._closed:
            raise errors.ClientError("the producer is closed")
        if self._txn is not None:
            self._txn.check_send()
        topic = check_topic(topic)
        values = list(values)
        if keys is None:
            keys = [None] * len(values)
        else:
            keys = list(keys)
            if len(keys) != len(values):
                raise ValueError(f"send_many got {len(values)} values but {len(keys)} keys")
        hdrs = normalize_headers(headers)
        ts = self._wall_ms() if timestamp_ms is None else int(timestamp_ms)
        completion = self._completion
        futures = []
        size = 0
        now = self._now_ms()
        for value, key in zip(values, keys):
            value, key = to_bytes(value, "value"), to_bytes(key, "key")
            size += RECORD_OVERHEAD + (len(value) if value else 0) + (len(key) if key else 0)
            futures.append(RecordFuture(completion, ts, topic, value, key, partition, hdrs, now, on_delivery))
        self._queue.extend(futures)
        self._queued_bytes += size
        self._schedule(now)
        return futures

    def _schedule(self, now: int) -> None:
        """Make sure the queue is drained on the loop in time (at most one wake-up per burst).

        Nothing to do while the sender sleeps on a timer due within ``linger_ms``: it takes
        the queue first thing when it wakes (:meth:`_take`), before it looks at the
        batches, and a record starting a batch lingers from its own send time (the
        ``enqueued_ms`` it carries), so no batch leaves later than its linger says.  A
        batch's worth of queued bytes is handed over at once, so that full batches do not
        wait for the timer.  The sender clears ``armed_until_ms`` before it takes the
        queue, so a record appended while it still reads armed is taken.

        The flag is read without the lock first: a drain clears it before it empties the
        queue, so a record appended while the flag still reads True is always drained.
        """
        if self._scheduled:
            return
        armed = self._core.armed_until_ms
        if armed and armed - now <= self._linger_ms and self._queued_bytes < self._handover_bytes:
            return
        with self._lock:
            schedule = not self._scheduled
            self._scheduled = True
        if schedule:
            try:
                self._lt.call_soon(self._drain)
            except RuntimeError:
                raise errors.ClientError("the producer is closed") from None

    def _drain(self) -> None:
        """On the loop: hand every queued record to the core (one call per burst)."""
        with self._lock:
            self._scheduled = False
        self._take()

    def _take(self) -> None:
        """On the loop: hand every queued record to the core (the sender calls it too,
        each time it wakes)."""
        queue = self._queue
        if not queue:
            return
        self._queued_bytes = 0
        futures = []
        while queue:
            futures.append(queue.popleft())
        self._core.append_many(_handover(futures))

    async def _flush(self, timeout: float | None) -> None:
        self._drain()
        await self._core.flush(timeout)

    def flush(self, timeout: float | None = None) -> None:
        """Block until every record sent so far is acknowledged or failed."""
        if self._closed:
            return
        self._lt.run(self._flush(timeout))

    def partitions_for(self, topic: str) -> set[int]:
        """Partition numbers of ``topic`` (UNKNOWN_TOPIC_OR_PARTITION if it does not exist,
        TOPIC_AUTHORIZATION_FAILED if an ACL hides it)."""
        return self._lt.run(self._core.partitions_for(topic))

    # -- transactions (a producer made with transactional_id) ------------------------
    def init_transactions(self) -> None:
        """Register the transactional id: fences older producers with the same id."""
        self._lt.run(self._core.init_transactions())

    def begin_transaction(self) -> None:
        """Start a transaction: records sent until commit or abort belong to it."""
        self._lt.run(_call(self._core.begin_transaction))

    def send_offsets_to_transaction(self, offsets: dict[Any, Any], group_id: Any) -> None:
        """Commit a group's offsets with the transaction (``group_id``: the id or the
        consumer's ``group_metadata()``)."""
        self._lt.run(self._core.send_offsets_to_transaction(offsets, group_id))

    async def _end(self, committed: bool, timeout: float | None) -> None:
        self._drain()
        if committed:
            await self._core.commit_transaction(timeout)
        else:
            await self._core.abort_transaction(timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Send the transaction's records and commit it; raises the error of a record or
        request that failed (abort the transaction then)."""
        self._lt.run(self._end(True, timeout))

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: read_committed consumers never see its records."""
        self._lt.run(self._end(False, timeout))

    @property
    def transaction_state(self) -> str:
        return self._core.transaction_state

    async def _close(self, timeout: float | None) -> None:
        self._drain()
        await self._core.close(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (at most ``timeout`` seconds), then stop the client."""
        if self._closed:
            return
        self._closed = True
        try:
            self._lt.run(self._close(timeout))
        finally:
            self._lt.close()

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _ListenerInThread:
    """Runs a blocking consumer's rebalance listener in a worker thread, so its callbacks
    may call the consumer's blocking methods (``commit`` in ``on_partitions_revoked``)."""

    def __init__(self, listener: Any) -> None:
        self.listener = listener

    async def _run(self, name: str, tps: set[TopicPartition]) -> None:
        fn = getattr(self.listener, name, None)
        if fn is not None:
            await asyncio.get_running_loop().run_in_executor(None, fn, tps)

    async def on_partitions_revoked(self, tps: set[TopicPartition]) -> None:
        await self._run("on_partitions_revoked", tps)

    async def on_partitions_assigned(self, tps: set[TopicPartition]) -> None:
        await self._run("on_partitions_assigned", tps)


class Consumer(_BlockingClient):
    """Blocking consumer: manual partition assignment, or a member of a consumer group.

    >>> c = Consumer("127.0.0.1:9092", auto_offset_reset="earliest")
    >>> c.assign([TopicPartition("events", 0)])
    >>> for record in c.poll(timeout_ms=1000): print(record.offset, record.value)

    >>> c = Consumer("127.0.0.1:9092", group_id="billing", auto_offset_reset="earliest")
    >>> c.subscribe(["events"])
    >>> for record in c: ...           # polls forever; commits every 5 s by default

    Keyword arguments are those of :class:`~minikafka.aio.AIOConsumer`, with
    kafka-python's names: ``group_id``, ``client_id``, ``auto_offset_reset`` ("latest",
    "earliest", "none"), ``enable_auto_commit``, ``auto_commit_interval_ms``,
    ``session_timeout_ms``, ``heartbeat_interval_ms``, ``max_poll_interval_ms``,
    ``partition_assignment_strategy`` (["range"], "roundrobin", "sticky"),
    ``group_instance_id``, ``fetch_max_wait_ms``, ``fetch_min_bytes``,
    ``fetch_max_bytes``, ``max_partition_fetch_bytes``, ``request_timeout_ms``,
    ``retry_backoff_ms``.  ``close()`` commits (with auto commit) and leaves the group.
    """

    def __init__(self, bootstrap_servers: Any, **config: Any) -> None:
        self._lt = LoopThread("minikafka-consumer")
        self._closed = False

        async def create() -> AIOConsumer:
            core = AIOConsumer(bootstrap_servers, **config)
            await core.start()
            return core

        try:
            self._core: AIOConsumer = self._lt.run(create())
        except BaseException:
            self._lt.close()
            raise

    @property
    def group_id(self) -> str | None:
        return self._core.group_id

    def assign(self, partitions: Iterable[Any]) -> None:
        self._lt.run(_call(self._core.assign, list(partitions)))

    def assignment(self) -> set[TopicPartition]:
        return self._lt.run(_call(self._core.assignment))

    def subscribe(self, topics: Iterable[str] | str, listener: Any = None) -> None:
        """Join the group and consume ``topics`` (see :meth:`AIOConsumer.subscribe`);
        the listener's callbacks run in a worker thread and may call this consumer."""
        wrapped = _ListenerInThread(listener) if listener is not None else None
        self._lt.run(_call(self._core.subscribe, topics if isinstance(topics, str) else list(topics), wrapped))

    def subscription(self) -> set[str]:
        return self._lt.run(_call(self._core.subscription))

    def unsubscribe(self) -> None:
        self._lt.run(self._core.unsubscribe())

    def commit(self, offsets: dict[Any, Any] | None = None) -> None:
        """Commit positions (or ``offsets``: partition -> next offset to read) to the group."""
        self._lt.run(self._core.commit(offsets))

    def committed(self, tp: Any) -> int | None:
        """The group's committed offset of ``tp`` (None when nothing is committed)."""
        return self._lt.run(self._core.committed(tp))

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group id, generation and member id, for a transactional producer's
        ``send_offsets_to_transaction``."""
        return self._lt.run(_call(self._core.group_metadata))

    def pause(self, *tps: Any) -> None:
        self._lt.run(_call(self._core.pause, *tps))

    def resume(self, *tps: Any) -> None:
        self._lt.run(_call(self._core.resume, *tps))

    def paused(self) -> set[TopicPartition]:
        return self._lt.run(_call(self._core.paused))

    def seek(self, tp: Any, offset: int) -> None:
        self._lt.run(_call(self._core.seek, tp, offset))

    def seek_to_beginning(self, *tps: Any) -> None:
        self._lt.run(_call(self._core.seek_to_beginning, *tps))

    def seek_to_end(self, *tps: Any) -> None:
        self._lt.run(_call(self._core.seek_to_end, *tps))

    def position(self, tp: Any) -> int:
        return self._lt.run(self._core.position(tp))

    def highwater(self, tp: Any) -> int | None:
        return self._lt.run(_call(self._core.highwater, tp))

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records after the current positions (a flat list, ordered per partition)."""
        return self._hand_out(self._core.poll(timeout_ms, max_records))

    def poll_batches(self, timeout_ms: int = 0, max_batches: int | None = None) -> list[ConsumerBatch]:
        """Whole record batches after the current positions, decoded only when asked
        (``raw``, ``records()``, ``values()``, ``to_arrow()``): the fastest way to read."""
        return self._hand_out(self._core.poll_batches(timeout_ms, max_batches))

    def wakeup(self) -> None:
        """Cut the poll in progress short (or the next one): it raises
        :class:`~minikafka.errors.WakeupError` and hands out nothing (Kafka's
        ``KafkaConsumer.wakeup``).  Safe from any thread and from a signal handler."""
        self._lt.call_soon(self._core.wakeup)

    def _hand_out(self, coro: Coroutine[Any, Any, list]) -> list:
        """Wait for a poll.  When the wait is interrupted (Ctrl-C), the poll is cut short
        and whatever it had already handed out is put back (the positions move back to
        it), so the caller's next commit (``close()`` commits) never passes records it
        never got."""
        box: list[list] = []

        async def poll() -> list:
            box.append(await coro)
            return box[0]

        fut = self._lt.submit(poll())
        try:
            return fut.result()
        except (KeyboardInterrupt, SystemExit):
            self._lt.call_soon(self._core._interrupt_poll)
            if not concurrent.futures.wait([fut], timeout=5.0).done:
                fut.cancel()
            for tp, offset in _first_offsets(box[0] if box else []).items():
                self._lt.call_soon(self._core.seek, tp, offset)
            raise

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """``for record in consumer``: records one by one until the consumer is closed."""
        while not self._closed:
            yield from self.poll(timeout_ms=1000)

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self._lt.run(self._core.partitions_for_topic(topic))

    def topics(self) -> set[str]:
        return self._lt.run(self._core.topics())

    def beginning_offsets(self, tps: Iterable[Any]) -> dict[TopicPartition, int]:
        return self._lt.run(self._core.beginning_offsets(list(tps)))

    def end_offsets(self, tps: Iterable[Any]) -> dict[TopicPartition, int]:
        return self._lt.run(self._core.end_offsets(list(tps)))

    def offsets_for_times(self, timestamps: dict[Any, int]) -> dict[TopicPartition, Any]:
        """First committed offset at or after each timestamp (None where there is none)."""
        return self._lt.run(self._core.offsets_for_times(dict(timestamps)))


class Admin(_BlockingClient):
    """Blocking admin client: topics and cluster introspection.

    >>> admin = Admin("127.0.0.1:9092")
    >>> admin.create_topic("events", partitions=3, replication_factor=3, config={"min.insync.replicas": 2})
    >>> for p in admin.describe_topics(["events"])[0].partitions:
    ...     print(p.partition, p.leader, p.isr, p.high_watermark, p.replica_leos)

    Methods are those of :class:`~minikafka.aio.AIOAdmin`.
    """

    def __init__(self, bootstrap_servers: Any, request_timeout_ms: int = 30000, client_id: str | None = None,
                 **security: Any) -> None:
        self._lt = LoopThread("minikafka-admin")
        self._closed = False

        async def create() -> AIOAdmin:
            core = AIOAdmin(bootstrap_servers, request_timeout_ms=request_timeout_ms, client_id=client_id, **security)
            await core.start()
            return core

        try:
            self._core: AIOAdmin = self._lt.run(create())
        except BaseException:
            self._lt.close()
            raise

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     config: dict[str, Any] | None = None, timeout_ms: int = 30000,
                     assignment: dict[int, list[int]] | None = None) -> None:
        self._lt.run(self._core.create_topic(name, partitions, replication_factor, config, timeout_ms, assignment))

    def delete_topic(self, name: str, timeout_ms: int = 30000) -> None:
        self._lt.run(self._core.delete_topic(name, timeout_ms))

    def elect_leaders(self, partitions: Iterable[Any] | None = None, timeout_ms: int = 30000,
                      election_type: str = "preferred") -> dict[TopicPartition, errors.KafkaError | None]:
        return self._lt.run(self._core.elect_leaders(None if partitions is None else list(partitions), timeout_ms,
                                                     election_type))

    def delete_records(self, offsets: dict[Any, int], timeout_ms: int = 30000) -> dict[TopicPartition, int | errors.KafkaError]:
        """See :meth:`minikafka.client.admin.AIOAdmin.delete_records`."""
        return self._lt.run(self._core.delete_records(offsets, timeout_ms))

    def alter_partition_reassignments(self, reassignments: dict[Any, list[int]]) -> dict[TopicPartition, errors.KafkaError | None]:
        return self._lt.run(self._core.alter_partition_reassignments(reassignments))

    def list_topics(self) -> list[str]:
        return self._lt.run(self._core.list_topics())

    def find_transaction_coordinator(self, transactional_id: str) -> int:
        """See :meth:`minikafka.client.txn_admin.TransactionAdminMixin.find_transaction_coordinator`."""
        return self._lt.run(self._core.find_transaction_coordinator(transactional_id))

    def describe_transactions(self, transactional_ids: list[str]) -> list[Any]:
        """See :meth:`minikafka.client.txn_admin.TransactionAdminMixin.describe_transactions`."""
        return self._lt.run(self._core.describe_transactions(list(transactional_ids)))

    def list_transactions(self, states: list[str] | None = None, producer_ids: list[int] | None = None,
                          duration_ms: int = -1) -> list[Any]:
        """See :meth:`minikafka.client.txn_admin.TransactionAdminMixin.list_transactions`."""
        return self._lt.run(self._core.list_transactions(states, producer_ids, duration_ms))

    def create_acls(self, bindings: Iterable[Any]) -> None:
        """See :meth:`minikafka.client.admin.AIOAdmin.create_acls`."""
        self._lt.run(self._core.create_acls(bindings))

    def describe_acls(self, **filter: str | None) -> list[Any]:
        """See :meth:`minikafka.client.admin.AIOAdmin.describe_acls`."""
        return self._lt.run(self._core.describe_acls(**filter))

    def delete_acls(self, **filter: str | None) -> list[Any]:
        """See :meth:`minikafka.client.admin.AIOAdmin.delete_acls`."""
        return self._lt.run(self._core.delete_acls(**filter))

    def create_partitions(self, topic: str, count: int, assignments: list[list[int]] | None = None,
                          timeout_ms: int = 30000, validate_only: bool = False) -> list[int]:
        """See :meth:`minikafka.client.admin.AIOAdmin.create_partitions`."""
        return self._lt.run(self._core.create_partitions(topic, count, assignments, timeout_ms, validate_only))

    def describe_configs(self, topic: str) -> dict[str, tuple[str | None, str]]:
        """See :meth:`minikafka.client.admin.AIOAdmin.describe_configs`."""
        return self._lt.run(self._core.describe_configs(topic))

    def alter_configs(self, topic: str, set: dict[str, Any] | None = None, delete: Iterable[str] = (),
                      validate_only: bool = False) -> None:
        """See :meth:`minikafka.client.admin.AIOAdmin.alter_configs`."""
        self._lt.run(self._core.alter_configs(topic, set, delete, validate_only))

    def describe_broker_configs(self, broker: int) -> dict[str, tuple[str | None, str, bool]]:
        """See :meth:`minikafka.client.admin.AIOAdmin.describe_broker_configs`."""
        return self._lt.run(self._core.describe_broker_configs(broker))

    def alter_broker_configs(self, broker: int | None, set: dict[str, Any] | None = None, delete: Iterable[str] = (),
                             validate_only: bool = False) -> None:
        """See :meth:`minikafka.client.admin.AIOAdmin.alter_broker_configs`."""
        self._lt.run(self._core.alter_broker_configs(broker, set, delete, validate_only))

    def describe_topics(self, topics: Iterable[str] | str | None = None, checksums: bool = False) -> list[TopicDescription]:
        """See :meth:`minikafka.client.admin.AIOAdmin.describe_topics`."""
        return self._lt.run(self._core.describe_topics(topics, checksums=checksums))

    def cluster(self) -> ClusterDescription:
        return self._lt.run(self._core.cluster())

    # consumer groups (see minikafka.client.group_admin)
    def list_groups(self) -> list[tuple[str, str, str]]:
        """``(group_id, state, protocol_type)`` of every group."""
        return self._lt.run(self._core.list_groups())

    def describe_group(self, group_id: str) -> GroupDescription:
        return self._lt.run(self._core.describe_group(group_id))

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        return self._lt.run(self._core.list_group_offsets(group_id))

    def alter_group_offsets(self, group_id: str, offsets: dict[Any, int]) -> None:
        self._lt.run(self._core.alter_group_offsets(group_id, dict(offsets)))

    def delete_group(self, group_id: str) -> None:
        self._lt.run(self._core.delete_group(group_id))

    def replica_states(self, partitions: Iterable[tuple[str, int]] | None = None
                       ) -> dict[int, ReplicaStateResponse | Exception]:
        return self._lt.run(self._core.replica_states(partitions))

