"""Transaction administration for :class:`~minikafka.client.admin.AIOAdmin`: find a
transactional id's coordinator, list and describe transactions (what Kafka's
kafka-transactions tool does)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from .. import errors
from ..protocol.rpc.types import DescribeTransactionsRequest, FindCoordinatorRequest, ListTransactionsRequest
from ..rpc import request
from .metadata import Metadata
from .ports import Transport
from .types import TopicPartition


@dataclass(frozen=True)
class TransactionListing:
    """One transactional id as ListTransactions names it (and the broker coordinating it)."""

    transactional_id: str
    producer_id: int
    state: str
    coordinator: int


@dataclass(frozen=True)
class TransactionDescription:
    """DescribeTransactions of one transactional id."""

    transactional_id: str
    coordinator: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int  # -1 when no transaction is open
    partitions: list[TopicPartition]


class TransactionAdminMixin:
    """Transaction operations; each asks the coordinator of the transactional id, or every broker."""

    _conn: Transport
    _meta: Metadata
    request_timeout_ms: int

    def _check_open(self) -> None:  # provided by AIOAdmin
        raise NotImplementedError

    async def find_transaction_coordinator(self, transactional_id: str) -> int:
        """The broker id coordinating ``transactional_id`` (FindCoordinator key_type 1;
        retried while ``__transaction_state`` is created or loaded)."""
        node, _, _ = await self._txn_coordinator(transactional_id)
        return node

    async def _txn_coordinator(self, transactional_id: str) -> tuple[int, str, int]:
        self._check_open()
        if not isinstance(transactional_id, str) or not transactional_id:
            raise errors.InvalidRequestError(f"transactional id must be a non-empty string, got {transactional_id!r}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout_ms / 1000
        while True:
            try:
                found = await self._meta.request_any(FindCoordinatorRequest(key=transactional_id, key_type=1),
                                                     self.request_timeout_ms / 1000)
                return found.node_id, found.host, found.port
            except (errors.NotCoordinatorError, errors.CoordinatorNotAvailableError,
                    errors.CoordinatorLoadInProgressError):
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def describe_transactions(self, transactional_ids: list[str]) -> list[TransactionDescription]:
        """State, producer, timeout, start time and partitions of each id (raises the id's
        error, e.g. TRANSACTIONAL_ID_NOT_FOUND)."""
        out = []
        for tid in transactional_ids:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.request_timeout_ms / 1000
            while True:
                node, host, port = await self._txn_coordinator(tid)
                got = await request(self._conn.call, host, port, DescribeTransactionsRequest(transactional_ids=[tid]),
                                    self.request_timeout_ms / 1000)
                d = got.transactions[0]
                if isinstance(d.error, (errors.NotCoordinatorError, errors.CoordinatorLoadInProgressError)) \
                        and loop.time() < deadline:
                    await asyncio.sleep(0.2)
                    continue
                if d.error is not None:
                    raise d.error
                break
            out.append(TransactionDescription(
                tid, node, d.state, d.producer_id, d.producer_epoch, d.transaction_timeout_ms,
                d.transaction_start_time_ms, [TopicPartition(x.topic, x.partition) for x in d.partitions]))
        return out

    async def list_transactions(self, states: list[str] | None = None, producer_ids: list[int] | None = None,
                                duration_ms: int = -1) -> list[TransactionListing]:
        """Every transactional id of every live broker's coordinator, filtered by state
        names, producer ids and (``duration_ms`` >= 0) open for longer than that."""
        self._check_open()
        await self._meta.refresh()
        req = ListTransactionsRequest(state_filters=list(states or []), producer_id_filters=list(producer_ids or []),
                                      duration_filter_ms=duration_ms)
        brokers = dict(self._meta.brokers)
        answers = await asyncio.gather(*(request(self._conn.call, h, p, req, self.request_timeout_ms / 1000)
                                         for h, p in brokers.values()), return_exceptions=True)
        out = []
        for broker_id, a in zip(brokers, answers):
            if isinstance(a, BaseException):
                if not isinstance(a, Exception):
                    raise a
                continue
            if a.unknown_state_filters:
                raise errors.InvalidRequestError(f"unknown transaction states: {', '.join(a.unknown_state_filters)}")
            out += [TransactionListing(t.transactional_id, t.producer_id, t.state, broker_id) for t in a.transactions]
        return sorted(out, key=lambda t: t.transactional_id)
