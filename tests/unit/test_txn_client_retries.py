"""The transactional producer's retries of a busy coordinator: AddPartitionsToTxn's
CONCURRENT_TRANSACTIONS (the previous transaction's markers still on their way) is
retried after at most 20 ms, as Kafka's producer does; other requests keep
``retry_backoff_ms``."""
from __future__ import annotations

import asyncio

from minikafka.client.ports import SYSTEM_CLOCK
from minikafka import errors
from minikafka.client import transactions
from minikafka.client.transactions import TransactionManager, TxnState
from minikafka.protocol.rpc.types import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorResponse,
    TopicPartition,
)


class FakeConn:
    """Answers each call with the next of ``answers`` (an exception is raised)."""

    def __init__(self, answers: list) -> None:
        self.answers = answers
        self.calls: list[str] = []

    async def call(self, host, port, api, body, timeout_s):
        self.calls.append(api)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class FakeMeta:
    def __init__(self, conn: FakeConn) -> None:
        self.conn = conn
        self.clock = SYSTEM_CLOCK

    async def request_any(self, req, timeout_s, attempt_timeout_s=None):
        return FindCoordinatorResponse(node_id=1, host="127.0.0.1", port=1)


def _manager(answers: list) -> tuple[TransactionManager, FakeConn]:
    conn = FakeConn(answers)
    txn = TransactionManager(FakeMeta(conn), "t-1", 60_000, 1_000, retry_backoff_ms=100, max_block_ms=10_000)
    txn.state, txn.producer_id, txn.producer_epoch = TxnState.IN_TRANSACTION, 7, 0
    return txn, conn


def _sleeps(monkeypatch) -> list[float]:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(s: float) -> None:
        slept.append(s)
        await real_sleep(0)

    monkeypatch.setattr(transactions.asyncio, "sleep", sleep)
    return slept


def test_add_partitions_retries_concurrent_transactions_after_20_ms(monkeypatch):
    slept = _sleeps(monkeypatch)
    busy = errors.ConcurrentTransactionsError("markers on their way")
    txn, conn = _manager([busy, busy, {"partitions": [{"topic": "t", "partition": 0, "error_code": 0, "message": ""}]}])
    asyncio.run(txn._call_coordinator(AddPartitionsToTxnRequest(
        transactional_id="t-1", producer_id=7, producer_epoch=0, partitions=[TopicPartition(topic="t", partition=0)]),
        transactions.ADD_PARTITIONS_RETRY_BACKOFF_MS))
    assert conn.calls == ["add_partitions_to_txn"] * 3
    assert slept == [0.02, 0.02]


def test_other_requests_keep_retry_backoff_ms(monkeypatch):
    slept = _sleeps(monkeypatch)
    txn, conn = _manager([errors.ConcurrentTransactionsError("busy"), {}])
    asyncio.run(txn._call_coordinator(EndTxnRequest(transactional_id="t-1", producer_id=7, producer_epoch=0,
                                                    committed=True)))
    assert slept == [0.1]
