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

Sequences wrap from 2^31 - 1 to 0, as in Kafka.  Pure: no I/O, clocks or randomness.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError, UnknownProducerIdError
from ..protocol.records.batch import BatchHeader

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


@dataclass
class ProducerEntry:
    """One producer id's epoch and its last appended batches, oldest first."""

    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCH_WINDOW))

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
                "last_timestamp": last.timestamp if last else -1}


class ProducerStateManager:
    """Producer id -> :class:`ProducerEntry` for one partition replica."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def check(self, h: BatchHeader, topic_partition: str = "") -> BatchMetadata | None:
        """Apply the leader's rules to a batch about to be appended.

        Returns the original batch's metadata when ``h`` is a duplicate of one of the
        producer's last batches (it must not be appended again), None when it may be
        appended, and raises the Kafka error that refuses it otherwise."""
        pid = h.producer_id
        if pid == NO_PRODUCER_ID:
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

    def update(self, h: BatchHeader) -> None:
        """Record an appended batch (``h`` carries its final base offset)."""
        pid = h.producer_id
        if pid == NO_PRODUCER_ID:
            return
        entry = self.producers.get(pid)
        if entry is None or h.producer_epoch != entry.epoch:
            if entry is not None and h.producer_epoch < entry.epoch:
                return  # never happens for a leader-checked log; keep the newer epoch
            entry = self.producers[pid] = ProducerEntry(pid, h.producer_epoch)
        entry.batches.append(BatchMetadata(h.base_sequence, next_sequence(h.base_sequence, h.last_offset_delta),
                                           h.base_offset, h.last_offset, h.max_timestamp))

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        """Forget everything and replay ``headers`` (the log's batches, in order)."""
        self.producers.clear()
        for h in headers:
            self.update(h)

    def describe(self) -> list[dict]:
        """Active producers, for replica_state, ``topics describe --json`` and the dashboard."""
        return [e.describe() for _, e in sorted(self.producers.items())]
