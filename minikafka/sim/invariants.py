"""The simulation's own invariants: what only a simulation sees, the state of every
replica after every step of the loop.  The history checks both runners share (lost,
duplicated, reordered and vanished records, lost offset commits) are
:mod:`minikafka.faults.checker`'s; the runner applies them to the logs :meth:`Checker.final`
returns and adds their problems here (:meth:`Checker.add`).

After every step (:meth:`Checker.after_step`), over every live replica of every broker:

1. at most one leader per leader epoch of a partition;
2. a replica's HW never exceeds its LEO, and a leader's HW never decreases while it
   leads in one epoch;
3. every ISR member holds the leader's log up to the HW: each member that follows the
   leader's epoch (and has done its truncation) agrees with the leader on the batch
   holding offset ``min(HW, member LEO) - 1``.

On events:

4. a record below the HW (committed: below the highest HW any leader reached) is never
   truncated away — the storage reports every truncation's removed batches
   (:meth:`on_truncate`).  A record is the committed one when its offset, its value and
   the leader epoch its batch was written in all match: a producer that retries a batch
   under a new leader may get the same offset for the same value, and the old leader's
   copy, written in the earlier epoch, was never committed;
5. consumers only see committed records: each offset a consumer is handed is below the
   highest HW, with the value committed there (:meth:`on_read`, watching the history's
   reads as they are recorded).

At the end (:meth:`final`), after healing: the replicas of each partition have
converged (one leader, same records, same LEO, HW at the LEO, full ISR).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..faults.history import History, Op, Read
from ..protocol.records.batch import batch_records, iter_records, read_header, split_batches
from ..log.partition_log import PartitionLog
from ..replication.partition import PartitionReplica, Role

if TYPE_CHECKING:
    from .world import World

TP = tuple[str, int]
BIG = 1 << 30


class Checker:
    """Collects violations (the first few in full) and the run's figures."""

    def __init__(self, world: "World", history: History | None = None) -> None:
        self.world = world
        self.violations: list[str] = []
        self.leader_of_epoch: dict[tuple[TP, int], int] = {}
        self.leader_hw: dict[tuple[int, int, TP, int], int] = {}
        self.max_hw: dict[TP, int] = {}
        self.committed: dict[TP, dict[int, bytes]] = {}  # offset -> value, below max_hw
        self.committed_epoch: dict[TP, dict[int, int]] = {}  # offset -> the leader epoch its batch was written in
        if history is not None:
            history.watch(self.on_op)

    def violate(self, text: str) -> None:
        """Record a violation (in the trace too; the first 20 are kept)."""
        if len(self.violations) < 20:
            self.world.note(f"VIOLATION {text}")
            self.violations.append(f"t={self.world.loop.time():.3f} {text}")

    def add(self, problems: list[str]) -> None:
        """Record the shared checker's problems as violations."""
        for text in problems:
            self.violate(text)

    # -- after every step ------------------------------------------------------------------------------
    def after_step(self) -> None:
        world = self.world
        for b, broker in world.brokers.items():
            if not world.alive(b):
                continue
            inc = world.incarnations[f"b{b}"]
            for tp, p in broker.replica_manager.partitions.items():
                hw, leo = p.high_watermark, p.log_end_offset
                if hw > leo:
                    self.violate(f"b{b} {tp[0]}-{tp[1]}: HW {hw} above LEO {leo}")
                if p.role is not Role.LEADER:
                    continue
                key = (tp, p.leader_epoch)
                first = self.leader_of_epoch.setdefault(key, b)
                if first != b:
                    self.violate(f"{tp[0]}-{tp[1]}: two leaders in leader epoch {p.leader_epoch}: b{first} and b{b}")
                k2 = (b, inc, tp, p.leader_epoch)
                last = self.leader_hw.get(k2, -1)
                if hw < last:
                    self.violate(f"b{b} {tp[0]}-{tp[1]}: leader HW went down from {last} to {hw} in epoch {p.leader_epoch}")
                self.leader_hw[k2] = hw
                if hw > self.max_hw.get(tp, 0):
                    self._commit(tp, p, hw)
                self._check_isr(b, tp, p)

    def _commit(self, tp: TP, leader: PartitionReplica, hw: int) -> None:
        """Remember the records between the old highest HW and ``hw`` as committed."""
        old = self.max_hw.get(tp, 0)
        log = leader.log
        start = max(old, log.log_start_offset)
        committed = self.committed.setdefault(tp, {})
        epochs = self.committed_epoch.setdefault(tp, {})
        if start < hw:
            for offset, epoch, value in _records(log.read(start, BIG, hw), start):
                if offset >= hw:
                    break
                committed[offset] = value
                epochs[offset] = epoch
        self.max_hw[tp] = hw

    def _check_isr(self, b: int, tp: TP, leader: PartitionReplica) -> None:
        hw = leader.high_watermark
        for m in leader.isr:
            if m == b or not self.world.alive(m):
                continue
            r = self.world.brokers[m].replica_manager.partitions.get(tp)
            if r is None or r.role is not Role.FOLLOWER or r.leader_epoch != leader.leader_epoch or r.needs_truncation:
                continue
            upto = min(hw, r.log_end_offset)
            if upto <= max(r.log.log_start_offset, leader.log.log_start_offset):
                continue
            mine, theirs = _batch_at(leader.log, upto - 1), _batch_at(r.log, upto - 1)
            if mine != theirs:
                self.violate(f"{tp[0]}-{tp[1]}: ISR member b{m} differs from leader b{b} at offset {upto - 1} "
                             f"(below the HW {hw})")

    # -- events -------------------------------------------------------------------------------------------------
    def on_truncate(self, broker_id: int, tp: TP, removed: list[bytes]) -> None:
        committed = self.committed.get(tp, {})
        epochs = self.committed_epoch.get(tp, {})
        for data in removed:
            for offset, epoch, value in _records(data, 0):
                # the committed record itself: its offset, value and the leader epoch it was
                # written in (a producer's retry of a batch may land at the same offset with
                # the same value under a new leader; the old leader's copy is not committed)
                if committed.get(offset) == value and epochs.get(offset) == epoch:
                    self.violate(f"b{broker_id} {tp[0]}-{tp[1]}: truncated committed offset {offset} "
                                 f"(below the HW {self.max_hw.get(tp, 0)})")
                    return

    def on_op(self, op: Op) -> None:
        """The history recorded ``op``: check each read as it happens."""
        if isinstance(op, Read):
            self.on_read(op.tp, op.offset, op.value)

    def on_read(self, tp: TP, offset: int, value: str) -> None:
        """A consumer was handed ``value`` at ``offset``: it must be committed there."""
        hw = self.max_hw.get(tp, 0)
        if offset >= hw:
            self.violate(f"a consumer read {tp[0]}-{tp[1]} offset {offset}, not below the HW {hw}")
        elif self.committed.get(tp, {}).get(offset, value.encode()) != value.encode():
            self.violate(f"a consumer read {value!r} at {tp[0]}-{tp[1]} offset {offset}, "
                         f"where {self.committed[tp][offset].decode(errors='replace')!r} was committed")

    # -- at the end -------------------------------------------------------------------------------------------------
    def final(self, partitions: list[TP]) -> dict[TP, dict[int, str]]:
        """The convergence checks; returns the final log of each partition (its leader's;
        none for a partition without exactly one leader), for the shared checker."""
        world = self.world
        logs: dict[TP, dict[int, str]] = {}
        for tp in partitions:
            replicas = {b: broker.replica_manager.partitions.get(tp) for b, broker in world.brokers.items()
                        if world.alive(b)}
            leaders = [(b, r) for b, r in replicas.items() if r is not None and r.role is Role.LEADER]
            if len(leaders) != 1:
                self.violate(f"{tp[0]}-{tp[1]}: {len(leaders)} leaders after healing")
                continue
            lb, leader = leaders[0]
            log = _values(leader.log)
            logs[tp] = log
            # the partition's assigned replicas (a cluster may have more brokers than replicas)
            assigned = {b: replicas.get(b) for b in leader.replicas if world.alive(b)}
            for b, r in assigned.items():
                if r is None:
                    self.violate(f"{tp[0]}-{tp[1]}: b{b} holds no replica after healing")
                elif b != lb and _values(r.log) != log:
                    self.violate(f"{tp[0]}-{tp[1]}: b{b}'s log (LEO {r.log_end_offset}) differs from leader "
                                 f"b{lb}'s (LEO {leader.log_end_offset}) after healing")
            if leader.high_watermark != leader.log_end_offset:
                self.violate(f"{tp[0]}-{tp[1]}: HW {leader.high_watermark} below LEO {leader.log_end_offset} after healing")
            if len(leader.isr) != len(assigned):
                self.violate(f"{tp[0]}-{tp[1]}: ISR {list(leader.isr)} not full after healing")
        return logs


def _records(data: bytes, start: int) -> list[tuple[int, int, bytes]]:
    """``(offset, leader epoch of its batch, value)`` of each record from ``start`` on
    (control batches left out)."""
    return [(offset, h.leader_epoch, value or b"")
            for h, raw in split_batches(data) for offset, _, _, value, _ in batch_records(h, raw) if offset >= start]


def _batch_at(log: PartitionLog, offset: int) -> int | None:
    """The CRC of the batch holding ``offset`` (None when the log has no such offset)."""
    try:
        data = log.read(offset, 1, None)
    except Exception:
        return None
    return read_header(data).crc if data else None


def _values(log: PartitionLog) -> dict[int, str]:
    start = log.log_start_offset
    return {r.offset: (r.value.decode() if r.value else "")
            for r in iter_records(log.read(start, BIG, None), min_offset=start)} \
        if log.log_end_offset > start else {}
