"""The transactional consume-transform-produce workload (exactly-once copiers), run by both
fault suites: the simulation (:mod:`minikafka.sim.runner`, on its virtual-time loop and
simulated network) and the live fault suite (:mod:`minikafka.chaos.copier`, on a real
event loop in a thread, against broker processes).

What Kafka's TransactionalMessageCopier does in its system tests, written as an
application would with the project's own clients: a transactional
:class:`~minikafka.client.producer.AIOProducer` and a read_committed
:class:`~minikafka.client.consumer.AIOConsumer`.  Where the clients connect and which
clock they read is the caller's: :attr:`CopierSettings.client_args` gives the keyword
arguments every client is made with (the simulation's :func:`~minikafka.sim.clients.sim_ports`;
nothing for real sockets and the real clock).  Time is the running loop's
(``loop.time()``), so the same code runs on virtual and on real time.

This module sits beside :mod:`minikafka.client`, not inside it: it is an application of
the clients (with the fault suites' choices: aborts on purpose, pacing, what is
recorded), not part of the library; and not in :mod:`minikafka.faults`, whose modules are
pure (no I/O, no clock), while this one drives clients.

* :func:`fill_input` writes ``in-<p>-<i>`` records to the input topic before the faults,
  with an idempotent producer (recorded in a history as acknowledged produces when one is
  given).
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
  attempt)`` in :class:`TxnFigures`: their outputs must never be visible.
  :mod:`minikafka.faults.txn_checker` checks the whole run.

The copiers' choices (which transactions to abort) come from the generator the caller
gives them, seeded from the run's seed.
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from ..client.consumer import AIOConsumer
from ..client.producer import AIOProducer
from ..client.transactions import FATAL
from ..client.types import TopicPartition
from ..errors import KafkaError
from ..faults.history import History
from ..faults.txn_checker import output_value

TP = tuple[str, int]
BATCH = 10  # input records per transaction at most (per input partition)
ABORT_CHANCE = 0.2  # transactions aborted on purpose
BACKOFF_S = 0.1


def output_partitions(input_partition: int, partitions: int) -> list[int]:
    """Where the outputs of an input of ``input_partition`` go: the output partition of the
    same number and the next (one partition when there is only one)."""
    return sorted({input_partition % partitions, (input_partition + 1) % partitions})


@dataclass
class TxnFigures:
    """What the copiers did."""

    commits: int = 0
    aborts: int = 0  # aborted on purpose or after an error, the abort completed
    failures: int = 0  # transactions that ended in an error (then aborted, or their outcome unknown)
    restarts: int = 0  # fresh producers after fencing or an unknown outcome
    bumps: int = 0  # KIP-360 epoch bumps after a sequence gap (by the client, in an abort)
    aborted: set[tuple[str, int]] = field(default_factory=set)  # (transactional id, attempt)


@dataclass(frozen=True)
class CopierSettings:
    """What every copier of a run shares: the cluster, the topics, the group, the clients'
    settings and the pace."""

    bootstrap: str
    input_topic: str
    output_topic: str
    partitions: int  # of the output topic
    group: str  # the consumer group whose offsets the transactions commit; transactional ids are <group>-<index>
    client_args: Callable[[str], dict[str, Any]] = lambda name: {}  # a client's extra keyword arguments, by node name
    rate: float | None = None  # input records per second per copier until hurried (None: as fast as it goes)
    call_ms: int = 5000  # one request's timeout (request.timeout.ms)
    txn_timeout_ms: int = 20000  # transaction.timeout.ms: a transaction left open longer is aborted by the coordinator
    give_up_s: float = 30.0  # max.block.ms and delivery.timeout.ms: a step retried this long fails

    def ports(self, name: str) -> dict[str, Any]:
        """The keyword arguments of a client named ``name``: the caller's, with the request timeout and backoff."""
        return {"client_id": name, **self.client_args(name), "request_timeout_ms": self.call_ms,
                "retry_backoff_ms": int(BACKOFF_S * 1000)}

    def consumer(self, name: str, group: str | None, isolation_level: str) -> AIOConsumer:
        return AIOConsumer(self.bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                           isolation_level=isolation_level, fetch_max_wait_ms=100, **self.ports(name))


class Restart(Exception):
    """Fenced, or the transaction's outcome is unknown: a fresh producer and the group's
    committed offsets."""


async def close_client(client: AIOProducer | AIOConsumer | None) -> None:
    """Close ``client`` (if any), whatever that raises (a fenced producer's close may fail: it is done either way)."""
    if client is not None:
        try:
            await client.close()
        except Exception:  # noqa: BLE001
            pass


async def start_client(client: AIOProducer | AIOConsumer, until: Callable[[], float],
                       backoff_s: float = BACKOFF_S) -> bool:
    """Start ``client`` (its first metadata), tried again until loop time ``until()``."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            await client.start()
            return True
        except Exception:  # noqa: BLE001 (no broker answered yet)
            if loop.time() >= until():
                return False
            await asyncio.sleep(backoff_s)


class Copier:
    """One transactional id copying its input partitions to the output topic.

    ``note`` hears failures and restarts, ``trace`` (when given) every transaction's
    outcome, ``on_read(name, tp, offset, value, time)`` every input record handed out."""

    def __init__(self, settings: CopierSettings, index: int, parts: list[int], ends: dict[int, int],
                 figures: TxnFigures, rng: random.Random, note: Callable[[str], None],
                 trace: Callable[[str], None] | None = None,
                 on_read: Callable[[str, TP, int, str, float], None] | None = None) -> None:
        s = self.settings = settings
        self.name = f"copier-{index}"
        self.tid = f"{s.group}-{index}"
        self.tps = [(s.input_topic, p) for p in parts]
        self.ends = {(s.input_topic, p): ends[p] for p in parts}
        self.figures = figures
        self.rng = rng
        self.note = note
        self.trace = trace
        self.on_read = on_read
        self.positions: dict[TP, int] = {}
        self.attempt = 0
        self.errors = 0
        self.done = False
        self.until = 0.0  # when to give up (the runner moves it once the faults are over)
        self.hurry = False  # no pacing any more: the faults are over
        self.producer: AIOProducer | None = None
        self.consumer = s.consumer(self.name, s.group, "read_committed")

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    # -- the loop ----------------------------------------------------------------------------------
    async def run(self, until: float) -> None:
        """Copy until every owned input is committed, or until loop time ``until``
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
                    self.note(f"{self.name}: {self.tid} starts over (a fresh producer, the committed offsets): {exc}")
                    fresh = True
                    await asyncio.sleep(BACKOFF_S)
        finally:
            await close_client(self.producer)
            await close_client(self.consumer)

    async def start_over(self) -> bool:
        """A new transactional producer (``init_transactions`` fences the previous one and
        aborts its open transaction) and the group's stable committed offsets; False when
        :attr:`until` passed first."""
        s = self.settings
        await close_client(self.producer)
        while True:
            if self.now() > self.until:
                return False
            self.producer = AIOProducer(s.bootstrap, transactional_id=self.tid,
                                        transaction_timeout_ms=s.txn_timeout_ms, acks="all", linger_ms=0,
                                        delivery_timeout_ms=int(s.give_up_s * 1000), max_block_ms=int(s.give_up_s * 1000),
                                        **s.ports(self.name))
            try:
                if await start_client(self.producer, lambda: self.until):
                    await self.producer.init_transactions()
                    break
            except Exception as exc:  # noqa: BLE001 (fenced or unanswered: a new producer tries again)
                self.errors += 1
                self.note(f"{self.name}: {self.tid} init_transactions failed, retrying: {exc}")
            await close_client(self.producer)
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
        read with read_committed (given to ``on_read`` as they are handed out)."""
        try:
            records = await self.consumer.poll(timeout_ms=100, max_records=BATCH * len(self.tps))
        except KafkaError:
            self.errors += 1
            return {}
        out: dict[TP, list[tuple[int, str]]] = {}
        for rec in records:
            tp = (rec.topic, rec.partition)
            value = rec.value.decode() if rec.value else ""
            if self.on_read is not None:
                self.on_read(self.name, tp, rec.offset, value, self.now())
            got = out.setdefault(tp, [])
            if len(got) < BATCH and rec.offset < self.ends[tp]:
                got.append((rec.offset, value))
        for tp, got in out.items():  # what was read past the batch is read again next time
            if got:
                self.consumer.seek(TopicPartition(*tp), got[-1][0] + 1)
        return {tp: got for tp, got in out.items() if got}

    async def transaction(self) -> None:
        """One attempt: read, write, commit the offsets, end (or abort on error)."""
        s = self.settings
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
            for (t, p), recs in sorted(records.items()):
                for offset, value in recs:
                    out = output_value(value, self.tid, attempt).encode()
                    for q in output_partitions(p, s.partitions):
                        await producer.send(s.output_topic, out, partition=q)
                    nxt[(t, p)] = offset + 1
            await producer.send_offsets_to_transaction(
                {TopicPartition(t, p): o for (t, p), o in sorted(nxt.items())}, s.group)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
        except Exception as exc:  # noqa: BLE001 (what the client raised decides: restart or abort)
            self.errors += 1
            self.figures.failures += 1
            await self.abort(attempt, exc)
            return
        if self.trace is not None:
            span = ", ".join(f"{t}-{p} {self.positions[(t, p)]}..{o}" for (t, p), o in sorted(nxt.items()))
            self.trace(f"{self.name}: {self.tid} attempt {attempt} (producer {producer.producer_id} epoch "
                       f"{producer.producer_epoch}) {'committed' if commit else 'aborted on purpose'}: {span}")
        if commit:
            self.figures.commits += 1
            self.positions = nxt
        else:
            self.figures.aborts += 1
            self.figures.aborted.add((self.tid, attempt))
            self.rewind()
        if not self.hurry and s.rate:
            await asyncio.sleep(sum(len(v) for v in records.values()) / s.rate)

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
        self.note(f"{self.name}: {self.tid} attempt {attempt} aborted after {why}"
                  + ("; the epoch was bumped (KIP-360)" if bumped else ""))
        self.rewind()


async def fetch_committed(consumer: AIOConsumer, tps: list[TP], deadline: float) -> dict[TP, int] | None:
    """The group's stable committed offsets of ``tps`` (0 where none), asked until loop time
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


async def fill_input(settings: CopierSettings, input_partitions: int, per_partition: int, deadline: float,
                     history: History | None = None) -> dict[int, list[str]] | None:
    """Write ``per_partition`` records ``in-<p>-<i>`` to each of the ``input_partitions``
    partitions of the input topic with an idempotent producer (acks=all), recorded in
    ``history`` when given.  Returns partition -> values by offset (None when it could
    not be done by loop time ``deadline``, or a record did not land at its index)."""
    name = "filler"
    loop = asyncio.get_running_loop()
    topic = settings.input_topic
    producer = AIOProducer(settings.bootstrap, acks="all", enable_idempotence=True, linger_ms=0,
                           delivery_timeout_ms=int(max(1.0, deadline - loop.time()) * 1000),
                           max_block_ms=int(settings.give_up_s * 1000), **settings.ports(name))
    try:
        if not await start_client(producer, lambda: deadline):
            return None
        values = {p: [f"in-{p}-{i}" for i in range(per_partition)] for p in range(input_partitions)}
        for p, vals in values.items():
            ops = [history.invoke_produce(name, (topic, p), v, loop.time()) if history is not None else None
                   for v in vals]
            futures = [await producer.send(topic, v.encode(), partition=p) for v in vals]
            for i, (op, fut) in enumerate(zip(ops, futures)):
                try:
                    meta = await fut
                except Exception as exc:  # noqa: BLE001
                    if history is not None and op is not None:
                        history.info(op, loop.time(), type(exc).__name__)
                    return None
                if history is not None and op is not None:
                    history.ok(op, loop.time(), meta.offset)
                if meta.offset != i:
                    return None
        return values
    finally:
        await close_client(producer)
