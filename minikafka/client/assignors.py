"""Partition assignors: what the group leader runs to split the partitions of the
subscribed topics among the members, with Kafka's names and results.

Each has ``name`` (the protocol name members offer in JoinGroup) and
``assign(partitions_per_topic, subscriptions) -> {member_id: [(topic, partition)]}``;
every member appears in the result, possibly with nothing, and topics absent from
``partitions_per_topic`` (they do not exist) are left out.
"""
from __future__ import annotations

from typing import Protocol

from ..groups.consumer_protocol import Subscription

TP = tuple[str, int]


class RangeAssignor:
    """Kafka's RangeAssignor: per topic, the members subscribed to it in member-id
    order get contiguous ranges; the first ``partitions % members`` get one more."""

    name = "range"

    def assign(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]) -> dict[str, list[TP]]:
        out: dict[str, list[TP]] = {m: [] for m in subscriptions}
        for topic in sorted(partitions_per_topic):
            members = sorted(m for m, s in subscriptions.items() if topic in s.topics)
            if not members:
                continue
            n = partitions_per_topic[topic]
            per, extra = divmod(n, len(members))
            start = 0
            for i, m in enumerate(members):
                count = per + (1 if i < extra else 0)
                out[m] += [(topic, p) for p in range(start, start + count)]
                start += count
        return {m: sorted(tps) for m, tps in out.items()}


class RoundRobinAssignor:
    """Kafka's RoundRobinAssignor: every partition, sorted by topic then number, goes to
    the next member in member-id order that is subscribed to its topic."""

    name = "roundrobin"

    def assign(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]) -> dict[str, list[TP]]:
        out: dict[str, list[TP]] = {m: [] for m in subscriptions}
        members = sorted(subscriptions)
        if not members:
            return out
        i = 0
        for topic in sorted(partitions_per_topic):
            if not any(topic in subscriptions[m].topics for m in members):
                continue
            for p in range(partitions_per_topic[topic]):
                while topic not in subscriptions[members[i % len(members)]].topics:
                    i += 1
                out[members[i % len(members)]].append((topic, p))
                i += 1
        return {m: sorted(tps) for m, tps in out.items()}


class StickyAssignor:
    """Balanced, and keeps each partition with its previous owner whenever balance
    allows, so a rebalance moves as few partitions as possible.

    Previous owners come from ``owned_partitions`` in each member's subscription
    (ConsumerProtocolSubscription v1), not from Kafka's StickyAssignor user data, so it
    shares a group only with other minikafka consumers.  A partition claimed by two
    members counts as unowned.  Balance: no member that could take a partition has two
    more than another; ties go to member-id order."""

    name = "sticky"

    def assign(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]) -> dict[str, list[TP]]:
        members = sorted(subscriptions)
        out: dict[str, list[TP]] = {m: [] for m in members}
        all_tps = [(t, p) for t in sorted(partitions_per_topic) for p in range(partitions_per_topic[t])
                   if any(t in subscriptions[m].topics for m in members)]
        claims: dict[TP, list[str]] = {}
        for m in members:
            for topic, partition in subscriptions[m].owned_partitions:
                claims.setdefault((topic, partition), []).append(m)
        eligible = {tp: [m for m in members if tp[0] in subscriptions[m].topics] for tp in all_tps}
        unassigned: list[TP] = []
        for tp in all_tps:
            owners = claims.get(tp, [])
            if len(owners) == 1 and owners[0] in eligible[tp]:
                out[owners[0]].append(tp)
            else:
                unassigned.append(tp)
        # Members above their fair share (the ceiling of what they may share) give back
        # their last partitions; the final pass evens out narrower subscriptions.
        for m in members:
            cap = self._cap(m, all_tps, eligible)
            while len(out[m]) > cap:
                unassigned.append(out[m].pop())
        for tp in sorted(unassigned):
            cands = eligible[tp]
            if cands:
                out[min(cands, key=lambda m: (len(out[m]), m))].append(tp)
        self._balance(out, eligible)
        return {m: sorted(tps) for m, tps in out.items()}

    @staticmethod
    def _cap(member: str, all_tps: list[TP], eligible: dict[TP, list[str]]) -> int:
        mine = [tp for tp in all_tps if member in eligible[tp]]
        if not mine:
            return 0
        sharers = {m for tp in mine for m in eligible[tp]}
        total = len({tp for tp in all_tps if set(eligible[tp]) & sharers})
        return -(-total // len(sharers))

    @staticmethod
    def _balance(out: dict[str, list[TP]], eligible: dict[TP, list[str]]) -> None:
        """Move partitions from the fullest to the emptiest member that may take them
        until no move narrows the gap."""
        moved = True
        while moved:
            moved = False
            for src in sorted(out, key=lambda m: (-len(out[m]), m)):
                for tp in sorted(out[src], reverse=True):
                    dst = min((m for m in eligible[tp] if m != src), key=lambda m: (len(out[m]), m), default=None)
                    if dst is not None and len(out[dst]) + 1 < len(out[src]):
                        out[src].remove(tp)
                        out[dst].append(tp)
                        moved = True
                        break
                if moved:
                    break


class Assignor(Protocol):
    """What the group leader asks of an assignor (see the module docstring)."""

    name: str

    def assign(self, partitions_per_topic: dict[str, int],
               subscriptions: dict[str, Subscription]) -> dict[str, list[TP]]: ...


ASSIGNORS: dict[str, Assignor] = {"range": RangeAssignor(), "roundrobin": RoundRobinAssignor(),
                                  "sticky": StickyAssignor()}


def assignor(name: str) -> Assignor:
    """The assignor called ``name`` (partition.assignment.strategy)."""
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise ValueError(f"unknown partition.assignment.strategy {name!r}: choose from range, roundrobin, sticky") from None
