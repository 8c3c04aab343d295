"""Kafka's record batch v2 (magic 2), byte for byte, kept as bytes.

A producer encodes a batch once; the leader validates it once (size, magic, CRC
and, for a produce, every record), stamps the base offset and its leader epoch
into the header and stores the bytes as they came, compressed or not.  Followers,
consumers and Kafka clients (kcat, kafka-python, confluent-kafka) receive those
same bytes.  Records are decoded (and decompressed) only where they must be read.

Batch header (big-endian, 61 bytes), exactly Kafka's ``DefaultRecordBatch``:

=====  ==========================  ==================================================
 at    field                       meaning
=====  ==========================  ==================================================
  0    baseOffset int64            offset of the first record (stamped by the leader)
  8    batchLength int32           bytes after this field (whole batch - 12)
 12    partitionLeaderEpoch int32  epoch of the leader that appended it (stamped)
 16    magic int8                  format version, always 2
 17    crc uint32                  CRC-32C (Castagnoli) of every byte from
                                   ``attributes`` to the end of the batch
 21    attributes int16            bits 0-2 compression (0 none, 1 gzip, 2 snappy,
                                   3 lz4, 4 zstd), bit 3 timestampType (0
                                   CreateTime, 1 LogAppendTime), bit 4
                                   isTransactional, bit 5 isControl
 23    lastOffsetDelta int32       recordsCount - 1
 27    baseTimestamp int64         first record's timestamp, ms
 35    maxTimestamp int64          largest record timestamp, ms
 43    producerId int64            idempotent/transactional producer id, -1 if none
 51    producerEpoch int16         that producer's epoch, -1 if none
 53    baseSequence int32          sequence number of the first record, -1 if none
 57    recordsCount int32          number of records
 61    records                     the records; compressed as a whole when
                                   attributes bits 0-2 are not 0
=====  ==========================  ==================================================

Because the CRC starts at ``attributes``, the leader can stamp ``baseOffset`` and
``partitionLeaderEpoch`` without recomputing it, as in Kafka.

The records section (what follows the header) is :mod:`.section`'s: its record
layout, its encoder and the one parser every reader goes through.  Its compression
codecs are :mod:`.compression`'s.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import crc32c

from ...errors import CorruptMessageError, InvalidRecordError
from .compression import COMPRESSION_CODECS, COMPRESSION_NAMES, COMPRESSION_TYPES, compress, decompress
from .section import Columns, check_section, decode_section, encode_records

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LENGTH_OVERHEAD = 12  # baseOffset + batchLength precede the length-counted part
CRC_START = 21  # attributes: the first byte covered by the CRC
MAGIC = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount (covered by the CRC)
_HEAD = struct.Struct(">qiibI")  # baseOffset .. crc
_STAMP_OFFSET = struct.Struct(">q")
_STAMP_EPOCH = struct.Struct(">i")


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
    """The decoded header of one batch (fields in wire order)."""

    base_offset: int
    batch_length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
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

    @property
    def compression(self) -> str:
        """Kafka's name of the codec ("none", "gzip", ...); ``unknown(N)`` for a bad code."""
        code = self.attributes & COMPRESSION_MASK
        return COMPRESSION_NAMES.get(code, f"unknown({code})")

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def log_append_time(self) -> bool:
        """Timestamp type LogAppendTime: every record's timestamp is ``max_timestamp``."""
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)



# -- encoding ----------------------------------------------------------------------

#: The most bytes a batch's records section may expand to when it is decompressed to be
#: validated, unless the caller says otherwise (the leader passes the topic's
#: max.message.bytes).
MAX_DECOMPRESSED_BYTES = 104857600

def encode_batch(
    records: Sequence[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]] | None, int]],
    base_offset: int = 0,
    leader_epoch: int = -1,
    *,
    compression: str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """Encode ``(key, value, headers, timestamp_ms)`` tuples as one record batch v2.

    The producer leaves ``base_offset`` 0 and ``leader_epoch`` -1; the leader stamps
    them.  ``compression`` is Kafka's ``compression.type`` name.
    """
    if not records:
        raise InvalidRecordError("a batch needs at least one record")
    keys, values, headers, timestamps = zip(*records)
    return encode_batch_columns(keys, values, headers, timestamps, base_offset, leader_epoch,
                                compression=compression, producer_id=producer_id, producer_epoch=producer_epoch,
                                base_sequence=base_sequence, is_transactional=is_transactional, is_control=is_control)


def encode_batch_columns(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    headers: Sequence[Sequence[tuple[str, bytes | None]] | None],
    timestamps: Sequence[int],
    base_offset: int = 0,
    leader_epoch: int = -1,
    *,
    compression: str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """:func:`encode_batch` of records given as four columns of one length (record i is
    ``keys[i], values[i], headers[i], timestamps[i]``): the producer keeps its batches
    so, which spares it an object per record."""
    n = len(timestamps)
    if not n:
        raise InvalidRecordError("a batch needs at least one record")
    codec = COMPRESSION_CODECS.get(compression)
    if codec is None:
        raise ValueError(f"unknown compression type {compression!r}; use one of {', '.join(COMPRESSION_TYPES)}")
    base_ts = timestamps[0]
    max_ts = max(timestamps)
    section = compress(codec, encode_records(zip(keys, values, headers, timestamps), base_ts))
    attributes = codec | (TRANSACTIONAL_MASK if is_transactional else 0) | (CONTROL_MASK if is_control else 0)
    tail = _TAIL.pack(attributes, n - 1, base_ts, max_ts, producer_id, producer_epoch, base_sequence, n) + section
    crc = crc32c.crc32c(tail)
    batch_length = HEADER_SIZE - LENGTH_OVERHEAD + len(section)
    return _HEAD.pack(base_offset, batch_length, leader_epoch, MAGIC, crc) + tail


def empty_batch(h: BatchHeader) -> bytes:
    """The header of batch ``h`` with no records (Kafka's ``writeEmptyHeader``): what the
    log cleaner keeps of an active producer's last batch when all its records went, so
    that the producer's epoch and last sequence stay in the log.  Same base offset, last
    offset delta, leader epoch and producer fields; uncompressed; both timestamps the
    batch's max timestamp; a record count of 0."""
    tail = _TAIL.pack(h.attributes & ~COMPRESSION_MASK, h.last_offset_delta, h.max_timestamp, h.max_timestamp,
                      h.producer_id, h.producer_epoch, h.base_sequence, 0)
    return _HEAD.pack(h.base_offset, HEADER_SIZE - LENGTH_OVERHEAD, h.leader_epoch, MAGIC, crc32c.crc32c(tail)) + tail


def rewrite_batch(h: BatchHeader, raw: bytes | bytearray | memoryview, keep: Callable[[int], bool],
                  keep_empty: bool = False) -> bytes | None:
    """The batch ``raw`` with only the records whose offset ``keep`` accepts (the log
    cleaner's rewrite): None when none is kept (with ``keep_empty``, :func:`empty_batch`
    instead), ``raw`` itself when all are.

    As Kafka's cleaner does, the rewritten batch keeps its base offset, its last offset
    delta (so the batch still ends at the same offset), its leader epoch, producer fields
    and codec; the kept records keep their offset deltas, so offsets never move.  The
    base timestamp becomes the first kept record's, the max timestamp the largest kept
    (the original one under LogAppendTime).
    """
    if h.attributes & CONTROL_MASK:
        return bytes(raw)
    records = list(zip(*section_of(raw, h)))
    kept = [r for r in records if keep(h.base_offset + r[0])]
    if len(kept) == len(records):
        return bytes(raw)
    if not kept:
        return empty_batch(h) if keep_empty else None
    log_append = bool(h.attributes & TIMESTAMP_TYPE_MASK)
    stamped = [(key, value, headers, h.max_timestamp if log_append else h.base_timestamp + ts_delta)
               for _, ts_delta, key, value, headers in kept]
    base_ts = stamped[0][3]
    max_ts = h.max_timestamp if log_append else max(r[3] for r in stamped)
    section = compress(h.attributes & COMPRESSION_MASK,
                       bytes(encode_records(stamped, base_ts, [r[0] for r in kept])))
    tail = _TAIL.pack(h.attributes, h.last_offset_delta, base_ts, max_ts, h.producer_id, h.producer_epoch,
                      h.base_sequence, len(kept)) + section
    batch_length = HEADER_SIZE - LENGTH_OVERHEAD + len(section)
    return _HEAD.pack(h.base_offset, batch_length, h.leader_epoch, MAGIC, crc32c.crc32c(tail)) + tail


# -- reading -----------------------------------------------------------------------

def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Decode the header of the batch starting at ``pos`` (no CRC check)."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptMessageError(f"truncated batch header at byte {pos}: {len(buf) - pos} bytes left, need {HEADER_SIZE}")
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def validate_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Check size, magic, CRC-32C and counts of the batch at ``pos``; return its header.

    The records themselves are not decoded (see :func:`validate_records`).  Raises
    CORRUPT_MESSAGE for anything a torn write or a bad client could produce.
    """
    h = read_header(buf, pos)
    if h.magic != MAGIC:
        raise CorruptMessageError(f"unsupported batch magic {h.magic} (expected {MAGIC})")
    end = pos + h.batch_length + LENGTH_OVERHEAD
    if h.batch_length < HEADER_SIZE - LENGTH_OVERHEAD or end > len(buf):
        raise CorruptMessageError(f"batch length {h.batch_length} does not match the {len(buf) - pos} bytes available")
    actual = crc32c.crc32c(memoryview(buf)[pos + CRC_START:end])
    if actual != h.crc:
        raise CorruptMessageError(f"batch CRC-32C mismatch: header says {h.crc:#010x}, content gives {actual:#010x}")
    # a batch the log cleaner compacted holds fewer records than its offset span, and
    # none at all when it kept an active producer's last batch (empty_batch)
    if h.record_count < 0 or h.last_offset_delta < h.record_count - 1:
        raise CorruptMessageError(f"batch record count {h.record_count} does not match last offset delta {h.last_offset_delta}")
    return h


def section_of(buf: bytes | bytearray | memoryview, h: BatchHeader, pos: int = 0,
               max_decompressed: int | None = None) -> Columns:
    """The decoded records section of the batch at ``pos`` (header ``h``), decompressed:
    :func:`~.section.decode_section`'s columns, headers included.  With
    ``max_decompressed``, a section expanding past it is MESSAGE_TOO_LARGE."""
    section = memoryview(buf)[pos + HEADER_SIZE:pos + h.size]
    data = decompress(h.attributes & COMPRESSION_MASK, section, max_decompressed)
    return decode_section(data, h.record_count, f"batch at offset {h.base_offset}")


def validate_records(buf: bytes | bytearray | memoryview, pos: int = 0,
                     max_decompressed: int = MAX_DECOMPRESSED_BYTES) -> BatchHeader:
    """:func:`validate_batch`, then decode (decompressing) every record: the leader's check.

    Besides the header checks this catches a records section that does not hold
    exactly ``recordsCount`` well-formed records with offset deltas 0..n-1, and an
    unknown compression codec: CORRUPT_MESSAGE.  A compressed section that would expand
    past ``max_decompressed`` bytes is MESSAGE_TOO_LARGE (Kafka's RecordTooLargeException)
    before more than that is decompressed.
    """
    h = validate_batch(buf, pos)
    if h.record_count < 1:
        raise CorruptMessageError(f"batch at offset {h.base_offset} has no records")
    if h.last_offset_delta != h.record_count - 1:  # produced batches are never compacted
        raise CorruptMessageError(f"batch record count {h.record_count} does not match last offset delta {h.last_offset_delta}")
    section = memoryview(buf)[pos + HEADER_SIZE:pos + h.size]
    check_section(decompress(h.attributes & COMPRESSION_MASK, section, max_decompressed), h.record_count,
                  f"batch at offset {h.base_offset}")
    return h


def split_batches(buf: bytes | bytearray | memoryview, validate: bool = True,
                  deep: bool = False, max_decompressed: int = MAX_DECOMPRESSED_BYTES) -> list[tuple[BatchHeader, bytes]]:
    """Split concatenated batches into ``(header, bytes)`` pairs.

    With ``validate`` every batch is checked (CRC included); with ``deep`` also every
    record (:func:`validate_records`, with ``max_decompressed``).  A torn or trailing partial batch raises
    CORRUPT_MESSAGE.
    """
    out: list[tuple[BatchHeader, bytes]] = []
    view = memoryview(buf)
    pos = 0
    n = len(buf)
    while pos < n:
        if deep:
            h = validate_records(view, pos, max_decompressed)
        else:
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
    _STAMP_OFFSET.pack_into(out, 0, base_offset)
    _STAMP_EPOCH.pack_into(out, 12, leader_epoch)
    return bytes(out)


def batch_records(h: BatchHeader, raw: bytes | bytearray | memoryview,
                  max_decompressed: int | None = None) -> list[tuple]:
    """The records of one batch (``raw`` as :func:`split_batches` gives it) as
    ``(offset, timestamp, key, value, headers)`` tuples, decompressed; none for a
    control batch.  The consumer's hot path: no object per record beyond the tuple.
    With ``max_decompressed``, a batch expanding past it is MESSAGE_TOO_LARGE."""
    if h.attributes & CONTROL_MASK:
        return []
    base = h.base_offset
    cols = section_of(raw, h, 0, max_decompressed)
    if h.attributes & TIMESTAMP_TYPE_MASK:
        ts = h.max_timestamp
        return [(base + delta, ts, key, value, headers) for delta, _, key, value, headers in zip(*cols)]
    base_ts = h.base_timestamp
    return [(base + delta, base_ts + ts_delta, key, value, headers)
            for delta, ts_delta, key, value, headers in zip(*cols)]


def iter_records(buf: bytes | bytearray | memoryview, min_offset: int = 0, validate: bool = True) -> Iterator[Record]:
    """Decode every record of the concatenated batches in ``buf`` with offset >= ``min_offset``.

    Compressed batches are decompressed; control batches (transaction markers) are
    skipped, as Kafka's consumers do.
    """
    for h, raw in split_batches(buf, validate=validate):
        if h.last_offset < min_offset or h.attributes & CONTROL_MASK:
            continue
        base, base_ts = h.base_offset, h.base_timestamp
        log_append = h.attributes & TIMESTAMP_TYPE_MASK
        for delta, ts_delta, key, value, headers in zip(*section_of(raw, h)):
            off = base + delta
            if off >= min_offset:
                yield Record(off, h.max_timestamp if log_append else base_ts + ts_delta, key, value, headers)
