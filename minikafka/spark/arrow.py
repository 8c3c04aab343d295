"""Record batches (the bytes of a fetch answer) to ``pyarrow.RecordBatch`` columns.

A fetch answer is a run of Kafka record batches v2 (``protocol/records/``): a
61-byte header and the records, compressed as a whole when the batch's attributes
name a codec.  Each batch's records section is decompressed if needed and goes
through the one parser of records sections (``parse_section`` in
``protocol/records/section.py``).  A section of same-shaped records (same key and
value sizes, no headers) comes back as runs, cut into columns by numpy as a 2-D array
of records, with no Python per record (``run_arrays`` in
``protocol/records/columns.py``); any other is decoded in one pass into per-column
lists.  The columns are then built by pyarrow and numpy in bulk.
Control batches (transaction markers) carry no records for the source and are skipped.

The Arrow schema is the one Spark expects for the source's schema
(``to_arrow_schema(schema, timezone="UTC")``): Spark checks it before taking the batch.
"""
from __future__ import annotations

from typing import Sequence

import crc32c
import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..errors import CorruptMessageError
from ..protocol.records.batch import COMPRESSION_MASK, CONTROL_MASK, CRC_START, HEADER_SIZE, TIMESTAMP_TYPE_MASK
from ..protocol.records.columns import BatchRef, run_arrays, scan
from ..protocol.records.compression import decompress
from ..protocol.records.section import parse_section

CREATE_TIME = 0  # timestampType: Kafka's CreateTime
LOG_APPEND_TIME = 1  # timestampType: Kafka's LogAppendTime


def spark_schema(include_headers: bool = False) -> StructType:
    """Spark's Kafka source schema (with ``headers`` when ``include_headers``)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark requires of RecordBatches for ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")


class Columns:
    """Accumulates the records of several batches, then builds one ``pyarrow.RecordBatch``."""

    def __init__(self, topic: str, partition: int, schema: pa.Schema, include_headers: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.schema = schema
        self.include_headers = include_headers
        self.keys: list[pa.Array] = []
        self.values: list[pa.Array] = []
        self.offsets: list[np.ndarray] = []
        self.timestamps: list[np.ndarray] = []
        self.ts_types: list[np.ndarray] = []
        self.headers: list[Sequence] = []
        self.rows = 0

    def add(self, data: memoryview, ref: BatchRef, lo: int, hi: int, validate: bool = True) -> None:
        """Add the records of batch ``ref`` with offsets in ``[lo, hi)``."""
        if ref.last_offset < lo or ref.base_offset >= hi or ref.attributes & CONTROL_MASK:
            return
        end = ref.pos + ref.size
        where = f"batch at offset {ref.base_offset} of {self.topic}-{self.partition}"
        if validate:
            actual = crc32c.crc32c(data[ref.pos + CRC_START:end])
            if actual != ref.crc:
                raise CorruptMessageError(f"{where}: CRC-32C mismatch (header {ref.crc:#010x}, content {actual:#010x})")
        section = decompress(ref.attributes & COMPRESSION_MASK, data[ref.pos + HEADER_SIZE:end])
        key_type, value_type = self.schema.field("key").type, self.schema.field("value").type
        parsed = parse_section(section, ref.record_count, where, include_headers=self.include_headers)
        headers: Sequence[Sequence]
        if isinstance(parsed, list):  # same-shaped runs, no headers: each record's list is empty
            arrays = run_arrays(section, parsed)
            offs = arrays.offset_deltas + ref.base_offset
            ts_deltas = arrays.timestamp_deltas
            keys = _concat([_fixed_width_binary(m, r.count, key_type) for r, m in zip(parsed, arrays.keys)])
            values = _concat([_fixed_width_binary(m, r.count, value_type) for r, m in zip(parsed, arrays.values)])
            headers = [()] * len(offs) if self.include_headers else ()
        else:
            assert parsed is not None  # kept: never None
            deltas, ts_list, key_list, value_list, headers = parsed
            if not deltas:
                return
            offs = np.asarray(deltas, dtype=np.int64) + ref.base_offset
            ts_deltas = np.asarray(ts_list, dtype=np.int64)
            keys, values = pa.array(key_list, type=key_type), pa.array(value_list, type=value_type)
        if ref.base_offset < lo or ref.last_offset >= hi:
            i, j = np.searchsorted(offs, [lo, hi])
            i, j = int(i), int(j)
            if i >= j:
                return
            offs, ts_deltas, keys, values = offs[i:j], ts_deltas[i:j], keys.slice(i, j - i), values.slice(i, j - i)
            if self.include_headers:
                headers = headers[i:j]
        self.offsets.append(offs)
        if ref.attributes & TIMESTAMP_TYPE_MASK:  # LogAppendTime: every record has the batch's max
            self.timestamps.append(np.full(len(offs), ref.max_timestamp, dtype=np.int64))
            self.ts_types.append(np.full(len(offs), LOG_APPEND_TIME, dtype=np.int32))
        else:
            self.timestamps.append(ts_deltas + ref.base_timestamp)
            self.ts_types.append(np.full(len(offs), CREATE_TIME, dtype=np.int32))
        self.keys.append(keys)
        self.values.append(values)
        if self.include_headers:
            self.headers.append(headers)
        self.rows += len(offs)

    def build(self) -> pa.RecordBatch | None:
        """The accumulated rows as one RecordBatch (None when there are none); resets."""
        n = self.rows
        if not n:
            return None
        fields = self.schema
        offsets = np.concatenate(self.offsets) if len(self.offsets) > 1 else self.offsets[0]
        ts_ms = np.concatenate(self.timestamps) if len(self.timestamps) > 1 else self.timestamps[0]
        topic_b = self.topic.encode("utf-8")
        topic_offsets = np.arange(0, (n + 1) * len(topic_b), len(topic_b), dtype=np.int32)[: n + 1]
        arrays = [
            _concat(self.keys),
            _concat(self.values),
            pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(topic_offsets), pa.py_buffer(topic_b * n)]),
            pa.array(np.full(n, self.partition, dtype=np.int32), type=pa.int32()),
            pa.array(offsets, type=pa.int64()),
            pa.array(ts_ms * 1000, type=fields.field("timestamp").type),
            pa.array(np.concatenate(self.ts_types) if len(self.ts_types) > 1 else self.ts_types[0], type=pa.int32()),
        ]
        if self.include_headers:
            arrays.append(_headers_array(self.headers, fields.field("headers").type))
        self.keys, self.values, self.offsets, self.timestamps, self.headers = [], [], [], [], []
        self.ts_types = []
        self.rows = 0
        return pa.RecordBatch.from_arrays(arrays, schema=fields)


def _concat(chunks: list[pa.Array]) -> pa.Array:
    return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)


def _fixed_width_binary(matrix: np.ndarray | None, n: int, typ: pa.DataType) -> pa.Array:
    """The rows of a 2-D uint8 array (one fixed-width key or value per row) as a binary
    array of ``n`` entries; ``n`` nulls when ``matrix`` is None."""
    if matrix is None:
        return pa.nulls(n, type=typ)
    length = matrix.shape[1]
    offset_type = np.int64 if pa.types.is_large_binary(typ) else np.int32
    offsets = np.arange(n + 1, dtype=offset_type) * length
    data = np.ascontiguousarray(matrix)
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _headers_array(chunks: Sequence[Sequence], typ: pa.DataType) -> pa.Array:
    """Per-record ``[[name, value], ...]`` lists -> ``list<struct<key, value>>``."""
    list_offsets = [0]
    names: list = []
    values: list = []
    total = 0
    for chunk in chunks:
        for hs in chunk:
            for h in hs:
                names.append(h[0])
                values.append(h[1])
            total += len(hs)
            list_offsets.append(total)
    struct_type = typ.value_type
    struct = pa.StructArray.from_arrays(
        [pa.array(names, type=struct_type.field(0).type), pa.array(values, type=struct_type.field(1).type)],
        fields=[struct_type.field(0), struct_type.field(1)],
    )
    return pa.ListArray.from_arrays(pa.array(list_offsets, type=pa.int32()), struct, type=typ)


def decode(data: bytes, lo: int, hi: int, topic: str, partition: int, schema: pa.Schema,
           include_headers: bool = False, validate: bool = True) -> pa.RecordBatch | None:
    """The records of ``data`` with offsets in ``[lo, hi)`` as one RecordBatch (None if none)."""
    cols = Columns(topic, partition, schema, include_headers)
    view = memoryview(data)
    for ref in scan(view):
        cols.add(view, ref, lo, hi, validate)
    return cols.build()
