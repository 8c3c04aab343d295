"""The disk's twin: a broker's storage in the simulation.

:class:`SimDisk` is what survives a broker's crash: per partition the batches written
(each with the virtual time it was written), the leader-epoch checkpoint, and the HW and
log-start checkpoints.  As with the real disk storage, checkpoints are synced when
written (temp file, fsync, rename) and log appends are not: a *process* crash keeps
everything (the page cache survives), a *power loss* keeps what the OS had written back
(everything older than :data:`WRITEBACK_S`, as Linux's dirty-page expiry) plus a seeded
random part of the rest, a prefix per partition.

:class:`SimStorage` is the broker's :class:`~minikafka.broker.storage.Storage` on it:
disk mode loads logs back from the SimDisk after a restart; memory mode starts empty,
as the real memory storage does.  Every truncation is reported to ``on_truncate`` with
the batches it removed, so the invariant checker sees a record below the HW go.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..broker.storage import Storage
from ..log.epoch_cache import LeaderEpochCache
from ..log.partition_log import PartitionLog
from ..protocol.records.batch import validate_batch

TP = tuple[str, int]
WRITEBACK_S = 30.0  # the OS writes dirty pages back after this long


@dataclass
class SimDisk:
    """One broker's disk (survives crashes; see the module docstring)."""

    logs: dict[TP, list[tuple[bytes, float]]] = field(default_factory=dict)
    epochs: dict[TP, list[tuple[int, int]]] = field(default_factory=dict)
    hws: dict[TP, int] = field(default_factory=dict)
    starts: dict[TP, int] = field(default_factory=dict)

    def power_loss(self, now: float, rng: random.Random) -> dict[TP, int]:
        """Lose unsynced log tails; returns the batches lost per partition."""
        lost: dict[TP, int] = {}
        for tp in sorted(self.logs):
            batches = self.logs[tp]
            synced = sum(1 for _, at in batches if at <= now - WRITEBACK_S)
            keep = rng.randint(synced, len(batches))
            if keep < len(batches):
                lost[tp] = len(batches) - keep
                del batches[keep:]
        return lost


class SimStorage(Storage):
    """A broker's storage on a :class:`SimDisk` (``persistent``: disk mode)."""

    def __init__(self, disk: SimDisk, persistent: bool, now: Callable[[], float],
                 on_truncate: Callable[[TP, list[bytes]], None], broker_id: int | None = None) -> None:
        # no files: Storage.__init__ would create the data dir
        self.data_dir = f"sim://broker-{broker_id}"
        self.broker_id = broker_id
        self.persistent = persistent
        self.disk = disk
        self.now = now
        self.on_truncate = on_truncate

    # -- checkpoints (synced when written) --------------------------------------------------------
    def write_hw_checkpoint(self, hws: dict[TP, int]) -> None:
        if self.persistent:
            self.disk.hws = dict(hws)

    def read_hw_checkpoint(self) -> dict[TP, int]:
        return dict(self.disk.hws) if self.persistent else {}

    def write_log_start_checkpoint(self, starts: dict[TP, int]) -> None:
        if self.persistent:
            self.disk.starts = dict(starts)

    def read_log_start_checkpoint(self) -> dict[TP, int]:
        return dict(self.disk.starts) if self.persistent else {}

    def write_epochs(self, topic: str, partition: int, entries: list[tuple[int, int]]) -> None:
        self.disk.epochs[(topic, partition)] = list(entries)

    # -- logs -------------------------------------------------------------------------------------
    def load(self, topic: str, partition: int, log_start_offset: int = 0, compacted: bool = False,
             keep_damage: bool = False, max_epoch: int | None = None) -> tuple[PartitionLog, LeaderEpochCache]:
        """The simulated disk's log (no damage to look for: ``keep_damage`` and ``max_epoch`` unused)."""
        tp = (topic, partition)
        plog, epochs = PartitionLog(), LeaderEpochCache()
        if not self.persistent:
            self.disk.logs.pop(tp, None)
            self.disk.epochs.pop(tp, None)
            return plog, epochs
        for i, (data, _) in enumerate(self.disk.logs.get(tp, [])):
            h = validate_batch(data)
            if i == 0 and h.base_offset > 0:
                plog.truncate_fully_and_start_at(h.base_offset)
            plog.append(h, data, allow_gap=True)
        for e, o in self.disk.epochs.get(tp, []):
            epochs.assign(e, o)
        epochs.truncate_from_end(plog.log_end_offset)
        if log_start_offset > plog.log_start_offset:
            plog.advance_log_start(log_start_offset)
            epochs.truncate_from_start(plog.log_start_offset)
        return plog, epochs

    def local_partitions(self) -> list[TP]:
        return sorted(self.disk.logs) if self.persistent else []

    def append(self, topic: str, partition: int, batches: Iterable[bytes], log_: PartitionLog) -> None:
        now = self.now()
        self.disk.logs.setdefault((topic, partition), []).extend((bytes(b), now) for b in batches)

    def _mirror(self, topic: str, partition: int, log_: PartitionLog) -> list[bytes]:
        """Make the disk hold exactly the batches of ``log_``; returns the batches removed."""
        tp = (topic, partition)
        old = self.disk.logs.get(tp, [])
        first = log_.segments[0].base_offset
        new = [bytes(b.data) for b in log_.batches_from(first) if b.base_offset >= first]
        k = 0
        while k < len(old) and k < len(new) and old[k][0] == new[k]:
            k += 1
        now = self.now()
        self.disk.logs[tp] = old[:k] + [(d, now) for d in new[k:]]
        return [d for d, _ in old[k:]]

    def truncate(self, topic: str, partition: int, log_: PartitionLog) -> None:
        removed = self._mirror(topic, partition, log_)
        if removed:
            self.on_truncate((topic, partition), removed)

    def replace_segments(self, topic: str, partition: int, log_: PartitionLog, count: int,
                         old_bases: list[int]) -> None:
        self._mirror(topic, partition, log_)

    def delete_segments(self, topic: str, partition: int, log_: PartitionLog) -> None:
        self._mirror(topic, partition, log_)

    def delete(self, topic: str, partition: int) -> None:
        self.disk.logs.pop((topic, partition), None)
        self.disk.epochs.pop((topic, partition), None)

    def close(self) -> None:
        pass
