"""The asyncio producer: batching, requests in flight per partition, retries.

Records are gathered per partition (see accumulator.py); a sender task sends
ready batches to their partition leaders, one produce request per leader holding
one batch per partition.  Without idempotence a partition with a request in flight
is muted, so a retried batch is always written before the batches behind it:
per-partition order holds, retries included.  An idempotent producer keeps up to
``max_in_flight_requests_per_connection`` batches of a partition in flight, but
only full ones go beside another: while a request is in flight, the partition's
records gather in its next batch (see ``_muted``); and only once the partition's
leader has taken a batch of the producer's current id and epoch (see
``_leader_knows``).  Retriable errors refresh
metadata, back off ``retry_backoff_ms`` and retry until ``delivery_timeout_ms``
after the batch was created; other errors fail the records' futures.

Idempotence (``enable_idempotence``, on by default with acks="all" and retries as in Kafka 3.x
clients): the producer gets a producer id from a broker (InitProducerId) and gives
every batch, on its first send, the next sequence numbers of its partition; a retry
resends the same bytes, so a leader (old or new) that already has the batch answers
with its original offsets instead of writing it again.  Without idempotence a retry
after an indefinite error (a timeout, a dropped connection) may write a record twice.
A leader that has no state for the producer (a new partition, a topic deleted and
created again, a producer expired by ``producer.id.expiration.ms``) takes its next
batch at whatever sequence it carries, as Kafka 2.5+ does, and the producer goes on.
If a partition's sequences break anyway (a batch expired after a send), the batch
fails with OUT_OF_ORDER_SEQUENCE_NUMBER (or, from an older broker, UNKNOWN_PRODUCER_ID)
and the producer takes a new producer id for what follows.
"""
from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .. import errors
from ..protocol.records.compression import COMPRESSION_TYPES
from ..protocol.rpc.types import InitProducerIdRequest, ProducePartition, ProduceRequest, TxnOffsetCommitPartition
from ..rpc import request
from .accumulator import RECORD_OVERHEAD, Headers, ProducerBatch, RecordAccumulator, _settle, record_size
from .connection import ClientSecurity, Connection
from .ports import SYSTEM_CLOCK, Clock, Transport
from .futures import delivery_future
from .transactions import TransactionManager, TxnState
from .metadata import Metadata, needs_refresh
from .partitioner import StickyPartitioner, partition_for_key
from .types import RecordMetadata

ACKS = {"all": -1, "-1": -1, -1: -1, "1": 1, 1: 1, "0": 0, 0: 0}

# What AIOProducer._place did with a record.
NOT_PLACED, PLACED, PLACED_WAKE = 0, 1, 2

# Extra time the client gives a produce answer beyond the broker-side timeout.
RESPONSE_MARGIN_MS = 5000

# How long after its last answer a partition's leader is taken to still hold the
# producer's state (see AIOProducer._leader_knows).  A leader forgets an idle producer
# after producer.id.expiration.ms (Kafka's default: one day), far longer than this.
LEADER_KNOWS_MS = 1000


def normalize_acks(acks: Any) -> int:
    try:
        return ACKS[acks]
    except (KeyError, TypeError):
        raise errors.ClientError(f"acks must be 'all', -1, 1 or 0, got {acks!r}") from None


def to_bytes(data: Any, what: str) -> bytes | None:
    """bytes stay, str is encoded as UTF-8, None stays None; anything else is a TypeError."""
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"{what} must be bytes, str or None, got {type(data).__name__}")


# One shared empty header sequence for the (usual) records without headers: nothing
# allocated per record, and record tuples holding it are not tracked by the garbage collector.
NO_HEADERS: Headers = ()
# A record of a topic without metadata yet, as ``_place`` takes it: (key, value, headers,
# timestamp_ms, partition, future)
_WaitingRecord = tuple[bytes | None, bytes | None, Headers, int, int | None, Any]


def _no_open_batch(item: Any) -> None:
    """Stands for the open batch's appends in ``append_many`` while there is none (never called)."""
    raise AssertionError("no open batch")


def normalize_headers(headers: Any) -> Headers:
    """A list of ``(str, bytes|None)`` pairs from a list of pairs or a dict."""
    if not headers:
        return NO_HEADERS
    items = headers.items() if isinstance(headers, dict) else headers
    out = []
    for item in items:
        try:
            name, value = item
        except (TypeError, ValueError):
            raise TypeError(f"a header must be a (name, value) pair, got {item!r}") from None
        if not isinstance(name, str):
            raise TypeError(f"a header name must be str, got {type(name).__name__}")
        out.append((name, to_bytes(value, f"header {name!r}")))
    return out


def check_topic(topic: Any) -> str:
    if not isinstance(topic, str) or not topic:
        raise TypeError(f"topic must be a non-empty str, got {topic!r}")
    return topic


@dataclass(frozen=True)
class ProducerSettings:
    """A producer's settings, checked against each other (a :class:`~minikafka.errors.ClientError`
    names the conflict) and normalized: acks as -1, 1 or 0, idempotence decided as Kafka
    3.x decides it, times and sizes as ints."""

    acks: int
    enable_idempotence: bool
    max_in_flight: int
    batch_size: int
    compression_type: str
    linger_ms: int
    retries: int
    retry_backoff_ms: int
    request_timeout_ms: int
    delivery_timeout_ms: int
    max_block_ms: int

    @classmethod
    def parse(cls, *, acks: Any, linger_ms: int, batch_size: int, retries: int, retry_backoff_ms: int,
              request_timeout_ms: int, delivery_timeout_ms: int, max_block_ms: int, compression_type: str | None,
              enable_idempotence: bool | None, max_in_flight_requests_per_connection: int,
              transactional_id: str | None) -> "ProducerSettings":
        acks_ = normalize_acks(acks)
        if transactional_id is not None:
            # Kafka: a transactional producer is idempotent, with acks=all
            if enable_idempotence is False or acks_ != -1:
                raise errors.ClientError("a transactional producer needs acks='all' and enable_idempotence")
            enable_idempotence = True
        if enable_idempotence is None:
            # Kafka 3.x: on by default unless acks or retries conflict with it
            enable_idempotence = acks_ == -1 and int(retries) >= 1
        elif enable_idempotence and acks_ != -1:
            raise errors.ClientError("enable_idempotence needs acks='all' (set acks='all' or enable_idempotence=False)")
        if enable_idempotence and int(retries) < 1:
            raise errors.ClientError("enable_idempotence needs retries >= 1")
        if int(max_in_flight_requests_per_connection) < 1:
            raise errors.ClientError("max_in_flight_requests_per_connection must be at least 1")
        if batch_size < 1:
            raise errors.ClientError("batch_size must be at least 1")
        if compression_type is None:
            compression_type = "none"
        if compression_type not in COMPRESSION_TYPES:
            raise errors.ClientError(f"compression_type must be one of {', '.join(map(repr, COMPRESSION_TYPES))}, "
                                     f"got {compression_type!r}")
        return cls(acks=acks_, enable_idempotence=bool(enable_idempotence),
                   max_in_flight=int(max_in_flight_requests_per_connection), batch_size=batch_size,
                   compression_type=compression_type, linger_ms=max(0, int(linger_ms)), retries=int(retries),
                   retry_backoff_ms=max(0, int(retry_backoff_ms)), request_timeout_ms=int(request_timeout_ms),
                   delivery_timeout_ms=int(delivery_timeout_ms), max_block_ms=int(max_block_ms))


class AIOProducer:
    """Sends records to partition leaders (asyncio).

    ``await producer.send(...)`` returns an ``asyncio.Future`` that resolves to a
    :class:`RecordMetadata` once the record is acknowledged according to ``acks``
    (offset -1 with acks=0), or fails with a :class:`minikafka.errors.KafkaError`.
    Keys, values and header values are bytes or None; str is accepted and
    encoded as UTF-8.  Call :meth:`start` first (or use ``async with``).
    ``compression_type`` is Kafka's: "none" (default), "gzip", "snappy", "lz4" or
    "zstd"; a batch is compressed once and stored by the brokers as sent.
    ``max_in_flight_requests_per_connection`` (idempotent producers) bounds the
    batches of a partition in flight at once; while one is in flight, the next goes
    only when full, so that at ``linger_ms=0`` the records that come meanwhile leave
    together when its answer arrives, and only once the partition's leader has taken
    a batch of this producer (one it has no state for would take a batch that
    overtook its predecessor).
    """

    def __init__(
        self,
        bootstrap_servers: Any,
        *,
        acks: Any = "all",
        linger_ms: int = 5,
        batch_size: int = 65536,
        retries: int = 2147483647,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30000,
        delivery_timeout_ms: int = 120000,
        max_block_ms: int = 60000,
        client_id: str | None = None,
        compression_type: str | None = "none",
        enable_idempotence: bool | None = None,
        max_in_flight_requests_per_connection: int = 5,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        transport: Transport | None = None,
        clock: Clock = SYSTEM_CLOCK,
        **security: Any,
    ) -> None:
        cfg = ProducerSettings.parse(
            acks=acks, linger_ms=linger_ms, batch_size=batch_size, retries=retries, retry_backoff_ms=retry_backoff_ms,
            request_timeout_ms=request_timeout_ms, delivery_timeout_ms=delivery_timeout_ms, max_block_ms=max_block_ms,
            compression_type=compression_type, enable_idempotence=enable_idempotence,
            max_in_flight_requests_per_connection=max_in_flight_requests_per_connection,
            transactional_id=transactional_id)
        self.acks = cfg.acks
        self.enable_idempotence = cfg.enable_idempotence
        self.max_in_flight = cfg.max_in_flight
        # Batches of one partition in flight at once. Only an idempotent producer may have
        # more than one: concurrent HTTP requests travel on different connections and can
        # reach the leader out of order, and only sequence numbers let the leader refuse
        # (and the producer resend) a batch that overtook its predecessor.
        self._partition_in_flight = self.max_in_flight if self.enable_idempotence else 1
        self.producer_id = -1
        self.producer_epoch = -1
        self._next_seq: dict[tuple[str, int], int] = {}
        # Partition -> (producer id, epoch, topic id, leader, leader epoch, time) of the
        # last batch its leader took, at that time: see _leader_knows.
        self._taken: dict[tuple[str, int], tuple[int, int, str, int, int, int]] = {}
        self._pid_task: asyncio.Task | None = None
        self.compression_type = cfg.compression_type
        self.linger_ms = cfg.linger_ms
        self.retries = cfg.retries
        self.retry_backoff_ms = cfg.retry_backoff_ms
        self.request_timeout_ms = cfg.request_timeout_ms
        self.delivery_timeout_ms = cfg.delivery_timeout_ms
        self.max_block_ms = cfg.max_block_ms
        self.client_id = client_id
        self.clock = clock
        self._now_ms = clock.monotonic_ms
        self._conn: Transport = transport or Connection(client_id, ClientSecurity.of(security))
        self._meta = Metadata(self._conn, bootstrap_servers, self.request_timeout_ms, clock)
        self._txn: TransactionManager | None = None
        if transactional_id is not None:
            self._txn = TransactionManager(self._meta, transactional_id, transaction_timeout_ms,
                                           self.request_timeout_ms, self.retry_backoff_ms, self.max_block_ms)
        self._acc = RecordAccumulator(cfg.batch_size, self.linger_ms, cfg.compression_type)
        self._sticky = StickyPartitioner()
        # Records of topics without metadata yet: topic -> deque of (seq, enqueue_ms, args).
        self._waiting: dict[str, deque[tuple[int, int, _WaitingRecord]]] = {}
        self._inflight_tp: dict[tuple[str, int], int] = {}  # batches in flight per partition
        self._inflight: set[ProducerBatch] = set()
        self._tasks: set[asyncio.Task] = set()
        self._seq = 0
        self._flushing = 0
        self._progress: list[asyncio.Future] = []
        self._wake = asyncio.Event()  # wakes the sender (an Event binds to the loop that first waits on it)
        # While the sender sleeps on a timer: when it wakes (the clock's monotonic_ms), else 0. The
        # blocking Producer reads it from its caller's thread (see sync.Producer._schedule).
        self.armed_until_ms = 0
        # Called by the sender each time it wakes, before it looks at the batches: the
        # blocking Producer hands over the records queued meanwhile.
        self.before_step: Callable[[], None] | None = None
        self._sender: asyncio.Task | None = None
        self._meta_task: asyncio.Task | None = None
        self._need_meta = False
        self._closing = False
        self._closed = False
        self._started = False

    # ----- lifecycle ----------------------------------------------------
    async def start(self) -> None:
        """Fetch metadata from a bootstrap server and start the sender task."""
        if self._started:
            return
        try:
            await self._meta.refresh()
            if self.enable_idempotence and self._txn is None:  # transactional: init_transactions()
                try:
                    await self._init_producer_id()
                except errors.KafkaError as exc:
                    if not exc.retriable:
                        raise
                    # e.g. ZooKeeper is down and the broker has no producer ids left: the
                    # sender asks again every retry_backoff_ms; records wait meanwhile
        except BaseException:
            await self._conn.close()
            raise
        self._sender = asyncio.get_running_loop().create_task(self._run(), name="minikafka-producer-sender")
        self._started = True

    async def __aenter__(self) -> "AIOProducer":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting at most ``timeout`` seconds), then stop.

        Records still unsent after ``timeout`` fail with REQUEST_TIMED_OUT.
        """
        if self._closed:
            return
        self._closing = True
        try:
            if self._sender is not None:
                self._wake.set()
                try:
                    await asyncio.wait_for(asyncio.shield(self._sender), timeout)
                except asyncio.TimeoutError:
                    self._abort(errors.RequestTimedOutError(f"producer closed after {timeout} s with records unsent"))
                    self._sender.cancel()
                    await asyncio.gather(self._sender, return_exceptions=True)
        finally:
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for task in (self._meta_task, self._pid_task):
                if task is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            if self._txn is not None:
                await self._txn.close()
            self._abort(errors.ClientError("the producer is closed"))
            self._closed = True
            await self._conn.close()

    # ----- public API ---------------------------------------------------
    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Any = None,
        timestamp_ms: int | None = None,
        on_delivery: Callable[[Any, BaseException | None], Any] | None = None,
    ) -> asyncio.Future:
        """Queue one record; returns a future of its :class:`RecordMetadata`.

        ``on_delivery(metadata, None)`` (or ``on_delivery(None, error)`` on failure) is
        called on the loop once the record is acknowledged, from the settling of its
        batch (in offset order within a partition), before the future's own
        ``add_done_callback`` callbacks run; it costs far less than ``add_done_callback``
        per record (:class:`~minikafka.client.futures.DeliveryFuture`).  An exception it
        raises is logged and the producer goes on.
        """
        if self._txn is not None:
            self._txn.check_send()
        loop = asyncio.get_running_loop()
        fut = loop.create_future() if on_delivery is None else delivery_future(loop, on_delivery)
        self.append(
            check_topic(topic),
            to_bytes(value, "value"),
            to_bytes(key, "key"),
            partition,
            normalize_headers(headers),
            self.clock.wall_ms() if timestamp_ms is None else int(timestamp_ms),
            fut,
        )
        return fut

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                            headers: Any = None, timestamp_ms: int | None = None) -> RecordMetadata:
        """Send one record and wait for its acknowledgement."""
        fut = await self.send(topic, value, key, partition, headers, timestamp_ms)
        return await fut

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent before this call is acknowledged or failed.

        Raises REQUEST_TIMED_OUT if that takes longer than ``timeout`` seconds
        (the records stay queued).
        """
        self._check_started()
        target = self._seq
        self._flushing += 1
        self._wake.set()
        try:
            await asyncio.wait_for(self._wait_resolved(target), timeout)
        except asyncio.TimeoutError:
            raise errors.RequestTimedOutError(f"flush did not complete within {timeout} s") from None
        finally:
            self._flushing -= 1

    async def partitions_for(self, topic: str) -> set[int]:
        """The partition numbers of ``topic``.  A topic that does not exist is created when
        the broker's auto.create.topics.enable allows it (Kafka's default), as Kafka's
        producer asks for it, and its partitions are awaited up to ``max_block_ms``;
        UNKNOWN_TOPIC_OR_PARTITION when the broker does not create it,
        TOPIC_AUTHORIZATION_FAILED if an ACL hides it (or forbids creating it)."""
        self._check_started()
        if self._meta.topic(topic) is None:
            await self._meta.refresh()
        info = self._meta.topic(topic)
        if info is None:
            fatal = await self._meta.ask_for_topics([topic], unknown_is_fatal=True)
            if topic in fatal:
                raise fatal[topic]
            deadline = self.clock.monotonic() + self.max_block_ms / 1000
            while (info := self._meta.topic(topic)) is None:  # created: its metadata comes with its leaders
                if self.clock.monotonic() >= deadline:
                    raise errors.UnknownTopicOrPartitionError(
                        f"topic {topic!r} not present in metadata after {self.max_block_ms} ms")
                await asyncio.sleep(self.retry_backoff_ms / 1000)
                await self._meta.refresh()
        return set(info.partition_ids)

    # ----- transactions (KIP-98) -------------------------------------------
    def _transactional(self) -> TransactionManager:
        self._check_started()
        if self._txn is None:
            raise errors.ClientError("this producer has no transactional_id")
        return self._txn

    async def init_transactions(self) -> None:
        """Register the transactional id with its coordinator: fences every older producer
        with the same id and aborts its open transaction; sequences restart at 0."""
        txn = self._transactional()
        await txn.init()
        self.producer_id, self.producer_epoch = txn.producer_id, txn.producer_epoch
        self._next_seq.clear()
        self._taken.clear()

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until commit or abort belong to it."""
        self._transactional().begin()

    async def send_offsets_to_transaction(self, offsets: dict[Any, Any], group_id: Any) -> None:
        """Commit a consumer group's offsets with the transaction (consume-transform-produce).
        ``offsets`` maps TopicPartition (or ``(topic, partition)``) to the next offset to
        read (an int or an object with ``offset`` and optional ``metadata``); ``group_id``
        is the group's id or the consumer's ``group_metadata()`` (its generation and member
        id then fence a zombie consumer, KIP-447)."""
        txn = self._transactional()
        entries = []
        for tp, off in offsets.items():
            topic, partition = (tp.topic, tp.partition) if hasattr(tp, "topic") else tp
            offset = off if isinstance(off, int) else off.offset
            entries.append(TxnOffsetCommitPartition(topic=topic, partition=int(partition), offset=int(offset),
                                                    leader_epoch=-1, metadata=getattr(off, "metadata", "") or ""))
        if isinstance(group_id, str):
            await txn.send_offsets(entries, group_id)
        else:
            await txn.send_offsets(entries, group_id.group_id, group_id.generation_id, group_id.member_id,
                                   group_id.group_instance_id)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Send every record of the transaction, then commit it (EndTxn).  Raises the error
        of a record or request that failed: the transaction must then be aborted."""
        txn = self._transactional()
        if txn.state is TxnState.IN_TRANSACTION:
            await self.flush(timeout)
        await txn.end(committed=True)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop the records not sent yet, wait for those in flight, then abort (EndTxn);
        read_committed consumers never see the transaction's records."""
        txn = self._transactional()
        if txn.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
            await txn.end(committed=False)  # raises the state error
        self._acc.abort(errors.ClientError("the transaction was aborted before the record was sent"))
        self._notify_progress()
        await self.flush(timeout)
        await txn.end(committed=False)
        if txn.needs_epoch_bump:
            await self.init_transactions()

    @property
    def transaction_state(self) -> str:
        """The transactional producer's state (READY, IN_TRANSACTION, ABORTABLE_ERROR, ...)."""
        return self._txn.state.value if self._txn is not None else "NON_TRANSACTIONAL"

    # ----- appending (loop thread only) -----------------------------------
    def append(self, topic: str, value: bytes | None, key: bytes | None, partition: int | None,
               headers: Headers, timestamp_ms: int, future: Any) -> None:
        """Queue an already validated record whose result goes to ``future``.

        Must run on the producer's loop.
        """
        if self._closing or not self._started:
            raise errors.ClientError("the producer is closed" if self._closing else "the producer is not started")
        self.append_many(((topic, value, key, partition, headers, timestamp_ms, future, self._now_ms()),))

    def append_many(self, items: Iterable[tuple]) -> None:
        """Queue already validated records, each ``(topic, value, key, partition, headers,
        timestamp_ms, future, enqueued_ms)``; a record that cannot be queued fails its future.
        ``enqueued_ms`` (the clock's monotonic_ms) is when the record was sent: a batch it starts
        lingers from then.

        Must run on the producer's loop; the blocking Producer hands over each burst of
        ``send`` calls with one call (``items`` then a generator: each tuple lives only
        while its record is placed).
        """
        if self._closing or not self._started:
            exc = errors.ClientError("the producer is closed" if self._closing else "the producer is not started")
            for item in items:
                _settle(item[6], exc=exc)
            return
        waiting_topics = self._waiting
        place = self._place
        wake = False
        # The batch the last plain record (no key, partition or headers) joined, while it
        # stays open: the next plain record of its topic joins it without a partitioner
        # call or a batch lookup (its partition is the sticky one until the batch fills).
        # A record that would fill it takes the full road, which closes it.
        open_topic: str | None = None
        open_batch: ProducerBatch | None = None
        # its columns' appends, bound once
        unset: Callable[[Any], None] = _no_open_batch
        add_key = add_value = add_headers = add_timestamp = add_future = unset
        limit = self._acc.batch_size
        for topic, value, key, partition, headers, timestamp_ms, future, now in items:
            self._seq += 1
            if (open_batch is not None and topic is open_topic and key is None and partition is None and not headers
                    and not open_batch.closed):
                size = open_batch.size + RECORD_OVERHEAD + (len(value) if value else 0)
                if size < limit:
                    add_key(None)
                    add_value(value)
                    add_headers(headers)
                    add_timestamp(timestamp_ms)
                    add_future(future)
                    open_batch.size = size
                    continue
            waiting = waiting_topics.get(topic)
            try:
                placed, batch = (PLACED_WAKE, None) if waiting else place(
                    topic, self._seq, key, value, headers, timestamp_ms, partition, future, now)
            except Exception as exc:  # never leave a future pending
                _settle(future, exc=exc)
                wake = True
                continue
            if placed == NOT_PLACED or waiting:
                if waiting is None:
                    waiting = waiting_topics[topic] = deque()
                waiting.append((self._seq, now, (key, value, headers, timestamp_ms, partition, future)))
                self._need_meta = True
                wake = True
            elif placed == PLACED_WAKE:
                wake = True
            if key is None and partition is None and not headers and batch is not None:
                open_topic, open_batch = topic, batch
                add_key, add_value = open_batch.keys.append, open_batch.values.append
                add_headers, add_timestamp = open_batch.headers.append, open_batch.timestamps.append
                add_future = open_batch.futures.append
        if wake or self._flushing:
            # As Kafka's producer: the sender is woken for a new or a full batch only. A
            # record joining a batch that is still lingering changes nothing the sender
            # waits for (its timer runs to the first batch's linger deadline already).
            self._wake.set()

    def _place(self, topic: str, seq: int, key: bytes | None, value: bytes | None, headers: Headers, ts: int,
               partition: int | None, fut: Any, now: int) -> tuple[int, ProducerBatch | None]:
        """Put a record into its partition's batch; returns what happened and the batch.
        NOT_PLACED when the topic has no metadata, PLACED_WAKE when the sender has something
        new to look at (a new batch, a full batch, a failed record), else PLACED; the batch
        is None when the record is in none."""
        info = self._meta.topic(topic)
        if info is None:
            return NOT_PLACED, None
        parts = info.partition_ids
        if partition is None:
            if key is not None:
                partition = parts[partition_for_key(key, len(parts))]
            else:
                partition = self._sticky.partition(topic, parts, info.available)
        elif not isinstance(partition, int) or partition not in info.partitions:
            _settle(fut, exc=errors.UnknownTopicOrPartitionError(
                f"partition {partition!r} of topic {topic!r} does not exist (partitions 0..{len(parts) - 1})"))
            return PLACED_WAKE, None
        batch, rolled = self._acc.append(topic, partition, (key, value, headers, ts), fut, now,
                                         record_size(key, value, headers), seq)
        if (rolled or batch.closed) and key is None:
            self._sticky.batch_done(topic, partition, parts, info.available)
        return (PLACED_WAKE if rolled or batch.closed or len(batch) == 1 else PLACED), batch

    # ----- sender -------------------------------------------------------
    async def _run(self) -> None:
        wake = self._wake
        loop = asyncio.get_running_loop()
        while True:
            self.armed_until_ms = 0
            if self.before_step is not None:
                self.before_step()
            wake.clear()
            now = self._now_ms()
            delay = self._step(now)
            if self._closing and self._idle():
                return
            if self._need_meta:
                self._maybe_refresh(now)
                if delay is None or delay > self.retry_backoff_ms:
                    delay = max(1, self.retry_backoff_ms)
            if delay is None:
                await wake.wait()
            elif delay > 0:
                # a timer that sets the event (cheaper than wait_for, which starts a task)
                timer = loop.call_later(delay / 1000, wake.set)
                self.armed_until_ms = now + delay
                try:
                    await wake.wait()
                finally:
                    timer.cancel()
            else:
                await asyncio.sleep(0)

    def _idle(self) -> bool:
        return not self._acc and not self._waiting and not self._inflight

    def _step(self, now: int) -> int | None:
        """One round: place waiting records, expire, send ready batches. Returns ms to sleep."""
        if self._waiting:
            self._place_waiting(now)
        for batch in self._acc.expire(now, self.delivery_timeout_ms):
            self._give_up(batch, batch.last_error or errors.RequestTimedOutError(
                f"expired {len(batch)} record(s) for {batch.topic}-{batch.partition}: "
                f"{now - batch.created_ms} ms passed since the batch was created"))
            self._notify_progress()
        txn = self._txn
        if txn is not None:
            self.producer_id, self.producer_epoch = txn.producer_id, txn.producer_epoch
        if self.enable_idempotence and self.producer_id < 0:
            if txn is None:
                self._maybe_init_producer_id()
            return max(1, self.retry_backoff_ms)
        ready, delay = self._acc.ready(now, self._muted(now), flushing=bool(self._flushing or self._closing))
        if not ready:
            return delay
        by_leader: dict[int, list[ProducerBatch]] = {}
        for tp in ready:
            la = self._meta.leader_address(*tp)
            if la is None:
                self._need_meta = True
                continue
            if txn is not None and not txn.ready_to_send(tp, self._wake.set):
                if txn.state is TxnState.IN_TRANSACTION:
                    continue  # AddPartitionsToTxn first; the sender is woken when it is done
                batch = self._acc.pop(tp)  # the transaction failed: its records fail too
                batch.fail(txn.error if isinstance(txn.error, errors.KafkaError) else
                           errors.ClientError(f"the transaction is {txn.state.value}"))
                self._notify_progress()
                continue
            batch = self._acc.pop(tp)
            if self.enable_idempotence and batch.base_sequence < 0:
                seq = self._next_seq.get(tp, 0)
                batch.producer_id, batch.producer_epoch, batch.base_sequence = self.producer_id, self.producer_epoch, seq
                batch.transactional = txn is not None
                self._next_seq[tp] = (seq + len(batch)) % 2**31
            if batch.attempts == 0:
                info = self._meta.topic(tp[0])
                if info is not None:
                    self._sticky.batch_done(tp[0], tp[1], info.partition_ids, info.available)
            batch.sent_behind = self._inflight_tp.get(tp, 0) > 0
            self._inflight_tp[tp] = self._inflight_tp.get(tp, 0) + 1
            self._inflight.add(batch)
            by_leader.setdefault(la[0], []).append(batch)
        loop = asyncio.get_running_loop()
        for leader, batches in by_leader.items():
            task = loop.create_task(self._send_batches(leader, batches))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return delay

    def _muted(self, now: int) -> set[tuple[str, int]]:
        """Partitions that may not send now: at their in-flight limit; with a retried
        batch first in line while others are still in flight (a retry goes alone, so the
        batches behind it cannot overtake it again); with a batch in flight and the
        next one not yet full; or with a batch in flight to a leader that may not know
        the producer (:meth:`_leader_knows`).

        The last rule makes a partition's requests fewer and larger when records come
        faster than its acknowledgements (``linger_ms=0`` at a high rate): the records
        join the waiting batch until the request in flight is answered or the batch
        fills, and full batches still go up to ``max_in_flight_requests_per_connection``
        at once.  Each request costs the brokers a fixed amount of work (its follower
        fetches, its answer), so at 10,000 records/s on 3 partitions this cut the time to
        the acknowledgement by about 40 % (docs/performance.md)."""
        limit = self._partition_in_flight
        head = self._acc.head
        knows = self._leader_knows
        # a batch with another behind it is closed (the record that made the new one closed it)
        return {tp for tp, n in self._inflight_tp.items()
                if n >= limit or ((b := head(tp)) is not None and (b.attempts or not b.closed))
                or not knows(tp, now)}

    def _leader_knows(self, tp: tuple[str, int], now: int) -> bool:
        """Whether ``tp``'s leader holds this producer's state, so that a batch sent
        beside another cannot be written before it: the leader refuses a batch that
        overtook its predecessor by its sequence number (OUT_OF_ORDER_SEQUENCE_NUMBER)
        only for a producer it knows.  One it does not know (its first batch here, a
        topic deleted and created again, a producer expired) is taken at any sequence,
        as in Kafka 2.5+, where a connection's requests are answered in order; ours go
        on several connections.  So a partition sends one batch at a time until its
        leader took one of the current producer id and epoch, and again when the leader
        or the topic changed since, or when that was more than :data:`LEADER_KNOWS_MS`
        ago (an idle producer expires: producer.id.expiration.ms)."""
        k = self._taken.get(tp)
        if k is None or k[0] != self.producer_id or k[1] != self.producer_epoch or now - k[5] > LEADER_KNOWS_MS:
            return False
        t = self._meta.topics.get(tp[0])
        p = None if t is None else t.partitions.get(tp[1])
        return t is not None and p is not None and (t.topic_id, p.leader, p.leader_epoch) == k[2:5]

    def _note_taken(self, batch: ProducerBatch, leader: int, now: int) -> None:
        """``leader`` took ``batch``: while it leads, it knows the producer (see :meth:`_leader_knows`)."""
        if batch.producer_id != self.producer_id or batch.producer_epoch != self.producer_epoch:
            return
        t = self._meta.topics.get(batch.topic)
        p = None if t is None else t.partitions.get(batch.partition)
        if t is not None and p is not None and p.leader == leader:
            self._taken[batch.tp] = (batch.producer_id, batch.producer_epoch, t.topic_id, leader, p.leader_epoch, now)

    def _place_waiting(self, now: int) -> None:
        for topic in list(self._waiting):
            queue = self._waiting[topic]
            if self._meta.topic(topic) is not None:
                while queue:
                    seq, _, args = queue.popleft()
                    self._place(topic, seq, *args, now)
                del self._waiting[topic]
            else:
                self._need_meta = True
                while queue and now - queue[0][1] >= self.max_block_ms:
                    _, _, args = queue.popleft()
                    _settle(args[5], exc=errors.UnknownTopicOrPartitionError(
                        f"topic {topic!r} not present in metadata after {self.max_block_ms} ms"))
                if not queue:
                    del self._waiting[topic]
                    self._notify_progress()

    def _maybe_refresh(self, now: int) -> None:
        if self._meta_task is not None and not self._meta_task.done():
            return
        if now - self._meta.last_refresh_ms < self.retry_backoff_ms:
            return
        self._need_meta = False
        self._meta.last_refresh_ms = now  # also rate-limits failed attempts
        self._meta_task = asyncio.get_running_loop().create_task(self._refresh_meta())

    async def _refresh_meta(self) -> None:
        try:
            missing = [t for t in self._waiting if self._meta.topic(t) is None]
            if missing:
                # auto.create.topics.enable creates them; a refusal (no ACL) fails their records now
                for topic, exc in (await self._meta.ask_for_topics(missing)).items():
                    for _, _, args in self._waiting.pop(topic, ()):
                        _settle(args[5], exc=exc)
                    self._notify_progress()
            await self._meta.refresh()
        except errors.KafkaError:
            self._need_meta = True
        finally:
            self._wake.set()

    async def _send_batches(self, leader: int, batches: list[ProducerBatch]) -> None:
        addr = self._meta.brokers.get(leader)
        try:
            if addr is None:
                raise errors.LeaderNotAvailableError(f"broker {leader} is not in metadata")
            req = ProduceRequest(acks=self.acks, timeout_ms=self.request_timeout_ms, partitions=[
                ProducePartition(topic=b.topic, partition=b.partition, records=b.encode()) for b in batches])
            if self.acks == 0:
                for b in batches:
                    b.complete(-1)
            timeout_s = (self.request_timeout_ms + RESPONSE_MARGIN_MS) / 1000
            try:
                answer = await request(self._conn.call, addr[0], addr[1], req, timeout_s)
            except errors.KafkaError as exc:
                if self.acks != 0:  # acks=0: nobody waits, nothing is retried
                    for b in batches:
                        self._handle_error(b, exc)
                return
            if self.acks == 0:
                return
            results = {(p.topic, p.partition): p for p in answer.partitions}
            for b in batches:
                p = results.get(b.tp)
                if p is None:
                    self._handle_error(b, errors.UnknownServerError(f"the answer does not mention {b.topic}-{b.partition}"))
                elif p.error is not None:
                    self._handle_error(b, p.error)
                else:
                    b.complete(p.base_offset, p.log_append_time)
                    if b.producer_id >= 0:
                        self._note_taken(b, leader, self._now_ms())
        except asyncio.CancelledError:
            for b in batches:
                b.fail(errors.ClientError("the producer was closed before the answer arrived"))
            raise
        except Exception as exc:  # a bug or an unexpected answer: never leave futures pending
            for b in batches:
                b.fail(exc if isinstance(exc, errors.KafkaError) else errors.UnknownServerError(f"{exc.__class__.__name__}: {exc}"))
        finally:
            for b in batches:
                n = self._inflight_tp.get(b.tp, 0) - 1
                if n > 0:
                    self._inflight_tp[b.tp] = n
                else:
                    self._inflight_tp.pop(b.tp, None)
                self._inflight.discard(b)
            self._notify_progress()
            self._wake.set()

    # ----- idempotence --------------------------------------------------
    async def _init_producer_id(self) -> None:
        """InitProducerId from the first broker that answers (the one that last answered
        metadata first; a broker that does not answer within 5 s is passed over, so a
        frozen broker does not hold the producer up); sequences restart at 0."""
        timeout_s = (self.request_timeout_ms + RESPONSE_MARGIN_MS) / 1000
        answer = await self._meta.request_any(InitProducerIdRequest(), timeout_s, attempt_timeout_s=min(5.0, timeout_s))
        self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
        self._next_seq.clear()
        self._taken.clear()

    def _maybe_init_producer_id(self) -> None:
        if self._pid_task is not None and not self._pid_task.done():
            return

        async def run() -> None:
            try:
                await self._init_producer_id()
            except errors.KafkaError:
                pass  # the sender tries again after retry_backoff_ms
            finally:
                self._wake.set()

        self._pid_task = asyncio.get_running_loop().create_task(run(), name="minikafka-producer-init-pid")

    def _handle_error(self, batch: ProducerBatch, exc: errors.KafkaError) -> None:
        now = self._now_ms()
        self._taken.pop(batch.tp, None)  # a new leader, a new topic, lost state: one batch at a time again
        if (self.enable_idempotence and batch.sent_behind and batch.producer_id == self.producer_id
                and isinstance(exc, (errors.OutOfOrderSequenceNumberError, errors.UnknownProducerIdError))
                and now - batch.created_ms < self.delivery_timeout_ms):
            # Sent while an earlier batch of its partition was in flight: it may simply have
            # reached the leader first. Resend it, in sequence order, alone.
            batch.attempts += 1
            batch.last_error = exc
            batch.retry_at_ms = now
            self._acc.reenqueue(batch)
            return
        if (self.enable_idempotence and batch.producer_id >= 0 and batch.producer_id != self.producer_id
                and isinstance(exc, (errors.OutOfOrderSequenceNumberError, errors.UnknownProducerIdError))
                and now - batch.created_ms < self.delivery_timeout_ms):
            # Sent under a producer id given up meanwhile (an earlier batch failed), and
            # refused by its sequence, so not written: it starts over under the new id.
            batch.producer_id = batch.producer_epoch = batch.base_sequence = -1
            batch._encoded = None
            batch.attempts += 1
            batch.last_error = exc
            batch.retry_at_ms = now
            self._acc.reenqueue(batch)
            return
        if self.enable_idempotence and isinstance(exc, (errors.OutOfOrderSequenceNumberError,
                                                        errors.UnknownProducerIdError,
                                                        errors.InvalidProducerEpochError)):
            # This partition's sequence is broken: fail the batch, and continue with a
            # new producer id (sequences from 0) once the batches sent with this one
            # are answered.
            batch.fail(exc)
            if self._txn is not None:
                self._txn.fail(exc, sequence_broken=True)  # abort, then a bumped epoch (KIP-360)
            elif batch.producer_id == self.producer_id:
                self.producer_id = -1
            return
        if needs_refresh(exc):
            self._need_meta = True
        if (
            exc.retriable
            and not self._closed
            and batch.attempts < self.retries
            and now - batch.created_ms < self.delivery_timeout_ms
        ):
            batch.attempts += 1
            batch.last_error = exc
            batch.retry_at_ms = now + self.retry_backoff_ms
            self._acc.reenqueue(batch)
        else:
            self._give_up(batch, exc)

    def _give_up(self, batch: ProducerBatch, exc: errors.KafkaError) -> None:
        """Fail ``batch`` for good (refused, out of retries or expired).  A transaction it
        belongs to can only abort now (Kafka's abortable error: ``commit_transaction``
        raises), and a batch that took sequence numbers leaves a gap that needs a bumped
        epoch (KIP-360).  An idempotent producer continues under a new producer id,
        sequences from 0, as Kafka's producer bumps its epoch: the leader would refuse
        every later batch for that gap (MESSAGE_TOO_LARGE, CORRUPT_MESSAGE, an expiry)."""
        batch.fail(exc)
        if self._txn is not None:
            self._txn.fail(exc, sequence_broken=batch.base_sequence >= 0)
        elif self.enable_idempotence and batch.base_sequence >= 0 and batch.producer_id == self.producer_id:
            self.producer_id = -1

    # ----- flush support --------------------------------------------------
    def _min_unresolved(self) -> int | None:
        seqs: list[int] = []
        s = self._acc.first_seq()
        if s is not None:
            seqs.append(s)
        seqs.extend(b.first_seq for b in self._inflight)
        seqs.extend(q[0][0] for q in self._waiting.values() if q)
        return min(seqs) if seqs else None

    async def _wait_resolved(self, target: int) -> None:
        loop = asyncio.get_running_loop()
        while True:
            low = self._min_unresolved()
            if low is None or low > target:
                return
            fut = loop.create_future()
            self._progress.append(fut)
            await fut

    def _notify_progress(self) -> None:
        waiters, self._progress = self._progress, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _abort(self, exc: BaseException) -> None:
        for queue in self._waiting.values():
            for _, _, args in queue:
                _settle(args[5], exc=exc)
        self._waiting.clear()
        self._acc.abort(exc)
        self._notify_progress()

    def _check_started(self) -> None:
        if not self._started or self._closed:
            raise errors.ClientError("the producer is not started" if not self._started else "the producer is closed")

    # ----- introspection --------------------------------------------------
    @property
    def metadata(self) -> Metadata:
        return self._meta

    def pending(self) -> Iterable[ProducerBatch]:
        """Batches queued or in flight (for tests and debugging)."""
        return list(self._acc.batches()) + list(self._inflight)
