"""What operations the clients of a fault-testing run perform (Jepsen's workload).

A :class:`Workload` names a topic, its partitions and the clients:

* producers (:class:`ProducerPlan`) writing with acks=all a unique value per record,
  ``{name}-{seq}``, so an acknowledged record is recognised wherever it ends up, to
  the partition ``(first_partition + seq) % partitions``;
* consumers reading every partition from its start and recording every record they
  are handed;
* optionally a committer that commits a consumer's progress as the offsets of a group.

The runners carry the plan out with clients of their own — coroutines on the simulated
network (:mod:`minikafka.sim.clients`), threads with the real client library
(:mod:`minikafka.chaos.clients`) — and record what happens in a
:class:`~minikafka.faults.history.History`.
"""
from __future__ import annotations

from dataclasses import dataclass

TP = tuple[str, int]


@dataclass(frozen=True)
class ProducerPlan:
    """One producer: record ``seq`` is value ``{name}-{seq}`` to partition
    ``(first_partition + seq) % partitions``."""

    name: str
    partitions: int
    first_partition: int = 0

    def partition(self, seq: int) -> int:
        """The partition record ``seq`` goes to."""
        return (self.first_partition + seq) % self.partitions

    def value(self, seq: int) -> str:
        """The unique value of record ``seq``."""
        return f"{self.name}-{seq}"


@dataclass(frozen=True)
class Workload:
    """The clients of a run and what they do (see the module docstring).

    ``duplicates_allowed``: a producer may write a value twice (it retries without
    idempotence), so a value found twice in the final log is no failure."""

    topic: str
    partitions: int
    producers: tuple[ProducerPlan, ...]
    consumers: tuple[str, ...] = ("c1",)
    group: str | None = None  # the group whose offsets a committer commits (None: no committer)
    rate: float | None = None  # records per second per producer (None: as the clients go)
    duplicates_allowed: bool = False

    @property
    def tps(self) -> list[TP]:
        """Every partition of the topic."""
        return [(self.topic, p) for p in range(self.partitions)]

    @classmethod
    def spread(cls, topic: str, partitions: int, producers: int, consumers: int, *, rate: float | None = None,
               duplicates_allowed: bool = False, group: str | None = None) -> "Workload":
        """Producers ``p0``, ``p1``, ... each starting at its own partition, consumers ``c0``, ..."""
        return cls(topic, partitions, tuple(ProducerPlan(f"p{i}", partitions, i) for i in range(producers)),
                   tuple(f"c{i}" for i in range(consumers)), group, rate, duplicates_allowed)
