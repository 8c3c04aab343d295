"""How the live fault suite reads the healed cluster for the checks: every replica's
state through the ``replica_state`` API (:func:`compare_replicas`: identical up to the
high watermark, by checksum) and the final log through a consumer
(:func:`read_final_log`).  The checks of the history against that final log (lost,
duplicated, reordered and vanished records) are :mod:`minikafka.faults.checker`'s;
:func:`fill_summary` puts its verdict into the run's :class:`~.report.Summary`.
"""
from __future__ import annotations

from ..faults.checker import RecordsVerdict
from .cluster import post
from .report import Summary


def replica_states(brokers: dict[int, tuple[str, int]], topic: str, partition: int,
                    checksum_upto: int | None = None) -> dict[int, dict]:
    """Every answering broker's replica of ``topic-partition`` (the replica_state API),
    with the checksum of its log up to ``checksum_upto`` when given."""
    out = {}
    for b, (host, port) in brokers.items():
        try:
            r = post(host, port, "replica_state", {"partitions": [{"topic": topic, "partition": partition}],
                                                   "checksum_upto": checksum_upto}, timeout_s=3.0)
        except Exception:
            continue
        for rep in r.get("replicas") or ():
            out[b] = rep
    return out


def compare_replicas(brokers: dict[int, tuple[str, int]], topic: str, partition: int,
                      replicas: list[int]) -> tuple[bool, str]:
    """(identical, description): every replica answers, has LEO >= the leader's HW, the same
    HW, and the same checksum of its log up to that HW."""
    states = replica_states(brokers, topic, partition)
    leaders = [st for st in states.values() if st["role"] == "leader"]
    if len(leaders) != 1:
        return False, f"{topic}-{partition}: {len(leaders)} replicas claim leadership"
    hw = leaders[0]["high_watermark"]
    sums = replica_states(brokers, topic, partition, checksum_upto=hw)
    if sorted(sums) != sorted(replicas):
        return False, f"{topic}-{partition}: replicas {sorted(sums)} answered, expected {sorted(replicas)}"
    desc = ", ".join(f"broker {b}: LEO {s['log_end_offset']} HW {s['high_watermark']} sum {s['checksum']}"
                     for b, s in sorted(sums.items()))
    same = (len({s["checksum"] for s in sums.values()}) == 1
            and all(s["log_end_offset"] >= hw and s["high_watermark"] == hw for s in sums.values()))
    return same, f"{topic}-{partition} up to HW {hw}: {desc}"


def read_final_log(bootstrap: str, topic: str, partitions: int, timeout_s: float = 120.0,
                   isolation_level: str = "read_uncommitted") -> dict[int, dict[int, str]]:
    """Every committed record of every partition: partition -> offset -> value (with
    read_committed: up to the last stable offsets, without aborted transactions)."""
    from ..client.read_to_end import read_to_end
    from ..client.types import TopicPartition

    got = read_to_end(bootstrap, [TopicPartition(topic, p) for p in range(partitions)], timeout_s, isolation_level)
    return {p: got[(topic, p)] for p in range(partitions)}


def fill_summary(summary: Summary, verdict: RecordsVerdict, final: dict[int, dict[int, str]]) -> None:
    """Put the shared checker's verdict (lost acknowledged records, values written more
    than once, consumer reads that are not in the final log) into ``summary``."""
    summary.final_offsets = {p: len(final[p]) for p in final}
    summary.acked = verdict.acked
    summary.lost = len(verdict.lost)
    summary.lost_records = [(tp[1], o, v) for tp, o, v, _ in verdict.lost]
    summary.duplicated = len(verdict.duplicated)
    summary.reordered = len(verdict.reordered)
    summary.consumed = verdict.consumed
    summary.vanished = [(tp[1], o, v, has) for tp, o, v, has in verdict.vanished]
    summary.vanished_reads = len(summary.vanished)
