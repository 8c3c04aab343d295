"""One fetched record batch, decoded only when asked: what ``poll_batches()`` returns.

A fetch answer holds whole record batches as the leader stored them.  The consumer keeps
each batch as its bytes plus its header (Kafka's ``RecordBatch``), and decodes it only
when records are asked for: ``poll()`` decodes the batches it hands out, and
``poll_batches()`` hands out the batches themselves.  A batch then offers

* ``raw``: the batch's bytes as stored (header, CRC and records section, compressed as
  produced), for whoever stores or forwards batches without looking inside;
* ``records()``: :class:`ConsumerRecord` objects, as ``poll()`` returns them;
* ``values()`` and ``keys()``: plain lists, decoded column-wise in one pass;
* ``to_arrow()``: a ``pyarrow.RecordBatch`` (offset, timestamp, key, value, and headers
  on request), built in bulk (pyarrow must be installed).

A batch fetched from an offset inside it (the position was in the middle of a batch)
still carries the whole batch in ``raw``; every other view starts at ``first_offset``.
"""
from __future__ import annotations

from bisect import bisect_left
from operator import attrgetter
from typing import Any

from ..protocol.records.batch import COMPRESSION_MASK, HEADER_SIZE, TIMESTAMP_TYPE_MASK, BatchHeader, batch_records
from ..protocol.records.compression import decompress
from ..protocol.records.section import decode_section
from .types import ConsumerRecord, consumer_record

_offset_of = attrgetter("offset")


class ConsumerBatch:
    """One record batch of a partition as fetched (see the module docstring)."""

    __slots__ = ("topic", "partition", "header", "raw", "first_offset", "aborted", "_records")

    def __init__(self, topic: str, partition: int, header: BatchHeader, raw: bytes | memoryview,
                 first_offset: int, aborted: bool = False) -> None:
        self.topic = topic
        self.partition = partition
        self.header = header
        self.raw = raw
        self.first_offset = first_offset  # the first record handed out (>= base_offset)
        # a read_committed consumer's batch of an aborted transaction: no records either
        self.aborted = aborted
        self._records: list[ConsumerRecord] | None = None

    # -- the header's facts ---------------------------------------------------------------
    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        """The batch's last offset (a compacted batch keeps it although that record is gone)."""
        return self.header.last_offset

    @property
    def next_offset(self) -> int:
        """The consumer's position after this batch."""
        return self.header.next_offset

    @property
    def leader_epoch(self) -> int:
        return self.header.leader_epoch

    @property
    def is_control(self) -> bool:
        """A transaction marker: no records for applications."""
        return self.header.is_control

    @property
    def hidden(self) -> bool:
        """No records for applications: a transaction marker, or (read_committed) a batch
        of an aborted transaction.  The position still moves past it."""
        return self.aborted or self.header.is_control

    @property
    def compression(self) -> str:
        return self.header.compression

    def __len__(self) -> int:
        """The number of records handed out (from ``first_offset`` on)."""
        if self.hidden:
            return 0
        if self.first_offset <= self.header.base_offset:
            return self.header.record_count
        return len(self.records())

    def __repr__(self) -> str:
        return (f"ConsumerBatch({self.topic}-{self.partition}, offsets {self.first_offset}..{self.last_offset}, "
                f"{self.header.record_count} records, {len(self.raw)} bytes, epoch {self.leader_epoch})")

    # -- decoded views -------------------------------------------------------------------------
    def records(self) -> list[ConsumerRecord]:
        """The records from ``first_offset`` on, as ``poll()`` returns them (decoded once)."""
        if self._records is None and self.aborted:
            self._records = []
        if self._records is None:
            topic, partition, first = self.topic, self.partition, self.first_offset
            ts_type = "LogAppendTime" if self.header.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"
            self._records = [consumer_record(topic, partition, off, key, value, ts, headers, ts_type)
                             for off, ts, key, value, headers in batch_records(self.header, self.raw)
                             if off >= first]
        return self._records

    def _advance(self, offset: int) -> None:
        """``poll(max_records=...)`` handed out the records before ``offset``."""
        recs = self.records()
        self._records = recs[bisect_left(recs, offset, key=_offset_of):]
        self.first_offset = offset

    def _columns(self, include_headers: bool = False) -> tuple[list[int], list[int], list, list, list]:
        """``(offsets, timestamps, keys, values, headers)`` from ``first_offset`` on."""
        h = self.header
        if self.hidden:
            return [], [], [], [], []
        section = decompress(h.attributes & COMPRESSION_MASK, memoryview(self.raw)[HEADER_SIZE:h.size])
        deltas, ts_deltas, keys, values, headers = decode_section(
            section, h.record_count, f"batch at offset {h.base_offset} of {self.topic}-{self.partition}", include_headers)
        base = h.base_offset
        offsets = [base + d for d in deltas]
        if h.attributes & TIMESTAMP_TYPE_MASK:  # LogAppendTime: the batch's max for every record
            timestamps = [h.max_timestamp] * len(deltas)
        else:
            base_ts = h.base_timestamp
            timestamps = [base_ts + d for d in ts_deltas]
        if self.first_offset > base:
            i = bisect_left(offsets, self.first_offset)
            offsets, timestamps, keys, values = offsets[i:], timestamps[i:], keys[i:], values[i:]
            headers = headers[i:]
        return offsets, timestamps, keys, values, headers

    def values(self) -> list[bytes | None]:
        """The records' values, in offset order, decoded in one pass."""
        return self._columns()[3]

    def keys(self) -> list[bytes | None]:
        """The records' keys, in offset order, decoded in one pass."""
        return self._columns()[2]

    def to_arrow(self, include_headers: bool = False) -> Any:
        """A ``pyarrow.RecordBatch`` with columns ``offset`` (int64), ``timestamp``
        (timestamp[ms, UTC]), ``key`` and ``value`` (binary) and, when
        ``include_headers``, ``headers`` (list<struct<key: string, value: binary>>)."""
        import pyarrow as pa  # an optional dependency: only this method needs it

        offsets, timestamps, keys, values, headers = self._columns(include_headers)
        arrays = [pa.array(offsets, type=pa.int64()), pa.array(timestamps, type=pa.timestamp("ms", tz="UTC")),
                  pa.array(keys, type=pa.binary()), pa.array(values, type=pa.binary())]
        names = ["offset", "timestamp", "key", "value"]
        if include_headers:
            header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
            arrays.append(pa.array([[{"key": k, "value": v} for k, v in hs] for hs in headers], type=header_type))
            names.append("headers")
        return pa.RecordBatch.from_arrays(arrays, names=names)
