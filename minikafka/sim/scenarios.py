"""Narrated replication scenarios on the deterministic simulation (KIP-101 and KIP-279).

Each scenario plays the steps of the original write-ups on
:class:`~minikafka.sim.partition_model.Cluster` and reports, after every step, each
replica's role, LEO, HW and records, so ``minikafka scenario NAME --truncation MODE``
shows step by step why truncating to the high watermark loses or forks committed
data and why leader epochs do not.  Pure: the narration is returned as lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..replication.partition import TruncationMode
from .partition_model import Cluster

A, B = 1, 2


@dataclass
class Narration:
    """The lines a scenario produced and its verdict."""

    lines: list[str] = field(default_factory=list)
    verdict: str = ""
    anomaly: bool = False


def _snapshot(c: Cluster) -> list[str]:
    out = []
    for b in c.brokers:
        if b in c.replicas:
            r = c.replicas[b]
            vals = c.values(b)
            recs = " ".join(f"{o}:{v}" for o, v in sorted(vals.items())) or "(empty)"
            out.append(f"    broker {b}: {r.role.value:<8} LEO {r.log_end_offset}  HW {r.high_watermark}  "
                       f"epochs {r.epochs.entries}  log [{recs}]")
        else:
            out.append(f"    broker {b}: down")
    state = f"leader {c.leader}, leader epoch {c.leader_epoch}, ISR {list(c.isr)}"
    return [f"    controller: {state}; acknowledged: {', '.join(c.acked) or 'none'}", *out]


def _step(n: Narration, c: Cluster, text: str) -> None:
    n.lines.append(f"- {text}")
    n.lines.extend(_snapshot(c))


def kip101_loss(mode: TruncationMode) -> Narration:
    """KIP-101 scenario 1: a follower's lagging HW makes it cut an acknowledged record."""
    n = Narration()
    c = Cluster(brokers=(A, B), truncation=mode, min_insync_replicas=1)
    _step(n, c, f"topic with replicas [{A}, {B}], broker {A} leads at epoch 0 (truncation: {mode.value})")
    c.produce()
    c.fetch_round(B)
    c.fetch_round(B)
    _step(n, c, "produce m1 with acks=all; two fetch rounds: both replicas have it, both HWs are 1")
    c.produce()
    c.fetch_round(B)
    _step(n, c, f"produce m2; broker {B} fetches it (its HW is still 1: it learns HW 2 only on its next fetch)")
    c.fetch_round(B, deliver=False)
    _step(n, c, f"broker {B} fetches again at offset 2: the leader's HW becomes 2 and m2 is acknowledged, "
                f"but broker {B} restarts before it reads the answer")
    c.bounce(B)
    _step(n, c, f"broker {B} comes back and truncates: " + (
        "to its HW 1 (m2 is cut)" if mode is TruncationMode.HIGH_WATERMARK
        else "it asks the leader for the end offset of its epoch 0 (answer: 2) and keeps m2"))
    c.crash(A)
    _step(n, c, f"broker {A} dies before broker {B} fetched again; broker {B} is in the ISR and becomes leader at epoch 1")
    c.restart(A)
    c.replicate(2)
    _step(n, c, f"broker {A} returns as a follower of broker {B} and catches up")
    lost = [v for v in c.acked if v not in c.values(B).values()]
    n.anomaly = bool(lost)
    n.verdict = (f"LOST acknowledged record(s) {', '.join(lost)}: committed data is gone from every replica"
                 if lost else "no acknowledged record lost: every replica holds m1 and m2")
    return n


def kip101_divergence(mode: TruncationMode) -> Narration:
    """KIP-101 scenario 2: after a power failure both replicas hold a different record at one offset."""
    n = Narration()
    c = Cluster(brokers=(A, B), truncation=mode, min_insync_replicas=1)
    _step(n, c, f"topic with replicas [{A}, {B}], broker {A} leads at epoch 0 (truncation: {mode.value})")
    c.produce()
    c.fetch_round(B)
    c.fetch_round(B)
    c.produce()
    c.fetch_round(B)
    c.fetch_round(B, deliver=False)
    _step(n, c, "m1 and m2 produced and acknowledged; both replicas wrote them")
    c.crash(B, detected=False, lose_unflushed_from=1)
    c.crash(A, detected=False)
    _step(n, c, f"power failure: both brokers die; broker {B} had not flushed m2 to disk")
    c.restart(B)
    _step(n, c, f"broker {B} restarts first and is elected leader at epoch {c.leader_epoch}")
    c.produce()
    _step(n, c, f"a producer writes m3: broker {B} gives it offset 1")
    c.restart(A)
    c.replicate(2)
    _step(n, c, f"broker {A} restarts as follower: " + (
        "it truncates to its HW 2, keeps m2 at offset 1 and fetches from offset 2" if mode is TruncationMode.HIGH_WATERMARK
        else "it asks for the end offset of epoch 0 (answer: 1), cuts m2 and copies m3"))
    a, b = c.values(A), c.values(B)
    diverged = any(a.get(o) != b.get(o) for o in set(a) | set(b))
    n.anomaly = diverged
    n.verdict = ("DIVERGED: the replicas hold different records at the same offset, both 'in sync'"
                 if diverged else "the replicas are identical")
    return n


SCENARIOS: dict[str, Callable[[TruncationMode], Narration]] = {
    "kip101-loss": kip101_loss,
    "kip101-divergence": kip101_divergence,
}
