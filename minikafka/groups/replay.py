"""Rebuilding the groups of one ``__consumer_offsets`` partition from its log.

A coordinator that takes over a partition feeds every record and every transaction
marker to :class:`OffsetsReplay`, in log order, then takes the groups from
:meth:`OffsetsReplay.groups`.  The rules are those of Kafka's coordinator:

* The last record per key wins; a record with a null value (a tombstone) deletes.
* A record of a transactional batch (a TxnOffsetCommit) is pending for its producer
  until that producer's marker: COMMIT makes it committed unless the partition's
  current offset comes later in the log, ABORT drops it.  A plain tombstone of a
  partition also drops its pending offsets.
* Transactions still open at the end of the log stay pending: their marker comes
  later, from the transaction coordinator.

Pure: no I/O; the shell (broker/coordinator.py) reads the log.
"""
from __future__ import annotations

from .group import Group, PendingOffset
from .records import GroupKey, GroupValue, OffsetKey, OffsetValue


class OffsetsReplay:
    """The state of one partition's groups as its records are replayed."""

    def __init__(self) -> None:
        self.offsets: dict[OffsetKey, tuple[OffsetValue, int]] = {}  # key -> (value, log offset)
        self.pending: dict[int, dict[OffsetKey, tuple[OffsetValue, int]]] = {}  # producer id -> staged
        self.metadata: dict[str, GroupValue | None] = {}
        self.records = 0

    def offset(self, position: int, key: OffsetKey, value: OffsetValue | None, producer_id: int = -1,
               transactional: bool = False) -> None:
        """An offset record (a commit, or a tombstone when ``value`` is None) at log
        offset ``position``, from a transactional batch of ``producer_id`` or not."""
        self.records += 1
        if transactional:
            staged = self.pending.setdefault(producer_id, {})
            if value is None:
                staged.pop(key, None)
            else:
                staged[key] = (value, position)
            return
        if value is None:
            self.offsets.pop(key, None)
            for staged in self.pending.values():
                staged.pop(key, None)
        else:
            self.offsets[key] = (value, position)

    def group(self, key: GroupKey, value: GroupValue | None) -> None:
        """A group metadata record (None: the group was deleted)."""
        self.records += 1
        self.metadata[key.group] = value

    def marker(self, producer_id: int, committed: bool) -> None:
        """A COMMIT (``committed``) or ABORT marker of ``producer_id``."""
        staged = self.pending.pop(producer_id, None)
        if not committed or not staged:
            return
        for key, (value, position) in staged.items():
            current = self.offsets.get(key)
            if current is None or current[1] < position:
                self.offsets[key] = (value, position)

    def groups(self, now: int) -> dict[str, Group]:
        """The groups as loaded: those with metadata, and groups that only have offsets
        (committed or pending) as Empty groups."""
        out: dict[str, Group] = {}
        for gid, v in self.metadata.items():
            if v is not None:
                out[gid] = Group.restore(gid, v, now)

        def of(gid: str) -> Group:
            g = out.get(gid)
            if g is None:
                g = out[gid] = Group(gid, now)
            return g

        for key, (value, position) in self.offsets.items():
            of(key.group).offsets_committed([((key.topic, key.partition), value)], position)
        for pid, staged in self.pending.items():
            for key, (value, position) in staged.items():
                of(key.group).pending_txn.setdefault(pid, {})[(key.topic, key.partition)] = PendingOffset(value, position)
        return out
