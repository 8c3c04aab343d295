"""Idempotent-producer state of one partition replica (Kafka's ProducerStateManager).

An idempotent producer stamps every batch with its producer id, producer epoch and
the base sequence of its first record (the record batch v2 header fields).  Each
replica of a partition keeps, per producer id, the epoch and the metadata of the
last :data:`BATCH_WINDOW` batches it appended, and applies these rules to a batch a
producer sends to the leader (:meth:`ProducerStateManager.check`):

=====================================================  ===============================
the batch                                              the answer
=====================================================  ===============================
no producer id (-1)                                    appended, no bookkeeping
same first and last sequence as one of the last 5      a duplicate: not appended again;
batches of this producer and epoch                     answered with the original offsets
epoch older than the producer's current epoch          INVALID_PRODUCER_EPOCH (a zombie)
newer epoch, base sequence not 0                       OUT_OF_ORDER_SEQUENCE_NUMBER
unknown producer, base sequence not 0                  UNKNOWN_PRODUCER_ID
same epoch, base sequence not last sequence + 1        OUT_OF_ORDER_SEQUENCE_NUMBER
anything else                                          appended; the window moves on
=====================================================  ===============================

Followers do the same bookkeeping when they append what the leader replicated
(:meth:`ProducerStateManager.update`), without the checks, so a follower that
becomes leader dedupes the retries of batches the old leader appended.  The state
is a function of the log: after a truncation it is rebuilt from the batch headers
still in the log (:meth:`ProducerStateManager.rebuild`), which is also how a broker
recovers it from disk at start-up (Kafka keeps snapshots to make that faster).

Transactions (KIP-98).  A batch with the transactional bit opens its producer's
transaction in this partition, at the batch's base offset, unless one is open already;
the producer's next control batch (a COMMIT or ABORT marker, written by the
transaction coordinator through WriteTxnMarkers) closes it.  The oldest open
transaction bounds the partition's *last stable offset*
(:attr:`ProducerStateManager.first_unstable_offset`), and every aborted one enters the
aborted-transaction index (:attr:`ProducerStateManager.aborted`) that read_committed
fetches return, so that consumers skip its records.  Markers carry the coordinator's
epoch: a marker from an older coordinator than one already seen, or of an older
producer epoch, is refused.

Sequences wrap from 2^31 - 1 to 0, as in Kafka.  Pure: no I/O, clocks or randomness.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from ..protocol.records.batch import BatchHeader
from ..protocol.records.control import ABORT, COMMIT

NO_PRODUCER_ID = -1
BATCH_WINDOW = 5  # batches remembered per producer (max.in.flight.requests.per.connection <= 5)
MAX_SEQUENCE = 2**31 - 1


def next_sequence(sequence: int, increment: int = 1) -> int:
    """``sequence + increment``, wrapping past 2^31 - 1 to 0 as Kafka's sequences do."""
    return (sequence + increment) % (MAX_SEQUENCE + 1)


@dataclass(frozen=True)
class BatchMetadata:
    """What a replica remembers of one appended batch of a producer."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True)
class AbortedTxn:
    """One aborted transaction of a partition (Kafka's AbortedTxn): its producer, its
    first record's offset and its ABORT marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerEntry:
    """One producer id's epoch, its last appended batches (oldest first), the first
    offset of its open transaction in this partition (-1: none) and the epoch of the
    coordinator that wrote its last marker."""

    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCH_WINDOW))
    txn_first_offset: int = -1
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def describe(self) -> dict:
        last = self.batches[-1] if self.batches else None
        return {"producer_id": self.producer_id, "producer_epoch": self.epoch,
                "last_sequence": self.last_seq, "last_offset": self.last_offset,
                "last_timestamp": last.timestamp if last else -1,
                "current_txn_start_offset": self.txn_first_offset,
                "coordinator_epoch": self.coordinator_epoch}


class ProducerStateManager:
    """Producer id -> :class:`ProducerEntry` for one partition replica."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction, in offset order of opening
        self.ongoing: dict[int, int] = {}
        # aborted transactions in the order of their markers (so by last_offset)
        self.aborted: list[AbortedTxn] = []

    def __len__(self) -> int:
        return len(self.producers)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction, None when none is open."""
        return min(self.ongoing.values()) if self.ongoing else None

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborted transactions with records in ``[start, end)``: their marker at or
        after ``start``, their first record before ``end`` (what a read_committed fetch of
        that range returns)."""
        out = []
        for a in reversed(self.aborted):
            if a.last_offset < start:
                break
            if a.first_offset < end:
                out.append(a)
        out.reverse()
        return out

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                     topic_partition: str = "") -> None:
        """The leader's rules for a transaction marker: a marker of an older producer
        epoch than the partition knows is INVALID_PRODUCER_EPOCH, one from an older
        coordinator than the last marker's is TRANSACTION_COORDINATOR_FENCED."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        where = f" on {topic_partition}" if topic_partition else ""
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker of producer {producer_id} epoch {producer_epoch} is older than its epoch {entry.epoch}{where}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker of producer {producer_id} from coordinator epoch {coordinator_epoch}, older than "
                f"{entry.coordinator_epoch}{where}")

    def check(self, h: BatchHeader, topic_partition: str = "") -> BatchMetadata | None:
        """Apply the leader's rules to a batch about to be appended.

        Returns the original batch's metadata when ``h`` is a duplicate of one of the
        producer's last batches (it must not be appended again), None when it may be
        appended, and raises the Kafka error that refuses it otherwise.  A batch without
        a sequence (-1: the group coordinator's transactional offset commits) is checked
        for its epoch only."""
        pid = h.producer_id
        if pid == NO_PRODUCER_ID:
            return None
        if h.base_sequence < 0:
            entry = self.producers.get(pid)
            if entry is not None and h.producer_epoch < entry.epoch:
                raise InvalidProducerEpochError(
                    f"producer {pid} epoch {h.producer_epoch} is older than its current epoch {entry.epoch}")
            return None
        where = f" on {topic_partition}" if topic_partition else ""
        last_seq = next_sequence(h.base_sequence, h.last_offset_delta)
        entry = self.producers.get(pid)
        if entry is None:
            if h.base_sequence != 0:
                raise UnknownProducerIdError(
                    f"producer {pid} has no state{where} and its batch starts at sequence {h.base_sequence}, not 0")
            return None
        if h.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid} epoch {h.producer_epoch} is older than its current epoch {entry.epoch}{where}")
        if h.producer_epoch > entry.epoch:
            if h.base_sequence != 0:
                raise OutOfOrderSequenceNumberError(
                    f"producer {pid} new epoch {h.producer_epoch} must start at sequence 0, "
                    f"not {h.base_sequence}{where}")
            return None
        duplicate = entry.find(h.base_sequence, last_seq)
        if duplicate is not None:
            return duplicate
        if entry.batches and h.base_sequence != next_sequence(entry.last_seq):
            raise OutOfOrderSequenceNumberError(
                f"producer {pid} epoch {h.producer_epoch}: expected sequence {next_sequence(entry.last_seq)}, "
                f"got {h.base_sequence}{where}")
        if not entry.batches and h.base_sequence != 0:
            raise OutOfOrderSequenceNumberError(
                f"producer {pid} epoch {h.producer_epoch}: expected sequence 0, got {h.base_sequence}{where}")
        return None

    def update(self, h: BatchHeader, marker: tuple[int, int] | None = None) -> None:
        """Record an appended batch (``h`` carries its final base offset).  For a control
        batch, ``marker`` is its ``(type, coordinator epoch)`` (see
        :mod:`minikafka.protocol.records.control`)."""
        pid = h.producer_id
        if pid == NO_PRODUCER_ID:
            return
        entry = self.producers.get(pid)
        if entry is None or h.producer_epoch != entry.epoch:
            if entry is not None and h.producer_epoch < entry.epoch:
                return  # never happens for a leader-checked log; keep the newer epoch
            fresh = ProducerEntry(pid, h.producer_epoch)
            if entry is not None:  # a new epoch keeps the open transaction and coordinator epoch
                fresh.txn_first_offset, fresh.coordinator_epoch = entry.txn_first_offset, entry.coordinator_epoch
            entry = self.producers[pid] = fresh
        if h.is_control:
            if marker is None:
                return
            kind, coordinator_epoch = marker
            entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
            first = self.ongoing.pop(pid, None)
            entry.txn_first_offset = -1
            if kind == ABORT and first is not None:
                self.aborted.append(AbortedTxn(pid, first, h.base_offset))
            return
        if h.is_transactional and pid not in self.ongoing:
            self.ongoing[pid] = entry.txn_first_offset = h.base_offset
        if h.base_sequence >= 0:
            entry.batches.append(BatchMetadata(h.base_sequence, next_sequence(h.base_sequence, h.last_offset_delta),
                                               h.base_offset, h.last_offset, h.max_timestamp))

    def rebuild(self, batches: Iterable[tuple[BatchHeader, tuple[int, int] | None]]) -> None:
        """Forget everything and replay ``batches`` (the log's batch headers in order,
        each with its marker for a control batch, else None)."""
        self.producers.clear()
        self.ongoing.clear()
        self.aborted.clear()
        for h, marker in batches:
            self.update(h, marker)

    def forget_aborted_below(self, offset: int) -> None:
        """Drop the aborted transactions whose marker is below ``offset`` (the log start)."""
        self.aborted = [a for a in self.aborted if a.last_offset >= offset]

    def describe(self) -> list[dict]:
        """Active producers, for replica_state, ``topics describe --json`` and the dashboard."""
        return [e.describe() for _, e in sorted(self.producers.items())]
