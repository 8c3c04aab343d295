"""Kafka's transaction APIs on the Kafka listener: InitProducerId with a transactional
id, AddPartitionsToTxn (v0-3), AddOffsetsToTxn, EndTxn, DescribeTransactions and
ListTransactions.

They run the request layer's transaction handlers (:mod:`minikafka.broker.apis.transactions`),
the same code as the msgpack API.  Errors go where each API version carries them; the
versions before a client knew PRODUCER_FENCED (KIP-588: InitProducerId v4, EndTxn and
AddOffsetsToTxn and AddPartitionsToTxn before v2) get INVALID_PRODUCER_EPOCH instead, as
Kafka answers them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import InvalidProducerEpochError, KafkaError, ProducerFencedError
from ...protocol.rpc.types import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    TopicPartition,
)
from ..apis.layer import RequestLayer

if TYPE_CHECKING:
    from .connection import Connection


def _code(exc: KafkaError | None, fenced_ok: bool = True) -> int:
    """Kafka's error code; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for clients that
    predate it."""
    if exc is None:
        return 0
    if isinstance(exc, ProducerFencedError) and not fenced_ok:
        return InvalidProducerEpochError.code.code
    return exc.code.code


class KafkaTransactionHandlers:
    """One broker's transaction APIs for Kafka clients."""

    def __init__(self, layer: RequestLayer) -> None:
        self.layer = layer

    async def init_producer_id(self, version: int, req: dict, conn: "Connection") -> dict:
        """Idempotent producers get a new producer id with epoch 0 (also when an older id and
        epoch are given, v3+); a transactional id goes to its coordinator."""
        try:
            answer = await self.layer.init_producer_id(InitProducerIdRequest(
                transactional_id=req["transactional_id"], transaction_timeout_ms=req["transaction_timeout_ms"],
                producer_id=req.get("producer_id", -1) if req["transactional_id"] is not None else -1,
                producer_epoch=req.get("producer_epoch", -1) if req["transactional_id"] is not None else -1),
                conn.context())
        except KafkaError as exc:
            return {"error_code": _code(exc, version >= 4), "producer_id": -1, "producer_epoch": -1}
        return {"error_code": 0, "producer_id": answer.producer_id, "producer_epoch": answer.producer_epoch}

    async def add_partitions_to_txn(self, version: int, req: dict, conn: "Connection") -> dict:
        tps = [(t["name"], p) for t in req["v3_and_below_topics"] for p in t["partitions"]]
        try:
            answer = await self.layer.txn.add_partitions_to_txn(AddPartitionsToTxnRequest(
                transactional_id=req["v3_and_below_transactional_id"], producer_id=req["v3_and_below_producer_id"],
                producer_epoch=req["v3_and_below_producer_epoch"],
                partitions=[TopicPartition(topic=t, partition=p) for t, p in tps]), conn.context())
            errs = [(r.topic, r.partition, r.error) for r in answer.partitions]
        except KafkaError as exc:
            errs = [(t, p, exc) for t, p in tps]
        topics: dict[str, list[dict]] = {}
        for t, p, e in errs:
            topics.setdefault(t, []).append({"partition_index": p, "partition_error_code": _code(e, version >= 2)})
        return {"results_by_topic_v3_and_below": [{"name": t, "results_by_partition": ps} for t, ps in topics.items()]}

    async def add_offsets_to_txn(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            await self.layer.txn.add_offsets_to_txn(AddOffsetsToTxnRequest(
                transactional_id=req["transactional_id"], producer_id=req["producer_id"],
                producer_epoch=req["producer_epoch"], group_id=req["group_id"]), conn.context())
        except KafkaError as exc:
            return {"error_code": _code(exc, version >= 2)}
        return {"error_code": 0}

    async def end_txn(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            await self.layer.txn.end_txn(EndTxnRequest(
                transactional_id=req["transactional_id"], producer_id=req["producer_id"],
                producer_epoch=req["producer_epoch"], committed=req["committed"]), conn.context())
        except KafkaError as exc:
            return {"error_code": _code(exc, version >= 2)}
        return {"error_code": 0}

    async def describe_transactions(self, version: int, req: dict, conn: "Connection") -> dict:
        answer = await self.layer.txn.describe_transactions(
            DescribeTransactionsRequest(transactional_ids=req["transactional_ids"]), conn.context())
        out = []
        for d in answer.transactions:
            topics: dict[str, list[int]] = {}
            for tp in d.partitions:
                topics.setdefault(tp.topic, []).append(tp.partition)
            out.append({"error_code": _code(d.error), "transactional_id": d.transactional_id,
                        "transaction_state": d.state, "transaction_timeout_ms": d.transaction_timeout_ms,
                        "transaction_start_time_ms": d.transaction_start_time_ms, "producer_id": d.producer_id,
                        "producer_epoch": d.producer_epoch,
                        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
        return {"transaction_states": out}

    async def list_transactions(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            answer = await self.layer.txn.list_transactions(ListTransactionsRequest(
                state_filters=req["state_filters"], producer_id_filters=req["producer_id_filters"],
                duration_filter_ms=max(-1, req.get("duration_filter", -1))), conn.context())
        except KafkaError as exc:
            return {"error_code": _code(exc), "unknown_state_filters": [], "transaction_states": []}
        return {"error_code": 0, "unknown_state_filters": answer.unknown_state_filters,
                "transaction_states": [{"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                                        "transaction_state": t.state} for t in answer.transactions]}
