"""The record-batch format: one header and a records blob, kept as bytes.

A producer encodes a batch once; the leader validates it once (size, magic, CRC),
stamps the base offset and its leader epoch into the header and stores the bytes.
Followers and consumers receive the same bytes.  The broker never looks inside
the records blob.

Header (big-endian, 47 bytes), modelled on Kafka's v2 RecordBatch:

=====  ======================  ===================================================
 at    field                   meaning
=====  ======================  ===================================================
  0    base_offset int64       offset of the first record (stamped by the leader)
  8    batch_length int32      bytes after this field (whole batch - 12)
 12    leader_epoch int32      epoch of the leader that appended it (stamped)
 16    magic int8              format version, always 2
 17    crc uint32              CRC-32 (zlib) of every byte from ``attributes`` on
 21    attributes int16        0 (no compression, create-time timestamps)
 23    last_offset_delta int32 record_count - 1
 27    base_timestamp int64    first record's timestamp, ms
 35    max_timestamp int64     largest record timestamp, ms
 43    record_count int32      number of records
=====  ======================  ===================================================

Because the CRC starts at ``attributes``, the leader can stamp ``base_offset`` and
``leader_epoch`` without recomputing it, as in Kafka.  (Kafka uses CRC-32C; the
standard library has plain CRC-32, which is what minikafka uses.)

The records blob is one msgpack array of ``[offset_delta, timestamp_delta, key,
value, headers]`` entries, ``headers`` a list of ``[name, value]`` pairs.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Iterator, Sequence

import msgpack

from ..errors import CorruptMessageError, InvalidRecordError

HEADER = struct.Struct(">qiibIhiqqi")
HEADER_SIZE = HEADER.size  # 47
LENGTH_OVERHEAD = 12  # base_offset + batch_length precede the length-counted part
CRC_START = 21
MAGIC = 2

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_EPOCH = struct.Struct(">i")


@dataclass(frozen=True)
class Record:
    """One decoded record of a batch."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


@dataclass(frozen=True)
class BatchHeader:
    """The decoded header of one batch."""

    base_offset: int
    batch_length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        return self.batch_length + LENGTH_OVERHEAD


def encode_batch(
    records: Sequence[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]] | None, int]],
    base_offset: int = 0,
    leader_epoch: int = -1,
) -> bytes:
    """Encode ``(key, value, headers, timestamp_ms)`` tuples as one batch.

    The producer leaves ``base_offset`` 0 and ``leader_epoch`` -1; the leader stamps them.
    """
    if not records:
        raise InvalidRecordError("a batch needs at least one record")
    base_ts = records[0][3]
    max_ts = max(r[3] for r in records)
    blob = msgpack.packb(
        [[i, ts - base_ts, key, value, [list(h) for h in (headers or ())]] for i, (key, value, headers, ts) in enumerate(records)],
        use_bin_type=True,
    )
    tail = struct.pack(">hiqqi", 0, len(records) - 1, base_ts, max_ts, len(records)) + blob
    crc = zlib.crc32(tail)
    batch_length = HEADER_SIZE - LENGTH_OVERHEAD + len(blob)
    head = struct.pack(">qiibI", base_offset, batch_length, leader_epoch, MAGIC, crc)
    return head + tail


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Decode the header of the batch starting at ``pos`` (no CRC check)."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptMessageError(f"truncated batch header at byte {pos}: {len(buf) - pos} bytes left, need {HEADER_SIZE}")
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def validate_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Check size, magic, CRC and counts of the batch at ``pos``; return its header.

    Raises CORRUPT_MESSAGE for anything a torn write or a bad client could produce.
    """
    h = read_header(buf, pos)
    if h.magic != MAGIC:
        raise CorruptMessageError(f"unsupported batch magic {h.magic} (expected {MAGIC})")
    end = pos + h.batch_length + LENGTH_OVERHEAD
    if h.batch_length < HEADER_SIZE - LENGTH_OVERHEAD or end > len(buf):
        raise CorruptMessageError(f"batch length {h.batch_length} does not match the {len(buf) - pos} bytes available")
    if h.record_count < 1 or h.last_offset_delta != h.record_count - 1:
        raise CorruptMessageError(f"batch record count {h.record_count} does not match last offset delta {h.last_offset_delta}")
    actual = zlib.crc32(memoryview(buf)[pos + CRC_START:end])
    if actual != h.crc:
        raise CorruptMessageError(f"batch CRC mismatch: header says {h.crc:#010x}, content gives {actual:#010x}")
    return h


def split_batches(buf: bytes | bytearray | memoryview, validate: bool = True) -> list[tuple[BatchHeader, bytes]]:
    """Split concatenated batches into ``(header, bytes)`` pairs.

    With ``validate`` every batch is checked (CRC included); a torn or trailing
    partial batch raises CORRUPT_MESSAGE.
    """
    out: list[tuple[BatchHeader, bytes]] = []
    view = memoryview(buf)
    pos = 0
    n = len(buf)
    while pos < n:
        h = validate_batch(view, pos) if validate else read_header(view, pos)
        if h.batch_length < HEADER_SIZE - LENGTH_OVERHEAD:
            raise CorruptMessageError(f"batch length {h.batch_length} at byte {pos} is shorter than a header")
        end = pos + h.size
        if end > n:
            raise CorruptMessageError(f"partial batch at byte {pos}")
        out.append((h, bytes(view[pos:end])))
        pos = end
    return out


def stamp(batch: bytes, base_offset: int, leader_epoch: int) -> bytes:
    """Return the batch with ``base_offset`` and ``leader_epoch`` written in (CRC unchanged)."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, leader_epoch)
    return bytes(out)


def iter_records(buf: bytes | bytearray | memoryview, min_offset: int = 0, validate: bool = True) -> Iterator[Record]:
    """Decode every record of the concatenated batches in ``buf`` with offset >= ``min_offset``."""
    for h, raw in split_batches(buf, validate=validate):
        if h.last_offset < min_offset:
            continue
        entries = msgpack.unpackb(memoryview(raw)[HEADER_SIZE:], raw=False, use_list=True)
        for delta, ts_delta, key, value, headers in entries:
            off = h.base_offset + delta
            if off >= min_offset:
                yield Record(off, h.base_timestamp + ts_delta, key, value, [(k, v) for k, v in headers])
