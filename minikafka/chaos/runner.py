"""The fault-injection run: does any acknowledged record get lost?

:func:`run` (its options: :class:`ChaosOptions`) starts (or uses) a 3-broker cluster, creates a topic with replication
factor 3 and ``min.insync.replicas=2`` (unclean election off), and runs at the same
time the :class:`~minikafka.faults.workload.Workload` (acks=all producers, consumers),
carried out by :class:`~minikafka.chaos.clients.Clients` into a
:class:`~minikafka.faults.history.History`, and the
:class:`~minikafka.chaos.nemesis.Nemesis` (a fault every few seconds from a seeded
generator).  Then it heals the cluster (resume and restart everything, wait until every
partition has all three replicas in its ISR), compares the replicas
(:func:`~minikafka.chaos.checker.compare_replicas`), reads the final log and runs the
shared checks of :mod:`minikafka.faults.checker` on the history.  The outcome is a
:class:`~minikafka.chaos.report.Summary`.
"""
from __future__ import annotations

import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from ..cluster import launcher
from ..cluster.state import load
from ..faults.checker import check_records
from ..faults.txn_checker import check_transactions
from ..faults.workload import Workload
from .checker import compare_replicas, fill_summary, read_final_log
from .clients import Clients
from .copier import Copiers, fill_input
from .cluster import FAST_SETTINGS, ZkReader, broker_setting, cluster_running, start_cluster, wait
from .events import EventCollector
from .links import ClusterLinks, LinkFaultError, Links, check_available, unavailable
from .nemesis import Nemesis
from .report import Summary, dump_timeline

SCENARIOS = ("random", "kip101", "zookeeper")
TRUNCATIONS = ("leader_epoch", "high_watermark")

# The fault phase ends with a problem when no fault could be injected for this long
# (faults wait for brokers to come back, and the kip101 scenario for full ISRs).
STALL_S = 90.0


def _zookeeper_figures(summary: Summary, nemesis: Nemesis, workload: Clients) -> None:
    """The ZooKeeper faults of the run and the longest time without any acknowledgement
    that overlaps a ZooKeeper fault window, per kind (one server, the quorum)."""
    with workload.lock:
        acks = sorted(op.completed_at for op in workload.history.produces
                      if op.completed_at is not None and op.offset is not None)
    points = [workload.started_at, *acks, workload.stopped_at or time.monotonic()]
    longest = {"server": 0.0, "quorum": 0.0}
    for kind, start, end in nemesis.zk_windows:
        for a, b in zip(points, points[1:]):
            if b >= start and a <= end:
                longest[kind] = max(longest[kind], b - a)
    summary.zk_server_faults = sum(1 for w in nemesis.zk_windows if w[0] == "server")
    summary.zk_quorum_faults = sum(1 for w in nemesis.zk_windows if w[0] == "quorum")
    summary.zk_server_unavailable_ms = int(longest["server"] * 1000)
    summary.zk_quorum_unavailable_ms = int(longest["quorum"] * 1000)


@dataclass(frozen=True)
class ChaosOptions:
    """What one fault-injection run does (the keywords of :func:`run`).

    ``dir``: use the cluster recorded there (started there if none runs); default a new
    cluster in a temporary folder, stopped afterwards and removed unless the run failed
    or ``keep``.  ``faults`` and/or ``duration`` bound the fault phase (default 10
    faults).  ``rate`` is records per second per producer.  ``link_faults``: inject
    link faults too (see :mod:`minikafka.chaos.links`); None (the default) does when
    running as root with iptables and a cgroup v2 hierarchy, on a cluster started here
    (its brokers start in cgroups of their own); True refuses to run without them.
    ``transactions``: instead of the producers and consumers, run the transactional
    consume-transform-produce workload (:mod:`minikafka.chaos.copier`) over that many
    input records per partition, with ``copiers`` copiers copying at most ``rate``
    records per second each, and check exactly-once (:mod:`minikafka.faults.txn_checker`).
    ``zookeeper_nodes``: ZooKeeper servers of a cluster started here; on an ensemble
    (3) the nemesis kills ZooKeeper servers too, and the summary gives the longest
    unavailability while one server was down and while the quorum was lost.
    """

    dir: str | None = None
    storage: str = "disk"
    truncation: str = "leader_epoch"
    seed: int = 0
    faults: int | None = None
    duration: float | None = None
    partitions: int = 3
    producers: int = 2
    consumers: int = 1
    rate: float = 150.0
    scenario: str = "random"
    interval_s: tuple[float, float] = (2.0, 5.0)
    heal_timeout_s: float = 120.0
    topic: str | None = None
    keep: bool = False
    broker_configs: Mapping[str, str] = field(default_factory=dict)
    idempotence: bool = True
    link_faults: bool | None = None
    transactions: int = 0
    copiers: int = 2
    zookeeper_nodes: int = 1

    def __post_init__(self) -> None:
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be one of {TRUNCATIONS}")
        if self.scenario not in SCENARIOS:
            raise ValueError(f"scenario must be one of {SCENARIOS}")
        if self.storage not in ("memory", "disk"):
            raise ValueError("storage must be memory or disk")
        if self.faults is None and self.duration is None:
            object.__setattr__(self, "faults", 10)


def run(options: ChaosOptions | None = None, *, log: Callable[[str], None] | None = None, **fields: Any) -> Summary:
    """Run the fault-injection suite and return its :class:`Summary`: ``options``, or a
    :class:`ChaosOptions` made of ``fields`` (``run(seed=4, faults=3)``), or ``options``
    with ``fields`` changed.  ``log`` gets a line per step."""
    if fields:
        if fields.get("broker_configs") is None:
            fields.pop("broker_configs", None)
        options = replace(options, **fields) if options is not None else ChaosOptions(**fields)
    return _Run(options or ChaosOptions(), log or (lambda line: None)).execute()


class _Run:
    """One run, phase by phase (:meth:`execute`); what a phase sets up, :meth:`_finish`
    takes down, also when a phase failed."""

    def __init__(self, opts: ChaosOptions, log: Callable[[str], None]) -> None:
        self.opts = opts
        self.log = log
        self.rng = random.Random(opts.seed)
        self.summary = Summary(seed=opts.seed, truncation=opts.truncation, storage=opts.storage)
        self.t_start = time.monotonic()
        self.tmp: str | None = None
        self.dir = opts.dir
        if self.dir is None:
            self.tmp = tempfile.mkdtemp(prefix="minikafka-chaos-")
            self.dir = f"{self.tmp}/cluster"
        self.summary.dir = self.dir
        self.started_here = False
        self.zk: ZkReader | None = None
        self.workload: Clients | None = None
        self.copy: Copiers | None = None
        self.events: EventCollector | None = None
        self.nemesis: Nemesis | None = None
        self.links: Links | None = None
        self.stalled = False
        self.brokers: dict[int, tuple[str, int]] = {}
        self.bootstrap = ""
        self.topic = ""
        self.inputs: dict[int, list[str]] = {}
        self.initial_epochs: dict[int, int] = {}
        self.plan: Workload | None = None

    def execute(self) -> Summary:
        if self.opts.link_faults:
            check_available()  # LinkFaultError: one line saying what is missing
        try:
            self._start()
            self._fault_phase()
            self._heal()
            self._compare_replicas()
            if self.copy is not None:
                self._check_copied()
            else:
                self._check_records()
        except Exception as exc:
            self.summary.ok = False
            self.summary.problems.append(f"the run failed: {type(exc).__name__}: {exc}")
        finally:
            self._finish()
        return self.summary

    # -- the cluster, the topic and the workload --------------------------------------------------
    def _start(self) -> None:
        opts, summary, log, dir = self.opts, self.summary, self.log, self.dir
        assert dir is not None
        configs = {**FAST_SETTINGS, "replication.truncation": opts.truncation, **opts.broker_configs}
        if cluster_running(dir):
            log(f"using the running cluster in {dir} (its broker settings are kept)")
            summary.storage = load(dir).storage
            if opts.link_faults:
                raise LinkFaultError("link faults need a cluster started by the run (its brokers in cgroups)")
        else:
            wrap = None
            if opts.link_faults or (opts.link_faults is None and unavailable() is None):
                self.links = Links().open()
                wrap = ClusterLinks.wrap_for(self.links)
            log(f"starting a 3-broker cluster in {dir} (storage {opts.storage}, truncation {opts.truncation}"
                f"{', link faults on' if self.links else ''})")
            start_cluster(dir, opts.storage, configs, wrap=wrap, zookeeper_nodes=opts.zookeeper_nodes)
            self.started_here = True
        state = load(dir)
        self.brokers = {b: (s.host, s.port) for b, s in state.brokers.items()}
        self.bootstrap = ",".join(f"{h}:{p}" for h, p in self.brokers.values())
        storage = summary.storage = state.storage
        zk = self.zk = ZkReader(state.zookeeper.connect)
        topic = self.topic = opts.topic or f"chaos-{opts.seed}-{self.rng.randrange(1 << 30):08x}"
        session_ms = int(broker_setting(state, "zookeeper.session.timeout.ms", 6000))
        partitions = opts.partitions

        from ..client.sync import Admin
        with Admin(self.bootstrap) as admin:
            admin.create_topic(topic, partitions, 3, config={"min.insync.replicas": "2",
                                                             "unclean.leader.election.enable": "false"})
            if opts.transactions:
                admin.create_topic(f"{topic}-out", partitions, 3, config={
                    "min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
        self.initial_epochs = self._leader_epochs()
        log(f"topic {topic}: {partitions} partitions, RF 3, min.insync.replicas 2; seed {opts.seed}")
        if opts.transactions:
            self.inputs = fill_input(self.bootstrap, topic, partitions, opts.transactions)
            log(f"{opts.transactions} input records per partition written; {opts.copiers} transactional copiers "
                f"to {topic}-out")

        nemesis = self.nemesis = Nemesis(dir, zk, topic, partitions, self.rng, storage, session_ms, log, opts.scenario,
                                         opts.interval_s,
                                         links=ClusterLinks(self.links, state) if self.links is not None else None)
        if opts.scenario == "zookeeper" and not nemesis.zk_servers:
            raise ValueError("the zookeeper scenario needs a ZooKeeper ensemble (zookeeper_nodes=3)")
        self.events = EventCollector(self.brokers, since=time.time(), skip=nemesis.unreachable)
        self.events.start()
        self.plan = Workload.spread(topic, partitions, opts.producers, opts.consumers, rate=opts.rate,
                                    duplicates_allowed=not opts.idempotence)
        if opts.transactions:
            self.copy = Copiers(self.bootstrap, topic, f"{topic}-out", partitions, opts.copiers,
                                {p: len(v) for p, v in self.inputs.items()}, opts.seed, log, rate=opts.rate)
            self.copy.start()
        else:
            self.workload = Clients(self.bootstrap, self.plan, log)
            self.workload.start()

    def _leader_epochs(self) -> dict[int, int]:
        """Each partition's leader epoch in ZooKeeper (-1 while it has no state)."""
        return {p: state.leader_epoch if state is not None else -1 for p, state in self._partition_states().items()}

    def _partition_states(self) -> dict:
        assert self.zk is not None
        return {p: self.zk.partition_state(self.topic, p) for p in range(self.opts.partitions)}

    # -- faults ---------------------------------------------------------------------------------
    def _fault_phase(self) -> None:
        """Inject a fault every ``interval_s`` until ``faults`` were injected or ``duration``
        ran out; a cluster that lets no fault in for :data:`STALL_S` ends the phase."""
        opts, nemesis = self.opts, self.nemesis
        assert nemesis is not None
        fault_deadline = time.monotonic() + opts.duration if opts.duration is not None else None
        next_fault = time.monotonic() + self.rng.uniform(*opts.interval_s)
        last_injected = time.monotonic()
        while True:
            now = time.monotonic()
            if fault_deadline is not None and now >= fault_deadline:
                break
            if now - last_injected > STALL_S:
                self.summary.problems.append(f"no fault could be injected for {STALL_S:g}s: the cluster did not "
                                             f"recover (brokers {nemesis.state}, partitions {self._partition_states()})")
                self.summary.healed = False
                self.stalled = True
                break
            if opts.faults is not None and nemesis.faults >= opts.faults and now >= next_fault:
                break
            nemesis.tick()
            if now >= next_fault and (opts.faults is None or nemesis.faults < opts.faults):
                try:
                    injected = nemesis.inject()
                except Exception as exc:  # e.g. the victim died on its own meanwhile
                    self.log(f"fault injection failed: {type(exc).__name__}: {exc}")
                    injected = False
                if injected:
                    last_injected = time.monotonic()
                    next_fault = time.monotonic() + self.rng.uniform(*opts.interval_s)
                else:
                    next_fault = time.monotonic() + 0.5
            time.sleep(0.1)

    def _heal(self) -> None:
        """Resume and restart every broker, wait for full ISRs, then stop the workload."""
        opts, summary, nemesis = self.opts, self.summary, self.nemesis
        assert nemesis is not None
        self.log("healing: resuming and restarting every broker")
        back = nemesis.heal(timeout_s=opts.heal_timeout_s)
        summary.healed = back and not self.stalled
        if not back:
            summary.problems.append(f"brokers not all back within {opts.heal_timeout_s:g}s: {nemesis.state}")
        if not wait(lambda: nemesis.all_isr_full(), opts.heal_timeout_s):
            summary.healed = False
            summary.problems.append(f"not every partition has all 3 replicas in its ISR: {self._partition_states()}")
        if self.copy is not None:
            self.log("waiting for the copiers to commit every input record")
            if not self.copy.wait_done(opts.heal_timeout_s * 2):
                summary.problems.append(f"the copiers did not commit every input record within "
                                        f"{opts.heal_timeout_s * 2:g}s")
            self.copy.close()
        else:
            workload = self.workload
            assert workload is not None
            self.log("stopping producers")
            workload.stop_producers()
            summary.longest_unavailable_ms = workload.longest_gap_ms()
            if nemesis.zk_servers:
                _zookeeper_figures(summary, nemesis, workload)

    # -- the checks -----------------------------------------------------------------------------
    def _compare_replicas(self) -> None:
        """Replicas identical up to the HW (they converge once producing stops)."""
        nemesis = self.nemesis
        assert nemesis is not None
        topics = [self.topic, f"{self.topic}-out"] if self.copy is not None else [self.topic]
        for t in topics:
            for p in range(self.opts.partitions):
                result: list[str] = [""]

                def identical(p: int = p, t: str = t) -> bool:
                    same, desc = compare_replicas(self.brokers, t, p, nemesis.brokers)
                    result[0] = desc
                    return same
                if not wait(identical, 30.0):
                    self.summary.divergent.append(result[0])
                    self.summary.problems.append(f"replicas differ: {result[0]}")

    def _count_elections(self) -> None:
        events = self.events
        assert events is not None
        events.finish()
        self.summary.leader_elections = events.count("leader_elected")
        self.summary.unclean = events.count("unclean_election")

    def _check_copied(self) -> None:
        summary, copy, nemesis = self.summary, self.copy, self.nemesis
        assert copy is not None and nemesis is not None
        _check_copy(summary, copy, self.bootstrap, self.topic, self.opts.partitions, self.inputs)
        self._count_elections()
        summary.problems += copy.problems + nemesis.problems
        summary.ok = not summary.problems and not summary.divergent and summary.healed

    def _check_records(self) -> None:
        """The final log against the history (:func:`~minikafka.faults.checker.check_records`)."""
        opts, summary, workload, nemesis, plan = self.opts, self.summary, self.workload, self.nemesis, self.plan
        assert workload is not None and nemesis is not None and plan is not None
        topic, partitions = self.topic, opts.partitions
        final = read_final_log(self.bootstrap, topic, partitions)
        workload.stop_consumers()
        self._count_elections()
        with workload.lock:
            history = workload.history
            verdict = check_records(history, {(topic, p): log for p, log in final.items()}, plan.duplicates_allowed)
            summary.failed = history.failed
            summary.unresolved = history.unresolved
        fill_summary(summary, verdict, final)
        final_epochs = self._leader_epochs()
        summary.epoch_bumps = sum(final_epochs[p] - self.initial_epochs[p] for p in range(partitions))
        summary.problems += workload.problems + nemesis.problems
        if summary.lost:
            summary.problems.append(f"{summary.lost} acknowledged records are not at their acknowledged offset")
        if summary.vanished_reads:
            summary.problems.append(f"{summary.vanished_reads} records read by consumers are not in the final log")
        if not summary.acked:
            summary.problems.append("no record was acknowledged")
        if opts.idempotence and summary.duplicated:
            summary.problems.append(f"{summary.duplicated} values are in the log more than once although "
                                    f"the producers are idempotent")
        if summary.reordered:
            summary.problems.append(f"{summary.reordered} acknowledged records are at a lower offset than a record "
                                    f"their producer had acknowledged before sending them")
        summary.ok = (verdict.ok and not summary.divergent and summary.healed and summary.acked > 0
                      and not workload.problems and not nemesis.problems)

    # -- the end --------------------------------------------------------------------------------
    def _finish(self) -> None:
        """Stop what the run started (the workload, the event collector, a cluster started
        here, the link faults' rules and cgroups) and remove a passed run's folder."""
        summary = self.summary
        if self.nemesis is not None:
            summary.faults = self.nemesis.faults
            summary.fault_log = self.nemesis.fault_log
        if self.events is not None:
            assert self.dir is not None
            dump_timeline(self.dir, self.events, summary)
        if self.workload is not None:
            self.workload.stop_producing.set()
            self.workload.stop_consuming.set()
        if self.copy is not None:
            self.copy.stop()
        if self.events is not None:
            self.events.stop.set()
        if self.zk is not None:
            self.zk.close()
        if self.started_here:
            assert self.dir is not None
            try:
                launcher.down(self.dir)
            except Exception as exc:
                summary.problems.append(f"stopping the cluster: {exc}")
        if self.links is not None:
            try:
                self.links.close()
            except Exception as exc:
                summary.problems.append(f"removing the link faults' rules and cgroups: {exc}")
                summary.ok = False
        summary.elapsed_s = time.monotonic() - self.t_start
        if self.tmp is not None and summary.ok and not self.opts.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)
            summary.dir = ""


def _check_copy(summary: Summary, copy: Copiers, bootstrap: str, topic: str, partitions: int,
                inputs: dict[int, list[str]]) -> None:
    """The transactional checks of a copier run (see :mod:`minikafka.faults.txn_checker`)."""
    from ..client.sync import Consumer
    from ..client.types import TopicPartition

    final = read_final_log(bootstrap, f"{topic}-out", partitions, isolation_level="read_committed")
    outputs = {p: [v for _, v in sorted(log.items())] for p, log in final.items()}
    with Consumer(bootstrap, group_id=copy.group, isolation_level="read_committed", enable_auto_commit=False) as c:
        committed = {p: c.committed(TopicPartition(topic, p)) or 0 for p in range(partitions)}
    figures = copy.figures
    verdict = check_transactions(inputs, committed, outputs, partitions, set(figures.aborted))
    summary.txn_commits, summary.txn_aborts = figures.commits, figures.aborts
    summary.txn_failures, summary.txn_fenced = figures.failures, figures.restarts
    summary.acked = verdict.committed_inputs
    summary.lost = len(verdict.missing)
    summary.duplicated = len(verdict.duplicated)
    summary.txn_violations = verdict.violations
    summary.final_offsets = {p: len(v) for p, v in outputs.items()}
    summary.problems += verdict.problems()
    if verdict.committed_inputs != sum(len(v) for v in inputs.values()):
        summary.problems.append(f"{verdict.committed_inputs} of {sum(len(v) for v in inputs.values())} input records "
                                f"committed (committed offsets {committed})")
