"""An in-memory partition log of record batches kept as bytes, in segments.

Batches are stored exactly as the leader stamped them.  Offsets are contiguous:
each appended batch must start at the log end offset (LEO).  Reads return whole
batches, starting with the one that contains the requested offset, bounded by
``max_bytes`` (at least one batch is returned, as in Kafka's KIP-74) and by an
optional exclusive offset bound (the high watermark for consumers).

Segments group consecutive batches as Kafka's log segments do, in memory storage
too, so that retention drops whole segments.  A new segment is rolled before a
batch that would take the active one past ``segment_bytes`` (segment.bytes), or
whose largest timestamp is more than ``roll_ms`` (segment.ms) after the active
segment's first batch (Kafka rolls by the record timestamps, not a clock).  The log
start offset may lie inside the first segment (DeleteRecords); batches below it are
kept until their whole segment goes, and reads below it fail with OFFSET_OUT_OF_RANGE.
"""
from __future__ import annotations

import bisect
import zlib
from dataclasses import dataclass
from typing import Iterator

from ..errors import CorruptMessageError, OffsetOutOfRangeError
from ..protocol.records.batch import BatchHeader, TIMESTAMP_TYPE_MASK, section_of, split_batches


@dataclass(frozen=True)
class StoredBatch:
    """A batch in the log: its first and last offset, its leader epoch and its bytes."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    max_timestamp: int
    data: bytes


@dataclass
class Segment:
    """One segment: its base offset, bytes, and the first and largest batch timestamps
    (-1 while empty).  It ends where the next one starts (the last ends at the LEO)."""

    base_offset: int
    size_bytes: int = 0
    first_timestamp: int = -1
    max_timestamp: int = -1

    def add(self, batch: StoredBatch) -> None:
        if not self.size_bytes:
            self.first_timestamp = batch.max_timestamp
        self.size_bytes += len(batch.data)
        self.max_timestamp = max(self.max_timestamp, batch.max_timestamp)


NO_LIMIT = -1


class PartitionLog:
    """The records of one replica.  ``log_end_offset`` is the offset the next record gets.

    ``segment_bytes`` and ``roll_ms`` (the topic's segment.bytes and segment.ms, set by
    the broker) decide where new segments start; ``NO_LIMIT`` turns a rule off."""

    def __init__(self, log_start_offset: int = 0, segment_bytes: int = NO_LIMIT, roll_ms: int = NO_LIMIT) -> None:
        self._bases: list[int] = []
        self._batches: list[StoredBatch] = []
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_start_offset
        self.size_bytes = 0
        self.segment_bytes = segment_bytes
        self.roll_ms = roll_ms
        self.segments: list[Segment] = [Segment(log_start_offset)]
        self.cleaned_upto = log_start_offset  # the log cleaner's first dirty offset
        # (timestamp, offset) of the newest record of an active segment dropped because the
        # log start reached the LEO, which Kafka would still hold (see advance_log_start)
        self.emptied_max_timestamp: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self._batches)

    def _should_roll(self, size: int, max_timestamp: int) -> bool:
        active = self.segments[-1]
        if not active.size_bytes:
            return False
        if self.segment_bytes >= 0 and active.size_bytes + size > self.segment_bytes:
            return True
        return self.roll_ms >= 0 and max_timestamp - active.first_timestamp > self.roll_ms

    def append(self, header: BatchHeader, data: bytes, new_segment: bool = False, allow_gap: bool = False,
               segment_base: int | None = None) -> StoredBatch:
        """Append one batch whose base offset must equal the LEO (with ``allow_gap``, be at
        least the LEO: a compacted log read by a follower or from disk has gaps).  It
        starts a new segment when the roll rules say so, or when ``new_segment`` (a
        segment file being loaded; ``segment_base`` is the file's base offset)."""
        if header.base_offset != self.log_end_offset and not (allow_gap and header.base_offset > self.log_end_offset):
            raise CorruptMessageError(
                f"batch base offset {header.base_offset} does not follow the log end offset {self.log_end_offset}")
        batch = StoredBatch(header.base_offset, header.last_offset, header.leader_epoch, header.max_timestamp, data)
        if new_segment and (self.segments[-1].size_bytes or segment_base is not None
                            and segment_base != self.segments[-1].base_offset):
            base = batch.base_offset if segment_base is None else min(segment_base, batch.base_offset)
            self.segments.append(Segment(max(base, self.log_end_offset)))
        elif self._should_roll(len(data), header.max_timestamp):
            self.segments.append(Segment(batch.base_offset))
        self._bases.append(batch.base_offset)
        self._batches.append(batch)
        self.segments[-1].add(batch)
        self.log_end_offset = batch.last_offset + 1
        self.size_bytes += len(data)
        return batch

    def replace_head(self, count: int, segments: list[tuple[int, list[StoredBatch]]]) -> None:
        """Replace the first ``count`` segments with ``segments`` (``(base offset, batches)``
        pairs covering the same offsets, as the log cleaner rewrote them).  Offsets and
        the LEO do not change; batches may leave gaps."""
        end = self.segments[count].base_offset if count < len(self.segments) else self.log_end_offset
        cut = bisect.bisect_left(self._bases, end)
        new_batches = [b for _, batches in segments for b in batches]
        new_segments = []
        for base, batches in segments:
            seg = Segment(base)
            for b in batches:
                seg.add(b)
            new_segments.append(seg)
        self.size_bytes += sum(s.size_bytes for s in new_segments) - sum(s.size_bytes for s in self.segments[:count])
        self._batches[:cut] = new_batches
        self._bases[:cut] = [b.base_offset for b in new_batches]
        self.segments[:count] = new_segments

    def segment_base_of(self, offset: int) -> int:
        """The base offset of the segment that holds ``offset`` (the first segment's for an
        offset below it)."""
        for seg in reversed(self.segments):  # appends are at the tail: one or two steps
            if seg.base_offset <= offset:
                return seg.base_offset
        return self.segments[0].base_offset

    def segment_ends(self) -> list[int]:
        """The exclusive end offset of each segment (the next one's base; the LEO for the last)."""
        return [s.base_offset for s in self.segments[1:]] + [self.log_end_offset]

    def advance_log_start(self, offset: int) -> list[Segment]:
        """Move the log start offset up to ``offset`` (never down, never past the LEO) and
        drop the segments that end at or below it; returns the dropped segments.

        When the active segment goes too (the new start is the LEO), the log restarts
        empty there, but remembers the newest record of that segment
        (:attr:`emptied_max_timestamp`): Kafka keeps an active segment whatever the log
        start, and its max-timestamp ListOffsets still finds that record."""
        offset = min(offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return []
        self.log_start_offset = offset
        ends = self.segment_ends()
        n = 0
        while n < len(self.segments) - 1 and ends[n] <= offset:
            n += 1
        if n == len(self.segments) - 1 and ends[-1] <= offset and self.segments[-1].size_bytes:
            # the active segment is wholly below the new start too: restart the log there
            self.emptied_max_timestamp = _max_stamp(self.batches_from(self.segments[-1].base_offset),
                                                    self.emptied_max_timestamp)
            dropped = list(self.segments)
            self._batches.clear()
            self._bases.clear()
            self.size_bytes = 0
            self.segments = [Segment(offset)]
            return dropped
        if n:
            self.emptied_max_timestamp = None  # Kafka's retention has deleted that segment by now
        dropped = self.segments[:n]
        if dropped:
            cut = bisect.bisect_left(self._bases, self.segments[n].base_offset)
            self.size_bytes -= sum(s.size_bytes for s in dropped)
            del self._batches[:cut]
            del self._bases[:cut]
            del self.segments[:n]
        return dropped

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
        ``upto`` whose timestamp is >= ``timestamp``, or None when there is none.  A
        transaction marker counts as a record, as in Kafka (it carries the time the
        coordinator ended the transaction)."""
        for batch in self.batches_from(self.log_start_offset):
            if batch.base_offset >= upto:
                return None
            if batch.max_timestamp < timestamp:
                continue
            for ts, offset in _stamps(batch.data):
                if offset >= upto:
                    return None
                if ts >= timestamp and offset >= self.log_start_offset:
                    return ts, offset
        return None

    def offset_of_max_timestamp(self, upto: int) -> tuple[int, int] | None:
        """Kafka's ListOffsets -3 (KIP-734): ``(timestamp, offset)`` of the record with the
        largest timestamp in the whole stored log (the first such record on ties;
        transaction markers included), or None when the log holds none or that record is
        at or above ``upto`` (the HW, or the LSO under read_committed).

        As in Kafka, the search covers the records still stored below the log start
        (DeleteRecords), the newest one of a segment emptied by the log start included
        (:attr:`emptied_max_timestamp`), and it is not narrowed to the records below
        ``upto``: a largest timestamp past the bound gives no answer at all."""
        best = _max_stamp(iter(self._batches), self.emptied_max_timestamp)
        return best if best is not None and best[1] < upto else None

    def truncate_to(self, offset: int) -> int:
        """Remove every record at ``offset`` and above; return the new LEO.

        A batch that straddles ``offset`` is removed whole (batches are atomic), so the
        LEO may end below ``offset``, as in Kafka.
        """
        if offset >= self.log_end_offset:
            return self.log_end_offset
        if self.emptied_max_timestamp is not None and self.emptied_max_timestamp[1] >= offset:
            self.emptied_max_timestamp = None
        i = self._index_of(max(offset, self.log_start_offset))
        for b in self._batches[i:]:
            self.size_bytes -= len(b.data)
        del self._batches[i:]
        del self._bases[i:]
        self.log_end_offset = self._batches[-1].last_offset + 1 if self._batches else self.log_start_offset
        if self.log_end_offset < self.log_start_offset:  # a cut below the start empties the log
            self.log_start_offset = self.log_end_offset
        self._resegment_tail()
        return self.log_end_offset

    def _resegment_tail(self) -> None:
        """After a truncation: drop segments that start past the LEO and recount the last."""
        while len(self.segments) > 1 and self.segments[-1].base_offset >= self.log_end_offset:
            self.segments.pop()
        last = self.segments[-1]
        if last.base_offset > self.log_end_offset:
            last.base_offset = self.log_end_offset
        fresh = Segment(last.base_offset)
        for b in self._batches[bisect.bisect_left(self._bases, last.base_offset):]:
            fresh.add(b)
        self.segments[-1] = fresh

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and restart the log at ``offset`` (a follower far behind a leader)."""
        self.emptied_max_timestamp = None
        self._batches.clear()
        self._bases.clear()
        self.size_bytes = 0
        self.log_start_offset = offset
        self.log_end_offset = offset
        self.segments = [Segment(offset)]

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


def _max_stamp(batches: Iterator[StoredBatch], best: tuple[int, int] | None) -> tuple[int, int] | None:
    """``(timestamp, offset)`` of the first record with the largest timestamp among
    ``batches`` and ``best`` (an earlier record, which wins ties)."""
    for batch in batches:
        if best is not None and batch.max_timestamp <= best[0]:
            continue
        for ts, offset in _stamps(batch.data):
            if best is None or ts > best[0]:
                best = (ts, offset)
    return best


def _stamps(data: bytes) -> Iterator[tuple[int, int]]:
    """``(timestamp, offset)`` of every record in ``data``'s batches, control records
    (transaction markers) included, in offset order."""
    for h, raw in split_batches(data, validate=False):
        deltas, ts_deltas = section_of(raw, h)[:2]
        for delta, ts_delta in zip(deltas, ts_deltas):
            yield (h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else h.base_timestamp + ts_delta,
                   h.base_offset + delta)
