"""Retention: which old segments of a log may go (Kafka's Log.deleteOldSegments).

Pure: the broker passes the time.  Only closed segments (never the active one) that
lie wholly below the high watermark are candidates, and only a prefix of the log is
deleted (the oldest segment first, stopping at the first one that must stay):

* **time** (retention.ms, -1 = forever): a segment whose largest record timestamp is
  more than retention.ms before now;
* **size** (retention.bytes, -1 = unbounded): the oldest segments while the log,
  without them, is still at least retention.bytes;
* **log start** (DeleteRecords, a leader's log start seen by a follower): a segment
  that ends at or below the log start offset.

The new log start offset is the base offset of the first segment kept (or the current
log start, when that is higher).
"""
from __future__ import annotations

from dataclasses import dataclass

from .partition_log import PartitionLog


@dataclass(frozen=True)
class RetentionVerdict:
    """What retention removes from one log: the new log start and why."""

    log_start_offset: int
    segments: int
    bytes: int
    reason: str  # "retention.ms", "retention.bytes" or "log start offset"


def deletable(log: PartitionLog, high_watermark: int, now_ms: int, retention_ms: int,
              retention_bytes: int) -> RetentionVerdict | None:
    """The segments of ``log`` that retention deletes now, or None when none may go."""
    segments = log.segments
    ends = log.segment_ends()
    excess = log.size_bytes - retention_bytes if retention_bytes >= 0 else -1
    count = size = 0
    reasons: list[str] = []
    for i, seg in enumerate(segments[:-1]):  # the active segment stays
        if ends[i] > high_watermark:
            break
        if ends[i] <= log.log_start_offset:
            why = "log start offset"
        elif retention_ms >= 0 and seg.max_timestamp >= 0 and now_ms - seg.max_timestamp > retention_ms:
            why = "retention.ms"
        elif excess >= 0 and excess - size - seg.size_bytes >= 0:
            why = "retention.bytes"
        else:
            break
        count += 1
        size += seg.size_bytes
        if why not in reasons:
            reasons.append(why)
    if not count:
        return None
    return RetentionVerdict(max(log.log_start_offset, ends[count - 1]), count, size, ", ".join(reasons))
