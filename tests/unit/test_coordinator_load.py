"""The coordinators replay only committed records (minikafka/broker/coordinator_log.py).

Found by the simulation's transactional workload (``minikafka sim --seed 15
--transactions``): a broker became leader of a ``__transaction_state`` partition whose
log ended with a record the previous coordinator had appended but never got committed
(Ongoing, with the output partitions added).  The new coordinator replayed it and
answered the producer's retried AddPartitionsToTxn at once ("already in the
transaction"); the record was then truncated when a replica without it was elected, the
next coordinator committed the transaction with a marker to ``__consumer_offsets`` only,
and the outputs were later swallowed by the producer's next, aborted, transaction:
input offsets committed without their outputs.  Both coordinators now wait until the
high watermark covers the log before they replay it.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from minikafka import errors
from minikafka.broker.coordinator import GroupCoordinator
from minikafka.broker.txn_coordinator import TransactionCoordinator
from minikafka.groups import records as grec
from minikafka.protocol.records.batch import encode_batch
from minikafka.transactions import records as trec
from minikafka.transactions.state import TxnRecord, TxnState


class FakeLog:
    """A leader's log: batches stamped at consecutive offsets."""

    def __init__(self, records: list[tuple[bytes, bytes]]) -> None:
        self.batches = [encode_batch([(k, v, None, 0)], base_offset=i) for i, (k, v) in enumerate(records)]
        self.log_start_offset = 0

    def read(self, offset: int, max_bytes: int, upto: int | None) -> bytes:
        return b"".join(self.batches[offset:])


class FakePartition:
    def __init__(self, records: list[tuple[bytes, bytes]], high_watermark: int) -> None:
        self.log = FakeLog(records)
        self.high_watermark = high_watermark
        self.leader_epoch = 3
        self.is_leader = True

    @property
    def log_end_offset(self) -> int:
        return len(self.log.batches)


def _deps(topic: str, partition: FakePartition) -> dict:
    events: list[tuple[str, str]] = []
    return dict(
        config=SimpleNamespace(broker_id=1, get=lambda name: 1),
        clock=SimpleNamespace(time=lambda: 1000.0, monotonic=lambda: 1.0),
        metadata=SimpleNamespace(partitions_of=lambda t: [0]),  # one partition: every key maps to 0
        record_event=lambda kind, text, **extra: events.append((kind, text)),
        replica_manager=SimpleNamespace(partitions={(topic, 0): partition}),
        spawn=lambda coro, name: asyncio.get_running_loop().create_task(coro),
        zk=None, metrics=None, topic_admin=None,
    )


def _txn(state: TxnState, partitions: frozenset = frozenset()) -> bytes:
    return trec.encode_value(TxnRecord(producer_id=7, producer_epoch=0, timeout_ms=60000, state=state,
                                       partitions=partitions, start_ms=1, update_ms=1))


async def test_the_transaction_coordinator_does_not_serve_a_tail_past_the_high_watermark():
    out = frozenset({("out", 0), ("out", 1)})
    p = FakePartition([(trec.encode_key("t"), _txn(TxnState.EMPTY)),
                       (trec.encode_key("t"), _txn(TxnState.ONGOING, out))], high_watermark=1)
    c = TransactionCoordinator(producer_ids=None, call=None, **_deps(trec.TXN_TOPIC, p))
    c.on_leadership(0, True)
    await asyncio.sleep(0.5)
    # the Ongoing record may still be lost with this leader: nothing is answered from it
    with pytest.raises(errors.CoordinatorLoadInProgressError):
        c._shard_of("t")
    p.high_watermark = 2  # the followers have it: committed
    await asyncio.sleep(0.5)
    shard = c._shard_of("t")
    assert shard.txns["t"].record.state is TxnState.ONGOING and shard.txns["t"].record.partitions == out
    await c.stop()


async def test_the_transaction_coordinator_loads_at_once_when_everything_is_committed():
    p = FakePartition([(trec.encode_key("t"), _txn(TxnState.EMPTY))], high_watermark=1)
    c = TransactionCoordinator(producer_ids=None, call=None, **_deps(trec.TXN_TOPIC, p))
    c.on_leadership(0, True)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert c._shard_of("t").txns["t"].record.state is TxnState.EMPTY
    await c.stop()


async def test_the_group_coordinator_does_not_serve_an_offset_commit_past_the_high_watermark():
    key = grec.encode_key(grec.OffsetKey("g", "in", 0))
    p = FakePartition([(key, grec.encode_offset(grec.OffsetValue(10))),
                       (key, grec.encode_offset(grec.OffsetValue(20)))], high_watermark=1)
    c = GroupCoordinator(rng=None, **_deps(grec.OFFSETS_TOPIC, p))
    c.on_leadership(0, True)
    await asyncio.sleep(0.5)
    with pytest.raises(errors.CoordinatorLoadInProgressError):
        c.fetch_offsets("g", [("in", 0)])
    p.high_watermark = 2
    await asyncio.sleep(0.5)
    assert c.fetch_offsets("g", [("in", 0)])[0][2].offset == 20
    c.on_leadership(0, False)
