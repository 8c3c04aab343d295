"""The leader-epoch cache: (epoch, start offset) pairs of one replica (KIP-101).

A new leader records (its epoch, its LEO) before any write of that epoch; a
follower records (epoch, base offset) when it appends the first batch of a newer
epoch.  :meth:`end_offset_for` answers OffsetsForLeaderEpoch with the KIP-279
refinement: the answer names the epoch it is for.
"""
from __future__ import annotations

import bisect
from typing import Iterable

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    """Entries sorted by epoch, with strictly increasing epochs and non-decreasing offsets."""

    def __init__(self, entries: list[tuple[int, int]] | None = None) -> None:
        self._entries: list[tuple[int, int]] = []
        for epoch, start in entries or []:
            self.assign(epoch, start)

    @classmethod
    def from_batches(cls, batches: "Iterable[tuple[int, int]]") -> "LeaderEpochCache":
        """Rebuild the cache from a log's ``(leader epoch, base offset)`` per batch, in
        offset order (when the checkpoint is lost or unreadable, as Kafka's recovery does).
        An epoch in which the leader wrote nothing leaves no trace in the log: the rebuilt
        cache lacks it, which KIP-279's stepping back handles."""
        cache = cls()
        for epoch, base_offset in batches:
            cache.assign(epoch, base_offset)
        return cache

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def start_offset_of(self, epoch: int) -> int:
        """Start offset of ``epoch`` if cached, else -1."""
        for e, start in self._entries:
            if e == epoch:
                return start
        return UNDEFINED_OFFSET

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; return True if the cache changed.

        An epoch not newer than the latest is ignored.  Entries whose start offset is at
        or after ``start_offset`` are removed first (they described a log that no longer
        exists), as Kafka's LeaderEpochFileCache does.
        """
        if epoch < 0:
            return False
        if self._entries and epoch <= self._entries[-1][0]:
            return False
        while self._entries and self._entries[-1][1] >= start_offset:
            self._entries.pop()
        self._entries.append((epoch, start_offset))
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end_offset)`` for OffsetsForLeaderEpoch.

        * the latest epoch: ``(latest, LEO)``;
        * newer than the latest: ``(-1, -1)``, as Kafka's LeaderEpochFileCache answers
          (no epoch of this replica ends anywhere for it);
        * an older epoch: the largest cached epoch <= requested, ending where the next
          higher epoch starts;
        * older than every entry: ``(requested, start offset of the first entry)``, as
          Kafka's LeaderEpochFileCache answers: nothing of that epoch survives past the
          first epoch this replica knows, so a follower holding it truncates there
          instead of falling back to its HW (which could keep records the leader
          never had, after an unclean election);
        * no entry at all, or the undefined epoch: ``(-1, -1)``.
        """
        if not self._entries or requested_epoch < 0:
            return (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        if requested_epoch > self._entries[-1][0]:
            return (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        if requested_epoch == self._entries[-1][0]:
            return (self._entries[-1][0], log_end_offset)
        epochs = [e for e, _ in self._entries]
        i = bisect.bisect_right(epochs, requested_epoch)  # first entry with epoch > requested
        if i == 0:
            return (requested_epoch, self._entries[0][1])
        return (self._entries[i - 1][0], self._entries[i][1])

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after ``end_offset`` (after a log truncation)."""
        before = len(self._entries)
        while self._entries and self._entries[-1][1] >= end_offset:
            self._entries.pop()
        return len(self._entries) != before

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log start moved to ``start_offset`` (retention, DeleteRecords): entries that
        begin below it go, except the last of them, which now begins at ``start_offset``
        (Kafka's LeaderEpochFileCache.truncateFromStart)."""
        keep = [e for e in self._entries if e[1] > start_offset]
        below = [e for e in self._entries if e[1] <= start_offset]
        if below:
            keep.insert(0, (below[-1][0], start_offset))
        if keep == self._entries:
            return False
        self._entries[:] = keep
        return True

    def clear(self) -> None:
        self._entries.clear()
