"""Control records: the COMMIT and ABORT markers that end a transaction (KIP-98).

A transaction coordinator ends a producer's transaction by having each partition's
leader append a *control batch*: a batch with the transactional and control attribute
bits, the producer's id and epoch, and one record whose key is ``version int16, type
int16`` (type 0 ABORT, 1 COMMIT) and whose value is ``version int16, coordinator epoch
int32`` (Kafka's EndTransactionMarker).  Consumers never see control records; a
read_committed consumer uses them to know where an aborted transaction ends.

Pure: encoding and decoding only.
"""
from __future__ import annotations

import struct

from ...errors import CorruptMessageError
from .batch import BatchHeader, encode_batch, section_of

ABORT, COMMIT = 0, 1
CONTROL_KEY = struct.Struct(">hh")
MARKER_VALUE = struct.Struct(">hi")
NAMES = {ABORT: "ABORT", COMMIT: "COMMIT"}


def encode_marker(producer_id: int, producer_epoch: int, committed: bool, coordinator_epoch: int,
                  timestamp_ms: int) -> bytes:
    """One control batch holding a COMMIT (``committed``) or ABORT marker."""
    key = CONTROL_KEY.pack(0, COMMIT if committed else ABORT)
    value = MARKER_VALUE.pack(0, coordinator_epoch)
    return encode_batch([(key, value, None, timestamp_ms)], producer_id=producer_id, producer_epoch=producer_epoch,
                        is_transactional=True, is_control=True)


def read_marker(h: BatchHeader, raw: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """``(type, coordinator epoch)`` of a control batch's marker; None when it holds no
    transaction marker (another control type).  CORRUPT_MESSAGE for an unreadable one."""
    _, _, keys, values, _ = section_of(raw, h)
    if not keys or keys[0] is None or len(keys[0]) < CONTROL_KEY.size:
        raise CorruptMessageError(f"control batch at offset {h.base_offset} has no control record key")
    _, kind = CONTROL_KEY.unpack_from(keys[0])
    if kind not in NAMES:
        return None
    value = values[0]
    epoch = MARKER_VALUE.unpack_from(value)[1] if value is not None and len(value) >= MARKER_VALUE.size else -1
    return kind, epoch
