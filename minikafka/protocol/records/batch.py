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

Each record (``varint``/``varlong`` are zigzag-encoded, as in protobuf):

==========================  ==========================================================
 field                       meaning
==========================  ==========================================================
 length varint               bytes of the record after this field
 attributes int8             unused, 0
 timestampDelta varlong      timestamp - baseTimestamp (may be negative)
 offsetDelta varint          offset - baseOffset: 0, 1, ... recordsCount - 1
 keyLength varint, key       -1 for a null key
 valueLength varint, value   -1 for a null value
 headersCount varint         then per header: keyLength varint + key (UTF-8),
                             valueLength varint (-1 null) + value
==========================  ==========================================================

Compression codecs (attributes bits 0-2), as Kafka's Java client writes them:
gzip (RFC 1952), snappy in xerial framing (``\\x82SNAPPY\\x00``, version 1,
compatible 1, then int32-length-prefixed raw snappy blocks; raw snappy is accepted
when reading), lz4 frame format with independent blocks, and zstd frames.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple, Sequence

import cramjam
import crc32c

from ...errors import CorruptMessageError, InvalidRecordError, UnsupportedCompressionTypeError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LENGTH_OVERHEAD = 12  # baseOffset + batchLength precede the length-counted part
CRC_START = 21  # attributes: the first byte covered by the CRC
MAGIC = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

#: Kafka's ``compression.type`` names and their attribute codes.
COMPRESSION_CODECS: dict[str, int] = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
COMPRESSION_NAMES: dict[int, str] = {v: k for k, v in COMPRESSION_CODECS.items()}
COMPRESSION_TYPES: tuple[str, ...] = tuple(COMPRESSION_CODECS)

_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount (covered by the CRC)
_HEAD = struct.Struct(">qiibI")  # baseOffset .. crc
_STAMP_OFFSET = struct.Struct(">q")
_STAMP_EPOCH = struct.Struct(">i")
_INT32 = struct.Struct(">i")

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # input bytes per snappy block, as snappy-java's default


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


# -- compression -------------------------------------------------------------------

def _unsupported(code: int) -> UnsupportedCompressionTypeError:
    return UnsupportedCompressionTypeError(f"unknown compression codec {code} in batch attributes (known: "
                               + ", ".join(f"{c} {n}" for n, c in COMPRESSION_CODECS.items()) + ")")


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section with Kafka's codec ``codec`` (attribute bits 0-2)."""
    if codec == 0:
        return data
    if codec == 1:
        return bytes(cramjam.gzip.compress(data))
    if codec == 2:
        out = bytearray(_XERIAL_HEADER)
        view = memoryview(data)
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(bytes(view[start:start + _XERIAL_BLOCK])))
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if codec == 3:
        # Kafka's Java client (KafkaLZ4BlockInputStream) refuses dependent (linked) blocks.
        c = cramjam.lz4.Compressor(block_linked=False)
        c.compress(data)
        return bytes(c.finish())
    if codec == 4:
        return bytes(cramjam.zstd.compress(data))
    raise _unsupported(codec)


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos, n = 16, len(data)
    if n < pos:
        raise CorruptMessageError("truncated xerial snappy header")
    while pos < n:
        if n - pos < 4:
            raise CorruptMessageError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > n:
            raise CorruptMessageError(f"xerial snappy block of {length} bytes overruns the {n - pos} bytes left")
        out += bytes(cramjam.snappy.decompress_raw(data[pos:pos + length]))
        pos += length
    return bytes(out)


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """The records section of a batch, decompressed with codec ``codec`` (0: as is)."""
    data = bytes(data)
    if codec == 0:
        return data
    if codec not in COMPRESSION_NAMES:
        raise _unsupported(codec)
    try:
        if codec == 1:
            return bytes(cramjam.gzip.decompress(data))
        if codec == 2:
            return _snappy_decompress(data)
        if codec == 3:
            return bytes(cramjam.lz4.decompress(data))
        return bytes(cramjam.zstd.decompress(data))
    except CorruptMessageError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError and ValueErrors
        raise CorruptMessageError(f"cannot decompress {COMPRESSION_NAMES[codec]} records: "
                                  f"{exc.__class__.__name__}: {exc}") from None


# -- varints -----------------------------------------------------------------------

def _put_varint(out: bytearray, n: int) -> None:
    """Append ``n`` zigzag-encoded (varint and varlong alike)."""
    v = (n << 1) ^ (n >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def varint_tail(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """The rest of a multi-byte varint whose first byte ``first`` was at ``pos - 1``
    (raw, not zigzag-decoded): ``(raw value, next pos)``; IndexError if truncated.
    Hot decoders read one-byte varints inline and call this for longer ones."""
    v = first & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, pos
        shift += 7
        if shift > 63:
            raise CorruptMessageError(f"varint longer than 10 bytes at record byte {pos}")


def _get_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode the zigzag varint at ``pos``: ``(value, next_pos)``; IndexError if truncated."""
    b = data[pos]
    pos += 1
    if b >= 0x80:
        b, pos = varint_tail(data, pos, b)
    return (b >> 1) ^ -(b & 1), pos


# -- encoding ----------------------------------------------------------------------

def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    _put_varint(out, n)
    return bytes(out)


# The zigzag varint bytes of 0 <= n < 8192 (one or two bytes each): record lengths,
# offset and timestamp deltas and key/value lengths are nearly always in this range, and
# a table lookup is several times faster than encoding them bit by bit.
_SMALL_VARINT_LIMIT = 8192
_SMALL_VARINTS = [_varint_bytes(n) for n in range(_SMALL_VARINT_LIMIT)]


def _encode_records(records: Sequence[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]] | None, int]],
                    base_ts: int, deltas: Sequence[int] | None = None) -> bytearray:
    out = bytearray()
    small = _SMALL_VARINTS
    limit = _SMALL_VARINT_LIMIT
    for j, (key, value, headers, ts) in enumerate(records):
        i = j if deltas is None else deltas[j]
        d = ts - base_ts
        body = bytearray(b"\x00")  # record attributes
        body += small[d] if 0 <= d < limit else _varint_bytes(d)
        body += small[i] if i < limit else _varint_bytes(i)
        if key is None:
            body.append(1)  # zigzag(-1)
        else:
            n = len(key)
            body += small[n] if n < limit else _varint_bytes(n)
            body += key
        if value is None:
            body.append(1)
        else:
            n = len(value)
            body += small[n] if n < limit else _varint_bytes(n)
            body += value
        if headers:
            _put_varint(body, len(headers))
            for hk, hv in headers:
                name = hk.encode("utf-8") if isinstance(hk, str) else bytes(hk)
                _put_varint(body, len(name))
                body += name
                if hv is None:
                    body.append(1)
                else:
                    _put_varint(body, len(hv))
                    body += hv
        else:
            body.append(0)
        n = len(body)
        out += small[n] if n < limit else _varint_bytes(n)
        out += body
    return out


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
    codec = COMPRESSION_CODECS.get(compression)
    if codec is None:
        raise ValueError(f"unknown compression type {compression!r}; use one of {', '.join(COMPRESSION_TYPES)}")
    base_ts = records[0][3]
    max_ts = max(r[3] for r in records)
    section = compress(codec, bytes(_encode_records(records, base_ts)))
    attributes = codec | (TRANSACTIONAL_MASK if is_transactional else 0) | (CONTROL_MASK if is_control else 0)
    n = len(records)
    tail = _TAIL.pack(attributes, n - 1, base_ts, max_ts, producer_id, producer_epoch, base_sequence, n) + section
    crc = crc32c.crc32c(tail)
    batch_length = HEADER_SIZE - LENGTH_OVERHEAD + len(section)
    return _HEAD.pack(base_offset, batch_length, leader_epoch, MAGIC, crc) + tail


def rewrite_batch(h: BatchHeader, raw: bytes | bytearray | memoryview, keep: Callable[[int], bool]) -> bytes | None:
    """The batch ``raw`` with only the records whose offset ``keep`` accepts (the log
    cleaner's rewrite): None when none is kept, ``raw`` itself when all are.

    As Kafka's cleaner does, the rewritten batch keeps its base offset, its last offset
    delta (so the batch still ends at the same offset), its leader epoch, producer fields
    and codec; the kept records keep their offset deltas, so offsets never move.  The
    base timestamp becomes the first kept record's, the max timestamp the largest kept
    (the original one under LogAppendTime).
    """
    if h.attributes & CONTROL_MASK:
        return bytes(raw)
    records = _records_of(raw, h)
    kept = [r for r in records if keep(h.base_offset + r[0])]
    if len(kept) == len(records):
        return bytes(raw)
    if not kept:
        return None
    log_append = bool(h.attributes & TIMESTAMP_TYPE_MASK)
    stamped = [(key, value, headers, h.max_timestamp if log_append else h.base_timestamp + ts_delta)
               for _, ts_delta, key, value, headers in kept]
    base_ts = stamped[0][3]
    max_ts = h.max_timestamp if log_append else max(r[3] for r in stamped)
    section = compress(h.attributes & COMPRESSION_MASK,
                       bytes(_encode_records(stamped, base_ts, [r[0] for r in kept])))
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
    # a batch the log cleaner compacted holds fewer records than its offset span
    if h.record_count < 1 or h.last_offset_delta < h.record_count - 1:
        raise CorruptMessageError(f"batch record count {h.record_count} does not match last offset delta {h.last_offset_delta}")
    return h


def _decode_records(data: bytes, count: int, where: str) -> list[tuple[int, int, bytes | None, bytes | None,
                                                                         list[tuple[str, bytes | None]]]]:
    """Decode ``count`` records from an (uncompressed) records section.

    Returns ``(offset_delta, timestamp_delta, key, value, headers)`` tuples; raises
    CORRUPT_MESSAGE when a record overruns its length, the section ends early or
    bytes remain after the last record.  Same-shaped records are cut by strided slices
    (:func:`uniform_runs`), any other section is walked record by record.
    """
    runs = uniform_runs(data, count)
    if runs is not None:
        deltas, ts_deltas, keys, values, _ = decode_uniform(data, runs, False)
        return [(d, t, k, v, []) for d, t, k, v in zip(deltas, ts_deltas, keys, values)]
    return _walk_records(data, count, where)


def _walk_records(data: bytes, count: int, where: str) -> list[tuple]:
    """:func:`_decode_records` record by record, field by field."""
    out = []
    n = len(data)
    pos = 0
    get = _get_varint
    i = 0
    try:
        for i in range(count):
            # One-byte varints (nearly all lengths and deltas) are read inline.
            b = data[pos]
            pos += 1
            if b >= 0x80:
                b, pos = varint_tail(data, pos, b)
            length = (b >> 1) ^ -(b & 1)
            end = pos + length
            if length < 0 or end > n:
                raise CorruptMessageError(f"{where}: record {i} declares {length} bytes, {n - pos} left")
            pos += 1  # record attributes (unused)
            b = data[pos]
            pos += 1
            if b >= 0x80:
                b, pos = varint_tail(data, pos, b)
            ts_delta = (b >> 1) ^ -(b & 1)
            b = data[pos]
            pos += 1
            if b >= 0x80:
                b, pos = varint_tail(data, pos, b)
            offset_delta = (b >> 1) ^ -(b & 1)
            klen, pos = get(data, pos)
            if klen < 0:
                if klen != -1:
                    raise CorruptMessageError(f"{where}: record {i} has key length {klen}")
                key = None
            else:
                key = data[pos:pos + klen]
                pos += klen
            vlen, pos = get(data, pos)
            if vlen < 0:
                if vlen != -1:
                    raise CorruptMessageError(f"{where}: record {i} has value length {vlen}")
                value = None
            else:
                value = data[pos:pos + vlen]
                pos += vlen
            nh, pos = get(data, pos)
            if nh < 0:
                raise CorruptMessageError(f"{where}: record {i} has header count {nh}")
            headers = []
            for _ in range(nh):
                hklen, pos = get(data, pos)
                if hklen < 0:
                    raise CorruptMessageError(f"{where}: record {i} has a header with a null key")
                hk = data[pos:pos + hklen].decode("utf-8")
                pos += hklen
                hvlen, pos = get(data, pos)
                if hvlen < 0:
                    if hvlen != -1:
                        raise CorruptMessageError(f"{where}: record {i} has header value length {hvlen}")
                    hv = None
                else:
                    hv = data[pos:pos + hvlen]
                    pos += hvlen
                headers.append((hk, hv))
            if pos != end:
                raise CorruptMessageError(f"{where}: record {i} declares {length} bytes but its fields "
                                          f"take {length + pos - end}")
            out.append((offset_delta, ts_delta, key, value, headers))
    except IndexError:
        raise CorruptMessageError(f"{where}: records section ends inside record {i}") from None
    except UnicodeDecodeError:
        raise CorruptMessageError(f"{where}: record {i} has a header key that is not UTF-8") from None
    if pos != n:
        raise CorruptMessageError(f"{where}: {n - pos} bytes remain after the {count} records the header declares")
    return out


# -- the leader's check of a records section -------------------------------------------

# Offset deltas 0..count-1 as zigzag varints: 1 byte below 64, 2 below 8192, 3 below
# 2**20.  The uniform check covers batches of at most _UNIFORM_MAX records.
_DELTA_WIDTHS = ((64, 1), (8192, 2), (1 << 20, 3))
_UNIFORM_MIN = 16
_UNIFORM_MAX = 1 << 16
_delta_columns: dict[int, list[bytes]] = {}


def _delta_column(width: int) -> list[bytes]:
    """For offset deltas of ``width`` bytes: byte k of the zigzag varint of every delta
    i below :data:`_UNIFORM_MAX`, as one bytes object per k (indexed by i; deltas that
    take fewer bytes hold meaningless bytes there, never compared)."""
    cols = _delta_columns.get(width)
    if cols is None:
        zigzag = range(0, 2 * _UNIFORM_MAX, 2)
        cols = _delta_columns[width] = [
            bytes(((z >> (7 * k)) & 0x7F) | (0x80 if k < width - 1 else 0) for z in zigzag) for k in range(width)]
    return cols


class UniformRun(NamedTuple):
    """Records ``first .. first + count - 1`` of a records section, all of one shape:
    record ``first + j`` starts at byte ``pos + j * size``, and within each record the
    timestamp delta (a ``ts_width``-byte varint) sits at ``ts_at``, the key at
    ``key_at`` (``key_len`` bytes, -1: null), the value at ``value_at``."""

    pos: int
    first: int
    count: int
    size: int
    ts_at: int
    ts_width: int
    key_at: int
    key_len: int
    value_at: int
    value_len: int


def _record_layout(data: bytes, pos: int) -> tuple | None:
    """Where the fields of the record at ``pos`` lie, relative to ``pos``: ``(size,
    fixed, ts_at, ts_width, delta_at, delta_width, key_at, key_len, value_at,
    value_len)``, ``fixed`` being the ``(at, width)`` of the varints every record of a
    uniform run must repeat byte for byte (its length, key length, value length and
    header count).  None when the record is not one a uniform run can be made of
    (headers, an invalid field)."""
    length, p = _get_varint(data, pos)
    end = p + length
    fixed = [(0, p - pos)]
    p += 1  # attributes: any value
    ts_at = p
    _, p = _get_varint(data, p)
    ts_width = p - ts_at
    delta_at = p
    _, p = _get_varint(data, p)
    delta_width = p - delta_at
    fields = []
    for _ in range(2):  # key, then value
        at = p
        ln, p = _get_varint(data, p)
        if ln < -1:
            return None
        fixed.append((at - pos, p - at))
        fields += [p - pos, ln]
        p += max(ln, 0)
    at = p
    nh, p = _get_varint(data, p)
    if nh != 0 or p != end or length < 0:
        return None
    fixed.append((at - pos, p - at))
    return (end - pos, fixed, ts_at - pos, ts_width, delta_at - pos, delta_width, *fields)


def uniform_runs(data: bytes, count: int) -> list[UniformRun] | None:
    """The records section as runs of same-shaped records (:class:`UniformRun`, one per
    offset-delta varint width), every record checked valid, or None when it is not
    made of such runs (which says nothing about its validity).

    Checked column by column with strided slices (C speed) instead of record by
    record: in a run every record has the first one's size and repeats its length, key
    length, value length and header count (0) byte for byte, its timestamp delta has the
    same varint width, and its offset delta is its index.  Each record then parses
    exactly like the run's first, which is checked field by field."""
    if not _UNIFORM_MIN <= count <= _UNIFORM_MAX:
        return None
    n = len(data)
    pos = i = 0
    runs = []
    try:
        for limit, width in _DELTA_WIDTHS:
            if i >= count:
                break
            stop = min(count, limit)
            layout = _record_layout(data, pos)
            if layout is None:
                return None
            size, fixed, ts_at, ts_width, delta_at, delta_width, key_at, key_len, value_at, value_len = layout
            m = stop - i
            end = pos + m * size
            if delta_width != width or ts_width > 2 or end > n:
                return None
            for at, w in fixed:
                for k in range(pos + at, pos + at + w):
                    if data[k:end:size] != data[k:k + 1] * m:
                        return None
            if ts_width == 2 and min(data[pos + ts_at:end:size]) < 0x80:
                return None
            if max(data[pos + ts_at + ts_width - 1:end:size]) >= 0x80:
                return None
            cols = _delta_column(width)
            for k in range(width):
                if data[pos + delta_at + k:end:size] != cols[k][i:stop]:
                    return None
            runs.append(UniformRun(pos, i, m, size, ts_at, ts_width, key_at, key_len, value_at, value_len))
            pos, i = end, stop
    except (IndexError, CorruptMessageError):
        return None
    return runs if i == count and pos == n else None


def decode_uniform(buf: bytes, runs: list[UniformRun], include_headers: bool) -> tuple[list, list, list, list, list]:
    """The columns ``(offset_deltas, timestamp_deltas, keys, values, headers)`` of a
    section that :func:`uniform_runs` cut into ``runs``, by strided slices (``headers``:
    an empty tuple per record when ``include_headers``, else no list)."""
    ts_deltas: list[int] = []
    keys: list = []
    values: list = []
    for r in runs:
        end = r.pos + r.count * r.size
        first = buf[r.pos + r.ts_at:end:r.size]
        if r.ts_width == 1:
            ts_deltas += [(b >> 1) ^ -(b & 1) for b in first]
        else:
            ts_deltas += [(((a & 0x7F) | (b << 7)) >> 1) ^ -(a & 1)
                          for a, b in zip(first, buf[r.pos + r.ts_at + 1:end:r.size])]
        for out, at, length in ((keys, r.key_at, r.key_len), (values, r.value_at, r.value_len)):
            if length < 0:
                out += [None] * r.count
            else:
                out += [buf[p:p + length] for p in range(r.pos + at, end, r.size)]
    count = runs[-1].first + runs[-1].count
    return list(range(count)), ts_deltas, keys, values, [()] * count if include_headers else []


def _check_records(data: bytes, count: int, where: str) -> None:
    """Check that an (uncompressed) records section holds exactly ``count`` well-formed
    records with offset deltas 0..count-1, without building them: the leader's check on
    every produced batch.  Raises CORRUPT_MESSAGE with the same words as
    :func:`_decode_records`, which it mirrors field by field (lengths and deltas are
    walked over, keys and values are skipped, not copied).  Batches of same-shaped
    records (same key and value sizes, no headers) are checked column-wise first
    (:func:`uniform_runs`)."""
    if uniform_runs(data, count) is not None:
        return
    n = len(data)
    pos = 0
    tail = varint_tail
    i = 0
    try:
        for i in range(count):
            b = data[pos]
            pos += 1
            if b >= 0x80:  # two-byte varints inline, longer ones in varint_tail
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            length = (b >> 1) ^ -(b & 1)
            end = pos + length
            if length < 0 or end > n:
                raise CorruptMessageError(f"{where}: record {i} declares {length} bytes, {n - pos} left")
            pos += 1  # record attributes (unused)
            b = data[pos]  # timestamp delta: any value
            pos += 1
            if b >= 0x80:  # two-byte varints inline, longer ones in varint_tail
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            b = data[pos]
            pos += 1
            if b >= 0x80:  # two-byte varints inline, longer ones in varint_tail
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            offset_delta = (b >> 1) ^ -(b & 1)
            if offset_delta != i:
                raise CorruptMessageError(f"{where}: record {i} has offset delta {offset_delta} (expected {i})")
            b = data[pos]
            pos += 1
            if b >= 0x80:  # two-byte varints inline, longer ones in varint_tail
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            klen = (b >> 1) ^ -(b & 1)
            if klen < 0:
                if klen != -1:
                    raise CorruptMessageError(f"{where}: record {i} has key length {klen}")
            else:
                pos += klen
            b = data[pos]
            pos += 1
            if b >= 0x80:  # two-byte varints inline, longer ones in varint_tail
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            vlen = (b >> 1) ^ -(b & 1)
            if vlen < 0:
                if vlen != -1:
                    raise CorruptMessageError(f"{where}: record {i} has value length {vlen}")
            else:
                pos += vlen
            b = data[pos]
            pos += 1
            if b >= 0x80:  # two-byte varints inline, longer ones in varint_tail
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            nh = (b >> 1) ^ -(b & 1)
            if nh < 0:
                raise CorruptMessageError(f"{where}: record {i} has header count {nh}")
            for _ in range(nh):
                hklen, pos = _get_varint(data, pos)
                if hklen < 0:
                    raise CorruptMessageError(f"{where}: record {i} has a header with a null key")
                data[pos:pos + hklen].decode("utf-8")
                pos += hklen
                hvlen, pos = _get_varint(data, pos)
                if hvlen < 0:
                    if hvlen != -1:
                        raise CorruptMessageError(f"{where}: record {i} has header value length {hvlen}")
                else:
                    pos += hvlen
            if pos != end:
                raise CorruptMessageError(f"{where}: record {i} declares {length} bytes but its fields "
                                          f"take {length + pos - end}")
    except IndexError:
        raise CorruptMessageError(f"{where}: records section ends inside record {i}") from None
    except UnicodeDecodeError:
        raise CorruptMessageError(f"{where}: record {i} has a header key that is not UTF-8") from None
    if pos != n:
        raise CorruptMessageError(f"{where}: {n - pos} bytes remain after the {count} records the header declares")


def _records_of(buf: bytes | bytearray | memoryview, h: BatchHeader, pos: int = 0) -> list[tuple]:
    section = memoryview(buf)[pos + HEADER_SIZE:pos + h.size]
    data = decompress(h.attributes & COMPRESSION_MASK, section)
    return _decode_records(data, h.record_count, f"batch at offset {h.base_offset}")


def validate_records(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """:func:`validate_batch`, then decode (decompressing) every record: the leader's check.

    Besides the header checks this catches a records section that does not hold
    exactly ``recordsCount`` well-formed records with offset deltas 0..n-1, and an
    unknown compression codec.  Raises CORRUPT_MESSAGE.
    """
    h = validate_batch(buf, pos)
    if h.last_offset_delta != h.record_count - 1:  # produced batches are never compacted
        raise CorruptMessageError(f"batch record count {h.record_count} does not match last offset delta {h.last_offset_delta}")
    section = memoryview(buf)[pos + HEADER_SIZE:pos + h.size]
    _check_records(decompress(h.attributes & COMPRESSION_MASK, section), h.record_count,
                   f"batch at offset {h.base_offset}")
    return h


def split_batches(buf: bytes | bytearray | memoryview, validate: bool = True,
                  deep: bool = False) -> list[tuple[BatchHeader, bytes]]:
    """Split concatenated batches into ``(header, bytes)`` pairs.

    With ``validate`` every batch is checked (CRC included); with ``deep`` also every
    record (:func:`validate_records`).  A torn or trailing partial batch raises
    CORRUPT_MESSAGE.
    """
    out: list[tuple[BatchHeader, bytes]] = []
    view = memoryview(buf)
    pos = 0
    n = len(buf)
    while pos < n:
        if deep:
            h = validate_records(view, pos)
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


def batch_records(h: BatchHeader, raw: bytes | bytearray | memoryview) -> list[tuple]:
    """The records of one batch (``raw`` as :func:`split_batches` gives it) as
    ``(offset, timestamp, key, value, headers)`` tuples, decompressed; none for a
    control batch.  The consumer's hot path: no object per record beyond the tuple."""
    if h.attributes & CONTROL_MASK:
        return []
    base = h.base_offset
    if h.attributes & TIMESTAMP_TYPE_MASK:
        ts = h.max_timestamp
        return [(base + delta, ts, key, value, headers) for delta, _, key, value, headers in _records_of(raw, h)]
    base_ts = h.base_timestamp
    return [(base + delta, base_ts + ts_delta, key, value, headers)
            for delta, ts_delta, key, value, headers in _records_of(raw, h)]


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
        for delta, ts_delta, key, value, headers in _records_of(raw, h):
            off = base + delta
            if off >= min_offset:
                yield Record(off, h.max_timestamp if log_append else base_ts + ts_delta, key, value, headers)
