"""The transaction APIs (KIP-98, KIP-664), answered by the broker's
:class:`~..txn_coordinator.TransactionCoordinator`: InitProducerId with a transactional
id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions and
ListTransactions.  The caller's access is checked here, as Kafka's KafkaApis does (Write
or Describe on the transactional id, Write on the topics, Read on the group); the
coordinator trusts its caller."""
from __future__ import annotations

from ...auth.acls import CLUSTER_NAME
from ...errors import KafkaError, OperationNotAttemptedError, UnknownTopicOrPartitionError
from ...protocol.rpc.types import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    DescribedTransaction,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListedTransaction,
    ListTransactionsRequest,
    ListTransactionsResponse,
    TopicPartition,
)
from ...transactions.state import TxnState
from ..security import Security
from ..txn_coordinator import TransactionCoordinator
from .context import RequestContext
from .endpoints import Endpoints


def _unknown(transactional_id: str, error: KafkaError) -> DescribedTransaction:
    return DescribedTransaction(transactional_id=transactional_id, state="", producer_id=-1, producer_epoch=-1,
                                transaction_timeout_ms=0, transaction_start_time_ms=-1, partitions=[], error=error)


class TransactionApis:
    """The transaction coordinator's requests, for both protocols."""

    def __init__(self, coordinator: TransactionCoordinator, endpoints: Endpoints, security: Security) -> None:
        self.c = coordinator
        self.endpoints = endpoints
        self.security = security

    async def find_coordinator(self, req: FindCoordinatorRequest, ctx: RequestContext) -> FindCoordinatorResponse:
        """FindCoordinator key_type 1: the leader of the id's ``__transaction_state`` partition
        (Describe on the id)."""
        if req.key:
            self.security.require(ctx, "Describe", "TransactionalId", req.key)
        return self.endpoints.coordinator(await self.c.find_coordinator(req.key), ctx, "transaction coordinator")

    async def init_producer_id(self, req: InitProducerIdRequest, ctx: RequestContext) -> InitProducerIdResponse:
        """InitProducerId with a transactional id (the data plane hands out idempotent ids);
        Write on the id."""
        assert req.transactional_id is not None
        self.security.require(ctx, "Write", "TransactionalId", req.transactional_id)
        pid, epoch = await self.c.init_producer_id(req.transactional_id, req.transaction_timeout_ms,
                                                    req.producer_id, req.producer_epoch)
        return InitProducerIdResponse(producer_id=pid, producer_epoch=epoch)

    async def add_partitions_to_txn(self, req: AddPartitionsToTxnRequest, ctx: RequestContext) -> AddPartitionsToTxnResponse:
        """Write on the id and on each topic; when one partition is refused, the others are
        answered (UNKNOWN_TOPIC_OR_PARTITION, else OPERATION_NOT_ATTEMPTED) and the
        transaction is left as it was, as in Kafka."""
        self.security.require(ctx, "Write", "TransactionalId", req.transactional_id)
        tps = [(x.topic, x.partition) for x in req.partitions]
        refused = [self.security.refused(ctx, "Write", "Topic", t) for t, _ in tps]
        if any(refused):
            known = self.c.metadata.partitions
            errs: list[KafkaError | None] = [
                e or (UnknownTopicOrPartitionError(f"{t}-{p} does not exist") if (t, p) not in known
                      else OperationNotAttemptedError("another partition of the request failed"))
                for (t, p), e in zip(tps, refused)]
        else:
            errs = await self.c.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch, tps)
        return AddPartitionsToTxnResponse(partitions=[AddPartitionsToTxnResult(topic=t, partition=p, error=e)
                                                      for (t, p), e in zip(tps, errs)])

    async def add_offsets_to_txn(self, req: AddOffsetsToTxnRequest, ctx: RequestContext) -> AddOffsetsToTxnResponse:
        """Write on the id and Read on the group."""
        self.security.require(ctx, "Write", "TransactionalId", req.transactional_id)
        self.security.require(ctx, "Read", "Group", req.group_id)
        await self.c.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch, req.group_id)
        return AddOffsetsToTxnResponse()

    async def end_txn(self, req: EndTxnRequest, ctx: RequestContext) -> EndTxnResponse:
        """Write on the id."""
        self.security.require(ctx, "Write", "TransactionalId", req.transactional_id)
        await self.c.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed)
        return EndTxnResponse()

    def describe(self, transactional_id: str, ctx: RequestContext) -> DescribedTransaction:
        """One transactional id as DescribeTransactions answers it (with its own error:
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED without Describe on it)."""
        try:
            self.security.require(ctx, "Describe", "TransactionalId", transactional_id)
            m = self.c.describe(transactional_id)
        except KafkaError as exc:
            return _unknown(transactional_id, exc)
        r = m.record
        open_ = r.state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        return DescribedTransaction(
            transactional_id=transactional_id, state=m.state.label, producer_id=r.producer_id,
            producer_epoch=m.producer_epoch, transaction_timeout_ms=r.timeout_ms,
            transaction_start_time_ms=r.start_ms if open_ else -1,
            partitions=[TopicPartition(topic=t, partition=p) for t, p in sorted(r.partitions)])

    async def describe_transactions(self, req: DescribeTransactionsRequest,
                                    ctx: RequestContext) -> DescribeTransactionsResponse:
        return DescribeTransactionsResponse(transactions=[self.describe(t, ctx) for t in req.transactional_ids])

    async def list_transactions(self, req: ListTransactionsRequest, ctx: RequestContext) -> ListTransactionsResponse:
        """The ids the caller may Describe (all of them with Describe on the cluster); the
        others are left out, not refused."""
        found, unknown = self.c.list_transactions(req.state_filters, req.producer_id_filters, req.duration_filter_ms)
        every = self.security.allowed(ctx, "Describe", "Cluster", CLUSTER_NAME, quiet=True)
        found = [m for m in found
                 if every or self.security.allowed(ctx, "Describe", "TransactionalId", m.transactional_id, quiet=True)]
        return ListTransactionsResponse(unknown_state_filters=unknown, transactions=[
            ListedTransaction(transactional_id=m.transactional_id, producer_id=m.record.producer_id, state=m.state.label)
            for m in found])
