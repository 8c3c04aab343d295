"""Checks on what every replica holds, through the replica_state API of each broker."""
from __future__ import annotations

from minikafka.rpc import TRANSPORT_ERRORS, call_sync
from process_helpers import wait_for


def post(port: int, api: str, body: dict, timeout_s: float = 5.0) -> dict:
    """One msgpack API call to a local broker; the answer map, errors included."""
    return call_sync("127.0.0.1", port, api, body, timeout_s, raise_error=False)


def replica_states(handle, topic: str, partition: int, checksum_upto: int | None = None,
                   brokers: list[int] | None = None) -> dict[int, dict]:
    """broker id -> that broker's replica_state entry for topic-partition (live brokers only)."""
    out = {}
    for b, port in handle.brokers.items():
        if brokers is not None and b not in brokers:
            continue
        try:
            r = post(port, "replica_state", {"partitions": [{"topic": topic, "partition": partition}],
                                             "checksum_upto": checksum_upto}, timeout_s=2.0)
        except TRANSPORT_ERRORS:
            continue
        for rep in r.get("replicas", []):
            out[b] = rep
    return out


def leader_state(handle, topic: str, partition: int) -> dict | None:
    for b, st in replica_states(handle, topic, partition).items():
        if st["role"] == "leader":
            return st
    return None


def identical_up_to_hw(handle, topic: str, partition: int, replicas: list[int]) -> bool:
    """True when every listed replica answers and has the same log checksum up to the leader's HW
    and the same HW."""
    lead = leader_state(handle, topic, partition)
    if lead is None:
        return False
    hw = lead["high_watermark"]
    states = replica_states(handle, topic, partition, checksum_upto=hw, brokers=replicas)
    if sorted(states) != sorted(replicas):
        return False
    sums = {st["checksum"] for st in states.values()}
    leos_ok = all(st["log_end_offset"] >= hw for st in states.values())
    return len(sums) == 1 and leos_ok


def wait_identical(handle, topic: str, partitions: int, replicas_of, timeout_s: float = 30.0) -> None:
    for p in range(partitions):
        wait_for(lambda: identical_up_to_hw(handle, topic, p, replicas_of(p)), timeout_s=timeout_s,
                 message=f"replicas of {topic}-{p} identical up to the HW")
