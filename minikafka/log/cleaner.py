"""Compaction: what the log cleaner keeps of a compacted log (Kafka's LogCleaner).

Pure: the broker passes the time and applies the plan to memory and disk.  A topic
with ``cleanup.policy=compact`` keeps, for every key, at least its last record:

* **What is cleaned.** Only closed segments wholly below the high watermark (the
  active segment and uncommitted records are never touched), and only segments whose
  newest record is at least ``min.compaction.lag.ms`` old.  That prefix of the log is
  the *cleanable* part; its end is the *first uncleanable offset*.
* **When.** The part of the cleanable section past the last cleaning (the *dirty*
  part) must be at least ``min.cleanable.dirty.ratio`` of the cleanable bytes.
* **What goes.** Every record of the cleanable part whose key has a later record in
  the cleanable part.  A **tombstone** (null value) stays while its batch's newest
  timestamp is less than ``delete.retention.ms`` old, so consumers that read the log
  slowly still see the delete; then it goes too.  Records without a key (written
  before the topic became compacted) go.  Transaction markers (control batches) stay,
  and the records of aborted transactions go first: they never count as a key's last
  record.  Nothing at or past the last stable offset is cleaned (an open transaction
  may still abort).
* **Offsets never move.** A rewritten batch keeps its base offset and its last offset;
  a batch with nothing left is dropped, leaving a gap in the offsets (readers skip it,
  as with Kafka), except the last batch of a producer that is still active (its state
  is in the partition's producer state): that one stays as an empty batch, a header
  with no records, so the producer's epoch and last sequence stay in the log for a
  replica that rebuilds its producer state from it (Kafka's ``RETAIN_EMPTY``).  Segments whose cleaned sizes fit in ``segment.bytes`` together are
  merged, each group keeping the base offset of its first segment (Kafka's
  groupSegmentsBySize), so a compacted log does not collect empty segments.

Simplified from Kafka, and documented in docs/retention.md: the key map covers the
whole cleanable part (Kafka maps only the dirty part, an optimisation with the same
result once the clean part has been cleaned); tombstone age is measured by record
timestamps rather than by when the segment was cleaned; there is no
cleaner-offset-checkpoint (after a restart the whole log counts as dirty once).

``max.compaction.lag.ms`` (KIP-354): a log whose oldest dirty cleanable segment has a
first record older than it is cleaned whatever its dirty ratio; the broker also rolls a
compacted log's active segment by it when it is sooner than segment.ms, as Kafka does.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..protocol.records.batch import iter_records, read_header, rewrite_batch
from .partition_log import PartitionLog, StoredBatch


@dataclass(frozen=True)
class CleanedSegment:
    """One segment after cleaning: its base offset and the batches it keeps."""

    base_offset: int
    batches: tuple[StoredBatch, ...]

    @property
    def size_bytes(self) -> int:
        return sum(len(b.data) for b in self.batches)


@dataclass(frozen=True)
class CleanPlan:
    """What one cleaning pass does to a log: the segments that replace its first
    ``replaced`` segments, and the figures for the event line and metrics."""

    segments: tuple[CleanedSegment, ...]
    replaced: int
    clean_upto: int  # the first uncleanable offset: the next pass's dirty part starts here
    records_removed: int
    tombstones_removed: int
    bytes_before: int
    bytes_after: int


def first_uncleanable_segment(log: PartitionLog, high_watermark: int, now_ms: int, min_compaction_lag_ms: int) -> int:
    """How many leading segments may be cleaned: closed, wholly below the HW, and
    (with ``min_compaction_lag_ms`` > 0) with a newest record at least that old."""
    ends = log.segment_ends()
    n = 0
    for i, seg in enumerate(log.segments[:-1]):
        if ends[i] > high_watermark:
            break
        if min_compaction_lag_ms > 0 and seg.max_timestamp >= 0 and now_ms - seg.max_timestamp < min_compaction_lag_ms:
            break
        n = i + 1
    return n


def dirty_ratio(log: PartitionLog, cleanable: int, clean_upto: int) -> float:
    """The share of the cleanable segments' bytes that lies past ``clean_upto``."""
    total = dirty = 0
    ends = log.segment_ends()
    for i, seg in enumerate(log.segments[:cleanable]):
        total += seg.size_bytes
        if ends[i] > clean_upto:
            dirty += seg.size_bytes
    return dirty / total if total else 0.0


@dataclass(frozen=True)
class CleanInput:
    """What one cleaning pass works on: a snapshot of the cleanable segments (their base
    offsets and sizes) and of their batches, taken from the live log.  Stored batches are
    immutable, so :func:`compute` may run on this away from the log (in a thread) while
    the log takes appends; :meth:`still_matches` tells whether the log's head is still
    the one snapshotted before the result is applied."""

    bases: tuple[int, ...]
    sizes: tuple[int, ...]
    batches: tuple[StoredBatch, ...]
    end: int  # the first uncleanable offset
    segment_bytes: int
    # aborted transactions as (producer id, first offset, marker offset)
    aborted: tuple[tuple[int, int, int], ...] = ()
    # the active producers' last data batches as (producer id, its last offset): kept,
    # empty if nothing of it is left
    last_batches: frozenset[tuple[int, int]] = frozenset()

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        """Whether the batch of ``producer_id`` at ``offset`` belongs to an aborted transaction."""
        return producer_id >= 0 and any(pid == producer_id and first <= offset < last
                                        for pid, first, last in self.aborted)

    def still_matches(self, log: PartitionLog) -> bool:
        n = len(self.bases)
        if len(log.segments) <= n or tuple(s.base_offset for s in log.segments[:n]) != self.bases:
            return False
        if tuple(s.size_bytes for s in log.segments[:n]) != self.sizes:
            return False
        current = [b for b in log.batches_from(self.bases[0]) if b.base_offset < self.end]
        return len(current) == len(self.batches) and all(a is b for a, b in zip(current, self.batches))


def overdue(log: PartitionLog, cleanable: int, clean_upto: int, now_ms: int, max_compaction_lag_ms: int | None) -> bool:
    """True when the first dirty segment among the ``cleanable`` ones has a first record
    more than ``max_compaction_lag_ms`` old (Kafka's max.compaction.lag.ms, KIP-354)."""
    if max_compaction_lag_ms is None:
        return False
    ends = log.segment_ends()
    for i, seg in enumerate(log.segments[:cleanable]):
        if ends[i] > clean_upto:
            return seg.first_timestamp >= 0 and now_ms - seg.first_timestamp > max_compaction_lag_ms
    return False


def select(log: PartitionLog, high_watermark: int, now_ms: int, *, clean_upto: int, min_cleanable_ratio: float,
           min_compaction_lag_ms: int = 0, max_compaction_lag_ms: int | None = None,
           aborted: tuple[tuple[int, int, int], ...] = (),
           last_batches: frozenset[tuple[int, int]] = frozenset()) -> CleanInput | None:
    """The cleaning pass due on ``log`` now (cheap: no record is decoded), or None when
    nothing is cleanable or the dirty ratio is below ``min_cleanable_ratio`` and no dirty
    segment is older than ``max_compaction_lag_ms``.  ``high_watermark`` is the bound of
    what may be cleaned: the caller passes its last stable offset.  ``aborted`` lists the
    log's aborted transactions as ``(producer id, first offset, marker offset)``;
    ``last_batches`` the active producers' last data batches as ``(producer id, last
    offset)``."""
    cleanable = first_uncleanable_segment(log, high_watermark, now_ms, min_compaction_lag_ms)
    if not cleanable:
        return None
    end = log.segment_ends()[cleanable - 1]
    if end <= clean_upto:
        return None
    if dirty_ratio(log, cleanable, clean_upto) < min_cleanable_ratio and \
            not overdue(log, cleanable, clean_upto, now_ms, max_compaction_lag_ms):
        return None
    segments = log.segments[:cleanable]
    batches = tuple(b for b in log.batches_from(segments[0].base_offset) if b.base_offset < end)
    return CleanInput(tuple(s.base_offset for s in segments), tuple(s.size_bytes for s in segments), batches, end,
                      log.segment_bytes, tuple(a for a in aborted if a[1] < end),
                      frozenset(lb for lb in last_batches if lb[1] < end))


def compute(inp: CleanInput, now_ms: int, delete_retention_ms: int) -> CleanPlan:
    """The cleaned segments for ``inp`` (decodes every record once; touches no log)."""
    batches = inp.batches
    # each key's last record in the cleanable part; which offsets hold tombstones
    last: dict[bytes, int] = {}
    tombstone_at: set[int] = set()
    headers = [read_header(b.data) for b in batches]
    for b, h in zip(batches, headers):
        if inp.is_aborted(h.producer_id, h.base_offset):
            continue
        for r in iter_records(b.data, validate=False):
            if r.key is not None:
                last[bytes(r.key)] = r.offset
                if r.value is None:
                    tombstone_at.add(r.offset)
    keyed_last = set(last.values())
    removed = tombstones = 0
    bases = list(inp.bases)
    cleanable = len(bases)
    out_segments: list[list[StoredBatch]] = [[] for _ in bases]
    seg = 0
    for b, h in zip(batches, headers):
        while seg + 1 < cleanable and b.base_offset >= bases[seg + 1]:
            seg += 1
        if h.is_control:
            out_segments[seg].append(b)  # a transaction marker stays
            continue
        expired = now_ms - b.max_timestamp > delete_retention_ms
        dropped: list[int] = []

        def keep(offset: int) -> bool:
            kept = offset in keyed_last and not (expired and offset in tombstone_at)
            if not kept:
                dropped.append(offset)
            return kept

        data = rewrite_batch(h, b.data, keep, keep_empty=(h.producer_id, b.last_offset) in inp.last_batches)
        removed += len(dropped)
        tombstones += sum(1 for off in dropped if off in tombstone_at)
        if data is None:
            continue
        out_segments[seg].append(b if not dropped else StoredBatch(
            b.base_offset, b.last_offset, b.leader_epoch, read_header(data).max_timestamp, data))
    groups = _group(bases, out_segments, inp.segment_bytes)
    return CleanPlan(tuple(groups), cleanable, inp.end, removed, tombstones, sum(inp.sizes),
                     sum(g.size_bytes for g in groups))


def plan(log: PartitionLog, high_watermark: int, now_ms: int, *, clean_upto: int, delete_retention_ms: int,
         min_cleanable_ratio: float, min_compaction_lag_ms: int = 0,
         max_compaction_lag_ms: int | None = None) -> CleanPlan | None:
    """:func:`select` then :func:`compute`, in one step."""
    inp = select(log, high_watermark, now_ms, clean_upto=clean_upto, min_cleanable_ratio=min_cleanable_ratio,
                 min_compaction_lag_ms=min_compaction_lag_ms, max_compaction_lag_ms=max_compaction_lag_ms)
    return None if inp is None else compute(inp, now_ms, delete_retention_ms)


def _group(bases: list[int], segments: list[list[StoredBatch]], segment_bytes: int) -> list[CleanedSegment]:
    """Merge consecutive cleaned segments while their sizes fit in ``segment_bytes``."""
    groups: list[CleanedSegment] = []
    size = 0
    for base, batches in zip(bases, segments):
        n = sum(len(b.data) for b in batches)
        if groups and (segment_bytes < 0 or size + n <= segment_bytes):
            groups[-1] = CleanedSegment(groups[-1].base_offset, groups[-1].batches + tuple(batches))
            size += n
        else:
            groups.append(CleanedSegment(base, tuple(batches)))
            size = n
    return groups

