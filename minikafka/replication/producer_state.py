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
unknown producer (no state here), any epoch/sequence   appended: its state starts here
newer epoch, base sequence not 0                       OUT_OF_ORDER_SEQUENCE_NUMBER
same epoch, base sequence not last sequence + 1        OUT_OF_ORDER_SEQUENCE_NUMBER
(not 0, when only a marker of it is here)
anything else                                          appended; the window moves on
=====================================================  ===============================

An unknown producer's batch is taken at any sequence, as by Kafka's leader since 2.5
(KIP-360; ``ProducerAppendInfo.checkSequence`` accepts any first sequence when the
producer has no epoch in the partition): the partition may have lost the producer's
state (``producer.id.expiration.ms``, a replica that restarted its log at its leader's
log start, docs/retention.md) or may be new (a topic deleted and created again under the
same name), and the producer simply goes on with its sequence.  Only a producer the
partition knows is held to its sequence, so a client that sends a partition's batches
concurrently must not do so before the leader has taken one of them (minikafka's own
producer sends one batch at a time until then, docs/performance.md).

Followers do the same bookkeeping when they append what the leader replicated
(:meth:`ProducerStateManager.update`), without the checks, so a follower that
becomes leader dedupes the retries of batches the old leader appended.  The state
follows the log: after a truncation it is rebuilt from the batch headers still in the
log, on top of the state as of the log start (:meth:`ProducerStateManager.rebuild`),
which is also how a broker recovers it from disk at start-up.

The log start.  Retention and DeleteRecords move the partition's log start past old
batches, but the producers that wrote them are kept (Kafka 2.5+, KIP-360): a producer
whose every batch is gone still continues its sequence, and a transaction that began
below the log start stays open until its marker.  Their state as of the log start is
the manager's *base* (:meth:`ProducerStateManager.advance_start` folds the batches that
fall below the start into it); a rebuild replays the log on top of the base, and the
broker stores the base as the partition's producer snapshot (:meth:`encode_base`,
:meth:`decode_base`; Kafka's ``<offset>.snapshot`` files), so that it survives a restart
with disk storage.  Producers go only by expiry
(:meth:`ProducerStateManager.remove_expired`): ``producer.id.expiration.ms`` after the
timestamp of their last batch or marker, unless a transaction of theirs is open here
(Kafka's ``removeExpiredProducers``).

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

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import (
    InvalidProducerEpochError,
    KafkaStorageError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)
from ..protocol.records.batch import BatchHeader
from ..protocol.records.control import ABORT

NO_PRODUCER_ID = -1
BATCH_WINDOW = 5  # batches remembered per producer (max.in.flight.requests.per.connection <= 5)
MAX_SEQUENCE = 2**31 - 1
SNAPSHOT_VERSION = 1


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
    offset of its open transaction in this partition (-1: none), the epoch of the
    coordinator that wrote its last marker, and the timestamp of its last batch or
    marker (what ``producer.id.expiration.ms`` counts from; -1: none yet)."""

    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCH_WINDOW))
    txn_first_offset: int = -1
    coordinator_epoch: int = -1
    last_timestamp: int = -1

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

    def copy(self) -> "ProducerEntry":
        return ProducerEntry(self.producer_id, self.epoch, deque(self.batches, maxlen=BATCH_WINDOW),
                             self.txn_first_offset, self.coordinator_epoch, self.last_timestamp)

    def describe(self) -> dict:
        return {"producer_id": self.producer_id, "producer_epoch": self.epoch,
                "last_sequence": self.last_seq, "last_offset": self.last_offset,
                "last_timestamp": self.last_timestamp,
                "current_txn_start_offset": self.txn_first_offset,
                "coordinator_epoch": self.coordinator_epoch}


def is_expired(entry: ProducerEntry, now_ms: int, expiration_ms: int) -> bool:
    """Kafka's rule: no open transaction here, and its last batch or marker is at least
    ``expiration_ms`` old."""
    return entry.txn_first_offset < 0 and now_ms - entry.last_timestamp >= expiration_ms


class ProducerStateManager:
    """Producer id -> :class:`ProducerEntry` for one partition replica."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction, in offset order of opening
        self.ongoing: dict[int, int] = {}
        # aborted transactions in the order of their markers (so by last_offset)
        self.aborted: list[AbortedTxn] = []
        # the state as of ``base_offset`` (the log start): what the batches below it left
        self.base: dict[int, ProducerEntry] = {}
        self.base_offset = 0

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
        entry = self.producers.get(pid)
        if h.base_sequence < 0:
            if entry is not None and h.producer_epoch < entry.epoch:
                raise InvalidProducerEpochError(
                    f"producer {pid} epoch {h.producer_epoch} is older than its current epoch {entry.epoch}")
            return None
        where = f" on {topic_partition}" if topic_partition else ""
        last_seq = next_sequence(h.base_sequence, h.last_offset_delta)
        if entry is None:
            return None  # no state here (new, expired, or lost with the log): any sequence starts it
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
        _apply(self.producers, self.ongoing, self.aborted, h, marker)

    def rebuild(self, batches: Iterable[tuple[BatchHeader, tuple[int, int] | None]]) -> None:
        """Start again from the base (the state as of the log start) and replay ``batches``
        (the log's batch headers in order from :attr:`base_offset`, each with its marker
        for a control batch, else None)."""
        self.producers = {pid: e.copy() for pid, e in self.base.items()}
        self.ongoing = {pid: e.txn_first_offset for pid, e in
                        sorted(self.base.items(), key=lambda x: x[1].txn_first_offset) if e.txn_first_offset >= 0}
        self.aborted = []
        for h, marker in batches:
            self.update(h, marker)

    def reset(self, offset: int) -> None:
        """Forget everything: the log restarts empty at ``offset`` (a follower far behind
        its leader, as Kafka's ``truncateFullyAndStartAt``)."""
        self.base.clear()
        self.base_offset = offset
        self.producers.clear()
        self.ongoing.clear()
        self.aborted.clear()

    def advance_start(self, offset: int, below: Iterable[tuple[BatchHeader, tuple[int, int] | None]]) -> None:
        """The log start moved up to ``offset``: fold ``below`` (the batches from
        :attr:`base_offset` whose last offset is below ``offset``) into the base.  The
        producers stay; only the aborted transactions whose marker is below ``offset``
        leave the index (no fetch can reach them)."""
        if offset <= self.base_offset:
            return
        ongoing = {pid: e.txn_first_offset for pid, e in self.base.items() if e.txn_first_offset >= 0}
        for h, marker in below:
            _apply(self.base, ongoing, None, h, marker)
        self.base_offset = offset
        self.forget_aborted_below(offset)

    def forget_base_from(self, offset: int) -> bool:
        """A truncation to ``offset`` below :attr:`base_offset` (possible only for a base
        loaded from a snapshot taken above the log start): the base no longer matches the
        log, so it is dropped.  True when it was."""
        if offset >= self.base_offset:
            return False
        self.base.clear()
        self.base_offset = 0
        return True

    def forget_aborted_below(self, offset: int) -> None:
        """Drop the aborted transactions whose marker is below ``offset`` (the log start)."""
        self.aborted = [a for a in self.aborted if a.last_offset >= offset]

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Drop the producers :func:`is_expired` says are expired at ``now_ms`` (from the
        base too, so no rebuild brings them back); returns their ids."""
        gone = [pid for pid, e in self.producers.items() if is_expired(e, now_ms, expiration_ms)]
        for pid in gone:
            del self.producers[pid]
            self.base.pop(pid, None)
        return gone

    def describe(self) -> list[dict]:
        """Active producers, for replica_state, ``topics describe --json`` and the dashboard."""
        return [e.describe() for _, e in sorted(self.producers.items())]

    # -- the producer snapshot ------------------------------------------------------
    def encode_base(self) -> str:
        """The base as a snapshot file's text (JSON): its offset and every producer."""
        return json.dumps({"version": SNAPSHOT_VERSION, "offset": self.base_offset, "producers": [
            {"producer_id": e.producer_id, "epoch": e.epoch, "txn_first_offset": e.txn_first_offset,
             "coordinator_epoch": e.coordinator_epoch, "last_timestamp": e.last_timestamp,
             "batches": [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp] for b in e.batches]}
            for _, e in sorted(self.base.items())]}, separators=(",", ":"))

    def load_base(self, text: str, log_start_offset: int, log_end_offset: int) -> bool:
        """Take the base from a snapshot file's text (:meth:`encode_base`) when it fits the
        log: taken at or above its start and at or below its end.  True when taken; a
        snapshot that does not fit is ignored (False); one that cannot be read raises
        KAFKA_STORAGE_ERROR.  Call :meth:`rebuild` with the batches from
        :attr:`base_offset` next."""
        offset, base = decode_base(text)
        if not log_start_offset <= offset <= log_end_offset:
            return False
        self.base, self.base_offset = base, offset
        return True


def decode_base(text: str) -> tuple[int, dict[int, ProducerEntry]]:
    """``(offset, producers)`` of a producer snapshot's text; KAFKA_STORAGE_ERROR when it is
    not one."""
    try:
        doc = json.loads(text)
        if doc.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"version {doc.get('version')!r}, expected {SNAPSHOT_VERSION}")
        base = {}
        for p in doc["producers"]:
            e = ProducerEntry(int(p["producer_id"]), int(p["epoch"]), txn_first_offset=int(p["txn_first_offset"]),
                              coordinator_epoch=int(p["coordinator_epoch"]), last_timestamp=int(p["last_timestamp"]))
            e.batches.extend(BatchMetadata(*(int(x) for x in b)) for b in p["batches"])
            base[e.producer_id] = e
        return int(doc["offset"]), base
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KafkaStorageError(f"not a producer snapshot: {exc}") from None


def _apply(producers: dict[int, ProducerEntry], ongoing: dict[int, int], aborted: list[AbortedTxn] | None,
           h: BatchHeader, marker: tuple[int, int] | None) -> None:
    """One batch's effect on a producer map, its open transactions and (unless None) the
    aborted-transaction index."""
    pid = h.producer_id
    if pid == NO_PRODUCER_ID:
        return
    entry = producers.get(pid)
    if entry is None or h.producer_epoch != entry.epoch:
        if entry is not None and h.producer_epoch < entry.epoch:
            return  # never happens for a leader-checked log; keep the newer epoch
        fresh = ProducerEntry(pid, h.producer_epoch)
        if entry is not None:  # a new epoch keeps the open transaction and coordinator epoch
            fresh.txn_first_offset, fresh.coordinator_epoch = entry.txn_first_offset, entry.coordinator_epoch
        entry = producers[pid] = fresh
    entry.last_timestamp = h.max_timestamp  # the batch's (or marker's) timestamp, as Kafka's lastTimestamp
    if h.is_control:
        if marker is None:
            return
        kind, coordinator_epoch = marker
        entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        first = ongoing.pop(pid, None)
        entry.txn_first_offset = -1
        if kind == ABORT and first is not None and aborted is not None:
            aborted.append(AbortedTxn(pid, first, h.base_offset))
        return
    if h.is_transactional and pid not in ongoing:
        ongoing[pid] = entry.txn_first_offset = h.base_offset
    if h.base_sequence >= 0:
        entry.batches.append(BatchMetadata(h.base_sequence, next_sequence(h.base_sequence, h.last_offset_delta),
                                           h.base_offset, h.last_offset, h.max_timestamp))
