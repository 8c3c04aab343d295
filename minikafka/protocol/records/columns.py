"""Record batches decoded column-wise, without an object per record.

:func:`scan` walks the headers of concatenated record batches (a fetch answer) and
:func:`decode_records` decodes one uncompressed records section in one pass, with
local-variable varint decoding, into per-column lists (offset deltas, timestamp
deltas, keys, values, headers).  The Spark source builds its Arrow columns from them,
and so does the consumer's ``ConsumerBatch.to_arrow()``.  Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import CorruptMessageError
from .batch import HEADER, HEADER_SIZE, LENGTH_OVERHEAD, MAGIC, decode_uniform, uniform_runs, varint_tail


@dataclass(frozen=True)
class BatchRef:
    """Where one batch sits in a fetch answer, and its header fields."""

    pos: int
    size: int
    base_offset: int
    last_offset: int
    base_timestamp: int
    crc: int
    attributes: int = 0
    max_timestamp: int = 0
    record_count: int = 0


def scan(data: bytes | memoryview) -> list[BatchRef]:
    """The batches of ``data`` (headers only, no CRC check); CORRUPT_MESSAGE for a torn batch."""
    out: list[BatchRef] = []
    n = len(data)
    pos = 0
    unpack = HEADER.unpack_from
    while pos < n:
        if n - pos < HEADER_SIZE:
            raise CorruptMessageError(f"truncated batch header at byte {pos}")
        (base, length, _epoch, magic, crc, attrs, lod, base_ts, max_ts,
         _pid, _pepoch, _seq, count) = unpack(data, pos)
        size = length + LENGTH_OVERHEAD
        if magic != MAGIC or length < HEADER_SIZE - LENGTH_OVERHEAD or pos + size > n or not 1 <= count <= lod + 1:
            raise CorruptMessageError(f"malformed batch at byte {pos} (magic {magic}, length {length}, "
                                      f"{n - pos} bytes left)")
        out.append(BatchRef(pos, size, base, base + lod, base_ts, crc, attrs, max_ts, count))
        pos += size
    return out


def decode_records(buf: bytes, count: int, include_headers: bool, where: str = "batch"):
    """Decode ``count`` v2 records of an uncompressed records section in one pass.

    Returns ``(offset_deltas, timestamp_deltas, keys, values, headers)`` lists
    (``headers`` empty unless ``include_headers``; each entry a tuple of
    ``(name, value)`` pairs).  CORRUPT_MESSAGE when the section does not hold
    exactly ``count`` well-formed records.  A section of same-shaped records
    (:func:`~minikafka.protocol.records.uniform_runs`) is cut by strided slices
    instead of walked record by record.
    """
    runs = uniform_runs(buf, count)
    if runs is not None:
        return decode_uniform(buf, runs, include_headers)
    return walk_records(buf, count, include_headers, where)


def walk_records(buf: bytes, count: int, include_headers: bool, where: str = "batch"):
    """:func:`decode_records` record by record, for a section already known not to be
    made of same-shaped runs."""
    deltas: list[int] = []
    ts_deltas: list[int] = []
    keys: list = []
    values: list = []
    headers: list = []
    add_delta, add_ts, add_key, add_value, add_headers = (
        deltas.append, ts_deltas.append, keys.append, values.append, headers.append)
    tail = varint_tail
    n = len(buf)
    pos = 0
    try:
        for _ in range(count):
            # length
            b = buf[pos]
            pos += 1
            if b >= 0x80:
                b, pos = tail(buf, pos, b)
            end = pos + ((b >> 1) ^ -(b & 1))
            pos += 1  # record attributes
            # timestampDelta (varlong)
            b = buf[pos]
            pos += 1
            if b >= 0x80:
                b, pos = tail(buf, pos, b)
            add_ts((b >> 1) ^ -(b & 1))
            # offsetDelta
            b = buf[pos]
            pos += 1
            if b >= 0x80:
                b, pos = tail(buf, pos, b)
            add_delta((b >> 1) ^ -(b & 1))
            # key
            b = buf[pos]
            pos += 1
            if b >= 0x80:
                b, pos = tail(buf, pos, b)
            if b == 1:
                add_key(None)
            else:
                k = (b >> 1) ^ -(b & 1)
                add_key(buf[pos:pos + k])
                pos += k
            # value
            b = buf[pos]
            pos += 1
            if b >= 0x80:
                b, pos = tail(buf, pos, b)
            if b == 1:
                add_value(None)
            else:
                k = (b >> 1) ^ -(b & 1)
                add_value(buf[pos:pos + k])
                pos += k
            # headers
            b = buf[pos]
            pos += 1
            if b >= 0x80:
                b, pos = tail(buf, pos, b)
            if b == 0:
                if include_headers:
                    add_headers(())
            else:
                hs = []
                for _h in range((b >> 1) ^ -(b & 1)):
                    b = buf[pos]
                    pos += 1
                    if b >= 0x80:
                        b, pos = tail(buf, pos, b)
                    k = (b >> 1) ^ -(b & 1)
                    name = buf[pos:pos + k].decode("utf-8")
                    pos += k
                    b = buf[pos]
                    pos += 1
                    if b >= 0x80:
                        b, pos = tail(buf, pos, b)
                    if b == 1:
                        hs.append((name, None))
                    else:
                        k = (b >> 1) ^ -(b & 1)
                        hs.append((name, buf[pos:pos + k]))
                        pos += k
                if include_headers:
                    add_headers(tuple(hs))
            if pos != end:
                raise CorruptMessageError(f"{where}: a record's fields do not match its declared length")
    except IndexError:
        raise CorruptMessageError(f"{where}: records section ends inside a record") from None
    except UnicodeDecodeError:
        raise CorruptMessageError(f"{where}: a header key is not UTF-8") from None
    if pos != n:
        raise CorruptMessageError(f"{where}: {n - pos} bytes remain after the {count} records the header declares")
    return deltas, ts_deltas, keys, values, headers

