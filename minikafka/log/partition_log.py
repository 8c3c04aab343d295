"""An in-memory partition log of record batches kept as bytes.

Batches are stored exactly as the leader stamped them.  Offsets are contiguous:
each appended batch must start at the log end offset (LEO).  Reads return whole
batches, starting with the one that contains the requested offset, bounded by
``max_bytes`` (at least one batch is returned, as in Kafka's KIP-74) and by an
optional exclusive offset bound (the high watermark for consumers).
"""
from __future__ import annotations

import bisect
import zlib
from dataclasses import dataclass
from typing import Iterator

from ..errors import CorruptMessageError, OffsetOutOfRangeError
from ..protocol.records import BatchHeader, iter_records


@dataclass(frozen=True)
class StoredBatch:
    """A batch in the log: its first and last offset, its leader epoch and its bytes."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    max_timestamp: int
    data: bytes


class PartitionLog:
    """The records of one replica.  ``log_end_offset`` is the offset the next record gets."""

    def __init__(self, log_start_offset: int = 0) -> None:
        self._bases: list[int] = []
        self._batches: list[StoredBatch] = []
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_start_offset
        self.size_bytes = 0

    def __len__(self) -> int:
        return len(self._batches)

    def append(self, header: BatchHeader, data: bytes) -> StoredBatch:
        """Append one batch whose base offset must equal the LEO."""
        if header.base_offset != self.log_end_offset:
            raise CorruptMessageError(
                f"batch base offset {header.base_offset} does not follow the log end offset {self.log_end_offset}")
        batch = StoredBatch(header.base_offset, header.last_offset, header.leader_epoch, header.max_timestamp, data)
        self._bases.append(batch.base_offset)
        self._batches.append(batch)
        self.log_end_offset = batch.last_offset + 1
        self.size_bytes += len(data)
        return batch

    def _index_of(self, offset: int) -> int:
        """Index of the batch containing ``offset`` (or the first after it)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        if self._batches[i].last_offset < offset:
            return i + 1
        return i

    def read(self, offset: int, max_bytes: int, upto: int | None = None) -> bytes:
        """Concatenated batches from the one holding ``offset``.

        Only batches whose last offset is below ``upto`` (exclusive) are returned.
        Raises OFFSET_OUT_OF_RANGE if ``offset`` is before the log start or past the LEO.
        """
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside the log range [{self.log_start_offset}, {self.log_end_offset}]")
        bound = self.log_end_offset if upto is None else min(upto, self.log_end_offset)
        out: list[bytes] = []
        size = 0
        for batch in self.batches_from(offset):
            if batch.last_offset >= bound:
                break
            if out and size + len(batch.data) > max_bytes:
                break
            out.append(batch.data)
            size += len(batch.data)
        return b"".join(out)

    def batches_from(self, offset: int) -> Iterator[StoredBatch]:
        """Stored batches from the one containing ``offset`` on."""
        for i in range(self._index_of(offset), len(self._batches)):
            yield self._batches[i]

    def offset_for_timestamp(self, timestamp: int, upto: int) -> tuple[int, int] | None:
        """Kafka's ListOffsets by time: ``(timestamp, offset)`` of the first record below
        ``upto`` whose timestamp is >= ``timestamp``, or None when there is none."""
        for batch in self.batches_from(self.log_start_offset):
            if batch.base_offset >= upto:
                return None
            if batch.max_timestamp < timestamp:
                continue
            for r in iter_records(batch.data, validate=False):
                if r.offset >= upto:
                    return None
                if r.timestamp >= timestamp and r.offset >= self.log_start_offset:
                    return r.timestamp, r.offset
        return None

    def offset_of_max_timestamp(self, upto: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the record with the largest timestamp below ``upto``
        (the first such record on ties), or None for an empty range (ListOffsets -3)."""
        best: tuple[int, int] | None = None
        for batch in self.batches_from(self.log_start_offset):
            if batch.base_offset >= upto:
                break
            if best is not None and batch.max_timestamp <= best[0]:
                continue
            for r in iter_records(batch.data, validate=False):
                if r.offset < upto and (best is None or r.timestamp > best[0]):
                    best = (r.timestamp, r.offset)
        return best

    def truncate_to(self, offset: int) -> int:
        """Remove every record at ``offset`` and above; return the new LEO.

        A batch that straddles ``offset`` is removed whole (batches are atomic), so the
        LEO may end below ``offset``, as in Kafka.
        """
        if offset >= self.log_end_offset:
            return self.log_end_offset
        i = self._index_of(max(offset, self.log_start_offset))
        for b in self._batches[i:]:
            self.size_bytes -= len(b.data)
        del self._batches[i:]
        del self._bases[i:]
        self.log_end_offset = self._batches[-1].last_offset + 1 if self._batches else self.log_start_offset
        return self.log_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and restart the log at ``offset`` (a follower far behind a leader)."""
        self._batches.clear()
        self._bases.clear()
        self.size_bytes = 0
        self.log_start_offset = offset
        self.log_end_offset = offset

    def checksum(self, upto: int) -> int:
        """CRC-32 over the bytes of every batch whose last offset is below ``upto``.

        Replicas that hold the same batches up to ``upto`` have the same checksum,
        whatever happened to them after that offset.
        """
        crc = 0
        for batch in self._batches:
            if batch.last_offset >= upto:
                break
            crc = zlib.crc32(batch.data, crc)
        return crc

    def batch_boundary_at_or_below(self, offset: int) -> int:
        """The largest batch boundary (a base offset or the LEO) that is <= ``offset``."""
        if offset >= self.log_end_offset:
            return self.log_end_offset
        i = self._index_of(offset)
        if i < len(self._batches) and self._batches[i].base_offset <= offset:
            return self._batches[i].base_offset
        return offset
