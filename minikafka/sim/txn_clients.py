"""The simulation's transactional consume-transform-produce workload (exactly-once).

What Kafka's TransactionalMessageCopier does in its system tests, with the project's own
clients (a transactional :class:`~minikafka.client.producer.AIOProducer` and a
read_committed :class:`~minikafka.client.consumer.AIOConsumer`) on the simulated network
and virtual clock, as :mod:`.clients` does for the plain workload:

* :func:`fill_input` writes ``in-<p>-<i>`` records to the input topic before the
  faults, with an idempotent producer, and records them in the history as acknowledged
  produces.
* A :class:`Copier` owns some input partitions and one transactional id.  It starts a
  transactional producer (``init_transactions``: finds its coordinator and fences any
  older epoch) and reads the group's committed offsets (``committed``, which asks with
  require_stable while a transaction holds them), then loops: poll a few records with
  read_committed, begin a transaction, write two outputs per input (to the output
  partition of the input's number and to the next, so that a transaction touches several
  partitions), ``send_offsets_to_transaction`` with the next input offsets, and end it:
  commit, or, one time in five, abort on purpose.
* What the client raises decides the rest, as it would for an application: a fencing
  error (the producer's FATAL_ERROR state) starts over with a new producer and the
  committed offsets; any other failure aborts the transaction (the client bumps the
  epoch itself after a sequence gap, KIP-360) and rewinds the consumer to the last
  committed positions; an abort that fails too starts over.
* Only aborts that the client completed are recorded as aborted ``(transactional id,
  attempt)``: their outputs must never be visible.  :func:`read_committed` reads the
  output topic at the end; :mod:`minikafka.faults.txn_checker` checks the whole run.

The copiers are clients, never faulted; their choices (which transactions to abort)
come from a generator seeded from the run's seed.
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..client.consumer import AIOConsumer
from ..client.producer import AIOProducer
from ..client.transactions import FATAL
from ..client.types import TopicPartition
from ..errors import KafkaError
from ..faults.history import History
from ..faults.txn_checker import output_value
from .clients import bootstrap, sim_ports, start_client

if TYPE_CHECKING:
    from .world import World

TP = tuple[str, int]
GROUP = "sim-copier"
COPIERS = 2  # transactional ids, each with its share of the input partitions
BATCH = 10  # input records per transaction at most (per input partition)
ABORT_CHANCE = 0.2  # transactions aborted on purpose
RATE = 5.0  # input records per virtual second per copier: the copying lasts through the faults
TXN_TIMEOUT_MS = 20000  # transaction.timeout.ms: a transaction left open longer is aborted by the coordinator
CALL_MS = 5000  # one request's timeout (request.timeout.ms)
BACKOFF_S = 0.1
GIVE_UP_S = 30.0  # max.block.ms and delivery.timeout.ms: a step retried this long fails


def input_topic(topic: str) -> str:
    return f"{topic}-in"


def output_topic(topic: str) -> str:
    return f"{topic}-out"


def output_partitions(input_partition: int, partitions: int) -> list[int]:
    """Where the outputs of an input of ``input_partition`` go: the output partition of the
    same number and the next (one partition when there is only one)."""
    return sorted({input_partition % partitions, (input_partition + 1) % partitions})


class Restart(Exception):
    """Fenced, or the transaction's outcome is unknown: a fresh producer and the group's
    committed offsets."""


def _ports(world: "World", name: str) -> dict[str, Any]:
    return {**sim_ports(world, name), "request_timeout_ms": CALL_MS, "retry_backoff_ms": int(BACKOFF_S * 1000)}


def _consumer(world: "World", name: str, group: str | None, isolation_level: str) -> AIOConsumer:
    return AIOConsumer(bootstrap(world), group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                       isolation_level=isolation_level, fetch_max_wait_ms=100, **_ports(world, name))


async def _close(client: AIOProducer | AIOConsumer | None) -> None:
    if client is not None:
        try:
            await client.close()
        except Exception:  # noqa: BLE001 (a fenced producer's close may fail: it is done either way)
            pass


@dataclass
class TxnFigures:
    """What the copiers did."""

    commits: int = 0
    aborts: int = 0  # aborted on purpose or after an error, the abort completed
    restarts: int = 0  # fresh producers after fencing or an unknown outcome
    bumps: int = 0  # KIP-360 epoch bumps after a sequence gap (by the client, in an abort)
    aborted: set[tuple[str, int]] = field(default_factory=set)  # (transactional id, attempt)


class Copier:
    """One transactional id copying its input partitions to the output topic."""

    def __init__(self, world: "World", index: int, parts: list[int], ends: dict[int, int], history: History,
                 figures: TxnFigures, rng: random.Random) -> None:
        o = world.opts
        self.world = world
        self.name = f"copier-{index}"
        self.tid = f"{GROUP}-{index}"
        self.input = input_topic(o.topic)
        self.output = output_topic(o.topic)
        self.partitions = o.partitions
        self.tps = [(self.input, p) for p in parts]
        self.ends = {(self.input, p): ends[p] for p in parts}
        self.history = history
        self.figures = figures
        self.rng = rng
        self.positions: dict[TP, int] = {}
        self.attempt = 0
        self.errors = 0
        self.done = False
        self.until = 0.0  # when to give up (the runner moves it once the faults are over)
        self.hurry = False  # no pacing any more: the faults are over
        self.producer: AIOProducer | None = None
        self.consumer = _consumer(world, self.name, GROUP, "read_committed")

    def now(self) -> float:
        return self.world.loop.time()

    # -- the loop ----------------------------------------------------------------------------------
    async def run(self, until: float) -> None:
        """Copy until every owned input is committed, or until virtual time ``until``
        (:attr:`until` from then on)."""
        self.until = until
        fresh = True
        try:
            if not await start_client(self.consumer, lambda: self.until):
                return
            self.consumer.assign([TopicPartition(t, p) for t, p in self.tps])
            while self.now() < self.until:
                try:
                    if fresh:
                        if not await self.start_over():
                            return
                        fresh = False
                    if all(self.positions[tp] >= self.ends[tp] for tp in self.tps):
                        self.done = True
                        return
                    await self.transaction()
                except Restart as exc:
                    self.figures.restarts += 1
                    self.world.note(f"{self.name}: {self.tid} starts over (a fresh producer, the committed offsets): {exc}")
                    fresh = True
                    await asyncio.sleep(BACKOFF_S)
        finally:
            await _close(self.producer)
            await _close(self.consumer)

    async def start_over(self) -> bool:
        """A new transactional producer (``init_transactions`` fences the previous one and
        aborts its open transaction) and the group's stable committed offsets; False when
        :attr:`until` passed first."""
        await _close(self.producer)
        while True:
            if self.now() > self.until:
                return False
            self.producer = AIOProducer(bootstrap(self.world), transactional_id=self.tid,
                                        transaction_timeout_ms=TXN_TIMEOUT_MS, acks="all", linger_ms=0,
                                        delivery_timeout_ms=int(GIVE_UP_S * 1000), max_block_ms=int(GIVE_UP_S * 1000),
                                        **_ports(self.world, self.name))
            try:
                if await start_client(self.producer, lambda: self.until):
                    await self.producer.init_transactions()
                    break
            except Exception:  # noqa: BLE001 (fenced or unanswered: a new producer tries again)
                self.errors += 1
            await _close(self.producer)
            self.producer = None
            await asyncio.sleep(BACKOFF_S)
        positions = await fetch_committed(self.consumer, self.tps, self.until)
        if positions is None:
            return False
        self.positions = positions
        self.rewind()
        return True

    def rewind(self) -> None:
        """The consumer back at the last committed positions (after an abort or a restart)."""
        for tp, offset in self.positions.items():
            self.consumer.seek(TopicPartition(*tp), offset)

    async def read(self) -> dict[TP, list[tuple[int, str]]]:
        """Records of the owned input partitions from their positions, at most BATCH of each,
        read with read_committed (recorded in the history as they are handed out)."""
        try:
            records = await self.consumer.poll(timeout_ms=100, max_records=BATCH * len(self.tps))
        except KafkaError:
            self.errors += 1
            return {}
        out: dict[TP, list[tuple[int, str]]] = {}
        for rec in records:
            tp = (rec.topic, rec.partition)
            value = rec.value.decode() if rec.value else ""
            self.history.read(self.name, tp, rec.offset, value, self.now())
            got = out.setdefault(tp, [])
            if len(got) < BATCH and rec.offset < self.ends[tp]:
                got.append((rec.offset, value))
        for tp, got in out.items():  # what was read past the batch is read again next time
            if got:
                self.consumer.seek(TopicPartition(*tp), got[-1][0] + 1)
        return {tp: got for tp, got in out.items() if got}

    async def transaction(self) -> None:
        """One attempt: read, write, commit the offsets, end (or abort on error)."""
        records = await self.read()
        if not records:
            await asyncio.sleep(BACKOFF_S)
            return
        assert self.producer is not None
        producer = self.producer
        self.attempt += 1
        attempt = self.attempt
        nxt = dict(self.positions)
        commit = self.rng.random() >= ABORT_CHANCE
        try:
            producer.begin_transaction()
            sent = []
            for (t, p), recs in sorted(records.items()):
                for offset, value in recs:
                    out = output_value(value, self.tid, attempt).encode()
                    for q in output_partitions(p, self.partitions):
                        sent.append(await producer.send(self.output, out, partition=q))
                    nxt[(t, p)] = offset + 1
            await producer.send_offsets_to_transaction(
                {TopicPartition(t, p): o for (t, p), o in sorted(nxt.items())}, GROUP)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
        except Exception as exc:  # noqa: BLE001 (what the client raised decides: restart or abort)
            self.errors += 1
            await self.abort(attempt, exc)
            return
        span = ", ".join(f"{t}-{p} {self.positions[(t, p)]}..{o}" for (t, p), o in sorted(nxt.items()))
        self.world.note(f"{self.name}: {self.tid} attempt {attempt} (producer {producer.producer_id} epoch "
                        f"{producer.producer_epoch}) {'committed' if commit else 'aborted on purpose'}: {span}")
        if commit:
            self.figures.commits += 1
            self.positions = nxt
        else:
            self.figures.aborts += 1
            self.figures.aborted.add((self.tid, attempt))
            self.rewind()
        if not self.hurry:
            await asyncio.sleep(sum(len(v) for v in records.values()) / RATE)

    async def abort(self, attempt: int, why: BaseException) -> None:
        """After a failure: a fenced producer starts over; otherwise abort the transaction
        (recorded once the client completed the abort) and rewind the consumer; an abort
        that fails starts over (its outcome, and the commit's before it, are unknown)."""
        producer = self.producer
        assert producer is not None
        if isinstance(why, FATAL) or producer.transaction_state == "FATAL_ERROR":
            raise Restart(f"attempt {attempt}: {why}")
        epoch = producer.producer_epoch
        try:
            await producer.abort_transaction()
        except Exception as exc:  # noqa: BLE001
            raise Restart(f"abort of attempt {attempt} after {why}: {exc}") from None
        bumped = producer.producer_epoch != epoch
        self.figures.aborts += 1
        self.figures.aborted.add((self.tid, attempt))
        if bumped:
            self.figures.bumps += 1
        self.world.note(f"{self.name}: {self.tid} attempt {attempt} aborted after {why}"
                        + ("; the epoch was bumped (KIP-360)" if bumped else ""))
        self.rewind()


async def fetch_committed(consumer: AIOConsumer, tps: list[TP], deadline: float) -> dict[TP, int] | None:
    """The group's stable committed offsets of ``tps`` (0 where none), asked until
    ``deadline`` (None when it passed first): a read_committed consumer asks with
    require_stable, so an open transaction holding them makes it wait."""
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        try:
            out = {}
            for tp in tps:
                got = await consumer.committed(TopicPartition(*tp))
                out[tp] = 0 if got is None else max(0, got)
            return out
        except KafkaError:
            await asyncio.sleep(BACKOFF_S * 5)
    return None


async def committed_offsets(world: "World", group: str, tps: list[TP], deadline: float) -> dict[TP, int] | None:
    """:func:`fetch_committed` through a read_committed consumer of ``group`` of its own."""
    consumer = _consumer(world, "verifier", group, "read_committed")
    try:
        if not await start_client(consumer, lambda: deadline):
            return None
        return await fetch_committed(consumer, tps, deadline)
    finally:
        await _close(consumer)


async def fill_input(world: "World", history: History, per_partition: int, deadline: float) -> dict[int, list[str]] | None:
    """Write ``per_partition`` records ``in-<p>-<i>`` to each input partition with an
    idempotent producer (acks=all), recorded in ``history``.  Returns partition -> values
    by offset (None when it could not be done by ``deadline``, or a record did not land at
    its index)."""
    name = "filler"
    producer = AIOProducer(bootstrap(world), acks="all", enable_idempotence=True, linger_ms=0,
                           delivery_timeout_ms=int(max(1.0, deadline - world.loop.time()) * 1000),
                           max_block_ms=int(GIVE_UP_S * 1000), **_ports(world, name))
    topic = input_topic(world.opts.topic)
    try:
        if not await start_client(producer, lambda: deadline):
            return None
        values = {p: [f"in-{p}-{i}" for i in range(per_partition)] for p in range(world.opts.partitions)}
        for p, vals in values.items():
            ops = [history.invoke_produce(name, (topic, p), v, world.loop.time()) for v in vals]
            futures = [await producer.send(topic, v.encode(), partition=p) for v in vals]
            for i, (op, fut) in enumerate(zip(ops, futures)):
                try:
                    meta = await fut
                except Exception as exc:  # noqa: BLE001
                    history.info(op, world.loop.time(), type(exc).__name__)
                    return None
                history.ok(op, world.loop.time(), meta.offset)
                if meta.offset != i:
                    return None
        return values
    finally:
        await _close(producer)


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
        await _close(rc)
        await _close(ru)
