"""Run one seed, sweep many, check determinism.

:func:`run_seed` builds a :class:`~.world.World`, starts ZooKeeper's twin and the
brokers, creates a topic (replication factor 3, ``min.insync.replicas=2``), runs the
:data:`WORKLOAD` (two acks=all producers, a consumer and a committer of the consumer's
offsets, :mod:`.clients`) while the nemesis injects a fault every couple of virtual
seconds, then heals everything, lets the cluster settle and runs the end checks: the
convergence of the replicas (:meth:`.invariants.Checker.final`) and the shared checks of
the run's :class:`~minikafka.faults.history.History` (:mod:`minikafka.faults.checker`).
The simulation's own invariants are checked after every loop step.  The result's ``trace`` is the
nemesis's and the checker's lines merged with the brokers' own event timelines; two
runs of one seed give the same trace (:func:`check_determinism`).
"""
from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import random
import sys
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Coroutine, TypeVar

from .. import errors
from ..faults import checker as shared
from ..faults.history import History, Outcome
from ..faults.txn_checker import check_transactions
from ..faults.workload import ProducerPlan, Workload
from ..protocol.rpc.types import CreatableTopic, CreateTopicsRequest
from ..rpc import request
from ..workloads.copier import TxnFigures
from .clients import Committer, Consumer, Producer
from .invariants import Checker
from .loop import SimLoop, SimStalled
from .nemesis import Nemesis
from . import txn_clients as txn
from .network import call
from .world import BASE_PORT, HOST, Options, World, quiet_logs


def workload(opts: Options) -> Workload:
    """The simulation's workload: producers ``p1`` and ``p2`` (acks=all, one request at a
    time, both starting at partition 0; a value is never sent twice), consumer ``c1`` and
    committer ``g1`` of group ``sim-group``."""
    return Workload(opts.topic, opts.partitions, (ProducerPlan("p1", opts.partitions), ProducerPlan("p2", opts.partitions)),
                    ("c1",), group="sim-group", duplicates_allowed=False)


@dataclass
class Result:
    """One seed's outcome."""

    seed: int
    ok: bool
    violations: list[str]
    trace: list[str]
    acked: int = 0
    consumed: int = 0
    commits: int = 0
    lost: int = 0
    faults: int = 0
    fault_counts: dict[str, int] = field(default_factory=dict)
    elections: int = 0
    txn: TxnFigures | None = None  # the transactional workload's figures (--transactions)
    copied: int = 0  # input records committed with their outputs
    inputs: int = 0
    txn_violations: int = 0
    steps: int = 0
    virtual_s: float = 0.0
    wall_s: float = 0.0
    digest: str = ""

    def line(self, opts: Options) -> str:
        """The one-line verdict."""
        verdict = "ok" if self.ok else "FAILED"
        first = f" first_violation={self.violations[0]!r}" if self.violations else ""
        txn = ""
        if self.txn is not None:
            t = self.txn
            txn = (f" copied={self.copied}/{self.inputs} txn_aborts={t.aborts} restarts={t.restarts} "
                   f"epoch_bumps={t.bumps} txn_violations={self.txn_violations}")
        return (f"seed={self.seed} {verdict} truncation={opts.truncation} storage={opts.storage} "
                f"brokers={opts.brokers} acked={self.acked} consumed={self.consumed} commits={self.commits} lost={self.lost}"
                f"{txn} faults={self.faults} leader_epochs={self.elections} loop_steps={self.steps} "
                f"virtual_s={self.virtual_s:.0f} wall_s={self.wall_s:.1f} trace={self.digest[:12]}{first}")


async def _wait(world: World, cond: Callable[[], object], timeout_s: float, interval_s: float = 0.1) -> bool:
    deadline = world.loop.time() + timeout_s
    while not cond():
        if world.loop.time() > deadline:
            return False
        await asyncio.sleep(interval_s)
    return True


async def _create_topic(world: World, topic: str | None = None) -> bool:
    o = world.opts
    for _ in range(50):
        live = world.live_brokers()
        if live:
            try:
                req = CreateTopicsRequest(topics=[CreatableTopic(
                    name=topic or o.topic, num_partitions=o.partitions, replication_factor=o.replication_factor,
                    config={"min.insync.replicas": str(o.min_insync_replicas)})], timeout_ms=10000)
                r = await request(functools.partial(call, world, "admin"), HOST, BASE_PORT + live[0], req, 15.0)
                error = r.topics[0].error
                if error is None or error.code.name == "TOPIC_ALREADY_EXISTS":
                    return True
            except errors.KafkaError:
                pass
        await asyncio.sleep(0.5)
    return False


def _converged(world: World, tps: list) -> bool:
    live = world.live_brokers()
    if len(live) != world.opts.brokers:
        return False
    for tp in tps:
        leaders = [world.brokers[b].replica_manager.partitions.get(tp) for b in live]
        leads = [p for p in leaders if p is not None and p.is_leader]
        if len(leads) != 1:
            return False
        lead = leads[0]
        if len(lead.isr) != len(lead.replicas) or lead.high_watermark != lead.log_end_offset:
            return False
        if any(p is None or p.log_end_offset != lead.log_end_offset for p in leaders):
            return False
    return True


async def _start(world: World, checker: Checker) -> bool:
    """ZooKeeper's twin and the brokers, until a controller is elected."""
    world.start_zookeeper()
    for b in range(1, world.opts.brokers + 1):
        world.start_broker(b)
    if not await _wait(world, lambda: world.controller_id() is not None, 60):
        checker.violate("no controller was elected within 60 s of the start")
        return False
    return True


async def _scenario(world: World, checker: Checker, history: History, result: Result) -> None:
    o = world.opts
    if o.transactions:
        await _transactional(world, checker, history, result)
        return
    if not await _start(world, checker):
        return
    if not await _create_topic(world):
        checker.violate(f"topic {o.topic} could not be created")
        return
    w = workload(o)
    tps = w.tps
    run_for = o.steps * o.step_s
    end = world.loop.time() + run_for
    consumer = Consumer(world, w.consumers[0], history)
    committer = Committer(world, "g1", history, consumer, w.group or "sim-group")
    clients: list[Producer | Consumer | Committer] = [*(Producer(world, plan, history) for plan in w.producers),
                                                      consumer, committer]
    tasks = [world.loop.create_task(c.run(end)) for c in clients]
    nemesis = Nemesis(world, o.faults)
    await nemesis.run(o.steps, o.step_s)
    nemesis.heal_all()
    await asyncio.gather(*tasks)
    if not await _wait(world, lambda: _converged(world, tps), o.settle_s, 0.25):
        world.note("the cluster did not converge within the settle time")
    await consumer.run(world.loop.time() + CATCH_UP_S)  # read what was committed late
    unread = _unread(history, consumer.name)
    if unread:
        checker.violate(f"consumer {consumer.name} had not read {len(unread)} acknowledged records {CATCH_UP_S:g} s "
                        f"after the cluster converged (first: {unread[0][0][0]}-{unread[0][0][1]} offset {unread[0][1]})")
    # a follower whose fetch was lost waits out its request timeout (request.timeout.ms)
    # and may leave the ISR meanwhile: converged means converged after that, too
    await _wait(world, lambda: _converged(world, tps), o.settle_s, 0.25)
    records = shared.check_records(history, checker.final(tps), w.duplicates_allowed)
    checker.add(records.problems())
    checker.add(shared.check_offset_commits(history, await committer.fetch_committed(o.settle_s)).problems())
    for c in clients:
        await c.close()
    result.commits = committer.commits
    result.acked = history.acked
    result.consumed = records.consumed
    result.lost = len(records.lost)
    result.faults = nemesis.faults
    result.fault_counts = dict(nemesis.counts)


CATCH_UP_S = 10.0  # after the faults and convergence, the consumer has this long to read every acknowledged record


def _unread(history: History, consumer: str) -> list[tuple[tuple[str, int], int]]:
    """The acknowledged records (partition, offset) that ``consumer`` was never handed:
    lost (reported as such) or a consumer that stalled."""
    read = {(r.tp, r.offset) for r in history.reads if r.process == consumer}
    return sorted({(op.tp, op.offset) for op in history.produces
                   if op.outcome is Outcome.OK and op.offset is not None and (op.tp, op.offset) not in read})


async def _transactional(world: World, checker: Checker, history: History, result: Result) -> None:
    """The transactional workload (the copiers of :mod:`minikafka.workloads.copier`, given
    the simulation's ports by :mod:`.txn_clients`): fill the input topic, copy it
    under the nemesis, heal, let the copiers finish, then check what read_committed
    returns from the output topic against the group's committed offsets
    (:func:`~minikafka.faults.txn_checker.check_transactions`), besides the replicas'
    convergence and the input's acknowledged records."""
    o = world.opts
    if not await _start(world, checker):
        return
    in_topic, out_topic = txn.input_topic(o.topic), txn.output_topic(o.topic)
    for topic in (in_topic, out_topic):
        if not await _create_topic(world, topic):
            checker.violate(f"topic {topic} could not be created")
            return
    in_tps = [(in_topic, p) for p in range(o.partitions)]
    tps = in_tps + [(out_topic, p) for p in range(o.partitions)]
    run_for = o.steps * o.step_s
    per_partition = max(20, int(txn.RATE * run_for))
    inputs = await txn.fill_input(world, history, per_partition, world.loop.time() + 60)
    if inputs is None:
        checker.violate(f"the input topic {in_topic} could not be filled")
        return
    figures = TxnFigures()
    rng = random.Random(f"copiers-{o.seed}")
    n = min(txn.COPIERS, o.partitions)
    copiers = [txn.copier(world, c, [p for p in range(o.partitions) if p % n == c], {p: per_partition for p in inputs},
                          history, figures, rng) for c in range(n)]
    tasks = [world.loop.create_task(c.run(float("inf"))) for c in copiers]
    nemesis = Nemesis(world, o.faults)
    await nemesis.run(o.steps, o.step_s)
    nemesis.heal_all()
    # the faults are over: the copiers go as fast as they can, for a while
    finish_by = world.loop.time() + 2 * o.settle_s
    for c in copiers:
        c.hurry, c.until = True, finish_by
    await asyncio.gather(*tasks)
    for c in copiers:
        if not c.done:
            checker.violate(f"copier {c.tid} did not copy its input within {2 * o.settle_s:.0f} s of healing: "
                            f"at {sorted(c.positions.items())} of {per_partition} per partition")
    if not await _wait(world, lambda: _converged(world, tps), o.settle_s, 0.25):
        world.note("the cluster did not converge within the settle time")
    outputs, stuck = await txn.read_committed(world, out_topic, o.partitions, world.loop.time() + o.settle_s)
    for text in stuck:
        checker.violate(text)
    committed = await txn.committed_offsets(world, txn.GROUP, in_tps, world.loop.time() + o.settle_s)
    if committed is None:
        checker.violate(f"the committed offsets of group {txn.GROUP} could not be read (require_stable)")
        committed = {}
    verdict = check_transactions(inputs, {p: off for (_, p), off in committed.items()}, outputs, o.partitions,
                                 figures.aborted)
    checker.add(verdict.problems())
    await _wait(world, lambda: _converged(world, tps), o.settle_s, 0.25)
    logs = checker.final(tps)
    records = shared.check_records(history, {tp: logs[tp] for tp in in_tps if tp in logs}, duplicates_allowed=False)
    checker.add(records.problems())
    result.txn = figures
    result.inputs = sum(len(v) for v in inputs.values())
    result.copied = verdict.committed_inputs
    result.txn_violations = verdict.violations
    result.commits = figures.commits
    result.acked = history.acked
    result.consumed = records.consumed
    result.lost = len(records.lost)
    result.faults = nemesis.faults
    result.fault_counts = dict(nemesis.counts)


def run_seed(opts: Options) -> Result:
    """Simulate one seed (see the module docstring)."""
    with quiet_logs():
        return _run_seed(opts)


def _run_seed(opts: Options) -> Result:
    started = time.monotonic()
    world = World(opts)
    history = History()
    checker = Checker(world, history)
    world.on_truncate = checker.on_truncate
    world.loop.after_step = checker.after_step
    result = Result(opts.seed, False, [], [])
    try:
        run_world(world, lambda: _scenario(world, checker, history, result))
    except SimStalled as exc:
        checker.violate(f"the simulation stalled: {exc}")
    result.violations = list(checker.violations)
    result.ok = not result.violations
    result.trace = sorted(world.trace + world.broker_events(), key=_ts)
    result.elections = len(checker.leader_of_epoch)
    result.steps = world.loop.steps
    result.virtual_s = world.loop.time()
    result.wall_s = time.monotonic() - started
    result.digest = hashlib.sha256("\n".join(result.trace).encode()).hexdigest()
    return result


T = TypeVar("T")


def run_world(world: World, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``main()`` on the world's loop, in the world's context (no process), then drop
    the loop without running what is left: crashed processes' tasks stay pending for
    ever, and their coroutines, closed when collected, are silenced."""
    hook = sys.unraisablehook
    sys.unraisablehook = _ignore
    asyncio.set_event_loop(world.loop)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="coroutine .* was never awaited")
            try:
                task = world.loop.create_task(main(), context=world.network.world_context)
                return world.loop.run_until_complete(task)
            finally:
                world.loop.after_step = None
                world.loop.set_exception_handler(_drop_pending_task_reports)
                for left in asyncio.all_tasks(world.loop):  # end them here rather than when collected
                    try:
                        left.get_coro().close()
                    except BaseException:  # their finally blocks find no running loop
                        pass
                asyncio.set_event_loop(None)
                _close(world.loop)
                gc.collect()
    finally:
        sys.unraisablehook = hook


def _ignore(unraisable: object) -> None:
    pass


def _drop_pending_task_reports(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The dropped loop's handler: the tasks left pending on purpose say nothing when
    collected; anything else is reported as usual."""
    if str(context.get("message", "")).startswith("Task was destroyed but it is pending"):
        return
    loop.default_exception_handler(context)


def _ts(line: str) -> float:
    return float(line.split(None, 1)[0])


def _close(loop: SimLoop) -> None:
    """Drop the loop without running what is left (crashed processes' tasks stay pending)."""
    loop._ready.clear()
    loop._scheduled.clear()
    loop.close()


def check_determinism(opts: Options) -> tuple[bool, Result, Result]:
    """Run a seed twice; True when both traces are identical."""
    a = run_seed(opts)
    b = run_seed(opts)
    return a.digest == b.digest, a, b


def sweep(opts: Options, seeds: range, on_result: Callable[[Result], object] | None = None) -> list[Result]:
    """Run every seed of ``seeds``; ``on_result(result)`` after each."""
    out = []
    for s in seeds:
        r = run_seed(replace(opts, seed=s))
        out.append(r)
        if on_result is not None:
            on_result(r)
    return out

