"""The simulation's side of the transactional consume-transform-produce workload (exactly-once).

The copiers and the input's filler are :mod:`minikafka.workloads.copier`, the code the
live fault suite runs too; here they are given the simulation's ports
(:func:`~.clients.sim_ports`: the simulated network under each client's node name, so
the nemesis reaches them, and the world's virtual clock), its settings (short timeouts,
a pace of :data:`RATE` input records per virtual second per copier until the faults are
over) and the history, which records the filler's produces and every input record a
copier is handed.  :func:`read_committed` and :func:`committed_offsets` read the outcome
at the end; :mod:`minikafka.faults.txn_checker` checks the whole run.

The copiers are clients, never faulted; their choices (which transactions to abort)
come from a generator seeded from the run's seed.
"""
from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

from ..client.consumer import AIOConsumer
from ..client.types import TopicPartition
from ..errors import KafkaError
from ..faults.history import History
from ..workloads.copier import Copier, CopierSettings, TxnFigures, close_client, fetch_committed, start_client
from ..workloads.copier import fill_input as fill_copier_input
from .clients import bootstrap, sim_ports

if TYPE_CHECKING:
    from .world import World

TP = tuple[str, int]
GROUP = "sim-copier"
COPIERS = 2  # transactional ids, each with its share of the input partitions
RATE = 5.0  # input records per virtual second per copier: the copying lasts through the faults
TXN_TIMEOUT_MS = 20000  # transaction.timeout.ms: a transaction left open longer is aborted by the coordinator
CALL_MS = 5000  # one request's timeout (request.timeout.ms)
GIVE_UP_S = 30.0  # max.block.ms and delivery.timeout.ms: a step retried this long fails


def input_topic(topic: str) -> str:
    return f"{topic}-in"


def output_topic(topic: str) -> str:
    return f"{topic}-out"


def settings(world: "World") -> CopierSettings:
    """The copiers' settings in ``world``: its brokers and topics, the simulation's ports."""
    o = world.opts
    return CopierSettings(bootstrap(world), input_topic(o.topic), output_topic(o.topic), o.partitions, GROUP,
                          client_args=lambda name: sim_ports(world, name), rate=RATE, call_ms=CALL_MS,
                          txn_timeout_ms=TXN_TIMEOUT_MS, give_up_s=GIVE_UP_S)


def copier(world: "World", index: int, parts: list[int], ends: dict[int, int], history: History,
           figures: TxnFigures, rng: random.Random) -> Copier:
    """Copier ``index`` of ``parts``, noting in the world's trace and recording its reads in ``history``."""
    return Copier(settings(world), index, parts, ends, figures, rng, note=world.note, trace=world.note,
                  on_read=history.read)


async def fill_input(world: "World", history: History, per_partition: int, deadline: float) -> dict[int, list[str]] | None:
    """:func:`minikafka.workloads.copier.fill_input` on the simulated network, recorded in ``history``."""
    return await fill_copier_input(settings(world), world.opts.partitions, per_partition, deadline, history)


def _consumer(world: "World", name: str, group: str | None, isolation_level: str) -> AIOConsumer:
    return settings(world).consumer(name, group, isolation_level)


async def committed_offsets(world: "World", group: str, tps: list[TP], deadline: float) -> dict[TP, int] | None:
    """:func:`~minikafka.workloads.copier.fetch_committed` through a read_committed consumer of ``group`` of its own."""
    consumer = _consumer(world, "verifier", group, "read_committed")
    try:
        if not await start_client(consumer, lambda: deadline):
            return None
        return await fetch_committed(consumer, tps, deadline)
    finally:
        await close_client(consumer)


async def read_committed(world: "World", topic: str, partitions: int, deadline: float) -> tuple[dict[int, list[str]], list[str]]:
    """Every value read_committed returns from ``topic``, per partition, read from offset 0
    until the position reaches the last stable offset and that reaches the high watermark
    (no transaction left open); also the partitions where that did not happen by
    ``deadline``, described."""
    rc = _consumer(world, "verifier", None, "read_committed")
    ru = _consumer(world, "verifier-hw", None, "read_uncommitted")
    out: dict[int, list[str]] = {p: [] for p in range(partitions)}
    stuck: list[str] = []
    loop = asyncio.get_running_loop()
    try:
        for c in (rc, ru):
            if not await start_client(c, lambda: deadline):
                return out, [f"{topic}: no broker answered the verifier"]
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        rc.assign(tps)
        rc.seek_to_beginning(*tps)
        last: dict[int, str] = {}
        todo = set(range(partitions))
        while todo:
            if loop.time() > deadline:
                stuck += [f"{topic}-{p}: read_committed did not reach the end ({last.get(p) or 'no answer'})"
                          for p in sorted(todo)]
                break
            try:
                for rec in await rc.poll(timeout_ms=200):
                    out[rec.partition].append(rec.value.decode() if rec.value else "")
                lsos = await rc.end_offsets([tps[p] for p in sorted(todo)])
                hws = await ru.end_offsets([tps[p] for p in sorted(todo)])
                for p in sorted(todo):
                    position = await rc.position(tps[p])
                    lso, hw = lsos[tps[p]], hws[tps[p]]
                    last[p] = f"at offset {position}, last stable offset {lso}, high watermark {hw}"
                    if position >= lso >= hw:
                        todo.discard(p)
            except KafkaError as exc:
                last = {p: f"{exc}" for p in todo}
                await asyncio.sleep(0.5)
        return out, stuck
    finally:
        await close_client(rc)
        await close_client(ru)
