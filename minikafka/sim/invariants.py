"""The invariants, checked after every step of the loop and at the end of a run.

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
   (:meth:`on_truncate`);
5. consumers only see committed records: each offset a consumer is handed is below the
   highest HW, with the value committed there (:meth:`on_consume`).

At the end (:meth:`final`), after healing: every acknowledged acks=all record is in the
log at its offset, every record a consumer saw is still there, and the replicas of each
partition have converged (same records, same LEO, HW at the LEO, full ISR); and every
offset commit the group coordinator acknowledged is what OffsetFetch answers (or
later) (:meth:`check_offset_commits`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.records.batch import iter_records, read_header
from ..replication.partition import Role

if TYPE_CHECKING:
    from .world import World

TP = tuple[str, int]
BIG = 1 << 30


class Checker:
    """Collects violations (the first few in full) and the run's figures."""

    def __init__(self, world: "World") -> None:
        self.world = world
        self.violations: list[str] = []
        self.leader_of_epoch: dict[tuple[TP, int], int] = {}
        self.leader_hw: dict[tuple[int, int, TP, int], int] = {}
        self.max_hw: dict[TP, int] = {}
        self.committed: dict[TP, dict[int, bytes]] = {}  # offset -> value, below max_hw
        self.offset_commits: dict[TP, int] = {}  # last acknowledged offset commit of the group
        self.acked: dict[tuple[TP, int], str] = {}
        self.consumed: dict[tuple[TP, int], str] = {}
        self.lost = 0

    def violate(self, text: str) -> None:
        if len(self.violations) < 20:
            self.world.note(f"VIOLATION {text}")
            self.violations.append(f"t={self.world.loop.time():.3f} {text}")

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

    def _commit(self, tp: TP, leader: object, hw: int) -> None:
        """Remember the records between the old highest HW and ``hw`` as committed."""
        old = self.max_hw.get(tp, 0)
        log = leader.log  # type: ignore[attr-defined]
        start = max(old, log.log_start_offset)
        committed = self.committed.setdefault(tp, {})
        if start < hw:
            for rec in iter_records(log.read(start, BIG, hw), min_offset=start):
                if rec.offset >= hw:
                    break
                committed[rec.offset] = rec.value or b""
        self.max_hw[tp] = hw

    def _check_isr(self, b: int, tp: TP, leader: object) -> None:
        hw = leader.high_watermark  # type: ignore[attr-defined]
        for m in leader.isr:  # type: ignore[attr-defined]
            if m == b or not self.world.alive(m):
                continue
            r = self.world.brokers[m].replica_manager.partitions.get(tp)
            if r is None or r.role is not Role.FOLLOWER or r.leader_epoch != leader.leader_epoch or r.needs_truncation:  # type: ignore[attr-defined]
                continue
            upto = min(hw, r.log_end_offset)
            if upto <= max(r.log.log_start_offset, leader.log.log_start_offset):  # type: ignore[attr-defined]
                continue
            mine, theirs = _batch_at(leader.log, upto - 1), _batch_at(r.log, upto - 1)  # type: ignore[attr-defined]
            if mine != theirs:
                self.violate(f"{tp[0]}-{tp[1]}: ISR member b{m} differs from leader b{b} at offset {upto - 1} "
                             f"(below the HW {hw})")

    # -- events -------------------------------------------------------------------------------------------------
    def on_truncate(self, broker_id: int, tp: TP, removed: list[bytes]) -> None:
        committed = self.committed.get(tp, {})
        for data in removed:
            for rec in iter_records(data):
                if rec.offset in committed and committed[rec.offset] == (rec.value or b""):
                    self.violate(f"b{broker_id} {tp[0]}-{tp[1]}: truncated committed offset {rec.offset} "
                                 f"(below the HW {self.max_hw.get(tp, 0)})")
                    return

    def on_ack(self, tp: TP, offset: int, value: str) -> None:
        self.acked[(tp, offset)] = value

    def on_consume(self, tp: TP, offset: int, value: str) -> None:
        hw = self.max_hw.get(tp, 0)
        if offset >= hw:
            self.violate(f"a consumer read {tp[0]}-{tp[1]} offset {offset}, not below the HW {hw}")
        elif self.committed.get(tp, {}).get(offset, value.encode()) != value.encode():
            self.violate(f"a consumer read {value!r} at {tp[0]}-{tp[1]} offset {offset}, "
                         f"where {self.committed[tp][offset].decode(errors='replace')!r} was committed")
        self.consumed[(tp, offset)] = value

    def on_offset_commit(self, tp: TP, offset: int) -> None:
        """The group coordinator acknowledged a commit of ``offset`` (they only grow)."""
        self.offset_commits[tp] = max(offset, self.offset_commits.get(tp, 0))

    def check_offset_commits(self, fetched: dict[TP, int] | None) -> None:
        """At the end: the group's committed offsets (OffsetFetch) hold every acknowledged commit."""
        if fetched is None:
            if self.offset_commits:
                self.violate("the group's committed offsets could not be fetched after healing")
            return
        for tp, offset in sorted(self.offset_commits.items()):
            if fetched.get(tp, -1) < offset:
                self.violate(f"acknowledged offset commit {offset} of {tp[0]}-{tp[1]} is lost "
                             f"(the coordinator has {fetched.get(tp, -1)})")

    # -- at the end -------------------------------------------------------------------------------------------------
    def final(self, partitions: list[TP]) -> dict[TP, dict[int, str]]:
        """The end checks; returns the final log of each partition (its leader's)."""
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
            for b, r in replicas.items():
                if r is None:
                    self.violate(f"{tp[0]}-{tp[1]}: b{b} holds no replica after healing")
                elif b != lb and _values(r.log) != log:
                    self.violate(f"{tp[0]}-{tp[1]}: b{b}'s log (LEO {r.log_end_offset}) differs from leader "
                                 f"b{lb}'s (LEO {leader.log_end_offset}) after healing")
            if leader.high_watermark != leader.log_end_offset:
                self.violate(f"{tp[0]}-{tp[1]}: HW {leader.high_watermark} below LEO {leader.log_end_offset} after healing")
            if len(leader.isr) != len(replicas):
                self.violate(f"{tp[0]}-{tp[1]}: ISR {list(leader.isr)} not full after healing")
        lost = [(tp, o, v) for (tp, o), v in sorted(self.acked.items()) if tp in logs and logs[tp].get(o) != v]
        for tp, o, v in lost[:5]:
            self.violate(f"acknowledged record {v!r} at {tp[0]}-{tp[1]} offset {o} is lost "
                         f"(the log has {logs[tp].get(o)!r})")
        if lost:
            self.lost = len(lost)
        vanished = [(tp, o, v) for (tp, o), v in sorted(self.consumed.items()) if tp in logs and logs[tp].get(o) != v]
        for tp, o, v in vanished[:5]:
            self.violate(f"consumed record {v!r} at {tp[0]}-{tp[1]} offset {o} vanished")
        return logs


def _batch_at(log: object, offset: int) -> int | None:
    """The CRC of the batch holding ``offset`` (None when the log has no such offset)."""
    try:
        data = log.read(offset, 1, None)  # type: ignore[attr-defined]
    except Exception:
        return None
    return read_header(data).crc if data else None


def _values(log: object) -> dict[int, str]:
    start = log.log_start_offset  # type: ignore[attr-defined]
    return {r.offset: (r.value.decode() if r.value else "")
            for r in iter_records(log.read(start, BIG, None), min_offset=start)} \
        if log.log_end_offset > start else {}  # type: ignore[attr-defined]
