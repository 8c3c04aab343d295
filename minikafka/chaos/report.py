"""What a fault-injection run reports: the :class:`Summary`, its one-line report
(``Summary.line()``), the details, and the timeline dump written next to the cluster.

The one line of ``scripts/chaos.py``::

    acked=30146 lost=0 duplicated=0 faults=30 leader_elections=28 unclean=0 longest_unavailable_ms=8074 ok=true
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .events import EventCollector


@dataclass
class Summary:
    """What a chaos run found.  ``ok`` is True when nothing acknowledged was lost and
    every check passed."""

    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    faults: int = 0
    leader_elections: int = 0
    unclean: int = 0
    longest_unavailable_ms: int = 0
    ok: bool = False
    failed: int = 0  # produce attempts that ended in an error (not acknowledged)
    unresolved: int = 0  # neither acknowledged nor failed when the producers stopped
    consumed: int = 0  # distinct (partition, offset) pairs the consumers read
    vanished_reads: int = 0  # distinct (partition, offset, value) reads that are not in the final log
    reordered: int = 0  # acknowledged records at a lower offset than one of their producer's acknowledged before
    divergent: list[str] = field(default_factory=list)
    healed: bool = False
    lost_records: list[tuple[int, int, str]] = field(default_factory=list)
    vanished: list[tuple[int, int, str, str | None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fault_log: list[str] = field(default_factory=list)
    epoch_bumps: int = 0
    final_offsets: dict[int, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    dir: str = ""
    seed: int = 0
    truncation: str = "leader_epoch"
    storage: str = "disk"
    # the transactional workload (-1: not run): transactions committed and aborted on
    # purpose, transactions that failed, producers replaced, invariant violations
    txn_commits: int = -1
    txn_aborts: int = 0
    txn_failures: int = 0
    txn_fenced: int = 0
    txn_violations: int = 0
    # On a ZooKeeper ensemble (-1 otherwise): ZooKeeper faults injected, and the longest time
    # without any acknowledgement overlapping a time one server was down / the quorum was lost
    # (from the kill until the restarted servers serve again)
    zk_server_faults: int = -1
    zk_quorum_faults: int = -1
    zk_server_unavailable_ms: int = -1
    zk_quorum_unavailable_ms: int = -1

    def line(self) -> str:
        """The one-line report."""
        txn = "" if self.txn_commits < 0 else (
            f"transactions={self.txn_commits} aborted={self.txn_aborts} failed={self.txn_failures} "
            f"fenced={self.txn_fenced} violations={self.txn_violations} ")
        zk = "" if self.zk_server_faults < 0 else (
            f"zk_server_faults={self.zk_server_faults} zk_quorum_faults={self.zk_quorum_faults} "
            f"zk_server_unavailable_ms={self.zk_server_unavailable_ms} "
            f"zk_quorum_unavailable_ms={self.zk_quorum_unavailable_ms} ")
        return (f"acked={self.acked} lost={self.lost} duplicated={self.duplicated} {txn}faults={self.faults} "
                f"leader_elections={self.leader_elections} unclean={self.unclean} "
                f"longest_unavailable_ms={self.longest_unavailable_ms} {zk}ok={'true' if self.ok else 'false'}")

    def details(self) -> str:
        """Several lines: the faults injected and every problem found."""
        out = [f"seed={self.seed} truncation={self.truncation} storage={self.storage} elapsed_s={self.elapsed_s:.1f} "
               f"failed={self.failed} unresolved={self.unresolved} consumed={self.consumed} "
               f"vanished_reads={self.vanished_reads} reordered={self.reordered} epoch_bumps={self.epoch_bumps} healed={self.healed} "
               f"final_offsets={self.final_offsets} dir={self.dir}"]
        out += [f"fault: {f}" for f in self.fault_log]
        out += [f"problem: {p}" for p in self.problems]
        out += [f"lost: partition {p} offset {o} value {v}" for p, o, v in self.lost_records[:20]]
        out += [f"vanished read: partition {p} offset {o} read {v!r}, final log has {f!r}" for p, o, v, f in self.vanished[:20]]
        return "\n".join(out)


def dump_timeline(dir: str, events: EventCollector, summary: Summary) -> None:
    """Write the gathered event timeline and the details next to the cluster (for post-mortems)."""
    try:
        with open(f"{dir}/chaos-events.jsonl", "w") as f:
            for e in events.timeline():
                f.write(json.dumps(e) + "\n")
        with open(f"{dir}/chaos-summary.txt", "w") as f:
            f.write(summary.line() + "\n" + summary.details() + "\n")
    except OSError:
        pass
