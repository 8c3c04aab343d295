"""Small pure decisions of Kafka's replication, each testable against a table.

docs/replication.md explains the rules these functions implement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ..errors import InvalidReplicationFactorError

NO_LEADER = -1


def compute_hw(current_hw: int, leader_leo: int, isr_follower_leos: Iterable[int]) -> int:
    """Leader HW = max(current HW, min(LEO of every ISR replica)).

    A follower whose LEO is unknown (-1, the leader has not seen a fetch from it
    since becoming leader) holds the HW where it is.
    """
    low = leader_leo
    for leo in isr_follower_leos:
        if leo < 0:
            return current_hw
        low = min(low, leo)
    return max(current_hw, low)


def follower_hw(follower_leo: int, leader_hw: int) -> int:
    """Follower HW = min(its own LEO, the leader HW carried by the fetch response)."""
    return min(follower_leo, leader_hw)


def is_caught_up(last_caught_up_ms: int, now_ms: int, lag_time_max_ms: int,
                 follower_leo: int = -1, leader_leo: int | None = None) -> bool:
    """A follower is in sync if it caught up to the leader's LEO within the lag time, or if
    the LEO its last fetch reported equals the leader's LEO now, however long ago that fetch
    was (Kafka's ``ReplicaState.isCaughtUp``: a partition nothing is written to keeps a
    follower that stopped fetching).  ``leader_leo`` None leaves the second rule out; an
    unknown follower LEO (-1, no fetch since this leadership began) never meets it."""
    if leader_leo is not None and follower_leo >= 0 and follower_leo == leader_leo:
        return True
    return now_ms - last_caught_up_ms <= lag_time_max_ms


def can_join_isr(follower_leo: int, leader_hw: int, current_epoch_start: int) -> bool:
    """An out-of-sync follower rejoins once its LEO reaches the leader's HW and the start
    offset of the leader's current epoch (so it cannot be elected while missing committed data)."""
    return follower_leo >= leader_hw and follower_leo >= current_epoch_start


@dataclass(frozen=True)
class Election:
    """The result of a partition leader election."""

    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def elect_leader(replicas: Sequence[int], isr: Sequence[int], live: set[int] | frozenset[int],
                 unclean_enabled: bool = False) -> Election:
    """The first replica in AR order that is alive and in the ISR.

    None: with unclean election enabled, the first live replica in AR order (ISR
    becomes just it); otherwise the partition goes offline (leader -1) keeping its ISR
    so the last ISR member's return restores it.  The ISR of a clean election drops
    dead members but never becomes empty.
    """
    for r in replicas:
        if r in live and r in isr:
            return Election(r, tuple(b for b in isr if b in live))
    if unclean_enabled:
        for r in replicas:
            if r in live:
                return Election(r, (r,), unclean=True)
    return Election(NO_LEADER, tuple(isr))


def shrink_isr_on_failure(isr: Sequence[int], dead: int) -> tuple[int, ...]:
    """Remove a dead broker from an ISR, but never the last member (as Kafka's controller does)."""
    rest = tuple(b for b in isr if b != dead)
    return rest if rest else tuple(isr)


def assign_replicas(brokers: Sequence[int], partitions: int, replication_factor: int,
                    start_index: int = 0) -> dict[int, list[int]]:
    """Replica placement: brokers sorted, n of them; partition i's j-th replica on
    broker ((i + j + start_index) mod n).  ``start_index`` is 0 in minikafka, so the
    placement is predictable (Kafka picks a random start and shifts later replicas)."""
    ordered = sorted(brokers)
    n = len(ordered)
    if replication_factor < 1:
        raise InvalidReplicationFactorError("replication factor must be at least 1")
    if replication_factor > n:
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {n} available brokers")
    return {i: [ordered[(i + j + start_index) % n] for j in range(replication_factor)] for i in range(partitions)}


def end_offset_for(entries: Sequence[tuple[int, int]], requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
    """Reference version of the epoch cache lookup (for property tests): see
    LeaderEpochCache.end_offset_for."""
    if not entries or requested_epoch < 0 or requested_epoch > entries[-1][0]:
        return (-1, -1)
    le = [e for e in entries if e[0] <= requested_epoch]
    if not le:
        return (requested_epoch, entries[0][1])
    epoch = le[-1][0]
    later = [e for e in entries if e[0] > epoch]
    return (epoch, later[0][1] if later else log_end_offset)


def truncation_offset(leader_epoch: int, leader_end_offset: int, own_end_for_epoch: int, own_leo: int) -> int:
    """KIP-279: truncate to min(leader's end offset, own end offset for that epoch, own LEO).
    ``leader_epoch`` -1 (the leader has nothing as old) means truncate to the own LEO only if
    the leader's answer is unknown; callers handle that case."""
    if leader_epoch < 0 or leader_end_offset < 0:
        return own_leo
    return min(leader_end_offset, own_end_for_epoch, own_leo)


def preferred_leader_imbalance(leaders: Mapping[tuple[str, int], int], preferred: Mapping[tuple[str, int], int]) -> dict[int, float]:
    """Per preferred broker, the fraction of its partitions it does not lead."""
    totals: dict[int, int] = {}
    off: dict[int, int] = {}
    for tp, pref in preferred.items():
        totals[pref] = totals.get(pref, 0) + 1
        if leaders.get(tp) != pref:
            off[pref] = off.get(pref, 0) + 1
    return {b: off.get(b, 0) / n for b, n in totals.items()}
