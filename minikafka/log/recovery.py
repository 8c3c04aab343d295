"""The offset checks of start-up recovery (Kafka's LogSegment.recover sanity checks).

A batch's CRC covers neither its base offset nor its leader epoch (the leader stamps
them after the producer computed it), so a flipped byte there passes the CRC.  Before
a batch read from a segment file joins the log, :func:`check_recovered_batch` checks
that its offsets fit where it lies: at or above its segment file's base offset, below
the next segment file's, following the batch before it (exactly, unless the log is
compacted: the log cleaner removes whole batches and leaves gaps), and with a last
offset that its record count can fill.  A batch that fails is treated like one whose
CRC does not match: the log is cut there.
"""
from __future__ import annotations

from ..errors import CorruptMessageError
from ..protocol.records.batch import BatchHeader


def check_recovered_batch(h: BatchHeader, log_end_offset: int, segment_base: int, next_segment_base: int | None,
                          compacted: bool) -> None:
    """Raise CORRUPT_MESSAGE unless batch ``h`` may follow a log ending at
    ``log_end_offset`` in the segment file based at ``segment_base`` (the next file, if
    any, is based at ``next_segment_base``).  ``compacted``: gaps between batches are
    allowed (cleanup.policy includes compact)."""
    if h.base_offset < 0 or h.last_offset_delta < 0:
        raise CorruptMessageError(f"batch offsets {h.base_offset}..{h.last_offset} are negative")
    if h.record_count < 1 or h.last_offset_delta < h.record_count - 1 or (
            not compacted and h.last_offset_delta != h.record_count - 1):
        raise CorruptMessageError(f"batch at offset {h.base_offset}: last offset {h.last_offset} does not match "
                                  f"its {h.record_count} records")
    if h.base_offset < segment_base:
        raise CorruptMessageError(f"batch base offset {h.base_offset} is below its segment's base offset "
                                  f"{segment_base}")
    if next_segment_base is not None and h.last_offset >= next_segment_base:
        raise CorruptMessageError(f"batch at offset {h.base_offset} ends at {h.last_offset}, past the next "
                                  f"segment's base offset {next_segment_base}")
    if h.base_offset < log_end_offset or (h.base_offset > log_end_offset and not compacted):
        raise CorruptMessageError(f"batch base offset {h.base_offset} does not follow the log end offset "
                                  f"{log_end_offset}" + ("" if compacted else " (the topic is not compacted: "
                                                                              "its offsets are contiguous)"))
