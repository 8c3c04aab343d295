"""A read_committed consumer's filter of aborted transactions (Kafka's Fetcher logic).

A read_committed fetch answer holds the batches below the partition's last stable offset
and the aborted transactions that have records among them, each as ``(producer id, first
offset)``.  Walking the batches in offset order, a producer becomes *aborted* once the
walk reaches the first offset of one of its aborted transactions; its transactional
batches are then dropped until its ABORT marker, which ends the aborted transaction.
Committed transactions and non-transactional batches pass.
"""
from __future__ import annotations

import heapq
from typing import Any, Iterable

from ..protocol.records.batch import BatchHeader
from ..protocol.records.control import ABORT, read_marker


class AbortedFilter:
    """One fetch answer's aborted transactions, consumed as its batches are walked."""

    __slots__ = ("_pending", "_aborting")

    def __init__(self, aborted: Iterable[Any] | None) -> None:
        pending = []
        for a in aborted or ():
            pid, first = (a["producer_id"], a["first_offset"]) if isinstance(a, dict) else (a.producer_id, a.first_offset)
            pending.append((first, pid))
        heapq.heapify(pending)
        self._pending = pending
        self._aborting: set[int] = set()

    def skips(self, h: BatchHeader, raw: bytes | memoryview) -> bool:
        """Whether the batch ``h`` (bytes ``raw``) holds no records for the application:
        a batch of an aborted transaction (markers are hidden by the caller anyway)."""
        pending = self._pending
        while pending and pending[0][0] <= h.last_offset:
            self._aborting.add(heapq.heappop(pending)[1])
        if not self._aborting or not h.is_transactional:
            return False
        if h.is_control:
            marker = read_marker(h, raw)
            if marker is not None and marker[0] == ABORT:
                self._aborting.discard(h.producer_id)
            return False
        return h.producer_id in self._aborting
