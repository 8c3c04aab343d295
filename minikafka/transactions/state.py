"""The transaction coordinator's decisions for one transactional id (KIP-98, KIP-360).

A transaction moves through explicit states; :data:`TRANSITIONS` lists, for each state,
the states it may be entered from (Kafka's ``TransactionState.validPreviousStates``)::

    Empty ──AddPartitions──> Ongoing ──EndTxn(commit)──> PrepareCommit ──markers──> CompleteCommit
      ^                        │  └──EndTxn(abort)────> PrepareAbort ───markers──> CompleteAbort
      │                        └──InitProducerId / timeout──> PrepareEpochFence ──> PrepareAbort (epoch+1)
      └──InitProducerId── CompleteCommit / CompleteAbort / Empty;   Empty / Complete* ──expired──> Dead

Every decision is a method of :class:`TransactionMetadata` that returns :class:`Effects`:
an error to answer right away (nothing changes), or a record to write to
``__transaction_state`` first, then the markers to send, then the answer.  The shell
writes the record (acks=all) and calls :meth:`TransactionMetadata.written` (or
:meth:`~TransactionMetadata.write_failed`); only then does the new state count.  While a
write is in flight the id has a *pending* record, and other requests for it are
answered CONCURRENT_TRANSACTIONS.  Time is passed in (``now`` in ms); nothing here does
I/O.

PrepareEpochFence is never written: as in Kafka, fencing an open transaction (a new
instance's InitProducerId, or the transaction timeout) writes PrepareAbort with the
producer epoch bumped, so the partitions' ABORT markers carry the new epoch and fence
the old instance there too.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from ..errors import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    KafkaError,
    ProducerFencedError,
)


class TxnState(enum.Enum):
    """Kafka's transaction states, with the byte ``__transaction_state`` stores for each."""

    EMPTY = ("Empty", 0)
    ONGOING = ("Ongoing", 1)
    PREPARE_COMMIT = ("PrepareCommit", 2)
    PREPARE_ABORT = ("PrepareAbort", 3)
    COMPLETE_COMMIT = ("CompleteCommit", 4)
    COMPLETE_ABORT = ("CompleteAbort", 5)
    DEAD = ("Dead", 6)
    PREPARE_EPOCH_FENCE = ("PrepareEpochFence", 7)

    @property
    def label(self) -> str:
        """Kafka's name of the state (as DescribeTransactions and ListTransactions show it)."""
        return self.value[0]

    @property
    def id(self) -> int:
        return self.value[1]

    @classmethod
    def by_id(cls, state_id: int) -> "TxnState":
        return _BY_ID[state_id]

    @classmethod
    def by_label(cls, label: str) -> "TxnState | None":
        return _BY_LABEL.get(label)


_BY_ID = {s.id: s for s in TxnState}
_BY_LABEL = {s.label: s for s in TxnState}

S = TxnState
# state -> the states it may be entered from
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
FINISHED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})  # no open transaction
PREPARED = frozenset({S.PREPARE_COMMIT, S.PREPARE_ABORT})

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MAX_VALUE


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``isEpochExhausted``: one more bump must stay available for fencing."""
    return epoch >= MAX_EPOCH - 1


class IllegalTransition(AssertionError):
    """A decision tried a transition the table does not allow (a bug, never a client's fault)."""


@dataclass(frozen=True)
class TxnRecord:
    """One state of a transactional id, as written to ``__transaction_state`` (the last
    producer id and epoch are kept in memory only, as in Kafka's record v0)."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]] = frozenset()
    start_ms: int = -1  # when the open transaction began, -1 when none
    update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class Markers:
    """COMMIT or ABORT markers of one producer to every partition of its transaction."""

    producer_id: int
    producer_epoch: int
    committed: bool
    partitions: frozenset[tuple[str, int]]


@dataclass(frozen=True)
class Effects:
    """What the shell does for a decision, in order: answer ``error`` now (nothing else);
    or write ``write`` (acks=all) and adopt it, then send ``markers``, then answer
    ``reply`` (None: success).  ``events`` go to the timeline as (kind, text)."""

    error: KafkaError | None = None
    write: TxnRecord | None = None
    markers: Markers | None = None
    reply: KafkaError | None = None
    events: tuple[tuple[str, str], ...] = ()


def check_timeout(timeout_ms: int, max_timeout_ms: int) -> KafkaError | None:
    """INVALID_TRANSACTION_TIMEOUT unless 0 < timeout <= transaction.max.timeout.ms."""
    if 0 < timeout_ms <= max_timeout_ms:
        return None
    return InvalidTransactionTimeoutError(f"transaction.timeout.ms={timeout_ms} must be positive and at most "
                                          f"transaction.max.timeout.ms={max_timeout_ms}")


@dataclass
class TransactionMetadata:
    """One transactional id: its last written record and the one being written."""

    transactional_id: str
    record: TxnRecord
    pending: TxnRecord | None = None
    fencing: bool = False  # the pending record fences the producer (PrepareEpochFence)
    fenced_by_init: bool = False  # the last abort fenced a new instance's predecessor (its retry bumps again)

    @classmethod
    def new(cls, transactional_id: str, producer_id: int, timeout_ms: int, now: int) -> "TransactionMetadata":
        """A transactional id seen for the first time: Empty, producer epoch -1, nothing written yet."""
        return cls(transactional_id, TxnRecord(producer_id, NO_PRODUCER_EPOCH, timeout_ms, S.EMPTY, update_ms=now))

    # -- what it is --------------------------------------------------------------------
    @property
    def state(self) -> TxnState:
        """The state as clients see it: PrepareEpochFence while a fence is being written."""
        return S.PREPARE_EPOCH_FENCE if self.fencing else self.record.state

    @property
    def producer_id(self) -> int:
        return self.record.producer_id

    @property
    def producer_epoch(self) -> int:
        """The current epoch: the bumped one as soon as a fence is decided."""
        return self.pending.producer_epoch if self.fencing and self.pending else self.record.producer_epoch

    def needs_producer_id(self, expected_epoch: int | None) -> bool:
        """InitProducerId will rotate to a new producer id (the epoch is exhausted)."""
        r = self.record
        return (self.pending is None and r.state in FINISHED and epoch_exhausted(r.producer_epoch)
                and (expected_epoch is None or expected_epoch == r.producer_epoch))

    def timed_out(self, now: int) -> bool:
        """An open transaction older than its timeout, with no write in flight."""
        r = self.record
        return self.pending is None and r.state is S.ONGOING and r.start_ms + r.timeout_ms < now

    def expired(self, now: int, expiration_ms: int) -> bool:
        """transactional.id.expiration.ms: no transaction for that long."""
        r = self.record
        return self.pending is None and r.state in FINISHED and r.update_ms + expiration_ms <= now

    # -- writes ------------------------------------------------------------------------
    def _write(self, new: TxnRecord, markers: Markers | None = None, reply: KafkaError | None = None,
               events: tuple[tuple[str, str], ...] = (), fencing: bool = False) -> Effects:
        before = S.PREPARE_EPOCH_FENCE if fencing else self.record.state
        if fencing and self.record.state not in TRANSITIONS[S.PREPARE_EPOCH_FENCE]:
            raise IllegalTransition(f"{self.transactional_id}: {self.record.state.label} -> PrepareEpochFence")
        if before not in TRANSITIONS[new.state]:
            raise IllegalTransition(f"{self.transactional_id}: {before.label} -> {new.state.label}")
        self.pending, self.fencing = new, fencing
        return Effects(write=new, markers=markers, reply=reply, events=events)

    def written(self) -> None:
        """The pending record is committed in ``__transaction_state``: it is the state now."""
        if self.pending is not None:
            self.record, self.pending, self.fencing = self.pending, None, False

    def write_failed(self) -> None:
        """The pending record could not be written: nothing changed."""
        self.pending, self.fencing = None, False

    def _check_producer(self, producer_id: int, producer_epoch: int) -> KafkaError | None:
        if producer_id != self.record.producer_id:
            return InvalidProducerIdMappingError(f"transactional id {self.transactional_id!r} has producer id "
                                                 f"{self.record.producer_id}, not {producer_id}")
        if producer_epoch != self.producer_epoch:
            return ProducerFencedError(f"producer {producer_id} epoch {producer_epoch} of {self.transactional_id!r} "
                                       f"is fenced: the current epoch is {self.producer_epoch}")
        if self.pending is not None:
            return self._busy()
        return None

    def _busy(self) -> KafkaError:
        return ConcurrentTransactionsError(f"transactional id {self.transactional_id!r} is completing "
                                           f"its transaction ({self.state.label}); retry")

    # -- decisions -----------------------------------------------------------------------
    def init_producer_id(self, timeout_ms: int, expected: tuple[int, int] | None, now: int,
                         new_producer_id: int | None = None) -> Effects:
        """InitProducerId: the producer id with its epoch bumped (or a new producer id when
        the epoch is exhausted: give ``new_producer_id`` when :meth:`needs_producer_id`).
        An open transaction is fenced first (PrepareAbort with the epoch bumped) and the
        answer is CONCURRENT_TRANSACTIONS: the client retries once the abort completed.
        ``expected`` is KIP-360's (producer id, epoch) of the instance asking to bump."""
        if self.pending is not None:
            return Effects(error=self._busy())
        r = self.record
        if expected is not None and not (
                r.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == r.producer_id
                or (expected[0] == r.last_producer_id and epoch_exhausted(expected[1]))):
            return Effects(error=ProducerFencedError(
                f"producer {expected[0]} epoch {expected[1]} is not the current producer of {self.transactional_id!r} "
                f"({r.producer_id} epoch {r.producer_epoch})"))
        if r.state in PREPARED:
            return Effects(error=self._busy())
        if r.state is S.ONGOING:
            self.fenced_by_init = True
            return self.fence(now, ConcurrentTransactionsError(
                f"the open transaction of {self.transactional_id!r} is being aborted; retry"),
                "txn_fenced", "a new instance called InitProducerId")
        if r.state not in FINISHED:
            return Effects(error=InvalidTxnStateError(f"{self.transactional_id!r} is {r.state.label}"))
        if self.needs_producer_id(None if expected is None else expected[1]):
            if new_producer_id is None:
                raise IllegalTransition("a new producer id is needed (the epoch is exhausted)")
            new = TxnRecord(new_producer_id, 0, timeout_ms, S.EMPTY, frozenset(), -1, now,
                            last_producer_id=r.producer_id,
                            last_producer_epoch=r.producer_epoch if expected is not None else NO_PRODUCER_EPOCH)
        else:
            if expected is None:
                epoch, last = r.producer_epoch + 1, NO_PRODUCER_EPOCH
            elif r.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == r.producer_epoch:
                epoch, last = r.producer_epoch + 1, r.producer_epoch
            elif expected[1] == r.last_producer_epoch:
                epoch, last = r.producer_epoch, r.last_producer_epoch  # a retry whose answer was lost
            else:
                return Effects(error=ProducerFencedError(
                    f"producer {expected[0]} epoch {expected[1]} of {self.transactional_id!r} is fenced: "
                    f"the current epoch is {r.producer_epoch}"))
            new = replace(r, producer_epoch=epoch, last_producer_epoch=last, timeout_ms=timeout_ms, state=S.EMPTY,
                          partitions=frozenset(), start_ms=-1, update_ms=now)
        events: tuple[tuple[str, str], ...] = ()
        if self.fenced_by_init:  # the retry after fencing an open transaction: already told
            self.fenced_by_init = False
        elif expected is None and r.producer_epoch != NO_PRODUCER_EPOCH and (new.producer_id, new.producer_epoch) != (r.producer_id, r.producer_epoch):
            events = (("txn_fenced", f"transactional id {self.transactional_id}: producer {r.producer_id} epoch "
                                     f"{r.producer_epoch} fenced by producer {new.producer_id} epoch {new.producer_epoch}"),)
        return self._write(new, events=events)

    def fence(self, now: int, reply: KafkaError | None, kind: str, why: str) -> Effects:
        """Abort the open transaction with the producer epoch bumped (PrepareEpochFence,
        written as PrepareAbort), so that the instance that opened it is fenced; without a
        bump when the epoch is exhausted (as Kafka)."""
        r = self.record
        bump = not epoch_exhausted(r.producer_epoch)
        epoch = r.producer_epoch + 1 if bump else r.producer_epoch
        new = replace(r, producer_epoch=epoch, last_producer_epoch=NO_PRODUCER_EPOCH, state=S.PREPARE_ABORT,
                      update_ms=now)
        text = (f"transactional id {self.transactional_id}: {why}; the open transaction of producer {r.producer_id} "
                f"epoch {r.producer_epoch} on {len(r.partitions)} partitions is aborted"
                + (f" with epoch {epoch}" if bump else ""))
        return self._write(new, Markers(r.producer_id, epoch, False, r.partitions), reply, ((kind, text),),
                           fencing=bump)

    def abort_timed_out(self, now: int) -> Effects:
        """The transaction ran past transaction.timeout.ms: abort it and fence its producer."""
        return self.fence(now, None, "txn_timed_out",
                          f"the transaction ran longer than transaction.timeout.ms={self.record.timeout_ms}")

    def add_partitions(self, producer_id: int, producer_epoch: int, partitions: frozenset[tuple[str, int]],
                       now: int) -> Effects:
        """AddPartitionsToTxn and AddOffsetsToTxn: the first partition begins the
        transaction; partitions already in it change nothing."""
        err = self._check_producer(producer_id, producer_epoch)
        if err is not None:
            return Effects(error=err)
        r = self.record
        if r.state in PREPARED:
            return Effects(error=self._busy())
        if r.state is S.ONGOING and partitions <= r.partitions:
            return Effects()
        if r.state not in TRANSITIONS[S.ONGOING]:
            return Effects(error=InvalidTxnStateError(f"{self.transactional_id!r} is {r.state.label}"))
        begin = r.state is not S.ONGOING
        new = replace(r, state=S.ONGOING, partitions=r.partitions | partitions, start_ms=now if begin else r.start_ms,
                      update_ms=now)
        events = ((("txn_begin", f"transactional id {self.transactional_id}: producer {r.producer_id} epoch "
                                 f"{r.producer_epoch} begins a transaction"),) if begin else ())
        return self._write(new, events=events)

    def end_txn(self, producer_id: int, producer_epoch: int, committed: bool, now: int) -> Effects:
        """EndTxn: write PrepareCommit or PrepareAbort, answer, then send the markers.  A
        retry of an outcome already reached succeeds; one still on its way is
        CONCURRENT_TRANSACTIONS; the other outcome, or no transaction, INVALID_TXN_STATE."""
        err = self._check_producer(producer_id, producer_epoch)
        if err is not None:
            return Effects(error=err)
        r = self.record
        word = "commit" if committed else "abort"
        if r.state is S.ONGOING:
            new = replace(r, state=S.PREPARE_COMMIT if committed else S.PREPARE_ABORT, update_ms=now)
            return self._write(new, Markers(r.producer_id, r.producer_epoch, committed, r.partitions))
        done, preparing = ((S.COMPLETE_COMMIT, S.PREPARE_COMMIT) if committed else (S.COMPLETE_ABORT, S.PREPARE_ABORT))
        if r.state is done:
            return Effects()
        if r.state is preparing:
            return Effects(error=self._busy())
        return Effects(error=InvalidTxnStateError(
            f"cannot {word} the transaction of {self.transactional_id!r}: it is {r.state.label}"))

    def recover(self) -> Effects:
        """After loading the log: a prepared transaction's markers are (re)sent."""
        r = self.record
        if r.state in PREPARED and self.pending is None:
            return Effects(markers=Markers(r.producer_id, r.producer_epoch, r.state is S.PREPARE_COMMIT, r.partitions))
        return Effects()

    def markers_written(self, now: int) -> Effects:
        """Every partition has its marker: write CompleteCommit or CompleteAbort."""
        r = self.record
        if r.state not in PREPARED or self.pending is not None:
            return Effects()
        committed = r.state is S.PREPARE_COMMIT
        new = replace(r, state=S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT, partitions=frozenset(),
                      update_ms=now)
        kind = "txn_commit" if committed else "txn_abort"
        return self._write(new, events=((kind, f"transactional id {self.transactional_id}: producer {r.producer_id} "
                                               f"epoch {r.producer_epoch} {'committed' if committed else 'aborted'} "
                                               f"a transaction on {len(r.partitions)} partitions"),))

    def expire(self, now: int) -> Effects:
        """transactional.id.expiration.ms passed: Dead (written as a tombstone)."""
        return self._write(replace(self.record, state=S.DEAD, partitions=frozenset(), update_ms=now))
