"""Producer batching: records gathered per partition into batches (no I/O).

A batch is closed for appends once adding a record would pass ``batch_size``
bytes (a record larger than that gets a batch of its own).  A partition's first
batch is *ready* to send when it is full, a later batch is waiting behind it,
it has waited ``linger_ms``, it is being retried (after its backoff) or a flush
is in progress.  Only the first batch of a partition is ever sent, and the
producer *mutes* a partition while its requests in flight forbid another (see
``AIOProducer._muted``), so records of one partition are written in the order they
were sent, retries included.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from .. import errors
from ..protocol.records.batch import HEADER_SIZE, encode_batch_columns
from ..protocol.records.compression import COMPRESSION_TYPES
from .futures import RecordFuture, fail_batch, resolve_batch
from .types import RecordMetadata

# Rough overhead of one record in a v2 batch: length, attributes, timestamp and
# offset deltas, key and value lengths and header count (varints, 7 to ~20 bytes).
# Sizes are counted uncompressed, so a compressed batch is smaller than batch_size.
RECORD_OVERHEAD = 16

RecordTuple = tuple  # (key, value, headers, timestamp_ms)
Headers = Sequence[tuple[str, bytes | None]]  # a record's headers: (name, value) pairs


def record_size(key: bytes | None, value: bytes | None, headers: Headers | None) -> int:
    """An estimate of the bytes a record adds to a batch."""
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        for name, hv in headers:
            size += len(name.encode("utf-8")) + (len(hv) if hv else 0) + 4
    return size


def _settle(fut: Any, result: Any = None, exc: BaseException | None = None) -> None:
    """Resolve an asyncio or concurrent future unless it is already done (or cancelled)."""
    if fut is None or fut.done():
        return
    try:
        if exc is None:
            fut.set_result(result)
        else:
            fut.set_exception(exc)
    except Exception:  # cancelled in the meantime (InvalidStateError)
        pass


@dataclass(eq=False)
class ProducerBatch:
    """Records for one partition that travel in one produce request."""

    topic: str
    partition: int
    created_ms: int
    first_seq: int = 0
    # The records as four columns (record i: keys[i], values[i], headers[i],
    # timestamps[i]) beside their futures: appending a record adds no object of its own
    # for Python's garbage collector to walk (the record's future is the only one).
    keys: list = field(default_factory=list)
    values: list = field(default_factory=list)
    headers: list = field(default_factory=list)
    timestamps: list = field(default_factory=list)
    futures: list = field(default_factory=list)
    size: int = HEADER_SIZE
    closed: bool = False
    attempts: int = 0
    retry_at_ms: int = 0
    last_error: errors.KafkaError | None = None
    compression: str = "none"
    # Idempotent producer: set once, before the first send, and kept by every retry.
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False  # a transactional producer's batch
    # Whether an earlier batch of the partition was in flight when this one was last sent.
    sent_behind: bool = False
    _encoded: bytes | None = None

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def records(self) -> list[RecordTuple]:
        """The records as ``(key, value, headers, timestamp_ms)`` tuples."""
        return list(zip(self.keys, self.values, self.headers, self.timestamps))

    def try_append(self, record: RecordTuple, future: Any, size: int, batch_size: int) -> bool:
        """Add a record unless the batch is closed or would pass ``batch_size``."""
        if self.closed:
            return False
        if self.timestamps and self.size + size > batch_size:
            self.closed = True
            return False
        key, value, headers, ts = record
        self.keys.append(key)
        self.values.append(value)
        self.headers.append(headers)
        self.timestamps.append(ts)
        self.futures.append(future)
        self.size += size
        if self.size >= batch_size:
            self.closed = True
        return True

    def encode(self) -> bytes:
        """The batch bytes (encoded once, reused by retries)."""
        if self._encoded is None:
            self._encoded = encode_batch_columns(self.keys, self.values, self.headers, self.timestamps,
                                                 compression=self.compression, producer_id=self.producer_id,
                                                 producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                                                 is_transactional=self.transactional)
            self.closed = True
        return self._encoded

    def complete(self, base_offset: int, log_append_time: int = -1) -> None:
        """Resolve every record's future; ``base_offset`` -1 gives offset -1 to all (acks=0);
        a ``log_append_time`` (the topic uses LogAppendTime) is every record's timestamp.

        The blocking producer's :class:`RecordFuture` handles are resolved together
        (one lock, one wake-up, no RecordMetadata built until asked); asyncio futures
        one by one.
        """
        futures, self.futures = self.futures, []
        if futures and type(futures[0]) is RecordFuture:
            resolve_batch(futures, self.topic, self.partition, base_offset, log_append_time)
            return
        for i, (fut, ts) in enumerate(zip(futures, self.timestamps)):
            off = -1 if base_offset < 0 else base_offset + i
            _settle(fut, RecordMetadata(self.topic, self.partition, off,
                                        ts if log_append_time < 0 else log_append_time))

    def fail(self, exc: BaseException) -> None:
        futures, self.futures = self.futures, []
        if futures and type(futures[0]) is RecordFuture:
            fail_batch(futures, exc)
            return
        for fut in futures:
            _settle(fut, exc=exc)

    @property
    def done(self) -> bool:
        return not self.futures


class RecordAccumulator:
    """Per-partition queues of batches."""

    def __init__(self, batch_size: int = 65536, linger_ms: int = 5, compression_type: str = "none") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if compression_type not in COMPRESSION_TYPES:
            raise ValueError(f"compression_type must be one of {', '.join(COMPRESSION_TYPES)}, got {compression_type!r}")
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.compression_type = compression_type
        self._batches: dict[tuple[str, int], deque[ProducerBatch]] = {}
        self._seq = 0

    def append(
        self,
        topic: str,
        partition: int,
        record: RecordTuple,
        future: Any,
        now_ms: int,
        size: int | None = None,
        seq: int | None = None,
    ) -> tuple[ProducerBatch, bool]:
        """Add one record; returns its batch and whether the previous last batch was closed by it.

        ``seq`` is the record's sequence number in the producer (for flush); by
        default the accumulator numbers records itself.
        """
        if size is None:
            size = record_size(record[0], record[1], record[2])
        tp = (topic, partition)
        dq = self._batches.get(tp)
        if dq is None:
            dq = self._batches[tp] = deque()
        if seq is None:
            self._seq += 1
            seq = self._seq
        if dq:
            last = dq[-1]
            if last.try_append(record, future, size, self.batch_size):
                return last, False
            rolled = True
        else:
            rolled = False
        batch = ProducerBatch(topic, partition, now_ms, first_seq=seq, compression=self.compression_type)
        batch.try_append(record, future, size, self.batch_size)
        dq.append(batch)
        return batch, rolled

    def ready(self, now_ms: int, muted: set, flushing: bool = False) -> tuple[list[tuple[str, int]], int | None]:
        """Partitions whose first batch may be sent now, and ms until the next one may be."""
        out: list[tuple[str, int]] = []
        wait: int | None = None
        for tp, dq in self._batches.items():
            if not dq or tp in muted:
                continue
            b = dq[0]
            if b.retry_at_ms > now_ms:
                delay = b.retry_at_ms - now_ms
            elif len(dq) > 1 or b.closed or flushing or b.attempts or now_ms - b.created_ms >= self.linger_ms:
                out.append(tp)
                continue
            else:
                delay = b.created_ms + self.linger_ms - now_ms
            wait = delay if wait is None else min(wait, delay)
        return out, wait

    def pop(self, tp: tuple[str, int]) -> ProducerBatch:
        """Take the first batch of ``tp`` for sending."""
        dq = self._batches[tp]
        batch = dq.popleft()
        batch.closed = True
        if not dq:
            del self._batches[tp]
        return batch

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a batch back for a retry, ahead of every batch sent after it: at the front,
        or, for an idempotent batch, among the other retried ones in sequence order (with
        several batches in flight, a later one may come back before an earlier one)."""
        dq = self._batches.get(batch.tp)
        if dq is None:
            dq = self._batches[batch.tp] = deque()
        i = 0
        if batch.base_sequence >= 0:
            while i < len(dq) and 0 <= dq[i].base_sequence < batch.base_sequence:
                i += 1
        dq.insert(i, batch)

    def head(self, tp: tuple[str, int]) -> ProducerBatch | None:
        """The batch of ``tp`` next in line, if any."""
        dq = self._batches.get(tp)
        return dq[0] if dq else None

    def expire(self, now_ms: int, delivery_timeout_ms: int) -> list[ProducerBatch]:
        """Remove and return batches created more than ``delivery_timeout_ms`` ago.

        A partition's batches are in creation order (a retry goes back to the front
        with its older creation time), so only its first batch needs a look while
        nothing has expired.
        """
        out: list[ProducerBatch] = []
        deadline = now_ms - delivery_timeout_ms
        for tp in [tp for tp, dq in self._batches.items() if dq and dq[0].created_ms <= deadline]:
            dq = self._batches[tp]
            while dq and dq[0].created_ms <= deadline:
                out.append(dq.popleft())
            if not dq:
                del self._batches[tp]
        return out

    def batches(self) -> Iterator[ProducerBatch]:
        for dq in self._batches.values():
            yield from dq

    def first_seq(self) -> int | None:
        """The smallest record sequence number still queued (None when empty)."""
        seqs = [dq[0].first_seq for dq in self._batches.values() if dq]
        return min(seqs) if seqs else None

    def abort(self, exc: BaseException) -> int:
        """Fail and drop everything; returns the number of records failed."""
        n = 0
        for b in list(self.batches()):
            n += len(b.futures)
            b.fail(exc)
        self._batches.clear()
        return n

    def __bool__(self) -> bool:
        return any(self._batches.values())

    def partitions(self) -> Iterable[tuple[str, int]]:
        return list(self._batches)
