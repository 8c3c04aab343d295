"""The offset checks of start-up recovery (Kafka's LogSegment.recover sanity checks).

A batch's CRC covers neither its base offset nor its leader epoch (the leader stamps
them after the producer computed it), so a flipped byte there passes the CRC.  Before
a batch read from a segment file joins the log, :func:`check_recovered_batch` checks
that its offsets fit where it lies: at or above its segment file's base offset, below
the next segment file's, following the batch before it (exactly, unless the log is
compacted: the log cleaner removes whole batches and leaves gaps), and with a last
offset that its record count can fill, and a leader epoch no lower than the batch
before it (a partition's leader epochs only grow along its log).  A batch that fails is
treated like one whose CRC does not match: the log is cut there.

The leader-epoch checkpoint is checked against the log it describes
(:func:`epoch_checkpoint_problem`): its epochs and start offsets strictly grow, and every
batch lies in the entry of the epoch stamped in it, as Kafka's LogLoader rebuilds the
cache from the batches it recovers.  A checkpoint that disagrees is rebuilt from the
batches (:meth:`~minikafka.log.epoch_cache.LeaderEpochCache.from_batches`).
"""
from __future__ import annotations

from typing import Iterable

from ..errors import CorruptMessageError
from ..protocol.records.batch import BatchHeader


def check_recovered_batch(h: BatchHeader, log_end_offset: int, segment_base: int, next_segment_base: int | None,
                          compacted: bool, previous_epoch: int = -1, max_epoch: int | None = None) -> None:
    """Raise CORRUPT_MESSAGE unless batch ``h`` may follow a log ending at
    ``log_end_offset`` in the segment file based at ``segment_base`` (the next file, if
    any, is based at ``next_segment_base``) and whose last batch has leader epoch
    ``previous_epoch`` (-1: none).  ``compacted``: gaps between batches are allowed
    (cleanup.policy includes compact).  ``max_epoch``: the partition's current leader
    epoch, when known (the controller hands each epoch out once, so no leader stamped a
    higher one)."""
    if h.leader_epoch < previous_epoch:
        raise CorruptMessageError(f"batch at offset {h.base_offset} has leader epoch {h.leader_epoch}, below the "
                                  f"previous batch's {previous_epoch} (leader epochs only grow along a log)")
    if max_epoch is not None and h.leader_epoch > max_epoch:
        raise CorruptMessageError(f"batch at offset {h.base_offset} has leader epoch {h.leader_epoch}, above the "
                                  f"partition's current leader epoch {max_epoch}")
    if h.base_offset < 0 or h.last_offset_delta < 0:
        raise CorruptMessageError(f"batch offsets {h.base_offset}..{h.last_offset} are negative")
    if h.record_count < (0 if compacted else 1) or h.last_offset_delta < h.record_count - 1 or (
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


def epoch_checkpoint_problem(entries: list[tuple[int, int]], batches: Iterable[tuple[int, int, int]],
                             log_start_offset: int, log_end_offset: int, max_epoch: int | None = None) -> str | None:
    """Why a leader-epoch checkpoint's ``(epoch, start offset)`` entries cannot describe
    the log, or None when they can.  ``batches``: ``(base offset, last offset, leader
    epoch)`` of the log's batches from its start, in offset order (their epochs already
    checked to grow, :func:`check_recovered_batch`).

    * Epochs are not negative and strictly grow, and none is above ``max_epoch`` (the
      partition's current leader epoch, when known); start offsets strictly grow.
    * Entries past the log end, and all but the last entry below the log start, are what
      a crash between a change of the log and the checkpoint's rewrite leaves (a lost
      unflushed tail, segments deleted by retention): they are not damage, and the
      caller trims them as Kafka's LogLoader does.  What remains must lie in
      [log start, log end].
    * Every batch lies in the entry of its own epoch: the last entry starting at or below
      it (below the log start, the batch holding it), and an entry starting inside the
      log starts where a batch starts.  An entry without a batch of its epoch (a
      leadership that wrote nothing, batches the log cleaner dropped) is allowed.
    """
    for (e1, s1), (e2, s2) in zip(entries, entries[1:]):
        if e2 <= e1:
            return f"epoch {e2} follows epoch {e1}: epochs must grow"
        if s2 <= s1:
            return f"epoch {e2} starts at offset {s2}, not after epoch {e1}'s start {s1}"
    if any(e < 0 or s < 0 for e, s in entries):
        return "a negative epoch or start offset"
    if max_epoch is not None and entries and entries[-1][0] > max_epoch:
        return f"epoch {entries[-1][0]} is above the partition's current leader epoch {max_epoch}"
    kept = [(e, s) for e, s in entries if s <= log_end_offset]
    below = [(e, s) for e, s in kept if s <= log_start_offset]
    kept = ([(below[-1][0], log_start_offset)] if below else []) + [(e, s) for e, s in kept if s > log_start_offset]
    starts = [s for _, s in kept]
    i = -1  # index of the entry covering the current batch
    for base, last, epoch in batches:
        at = max(base, log_start_offset)
        while i + 1 < len(kept) and kept[i + 1][1] <= at:
            i += 1
        if i + 1 < len(kept) and kept[i + 1][1] <= last:
            return (f"epoch {kept[i + 1][0]} starts at offset {kept[i + 1][1]}, inside the batch of offsets "
                    f"{base}..{last}")
        if i < 0:
            return (f"the batch at offset {base} (leader epoch {epoch}) comes before the first entry"
                    + (f" (epoch {kept[0][0]} at offset {kept[0][1]})" if kept else ": there is none"))
        if kept[i][0] != epoch:
            return (f"the batch at offset {base} carries leader epoch {epoch}, but the checkpoint puts it in epoch "
                    f"{kept[i][0]} (from offset {starts[i]})")
    return None
