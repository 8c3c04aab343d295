"""What must hold of a fault-testing run (Jepsen's checker), on its
:class:`~minikafka.faults.history.History` and the final logs of the healed cluster.

:func:`check_records` (``final``: per partition, offset -> value, as the healed
cluster's leader holds it; partitions missing from it are not checked):

1. every acknowledged record is in the final log at its acknowledged offset with its
   value (``lost``);
2. no value is in the final log more than once (``duplicated``; no failure when the
   workload allows duplicates: producers that retry without idempotence);
3. acknowledged records keep their order within a partition: when a producer's record
   ``a`` was acknowledged before its record ``b`` to the same partition was sent,
   ``a``'s offset is below ``b``'s (``reordered``);
4. every record a consumer was handed is still in the final log at that offset
   (``vanished``).

:func:`check_offset_commits` (``fetched``: the group's committed offsets once healed,
or None when they could not be fetched): every acknowledged offset commit is what
the group has, or less than it (committed offsets never go back).

Each returns a verdict whose ``problems()`` are the violation lines both runners report.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .history import History, Outcome, Produce

TP = tuple[str, int]
SHOWN = 5  # violation lines per kind


@dataclass
class RecordsVerdict:
    """What :func:`check_records` found."""

    acked: int = 0
    consumed: int = 0  # distinct (partition, offset) a consumer was handed
    lost: list[tuple[TP, int, str, str | None]] = field(default_factory=list)  # tp, offset, value, what the log has
    duplicated: list[str] = field(default_factory=list)  # values in the final log more than once
    duplicates_allowed: bool = False
    reordered: list[tuple[TP, str, int, str, int]] = field(default_factory=list)  # tp, earlier value/offset, later
    vanished: list[tuple[TP, int, str, str | None]] = field(default_factory=list)  # tp, offset, read, final

    @property
    def ok(self) -> bool:
        """True when nothing was lost, reordered or vanished (nor duplicated, unless allowed)."""
        return not (self.lost or self.reordered or self.vanished or (self.duplicated and not self.duplicates_allowed))

    def problems(self, shown: int = SHOWN) -> list[str]:
        """The violations, the first ``shown`` of each kind."""
        out = [f"acknowledged record {v!r} at {tp[0]}-{tp[1]} offset {o} is lost (the log has {has!r})"
               for tp, o, v, has in self.lost[:shown]]
        if not self.duplicates_allowed:
            out += [f"value {v!r} is in the final log more than once" for v in self.duplicated[:shown]]
        out += [f"{tp[0]}-{tp[1]}: {b!r} (offset {ob}) was acknowledged at a lower offset than {a!r} (offset {oa}), "
                f"acknowledged before it was sent" for tp, a, oa, b, ob in self.reordered[:shown]]
        out += [f"consumed record {v!r} at {tp[0]}-{tp[1]} offset {o} vanished" for tp, o, v, _ in self.vanished[:shown]]
        return out


@dataclass
class OffsetsVerdict:
    """What :func:`check_offset_commits` found."""

    acknowledged: dict[TP, int] = field(default_factory=dict)  # the highest acknowledged commit per partition
    unfetched: bool = False  # commits were acknowledged but the group's offsets could not be read
    lost: list[tuple[TP, int, int]] = field(default_factory=list)  # tp, acknowledged, what the group has

    @property
    def ok(self) -> bool:
        """True when every acknowledged commit is held."""
        return not (self.unfetched or self.lost)

    def problems(self) -> list[str]:
        """The violations."""
        out = ["the group's committed offsets could not be fetched after healing"] if self.unfetched else []
        out += [f"acknowledged offset commit {o} of {tp[0]}-{tp[1]} is lost (the coordinator has {has})"
                for tp, o, has in self.lost]
        return out


def check_records(history: History, final: dict[TP, dict[int, str]], duplicates_allowed: bool = False) -> RecordsVerdict:
    """Checks 1 to 4 of the module docstring."""
    acked = history.acknowledged()
    v = RecordsVerdict(acked=len(acked), duplicates_allowed=duplicates_allowed)
    for op in sorted(acked, key=lambda op: (op.tp, op.offset or 0, op.value)):
        if op.tp in final and final[op.tp].get(op.offset) != op.value:  # type: ignore[arg-type]
            v.lost.append((op.tp, op.offset, op.value, final[op.tp].get(op.offset)))  # type: ignore[arg-type]
    counts: dict[str, int] = {}
    for log in final.values():
        for value in log.values():
            counts[value] = counts.get(value, 0) + 1
    v.duplicated = sorted(value for value, n in counts.items() if n > 1)
    v.reordered = _reordered(acked)
    reads = history.values_read()
    v.consumed = len(reads)
    for (tp, o), values in sorted(reads.items()):
        if tp not in final:
            continue
        for value in sorted(values):
            if final[tp].get(o) != value:
                v.vanished.append((tp, o, value, final[tp].get(o)))
    return v


def _reordered(acked: list[Produce]) -> list[tuple[TP, str, int, str, int]]:
    """Pairs (a, b) of one producer and partition where a was acknowledged before b was
    sent, yet b's offset is not above a's."""
    out: list = []
    by: dict[tuple[str, TP], list[Produce]] = {}
    for op in acked:
        by.setdefault((op.process, op.tp), []).append(op)
    for (_, tp), ops in sorted(by.items()):
        done = sorted(ops, key=lambda op: op.completed_at)  # type: ignore[arg-type,return-value]
        i = 0
        highest: Produce | None = None  # the highest offset acknowledged before the current send
        for op in sorted(ops, key=lambda op: op.invoked_at):
            while i < len(done) and done[i].completed_at < op.invoked_at:  # type: ignore[operator]
                if highest is None or done[i].offset > highest.offset:  # type: ignore[operator]
                    highest = done[i]
                i += 1
            if highest is not None and op.offset <= highest.offset:  # type: ignore[operator]
                out.append((tp, highest.value, highest.offset, op.value, op.offset))
    return out


def check_offset_commits(history: History, fetched: dict[TP, int] | None) -> OffsetsVerdict:
    """Every acknowledged offset commit is held by the group (see the module docstring)."""
    v = OffsetsVerdict()
    for op in history.commits:
        if op.outcome is Outcome.OK:
            for tp, o in op.offsets.items():
                v.acknowledged[tp] = max(o, v.acknowledged.get(tp, 0))
    if fetched is None:
        v.unfetched = bool(v.acknowledged)
        return v
    for tp, o in sorted(v.acknowledged.items()):
        if fetched.get(tp, -1) < o:
            v.lost.append((tp, o, fetched.get(tp, -1)))
    return v
