"""The simulation's transactional consume-transform-produce workload (exactly-once).

What Kafka's TransactionalMessageCopier does in its system tests, on the simulated
network and the brokers' msgpack API, as :mod:`.clients` does for the plain workload:

* :func:`fill_input` writes ``in-<p>-<i>`` records to the input topic before the
  faults, with an idempotent producer (a retry of its one batch per partition cannot
  write it twice), and records them in the history as acknowledged produces.
* A :class:`Copier` owns some input partitions and one transactional id.  It finds its
  transaction coordinator (FindCoordinator key_type 1) and gets a producer id and epoch
  (InitProducerId), reads the group's committed offsets (OffsetFetch with
  require_stable, retried while a transaction holds them), then loops: read a few
  records with read_committed (aborted batches dropped by
  :class:`~minikafka.client.aborted.AbortedFilter`), add the output partitions to the
  transaction (AddPartitionsToTxn), write two outputs per input — to the output
  partition of the input's number and to the next, so that a transaction touches
  several partitions — as transactional batches with sequences from 0 per epoch and
  partition, add the group (AddOffsetsToTxn), commit the next input offsets inside the
  transaction (TxnOffsetCommit), and end it: commit, or, one time in five, abort on
  purpose.
* Retriable errors (a coordinator that moved, loads or is busy, a leader that moved,
  timeouts) are retried; a produce is retried with the same sequence numbers, so the
  leader drops a copy it already has.  A transaction that cannot commit (a produce
  refused or given up) is aborted; when its sequences may have a gap the next
  InitProducerId carries the producer id and epoch (KIP-360) and bumps the epoch.  When
  the outcome is unknown (EndTxn unanswered) or the copier is fenced, it starts over:
  a fresh InitProducerId, which fences the previous epoch and aborts its open
  transaction, then the group's committed offsets again.
* Only aborts that EndTxn acknowledged are recorded as aborted ``(transactional id,
  attempt)``: their outputs must never be visible.  :func:`read_committed` reads the
  output topic at the end; :mod:`minikafka.faults.txn_checker` checks the whole run.

The copiers are clients, never faulted; their choices (which transactions to abort)
come from a generator seeded from the run's seed.
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import errors
from ..client.aborted import AbortedFilter
from ..errors import KafkaError
from ..faults.history import History
from ..faults.txn_checker import output_value
from ..protocol.records.batch import batch_records, encode_batch, split_batches
from .network import call
from .world import BASE_PORT, HOST

if TYPE_CHECKING:
    from .world import World

TP = tuple[str, int]
GROUP = "sim-copier"
COPIERS = 2  # transactional ids, each with its share of the input partitions
BATCH = 10  # input records per transaction at most (per input partition)
ABORT_CHANCE = 0.2  # transactions aborted on purpose
RATE = 5.0  # input records per virtual second per copier: the copying lasts through the faults
TXN_TIMEOUT_MS = 20000  # transaction.timeout.ms: a transaction left open longer is aborted by the coordinator
CALL_S = 5.0  # one request's timeout
BACKOFF_S = 0.1
GIVE_UP_S = 30.0  # a step retried this long: the transaction cannot go on
# a newer epoch took over, or the id's producer is not ours any more: start over
FENCED = ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE",
          "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
# the partition's sequences of this producer have a gap: abort, then bump the epoch (KIP-360)
SEQUENCE_BROKEN = ("OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID")


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


class Abortable(Exception):
    """The transaction cannot commit; ``bump``: its sequences may have a gap, so the
    producer's epoch must be bumped after the abort (KIP-360)."""

    def __init__(self, text: str, bump: bool = False) -> None:
        super().__init__(text)
        self.bump = bump


class SimClient:
    """A node name on the simulated network, calls, and partition leaders from Metadata."""

    def __init__(self, world: "World", name: str) -> None:
        self.world = world
        self.name = name
        self.leaders: dict[TP, int] = {}
        self.errors = 0

    def now(self) -> float:
        return self.world.loop.time()

    async def call(self, broker_id: int, api: str, body: dict, timeout_s: float = CALL_S) -> dict:
        """Call ``api`` on broker ``broker_id`` over the simulated network."""
        return await call(self.world, self.name, HOST, BASE_PORT + broker_id, api, body, timeout_s)

    async def call_any(self, api: str, body: dict) -> dict:
        """Call ``api`` on each broker in turn (from a seeded start) until one answers
        without an error; raises the last error."""
        brokers = sorted(self.world.brokers)
        start = self.world.rng.randrange(len(brokers))
        last: KafkaError = errors.CoordinatorNotAvailableError("no broker answered")
        for i in range(len(brokers)):
            try:
                return await self.call(brokers[(start + i) % len(brokers)], api, body, 2.0)
            except KafkaError as exc:
                last = exc
        raise last

    async def leader(self, tp: TP) -> int | None:
        """The leader of ``tp`` (Metadata when not known)."""
        if tp not in self.leaders:
            try:
                md = await self.call_any("metadata", {"topics": [tp[0]]})
            except KafkaError:
                return None
            for t in md["topics"]:
                for p in t["partitions"]:
                    if p["leader"] >= 0:
                        self.leaders[(t["name"], p["partition"])] = p["leader"]
        return self.leaders.get(tp)

    async def fetch_committed(self, group: str, tps: list[TP], deadline: float) -> dict[TP, int] | None:
        """The group's committed offsets of ``tps`` (0 where none), stable: OffsetFetch with
        require_stable, retried while an open transaction holds them (UNSTABLE_OFFSET_COMMIT)
        or the coordinator is away; None when ``deadline`` passed first."""
        coordinator: int | None = None
        while self.now() < deadline:
            try:
                if coordinator is None:
                    coordinator = (await self.call_any("find_coordinator", {"key": group, "key_type": 0}))["node_id"]
                r = await self.call(coordinator, "offset_fetch", {
                    "group_id": group, "require_stable": True,
                    "partitions": [{"topic": t, "partition": p} for t, p in tps]})
                bad = [x for x in r["partitions"] if x["error_code"]]
                if not bad:
                    got = {(x["topic"], x["partition"]): x["offset"] for x in r["partitions"]}
                    return {tp: max(0, got.get(tp, -1)) for tp in tps}
                if any(x["error"] in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE") for x in bad):
                    coordinator = None
            except KafkaError as exc:
                self.errors += 1
                if not isinstance(exc, (errors.CoordinatorLoadInProgressError, errors.UnstableOffsetCommitError)):
                    coordinator = None
            await asyncio.sleep(BACKOFF_S * 5)
        return None


@dataclass
class TxnFigures:
    """What the copiers did."""

    commits: int = 0
    aborts: int = 0  # aborted on purpose or after an error, EndTxn acknowledged
    restarts: int = 0  # fresh producers after fencing or an unknown outcome
    bumps: int = 0  # KIP-360 epoch bumps after a sequence gap
    aborted: set[tuple[str, int]] = field(default_factory=set)  # (transactional id, attempt)


class Copier(SimClient):
    """One transactional id copying its input partitions to the output topic."""

    def __init__(self, world: "World", index: int, parts: list[int], ends: dict[int, int], history: History,
                 figures: TxnFigures, rng: random.Random) -> None:
        super().__init__(world, f"copier-{index}")
        o = world.opts
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
        self.coordinator: int | None = None  # of the transactional id
        self.group_coordinator: int | None = None
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[TP, int] = {}  # next sequence per output partition, this epoch
        self.attempt = 0
        self.done = False
        self.until = 0.0  # when to give up (the runner moves it once the faults are over)
        self.hurry = False  # no pacing any more: the faults are over

    def ids(self) -> dict:
        return {"transactional_id": self.tid, "producer_id": self.producer_id, "producer_epoch": self.producer_epoch}

    # -- the loop ----------------------------------------------------------------------------------
    async def run(self, until: float) -> None:
        """Copy until every owned input is committed, or until virtual time ``until``
        (:attr:`until` from then on)."""
        self.until = until
        fresh = True
        while self.now() < self.until:
            try:
                if fresh:
                    await self.init_producer(bump=False)
                    positions = await self.fetch_committed(GROUP, self.tps, self.until)
                    if positions is None:
                        return
                    self.positions = positions
                    fresh = False
                if all(self.positions[tp] >= self.ends[tp] for tp in self.tps):
                    self.done = True
                    return
                await self.transaction(until)
            except Restart as exc:
                self.figures.restarts += 1
                self.world.note(f"{self.name}: {self.tid} starts over (a fresh producer, the committed offsets): {exc}")
                fresh = True
                await asyncio.sleep(BACKOFF_S)

    async def transaction(self, until: float) -> None:
        """One attempt: read, write, commit the offsets, end (or abort on error)."""
        records = await self.read()
        if not records:
            await asyncio.sleep(BACKOFF_S)
            return
        self.attempt += 1
        attempt = self.attempt
        outputs: dict[int, list[str]] = {}
        nxt = dict(self.positions)
        for (t, p), recs in sorted(records.items()):
            for offset, value in recs:
                out = output_value(value, self.tid, attempt)
                for q in output_partitions(p, self.partitions):
                    outputs.setdefault(q, []).append(out)
                nxt[(t, p)] = offset + 1
        try:
            await self.coordinator_call("add_partitions_to_txn", {
                **self.ids(), "partitions": [{"topic": self.output, "partition": q} for q in sorted(outputs)]})
            for q, values in sorted(outputs.items()):
                await self.produce((self.output, q), values)
            await self.coordinator_call("add_offsets_to_txn", {**self.ids(), "group_id": GROUP})
            await self.txn_offset_commit(nxt)
        except Abortable as exc:
            await self.abort(attempt, exc)
            return
        commit = self.rng.random() >= ABORT_CHANCE
        try:
            await self.coordinator_call("end_txn", {**self.ids(), "committed": commit})
        except KafkaError as exc:
            # unanswered or refused: whether it committed is unknown (the restart's
            # InitProducerId completes or aborts it; the committed offsets tell)
            raise Restart(f"end_txn: {exc}") from None
        span = ", ".join(f"{t}-{p} {self.positions[(t, p)]}..{o}" for (t, p), o in sorted(nxt.items()))
        self.world.note(f"{self.name}: {self.tid} attempt {attempt} (producer {self.producer_id} epoch "
                        f"{self.producer_epoch}) {'committed' if commit else 'aborted on purpose'}: {span}")
        if commit:
            self.figures.commits += 1
            self.positions = nxt
        else:
            self.figures.aborts += 1
            self.figures.aborted.add((self.tid, attempt))
        if not self.hurry:
            await asyncio.sleep(sum(len(v) for v in records.values()) / RATE)

    async def abort(self, attempt: int, why: Abortable) -> None:
        """Abort the failed transaction (recorded once EndTxn acknowledged it), then bump the
        epoch when its sequences may have a gap; a failure of either starts over."""
        try:
            await self.coordinator_call("end_txn", {**self.ids(), "committed": False})
        except KafkaError as exc:
            raise Restart(f"abort after {why}: {exc}") from None
        self.figures.aborts += 1
        self.figures.aborted.add((self.tid, attempt))
        self.world.note(f"{self.name}: {self.tid} attempt {attempt} aborted after {why}"
                        + ("; the epoch is bumped (KIP-360)" if why.bump else ""))
        if why.bump:
            self.figures.bumps += 1
            await self.init_producer(bump=True)

    # -- the transaction coordinator ------------------------------------------------------------------
    async def coordinator_call(self, api: str, body: dict) -> dict:
        """Call the transaction coordinator (found with FindCoordinator key_type 1),
        retrying retriable errors for up to GIVE_UP_S.  A fencing error raises
        :class:`Restart`; any other failure :class:`Abortable` (EndTxn's callers decide
        for themselves: they catch KafkaError first)."""
        deadline = self.now() + GIVE_UP_S
        while True:
            try:
                if self.coordinator is None:
                    self.coordinator = (await self.call_any("find_coordinator",
                                                            {"key": self.tid, "key_type": 1}))["node_id"]
                r = await self.call(self.coordinator, api, body)
                bad = [x for x in r.get("partitions") or () if x["error_code"] and x["error"] != "OPERATION_NOT_ATTEMPTED"]
                if bad:
                    raise errors.error_for(bad[0]["error_code"], f"{bad[0]['topic']}-{bad[0]['partition']}")
                return r
            except KafkaError as exc:
                self.errors += 1
                name = exc.code.name
                if name in FENCED:
                    raise Restart(f"{api}: {exc}") from None
                if not exc.retriable or self.now() > deadline:
                    if api == "end_txn":
                        raise
                    raise Abortable(f"{api}: {exc}") from None
                if not isinstance(exc, (errors.CoordinatorLoadInProgressError, errors.ConcurrentTransactionsError)):
                    self.coordinator = None
                await asyncio.sleep(BACKOFF_S)

    async def init_producer(self, bump: bool) -> None:
        """InitProducerId: a fresh one fences the previous epoch (and aborts its open
        transaction); ``bump`` carries the current id and epoch (KIP-360).  Retried until it
        succeeds; sequences restart at 0."""
        body = {"transactional_id": self.tid, "transaction_timeout_ms": TXN_TIMEOUT_MS}
        if bump and self.producer_id >= 0:
            body.update(producer_id=self.producer_id, producer_epoch=self.producer_epoch)
        while True:
            if self.now() > self.until:
                raise Restart("out of time")
            try:
                r = await self.coordinator_call("init_producer_id", body)
                break
            except Abortable:
                await asyncio.sleep(BACKOFF_S)
            except Restart:
                if "producer_id" not in body:
                    raise
                del body["producer_id"], body["producer_epoch"]  # fenced meanwhile: a fresh one
        self.producer_id, self.producer_epoch = r["producer_id"], r["producer_epoch"]
        self.sequences.clear()

    # -- data -----------------------------------------------------------------------------------------
    async def read(self) -> dict[TP, list[tuple[int, str]]]:
        """Up to BATCH records of each owned input partition from its position, read
        with read_committed (recorded in the history as they are handed out)."""
        out: dict[TP, list[tuple[int, str]]] = {}
        for tp in self.tps:
            if self.positions[tp] >= self.ends[tp]:
                continue
            leader = await self.leader(tp)
            if leader is None:
                continue
            try:
                r = await self.call(leader, "fetch", {"replica_id": -1, "max_wait_ms": 100, "min_bytes": 1,
                                                      "isolation_level": 1, "partitions": [
                                                          {"topic": tp[0], "partition": tp[1],
                                                           "fetch_offset": self.positions[tp]}]}, 3.0)
            except KafkaError:
                self.errors += 1
                self.leaders.pop(tp, None)
                continue
            pr = r["partitions"][0]
            if pr["error_code"]:
                self.errors += 1
                self.leaders.pop(tp, None)
                continue
            got = committed_records(pr, self.positions[tp])[:BATCH]
            for offset, value in got:
                self.history.read(self.name, tp, offset, value, self.now())
            if got:
                out[tp] = got
        return out

    async def produce(self, tp: TP, values: list[str]) -> None:
        """One transactional batch, retried with the same sequences until acknowledged;
        raises :class:`Abortable` (or :class:`Restart` when fenced) otherwise."""
        seq = self.sequences.get(tp, 0)
        ts = int(self.now() * 1000)
        batch = encode_batch([(None, v.encode(), None, ts) for v in values], producer_id=self.producer_id,
                             producer_epoch=self.producer_epoch, base_sequence=seq, is_transactional=True)
        deadline = self.now() + GIVE_UP_S
        while True:
            if self.now() > deadline:
                # sent, maybe written: the abort covers it, the bumped epoch the sequence gap
                raise Abortable(f"produce to {tp[0]}-{tp[1]} given up", bump=True)
            leader = await self.leader(tp)
            if leader is None:
                await asyncio.sleep(BACKOFF_S)
                continue
            try:
                r = await self.call(leader, "produce", {"acks": -1, "timeout_ms": 3000, "partitions": [
                    {"topic": tp[0], "partition": tp[1], "records": batch}]})
            except KafkaError:
                self.errors += 1
                self.leaders.pop(tp, None)
                await asyncio.sleep(BACKOFF_S)
                continue
            pr = r["partitions"][0]
            if pr["error_code"] == 0:
                self.sequences[tp] = seq + len(values)
                return
            self.errors += 1
            name = pr["error"]
            if name in FENCED:
                raise Restart(f"produce to {tp[0]}-{tp[1]}: {name}")
            if name in SEQUENCE_BROKEN or not errors.error_for(pr["error_code"]).retriable:
                raise Abortable(f"produce to {tp[0]}-{tp[1]}: {name}", bump=True)
            self.leaders.pop(tp, None)
            await asyncio.sleep(BACKOFF_S)

    async def txn_offset_commit(self, positions: dict[TP, int]) -> None:
        """TxnOffsetCommit of the next input offsets to the group coordinator (found with
        FindCoordinator key_type 0), retried while retriable."""
        deadline = self.now() + GIVE_UP_S
        body = {**self.ids(), "group_id": GROUP,
                "offsets": [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(positions.items())]}
        while True:
            try:
                if self.group_coordinator is None:
                    self.group_coordinator = (await self.call_any("find_coordinator",
                                                                  {"key": GROUP, "key_type": 0}))["node_id"]
                r = await self.call(self.group_coordinator, "txn_offset_commit", body)
                bad = [x for x in r["partitions"] if x["error_code"]]
                if not bad:
                    return
                raise errors.error_for(bad[0]["error_code"], f"{bad[0]['topic']}-{bad[0]['partition']}")
            except KafkaError as exc:
                self.errors += 1
                if exc.code.name in FENCED:
                    raise Restart(f"txn_offset_commit: {exc}") from None
                if not exc.retriable or self.now() > deadline:
                    raise Abortable(f"txn_offset_commit: {exc}") from None
                if not isinstance(exc, errors.CoordinatorLoadInProgressError):
                    self.group_coordinator = None
                await asyncio.sleep(BACKOFF_S)


def committed_records(answer: dict, start: int) -> list[tuple[int, str]]:
    """``(offset, value)`` of a read_committed Fetch answer's records from ``start`` on:
    control batches and the batches of aborted transactions left out."""
    out = []
    drop = AbortedFilter(answer.get("aborted_transactions"))
    for h, raw in split_batches(answer["records"]):
        if drop.skips(h, raw) or h.is_control:
            continue
        for offset, _, _, value, _ in batch_records(h, raw):
            if offset >= start:
                out.append((offset, value.decode() if value else ""))
    return out


async def fill_input(world: "World", history: History, per_partition: int, deadline: float) -> dict[int, list[str]] | None:
    """Write ``per_partition`` records ``in-<p>-<i>`` to each input partition: one batch
    per partition from an idempotent producer (sequence 0, so a retry is not written
    twice), acks=all, recorded in ``history``.  Returns partition -> values by offset
    (None when it could not be done by ``deadline``, or a batch did not land at offset 0)."""
    client = SimClient(world, "filler")
    topic = input_topic(world.opts.topic)
    pid = None
    while pid is None:
        if world.loop.time() > deadline:
            return None
        try:
            pid = (await client.call_any("init_producer_id", {}))["producer_id"]
        except KafkaError:
            await asyncio.sleep(0.5)
    values = {p: [f"in-{p}-{i}" for i in range(per_partition)] for p in range(world.opts.partitions)}
    for p, vals in values.items():
        tp = (topic, p)
        ops = [history.invoke_produce(client.name, tp, v, world.loop.time()) for v in vals]
        batch = encode_batch([(None, v.encode(), None, int(world.loop.time() * 1000)) for v in vals],
                             producer_id=pid, producer_epoch=0, base_sequence=0)
        while True:
            if world.loop.time() > deadline:
                return None
            leader = await client.leader(tp)
            if leader is not None:
                try:
                    r = await client.call(leader, "produce", {"acks": -1, "timeout_ms": 3000, "partitions": [
                        {"topic": topic, "partition": p, "records": batch}]})
                    pr = r["partitions"][0]
                    if pr["error_code"] == 0:
                        for i, op in enumerate(ops):
                            history.ok(op, world.loop.time(), pr["base_offset"] + i)
                        if pr["base_offset"] != 0:
                            return None
                        break
                except KafkaError:
                    pass
                client.leaders.pop(tp, None)
            await asyncio.sleep(0.5)
    return values


async def read_committed(world: "World", topic: str, partitions: int, deadline: float) -> tuple[dict[int, list[str]], list[str]]:
    """Every value read_committed returns from ``topic``, per partition, read from offset 0
    until the last stable offset reaches the high watermark (no transaction left open);
    also the partitions where that did not happen by ``deadline``, described."""
    client = SimClient(world, "verifier")
    out: dict[int, list[str]] = {}
    stuck: list[str] = []
    for p in range(partitions):
        tp = (topic, p)
        offset, values, last = 0, [], ""
        while True:
            if world.loop.time() > deadline:
                stuck.append(f"{topic}-{p}: read_committed did not reach the end ({last or 'no answer'})")
                break
            leader = await client.leader(tp)
            answer = None
            if leader is not None:
                try:
                    r = await client.call(leader, "fetch", {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0,
                                                            "isolation_level": 1, "partitions": [
                                                                {"topic": topic, "partition": p,
                                                                 "fetch_offset": offset}]}, 3.0)
                    answer = r["partitions"][0]
                    if answer["error_code"]:
                        answer = None
                except KafkaError:
                    pass
            if answer is None:
                client.leaders.pop(tp, None)
                await asyncio.sleep(0.5)
                continue
            got = committed_records(answer, offset)
            values.extend(v for _, v in got)
            batches = split_batches(answer["records"])
            if batches:
                offset = max(offset, batches[-1][0].next_offset)
                continue
            hw, lso = answer["high_watermark"], answer["last_stable_offset"]
            last = f"at offset {offset}, last stable offset {lso}, high watermark {hw}"
            if offset >= lso and lso >= hw:
                break
            await asyncio.sleep(0.5)
        out[p] = values
    return out, stuck
