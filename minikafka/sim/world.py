"""The simulated world: N real brokers on twins of their ports, in one process.

Each broker is the real :class:`~minikafka.broker.server.Broker` (replica manager,
fetchers, controller, group coordinator), built with simulated :class:`Ports`: the
loop's virtual clock, :class:`~.network.SimTransport`, :class:`~.zookeeper.SimZkSession`
and :class:`~.disk.SimStorage`.  The world owns the processes: it starts, crashes,
pauses and resumes them, and keeps the trace of what happened.

A *process* is ``(node name, incarnation)``; every callback carries the process that
scheduled it (:data:`~.loop.PROCESS`), and :meth:`World.gate` lets the loop run it,
defer it (paused) or drop it (crashed).
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..broker.ports import Ports
from ..broker.served import ServedBroker
from ..broker.server import Broker
from ..broker.settings import BrokerSettings
from ..config import BrokerConfig
from .disk import SimDisk, SimStorage
from .loop import PROCESS, Gate, SimLoop
from .network import Network, SimTransport
from .zookeeper import ZK, SimZkSession, ZkServer

HOST = "sim"
BASE_PORT = 9090


class SimClock:
    """Virtual time, as the brokers' clock port (``time``, ``monotonic``) and the clients'
    (:class:`~minikafka.client.ports.Clock`: ``monotonic``, ``monotonic_ms``, ``wall_ms``)
    read it; wall time starts at a fixed epoch."""

    EPOCH_S = 1_700_000_000.0

    def __init__(self, loop: SimLoop) -> None:
        self.loop = loop

    def time(self) -> float:
        return self.EPOCH_S + self.loop.time()

    def monotonic(self) -> float:
        return self.loop.time()

    def monotonic_ms(self) -> int:
        return int(self.loop.time() * 1000)

    def wall_ms(self) -> int:
        return int((self.EPOCH_S + self.loop.time()) * 1000)


@dataclass
class Options:
    """What to simulate (``minikafka sim``'s options)."""

    seed: int = 0
    brokers: int = 3
    storage: str = "disk"  # "disk" or "memory"
    truncation: str = "leader_epoch"  # or "high_watermark"
    topic: str = "sim"
    partitions: int = 2
    replication_factor: int = 3
    min_insync_replicas: int = 2
    steps: int = 40  # nemesis steps (one fault or heal each)
    step_s: float = 2.0  # virtual seconds between nemesis steps
    settle_s: float = 60.0  # after healing: time for the cluster to converge (twice)
    faults: tuple[str, ...] = ()  # fault kinds allowed; empty: every kind
    transactions: bool = False  # the transactional consume-transform-produce workload instead of the plain one
    broker_settings: dict[str, Any] = field(default_factory=dict)


def broker_name(broker_id: int) -> str:
    return f"b{broker_id}"


class World:
    """Brokers, ZooKeeper, the network and the trace."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        seeds = random.Random(opts.seed)
        self.rng = random.Random(seeds.getrandbits(64))  # the nemesis's and the workload's choices
        self.loop = SimLoop(self.gate)
        self.clock = SimClock(self.loop)  # one virtual clock for the brokers and the clients
        self.network = Network(self.loop, random.Random(seeds.getrandbits(64)))
        self._broker_seeds = random.Random(seeds.getrandbits(64))
        self.zk = ZkServer(self.loop.time)
        self.processes: dict[str, tuple[str, int]] = {}  # live node -> its current process
        self.incarnations: dict[str, int] = {}
        self.paused: set[str] = set()
        self.contexts: dict[str, contextvars.Context] = {}
        self.serving: dict[str, ServedBroker] = {}
        self.address_book: dict[tuple[str, int], str] = {}
        self.open_calls: dict[tuple[str, int], dict[object, Any]] = {}
        self.brokers: dict[int, Broker] = {}  # the current (or last) incarnation of each broker
        self.incarnations_started: list[tuple[int, Broker]] = []  # every incarnation, for the trace
        self.disks: dict[int, SimDisk] = {b: SimDisk() for b in range(1, opts.brokers + 1)}
        self.trace: list[str] = []
        # every truncation's removed batches, reported by the storage (the runner sets the invariant checker's)
        self.on_truncate: Callable[[int, tuple[str, int], list[bytes]], None] | None = None
        self._zk_sweeper: asyncio.TimerHandle | None = None
        for b in range(1, opts.brokers + 1):
            self.address_book[(HOST, BASE_PORT + b)] = broker_name(b)

    # -- the loop's gate --------------------------------------------------------------------------------
    def gate(self, process: tuple[str, int]) -> Gate:
        name = process[0]
        if self.processes.get(name) != process:
            return Gate.DROP
        if name in self.paused:
            return Gate.DEFER
        return Gate.RUN

    # -- trace ----------------------------------------------------------------------------------------
    def note(self, text: str) -> None:
        self.trace.append(f"{self.loop.time():10.3f} {text}")

    # -- ZooKeeper ----------------------------------------------------------------------------------------
    def start_zookeeper(self) -> None:
        def sweep() -> None:
            for sid in self.zk.expire_idle():
                self.note(f"zk: session {sid:#x} expired")
            self._zk_sweeper = self.loop.call_later(0.1, sweep, context=self.network.world_context)
        sweep()

    # -- brokers ----------------------------------------------------------------------------------------------
    def broker_config(self, broker_id: int) -> BrokerConfig:
        o = self.opts
        settings = {
            "replication.truncation": o.truncation,
            "min.insync.replicas": o.min_insync_replicas,
            "default.replication.factor": o.replication_factor,
            "offsets.topic.replication.factor": min(3, o.brokers),
            "offsets.topic.num.partitions": 2,
            "log.cleaner.enable": False,
            "auto.create.topics.enable": False,
            **({"transaction.state.log.num.partitions": 3} if o.transactions else {}),
            **o.broker_settings,
        }
        return BrokerConfig(broker_id=broker_id, zookeeper_connect=ZK, listen_host=HOST,
                            listen_port=BASE_PORT + broker_id, data_dir=f"sim://broker-{broker_id}",
                            storage=o.storage, settings=settings)

    def start_broker(self, broker_id: int) -> None:
        name = broker_name(broker_id)
        assert name not in self.processes, name
        inc = self.incarnations.get(name, 0) + 1
        self.incarnations[name] = inc
        process = (name, inc)
        ctx = contextvars.Context()
        ctx.run(PROCESS.set, process)
        self.contexts[name] = ctx
        self.processes[name] = process
        if self.opts.storage == "memory":
            self.disks[broker_id] = SimDisk()
        config = self.broker_config(broker_id)
        report = self.on_truncate  # as it is when the broker starts

        def on_truncate(tp: tuple[str, int], removed: list[bytes]) -> None:
            if report is not None:
                report(broker_id, tp, removed)

        ports = Ports(
            clock=self.clock,
            transport=SimTransport(self, name),
            coordinator=lambda cfg, digest: SimZkSession(self, name, BrokerSettings.of(cfg).zookeeper_session_timeout_ms),
            storage=lambda cfg: SimStorage(self.disks[broker_id], cfg.storage == "disk", self.loop.time,
                                           on_truncate, broker_id),
            random=random.Random(self._broker_seeds.getrandbits(64)),
        )
        broker = Broker(config, ports)
        self.brokers[broker_id] = broker
        self.incarnations_started.append((broker_id, broker))
        self.note(f"start {name} (incarnation {inc})")
        task = self.loop.create_task(broker.start(), context=ctx)
        task.add_done_callback(lambda t: self._started(broker_id, process, t))

    def _started(self, broker_id: int, process: tuple[str, int], task: asyncio.Task) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and self.processes.get(process[0]) == process:
            self.note(f"{process[0]} failed to start: {exc.__class__.__name__}: {exc}")
            self.crash(broker_id)
            # a supervisor (systemd, Docker's restart policy) starts it again
            self.loop.call_later(1.0, self._supervise, broker_id, process, context=self.network.world_context)

    def _supervise(self, broker_id: int, failed: tuple[str, int]) -> None:
        name = failed[0]
        if name not in self.processes and self.incarnations.get(name) == failed[1]:
            self.start_broker(broker_id)

    def alive(self, broker_id: int) -> bool:
        return broker_name(broker_id) in self.processes

    def live_brokers(self) -> list[int]:
        return [b for b in sorted(self.brokers) if self.alive(b) and broker_name(b) not in self.paused]

    def crash(self, broker_id: int, power_loss: bool = False) -> None:
        """SIGKILL: nothing of the process runs again; its connections reset; its
        ZooKeeper session expires when not heard from.  ``power_loss`` also loses what
        the OS had not written back (disk mode)."""
        name = broker_name(broker_id)
        process = self.processes.pop(name, None)
        if process is None:
            return
        self.paused.discard(name)
        self.loop.forget(name)
        self.serving.pop(name, None)
        for reset in self.open_calls.pop(process, {}).values():
            reset()
        lost = ""
        if power_loss and self.opts.storage == "disk":
            gone = self.disks[broker_id].power_loss(self.loop.time(), self.rng)
            lost = f", power loss: {sum(gone.values())} unsynced batches lost" if gone else ", power loss: nothing unsynced"
        self.note(f"crash {name}{lost}")

    def pause(self, broker_id: int) -> None:
        name = broker_name(broker_id)
        if name in self.processes:
            self.paused.add(name)
            self.note(f"pause {name}")

    def resume(self, broker_id: int) -> None:
        name = broker_name(broker_id)
        if name in self.paused:
            self.paused.discard(name)
            self.loop.resume(name)
            self.note(f"resume {name}")

    async def stop_broker(self, broker_id: int) -> None:
        """SIGTERM: controlled shutdown, then the process ends."""
        name = broker_name(broker_id)
        broker = self.brokers[broker_id]
        done = asyncio.get_running_loop().create_future()
        task = self.loop.create_task(broker.shutdown(), context=self.contexts[name])
        task.add_done_callback(lambda t: _settle(done))
        await done
        self.processes.pop(name, None)
        self.note(f"stopped {name} (controlled shutdown)")

    def controller_id(self) -> int | None:
        for b, broker in sorted(self.brokers.items()):
            if self.alive(b) and broker.controller is not None:
                return b
        return None

    def broker_events(self) -> list[str]:
        """The brokers' own event timelines (leader elections, ISR changes, ...), merged."""
        out = []
        for b, broker in self.incarnations_started:
            for e in broker.events:
                out.append((e["ts"] - SimClock.EPOCH_S, b, e["kind"], e["text"]))
        return [f"{ts:10.3f} b{b} {kind}: {text}" for ts, b, kind, text in sorted(out)]


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """The brokers log at INFO; a simulation of thousands of seeds wants errors only.
    The loggers' levels are put back afterwards (a simulation run inside another
    program, a test run, must not silence it for good)."""
    loggers = [logging.getLogger("minikafka"), logging.getLogger("asyncio")]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, saved):
            lg.setLevel(level)


def _settle(done: asyncio.Future) -> None:
    """Resolve ``done`` (with None) unless it already is."""
    if not done.done():
        done.set_result(None)
