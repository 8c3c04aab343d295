"""Fault injection against a live local cluster: does any acknowledged record get lost?

The workload, the history and the checker are shared with the simulation
(:mod:`minikafka.faults`, in Jepsen's split).  What is this package's own:
:mod:`.clients` (threads that carry out the workload with the real client library and
record the history), :mod:`.nemesis` (the faults on processes), :mod:`.checker`
(reading the healed cluster: replica comparison, the final log), :mod:`.report` (the
summary, its one line, the timeline dump), :mod:`.events` (the brokers' event
timelines), :mod:`.runner` (one run), :mod:`.cluster` (starting and reading the
cluster), :mod:`.links` (link faults with iptables and cgroups), :mod:`.live` (the
named live scenarios of ``minikafka scenario --live``) and :mod:`.command` (the
command line of ``scripts/chaos.py``).

:func:`run` starts (or uses) a 3-broker cluster, creates a topic with
replication factor 3 and ``min.insync.replicas=2`` (unclean election off), and
runs, at the same time:

* producers with ``acks=all`` writing unique values ``p{producer}-{seq}``; every
  acknowledgement is recorded as ``(partition, offset, value)``;
* consumers reading every partition from the beginning, recording every
  ``(partition, offset, value)`` they are handed;
* a *nemesis* that injects a fault every few seconds, chosen at random from a
  seeded generator: ``kill -9`` of a random broker, of a partition leader or of
  the controller (restarted a few seconds later), SIGSTOP then SIGCONT of a
  broker (sometimes for longer than the ZooKeeper session timeout), SIGTERM
  (controlled shutdown) then restart, and "follower then leader" controlled
  shutdowns in quick succession (the KIP-101 window), and, when running as root,
  link faults (iptables on loopback): a broker cut off from another broker, from
  ZooKeeper, or from the controller's requests, for a few seconds.  At most two
  brokers are down at once, usually one.

Then it heals the cluster (resume and restart everything, wait until every
partition has all three replicas in its ISR) and checks that

1. every acknowledged record is in the final log at its acknowledged
   ``(partition, offset)`` with its value (``lost`` counts those that are not);
2. the replicas of every partition are identical up to the high watermark
   (checksums of the ``replica_state`` API);
3. no consumer read a record that later vanished: every ``(partition, offset,
   value)`` a consumer saw is in the final log at that offset;
4. acknowledged records keep their order: a record acknowledged before its producer
   sent the next one to that partition is at a lower offset (``reordered``).

The outcome is a :class:`Summary`; ``Summary.line()`` is the one-line report of
``scripts/chaos.py``::

    acked=30146 lost=0 duplicated=0 faults=30 leader_elections=28 unclean=0 longest_unavailable_ms=8074 ok=true

``duplicated`` counts values present more than once in the final log.  The producers
are idempotent (the default with acks=all), so a retry never writes a record twice and
any duplicate fails the run; with ``idempotence=False`` (``--no-idempotence``) a retry
after an indefinite error may write a record twice, which is then not a failure.
``leader_elections`` and ``unclean`` count ``leader_elected`` and
``unclean_election`` events gathered from every broker's event timeline while the
run goes on.  ``longest_unavailable_ms`` is the longest time without any
successful produce acknowledgement.
"""
from __future__ import annotations

from .checker import compare_replicas, fill_summary, read_final_log, replica_states
from .clients import Clients
from .cluster import FAST_SETTINGS, ZkReader, post
from .events import EventCollector
from .nemesis import DEAD, PAUSED, STARTING, TERMINATING, UP, Nemesis
from .report import Summary, dump_timeline
from .runner import SCENARIOS, STALL_S, TRUNCATIONS, ChaosOptions, run

__all__ = [
    "ChaosOptions", "Clients", "DEAD", "EventCollector", "FAST_SETTINGS", "Nemesis", "PAUSED", "SCENARIOS", "STALL_S", "STARTING",
    "Summary", "TERMINATING", "TRUNCATIONS", "UP", "ZkReader", "compare_replicas", "dump_timeline", "fill_summary",
    "post", "read_final_log", "replica_states", "run",
]
