"""The records of ``__transaction_state``, in Apache Kafka's own binary layout.

Each transactional id is one keyed record: the key names the id, the value is the
last state the coordinator wrote for it, and a null value (a tombstone) deletes it
(an expired id).  A coordinator that takes over a partition rebuilds its transactions
by replaying the records: the last value per key wins.  The layouts are Kafka's
``TransactionLogKey`` v0 (int16 version, string transactional id) and
``TransactionLogValue`` v0 (producer id int64, producer epoch int16, timeout int32,
state int8, nullable array of (topic string, array of int32 partitions), last update
int64, start int64).  Big-endian; strings are an int16 length and UTF-8; arrays an
int32 count (-1 for null).

The coordinator of a transactional id is the leader of partition
``abs(java hashCode(id)) % N`` of ``__transaction_state`` (:func:`partition_for`).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import CorruptMessageError
from ..protocol.internal_records import Reader, coordinator_partition, string
from .state import TxnRecord, TxnState

TXN_TOPIC = "__transaction_state"

KEY_VERSION = 0
VALUE_VERSION = 0


def partition_for(transactional_id: str, partitions: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id`` (Kafka's
    ``Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount``)."""
    return coordinator_partition(transactional_id, partitions)


@dataclass(frozen=True)
class TxnKey:
    """Key of a transactional id's record."""

    transactional_id: str


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + string(transactional_id)


def encode_value(r: TxnRecord) -> bytes:
    """Kafka's TransactionLogValue v0 of ``r`` (its last producer id and epoch live only
    in memory, as in Kafka's v0)."""
    out = [struct.pack(">hqhib", VALUE_VERSION, r.producer_id, r.producer_epoch, r.timeout_ms, r.state.id)]
    if r.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD) and not r.partitions:
        out.append(struct.pack(">i", -1))  # Kafka writes no partitions for finished transactions
    else:
        topics: dict[str, list[int]] = {}
        for t, p in sorted(r.partitions):
            topics.setdefault(t, []).append(p)
        out.append(struct.pack(">i", len(topics)))
        for t, ps in topics.items():
            out.append(string(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps))
    out.append(struct.pack(">qq", r.update_ms, r.start_ms))
    return b"".join(out)


def decode_key(data: bytes) -> TxnKey:
    r = Reader(data, TXN_TOPIC)
    version = r.int(">h")
    if version != KEY_VERSION:
        raise CorruptMessageError(f"unknown {TXN_TOPIC} key version {version}")
    return TxnKey(r.required_str())


def decode_value(data: bytes) -> TxnRecord:
    """A TransactionLogValue v0 (CORRUPT_MESSAGE for other versions or truncated data)."""
    r = Reader(data, TXN_TOPIC)
    version = r.int(">h")
    if version != 0:
        raise CorruptMessageError(f"unsupported {TXN_TOPIC} value version {version}")
    pid, epoch, timeout, state_id = r.take(">qhib")
    try:
        state = TxnState.by_id(state_id)
    except KeyError:
        raise CorruptMessageError(f"unknown transaction state {state_id}") from None
    n = r.int(">i")
    parts: set[tuple[str, int]] = set()
    for _ in range(max(n, 0)):
        topic = r.required_str()
        for _ in range(r.int(">i")):
            parts.add((topic, r.int(">i")))
    update_ms, start_ms = r.take(">qq")
    return TxnRecord(producer_id=pid, producer_epoch=epoch, timeout_ms=timeout, state=state,
                     partitions=frozenset(parts), start_ms=start_ms, update_ms=update_ms)
