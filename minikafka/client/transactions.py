"""A transactional producer's side of KIP-98 (Kafka's TransactionManager).

:class:`~minikafka.client.producer.AIOProducer` with a ``transactional_id`` keeps one
:class:`TransactionManager`.  It finds the transaction coordinator (FindCoordinator with
key type 1), gets the producer id and epoch from it (InitProducerId with the
transactional id, which fences any older instance), adds each partition to the
transaction before the first batch goes there (AddPartitionsToTxn), adds a consumer
group's offsets (AddOffsetsToTxn, then TxnOffsetCommit to the group coordinator) and
ends the transaction (EndTxn).  The client states, as Kafka's::

    UNINITIALIZED --init_transactions--> READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction / abort_transaction--> READY
    IN_TRANSACTION --a batch or request failed--> ABORTABLE_ERROR --abort_transaction--> READY
    any --PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, TRANSACTIONAL_ID_AUTHORIZATION_FAILED--> FATAL_ERROR

In FATAL_ERROR only ``close`` is left: a newer instance with the same transactional id
took over.  Coordinator moves, loading and CONCURRENT_TRANSACTIONS are retried until
``max_block_ms``, after ``retry_backoff_ms``; AddPartitionsToTxn's CONCURRENT_TRANSACTIONS
(the previous transaction's markers are still being written) after at most 20 ms, as
Kafka's producer does.
"""
from __future__ import annotations

import asyncio
import enum
from typing import Awaitable, Callable, TypeVar

from .. import errors
from ..protocol.rpc.types import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    Request,
    TxnOffsetCommitPartition,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from ..protocol.rpc.types import TopicPartition as RpcTopicPartition
from ..rpc import request
from .metadata import Metadata

R = TypeVar("R")

# errors after which the coordinator is looked up again and the request retried
_MOVED = (errors.NotCoordinatorError, errors.CoordinatorNotAvailableError, errors.NetworkExceptionError,
          errors.RequestTimedOutError)
# retried as they are (the coordinator is busy)
_BUSY = (errors.CoordinatorLoadInProgressError, errors.ConcurrentTransactionsError)
# Kafka's producer retries AddPartitionsToTxn's CONCURRENT_TRANSACTIONS this soon: the next
# transaction's first partition usually comes right after the previous commit.
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20
# a newer producer took over: nothing but close is left
FATAL = (errors.ProducerFencedError, errors.InvalidProducerEpochError,
         errors.TransactionalIdAuthorizationFailedError, errors.InvalidProducerIdMappingError)


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class TransactionManager:
    """One transactional producer's transaction state and its requests to the coordinators."""

    def __init__(self, meta: Metadata, transactional_id: str, transaction_timeout_ms: int, request_timeout_ms: int,
                 retry_backoff_ms: int, max_block_ms: int) -> None:
        if not isinstance(transactional_id, str) or not transactional_id:
            raise errors.ClientError(f"transactional_id must be a non-empty string, got {transactional_id!r}")
        if int(transaction_timeout_ms) < 1:
            raise errors.ClientError("transaction_timeout_ms must be at least 1")
        self.meta = meta
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = int(transaction_timeout_ms)
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.max_block_ms = max_block_ms
        self.state = TxnState.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.partitions: set[tuple[str, int]] = set()  # added to the open transaction
        self.offsets_added = False
        self.error: BaseException | None = None  # what made the transaction abortable or fatal
        self.needs_epoch_bump = False  # a sequence error: the next init bumps the epoch (KIP-360)
        self._coordinator: tuple[int, str, int] | None = None
        self._adding: set[tuple[str, int]] = set()
        self._add_task: asyncio.Task | None = None

    # -- state checks -----------------------------------------------------------------
    def check_send(self) -> None:
        """Records may be sent only inside a transaction (Kafka's IllegalStateException)."""
        if self.state is TxnState.IN_TRANSACTION:
            return
        if self.state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR):
            raise self._error_to_raise("send")
        raise errors.ClientError(f"cannot send: the transactional producer is {self.state.value}; "
                                 "call begin_transaction() first")

    def _error_to_raise(self, what: str) -> errors.KafkaError | errors.ClientError:
        err = self.error
        if isinstance(err, errors.KafkaError):
            return type(err)(f"cannot {what}: the transaction failed earlier ({err.message}); "
                             + ("abort it" if self.state is TxnState.ABORTABLE_ERROR else "close the producer"))
        return errors.ClientError(f"cannot {what} in state {self.state.value}")

    def _require(self, what: str, *states: TxnState) -> None:
        if self.state in states:
            return
        if self.state is TxnState.FATAL_ERROR or (self.state is TxnState.ABORTABLE_ERROR and what != "abort"):
            raise self._error_to_raise(what)
        raise errors.ClientError(f"cannot {what}: the transactional producer is {self.state.value}")

    def fail(self, exc: BaseException, sequence_broken: bool = False) -> None:
        """A batch or request of the open transaction failed: the transaction can only abort
        now, or, for a fencing error, the producer is done.  ``sequence_broken``: a batch
        failed after taking sequence numbers, so the abort bumps the epoch (KIP-360) and
        sequences restart at 0."""
        if isinstance(exc, FATAL):
            self.state, self.error = TxnState.FATAL_ERROR, exc
        elif self.state is TxnState.IN_TRANSACTION:
            self.state, self.error = TxnState.ABORTABLE_ERROR, exc
        if sequence_broken:
            self.needs_epoch_bump = True

    # -- coordinator calls ----------------------------------------------------------------
    async def _find(self) -> tuple[int, str, int]:
        if self._coordinator is None:
            got = await self.meta.request_any(FindCoordinatorRequest(key=self.transactional_id, key_type=1),
                                              self.request_timeout_ms / 1000)
            self._coordinator = (got.node_id, got.host, got.port)
        return self._coordinator

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[R]],
                        busy_backoff_ms: int | None = None) -> R:
        """``attempt()`` until it succeeds, retrying coordinator moves and a busy
        coordinator after ``retry_backoff_ms`` (``busy_backoff_ms`` for
        CONCURRENT_TRANSACTIONS when given) until ``max_block_ms``."""
        deadline = self.meta.clock.monotonic() + self.max_block_ms / 1000
        while True:
            try:
                return await attempt()
            except _MOVED + _BUSY as exc:
                if isinstance(exc, _MOVED):
                    self._coordinator = None
                if self.meta.clock.monotonic() > deadline:
                    raise errors.RequestTimedOutError(
                        f"{what} of transactional id {self.transactional_id!r} did not succeed within "
                        f"max_block_ms={self.max_block_ms}: {exc}") from None
                backoff = self.retry_backoff_ms
                if busy_backoff_ms is not None and isinstance(exc, errors.ConcurrentTransactionsError):
                    backoff = min(backoff, busy_backoff_ms)
                await asyncio.sleep(backoff / 1000)

    async def _call_coordinator(self, req: Request[R], busy_backoff_ms: int | None = None) -> R:
        async def attempt() -> R:
            _, host, port = await self._find()
            return _raise_partition_error(await request(self.meta.conn.call, host, port, req,
                                                        self.request_timeout_ms / 1000))
        return await self._retrying(req.API, attempt, busy_backoff_ms)

    # -- the producer's calls ----------------------------------------------------------------
    async def init(self) -> None:
        """InitProducerId at the coordinator: this instance's producer id and epoch.  After
        a sequence error the current id and epoch go along (KIP-360) so that the
        coordinator bumps the epoch instead of fencing a stranger."""
        if self.state is TxnState.FATAL_ERROR:
            raise self._error_to_raise("init_transactions")
        req = InitProducerIdRequest(transactional_id=self.transactional_id,
                                    transaction_timeout_ms=self.transaction_timeout_ms)
        if self.needs_epoch_bump and self.producer_id >= 0:
            req.producer_id, req.producer_epoch = self.producer_id, self.producer_epoch
        try:
            got = await self._call_coordinator(req)
        except FATAL as exc:
            self.fail(exc)
            raise
        self.producer_id, self.producer_epoch = got.producer_id, got.producer_epoch
        self.needs_epoch_bump = False
        self.state, self.error = TxnState.READY, None
        self.partitions.clear()
        self.offsets_added = False

    def begin(self) -> None:
        self._require("begin_transaction", TxnState.READY)
        self.state = TxnState.IN_TRANSACTION
        self.partitions.clear()
        self.offsets_added = False

    def ready_to_send(self, tp: tuple[str, int], wake: Callable[[], None]) -> bool:
        """Whether batches of ``tp`` may go now; adds it to the transaction first (one
        AddPartitionsToTxn for every partition waiting), waking the sender when done."""
        if tp in self.partitions:
            return True
        if self.state is not TxnState.IN_TRANSACTION:
            return False
        self._adding.add(tp)
        if self._add_task is None or self._add_task.done():
            self._add_task = asyncio.get_running_loop().create_task(self._add_partitions(wake),
                                                                    name="minikafka-add-partitions-to-txn")
        return False

    async def _add_partitions(self, wake: Callable[[], None]) -> None:
        tps, self._adding = sorted(self._adding), set()
        try:
            await self._call_coordinator(AddPartitionsToTxnRequest(
                transactional_id=self.transactional_id, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, partitions=[RpcTopicPartition(topic=t, partition=p) for t, p in tps]),
                ADD_PARTITIONS_RETRY_BACKOFF_MS)
            self.partitions.update(tps)
        except errors.KafkaError as exc:
            self.fail(exc)
        except asyncio.CancelledError:
            raise
        finally:
            wake()

    async def send_offsets(self, offsets: list[TxnOffsetCommitPartition], group_id: str, generation_id: int = -1,
                           member_id: str = "", group_instance_id: str | None = None) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit to the group's coordinator: ``offsets``
        commit with the transaction."""
        self._require("send_offsets_to_transaction", TxnState.IN_TRANSACTION)
        try:
            if not self.offsets_added:
                await self._call_coordinator(AddOffsetsToTxnRequest(
                    transactional_id=self.transactional_id, producer_id=self.producer_id,
                    producer_epoch=self.producer_epoch, group_id=group_id))
                self.offsets_added = True
            coordinator: list[tuple[str, int]] = []

            req = TxnOffsetCommitRequest(
                transactional_id=self.transactional_id, group_id=group_id, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, generation_id=generation_id, member_id=member_id,
                group_instance_id=group_instance_id, offsets=offsets)

            async def attempt() -> TxnOffsetCommitResponse:
                if not coordinator:
                    got = await self.meta.request_any(FindCoordinatorRequest(key=group_id), self.request_timeout_ms / 1000)
                    coordinator.append((got.host, got.port))
                try:
                    return _raise_partition_error(await request(self.meta.conn.call, *coordinator[0], req,
                                                                self.request_timeout_ms / 1000))
                except _MOVED:
                    coordinator.clear()
                    raise

            await self._retrying("txn_offset_commit", attempt)
        except errors.KafkaError as exc:
            self.fail(exc)
            raise

    async def end(self, committed: bool) -> None:
        """EndTxn (only when the transaction touched the coordinator: a transaction with no
        partition and no offsets ends here, as Kafka's producer does)."""
        if committed:
            self._require("commit_transaction", TxnState.IN_TRANSACTION)
        else:
            self._require("abort", TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR)
        if self.partitions or self.offsets_added:
            try:
                await self._call_coordinator(EndTxnRequest(
                    transactional_id=self.transactional_id, producer_id=self.producer_id,
                    producer_epoch=self.producer_epoch, committed=committed))
            except errors.KafkaError as exc:
                self.fail(exc)
                raise
        self.state, self.error = TxnState.READY, None
        self.partitions.clear()
        self.offsets_added = False

    async def close(self) -> None:
        if self._add_task is not None:
            self._add_task.cancel()
            await asyncio.gather(self._add_task, return_exceptions=True)


def _raise_partition_error(answer: R) -> R:
    """Raise the first per-partition error of an answer (the whole request is retried or
    fails with it, as Kafka's TransactionManager treats them); the answer otherwise."""
    for r in getattr(answer, "partitions", None) or ():
        if r.error is not None and not isinstance(r.error, errors.OperationNotAttemptedError):
            raise type(r.error)(f"{r.topic}-{r.partition}: {r.error.message}")
    return answer
