"""What a partition leader does to a producer's batch before it is stored, as Kafka's
LogValidator does: recompress it to the topic's ``compression.type`` and stamp it with
the leader's clock under ``message.timestamp.type=LogAppendTime``.

Pure: the caller passes the time.  Followers store the leader's bytes as they are.
"""
from __future__ import annotations

import struct

import crc32c

from .records.batch import BatchHeader, encode_batch, iter_records, read_header

# Offsets in a record batch v2 (Kafka's DefaultRecordBatch).
_CRC_AT = 17  # crc32c of everything from the attributes on
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_LOG_APPEND_TIME = 0x08  # attribute bit 3: the timestamp type
_CONTROL = 0x20
_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")


def target_codec(compression_type: str, h: BatchHeader) -> str:
    """The codec a batch is stored with under the topic's ``compression.type``:
    ``producer`` keeps the producer's, ``uncompressed`` is none."""
    if compression_type == "producer":
        return h.compression
    return "none" if compression_type == "uncompressed" else compression_type


def stamp_log_append_time(batch: bytes, now_ms: int) -> bytes:
    """The batch with the LogAppendTime bit set and ``now_ms`` as its max timestamp (the
    timestamp of each of its records for readers), CRC recomputed; records untouched."""
    out = bytearray(batch)
    (attributes,) = _ATTRIBUTES.unpack_from(out, _ATTRIBUTES_AT)
    _ATTRIBUTES.pack_into(out, _ATTRIBUTES_AT, attributes | _LOG_APPEND_TIME)
    _TIMESTAMP.pack_into(out, _MAX_TIMESTAMP_AT, now_ms)
    _CRC.pack_into(out, _CRC_AT, crc32c.crc32c(bytes(out[_ATTRIBUTES_AT:])))
    return bytes(out)


def recompress(h: BatchHeader, batch: bytes, codec: str) -> bytes:
    """The batch's records in a new batch compressed with ``codec``, with the same
    producer fields, leader epoch, base offset and timestamps (offsets renumbered from
    0, as Kafka's leader assigns them)."""
    records = [(r.key, r.value, r.headers, r.timestamp) for r in iter_records(batch, validate=False)]
    return encode_batch(records, h.base_offset, h.leader_epoch, compression=codec, producer_id=h.producer_id,
                        producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                        is_transactional=h.is_transactional)


def convert(batch: bytes, compression_type: str, log_append_time_ms: int | None) -> tuple[BatchHeader, bytes]:
    """A validated producer batch as the leader stores it: recompressed when the topic's
    ``compression.type`` names another codec, stamped when ``log_append_time_ms`` is
    given (the topic uses LogAppendTime).  Returns the new header and bytes."""
    h = read_header(batch)
    if h.attributes & _CONTROL:
        return h, batch
    codec = target_codec(compression_type, h)
    out = batch
    if codec != h.compression:
        out = recompress(h, batch, codec)
    if log_append_time_ms is not None:
        out = stamp_log_append_time(out, log_append_time_ms)
    return (h, batch) if out is batch else (read_header(out), out)
