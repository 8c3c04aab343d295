"""The checks of a fault-injection run (Jepsen's checker), on what the workload
recorded and what the cluster holds once healed:

1. every acknowledged record is in the final log at its acknowledged
   ``(partition, offset)`` with its value (``lost`` counts those that are not);
2. no value is in the final log more than once (``duplicated``; a failure only for
   idempotent producers);
3. the replicas of every partition are identical up to the high watermark
   (checksums of the ``replica_state`` API);
4. no consumer read a record that later vanished: every ``(partition, offset, value)``
   a consumer saw is in the final log at that offset.
"""
from __future__ import annotations

import time

from ..errors import KafkaError
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


def read_final_log(bootstrap: str, topic: str, partitions: int, timeout_s: float = 120.0) -> dict[int, dict[int, str]]:
    """Every committed record of every partition: partition -> offset -> value."""
    from ..client.sync import Consumer
    from ..client.types import TopicPartition

    out: dict[int, dict[int, str]] = {p: {} for p in range(partitions)}
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with Consumer(bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100) as c:
        c.assign(tps)
        deadline = time.monotonic() + timeout_s
        while True:  # the broker asked for metadata may not know the latest leaders yet
            try:
                ends = c.end_offsets(tps)
                break
            except KafkaError as exc:
                if not exc.retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        c.seek_to_beginning(*tps)
        while any(c.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} to its high watermarks {ends} took over {timeout_s:g}s")
            for r in c.poll(timeout_ms=500):
                out[r.partition][r.offset] = r.value.decode() if r.value is not None else ""
    return out


def check_records(summary: Summary, acked: list[tuple[int, int, str, float]], final: dict[int, dict[int, str]],
                  reads: dict[tuple[int, int], set[str]]) -> None:
    """Fill ``summary`` with checks 1, 2 and 4: lost acknowledged records, values written
    more than once, consumer reads that are not in the final log."""
    summary.final_offsets = {p: len(final[p]) for p in final}
    summary.acked = len(acked)
    for p, off, value, _ in acked:
        if final[p].get(off) != value:
            summary.lost += 1
            summary.lost_records.append((p, off, value))
    counts: dict[str, int] = {}
    for recs in final.values():
        for v in recs.values():
            counts[v] = counts.get(v, 0) + 1
    summary.duplicated = sum(1 for n in counts.values() if n > 1)
    summary.consumed = len(reads)
    for (p, off), values in sorted(reads.items()):
        for value in sorted(values):
            if final[p].get(off) != value:
                summary.vanished.append((p, off, value, final[p].get(off)))
    summary.vanished_reads = len(summary.vanished)
