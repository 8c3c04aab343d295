"""The fault-injection run: does any acknowledged record get lost?

:func:`run` starts (or uses) a 3-broker cluster, creates a topic with replication
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
from typing import Callable

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


def run(*, dir: str | None = None, storage: str = "disk", truncation: str = "leader_epoch", seed: int = 0,
        faults: int | None = None, duration: float | None = None, partitions: int = 3, producers: int = 2,
        consumers: int = 1, rate: float = 150.0, scenario: str = "random", interval_s: tuple[float, float] = (2.0, 5.0),
        heal_timeout_s: float = 120.0, topic: str | None = None, keep: bool = False,
        broker_configs: dict[str, str] | None = None, log: Callable[[str], None] | None = None,
        idempotence: bool = True, link_faults: bool | None = None, transactions: int = 0,
        copiers: int = 2, zookeeper_nodes: int = 1) -> Summary:
    """Run the fault-injection suite and return its :class:`Summary`.

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
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}")
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}")
    if storage not in ("memory", "disk"):
        raise ValueError("storage must be memory or disk")
    if faults is None and duration is None:
        faults = 10
    log = log or (lambda line: None)
    rng = random.Random(seed)
    summary = Summary(seed=seed, truncation=truncation, storage=storage)
    started_here = False
    tmp = None
    if dir is None:
        tmp = tempfile.mkdtemp(prefix="minikafka-chaos-")
        dir = f"{tmp}/cluster"
    summary.dir = dir
    configs = dict(FAST_SETTINGS)
    configs["replication.truncation"] = truncation
    configs.update(broker_configs or {})
    t_start = time.monotonic()
    zk = None
    workload: Clients | None = None
    copy: Copiers | None = None
    events = None
    nemesis = None
    links = None
    if link_faults:
        check_available()  # LinkFaultError: one line saying what is missing
    try:
        if cluster_running(dir):
            log(f"using the running cluster in {dir} (its broker settings are kept)")
            summary.storage = load(dir).storage
            if link_faults:
                raise LinkFaultError("link faults need a cluster started by the run (its brokers in cgroups)")
        else:
            wrap = None
            if link_faults or (link_faults is None and unavailable() is None):
                links = Links().open()
                wrap = ClusterLinks.wrap_for(links)
            log(f"starting a 3-broker cluster in {dir} (storage {storage}, truncation {truncation}"
                f"{', link faults on' if links else ''})")
            start_cluster(dir, storage, configs, wrap=wrap, zookeeper_nodes=zookeeper_nodes)
            started_here = True
        state = load(dir)
        brokers = {b: (s.host, s.port) for b, s in state.brokers.items()}
        bootstrap = ",".join(f"{h}:{p}" for h, p in brokers.values())
        storage = summary.storage = state.storage
        zk = ZkReader(state.zookeeper.connect)
        topic = topic or f"chaos-{seed}-{rng.randrange(1 << 30):08x}"
        session_ms = int(broker_setting(state, "zookeeper.session.timeout.ms", 6000))

        from ..client.sync import Admin
        with Admin(bootstrap) as admin:
            admin.create_topic(topic, partitions, 3, config={"min.insync.replicas": "2",
                                                             "unclean.leader.election.enable": "false"})
            if transactions:
                admin.create_topic(f"{topic}-out", partitions, 3, config={
                    "min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
        initial_epochs = {p: zk.partition_state(topic, p).leader_epoch for p in range(partitions)}
        log(f"topic {topic}: {partitions} partitions, RF 3, min.insync.replicas 2; seed {seed}")
        inputs: dict[int, list[str]] = {}
        if transactions:
            inputs = fill_input(bootstrap, topic, partitions, transactions)
            log(f"{transactions} input records per partition written; {copiers} transactional copiers to {topic}-out")

        nemesis = Nemesis(dir, zk, topic, partitions, rng, storage, session_ms, log, scenario, interval_s,
                          links=ClusterLinks(links, state) if links is not None else None)
        if scenario == "zookeeper" and not nemesis.zk_servers:
            raise ValueError("the zookeeper scenario needs a ZooKeeper ensemble (zookeeper_nodes=3)")
        events = EventCollector(brokers, since=time.time(), skip=nemesis.unreachable)
        events.start()
        plan = Workload.spread(topic, partitions, producers, consumers, rate=rate, duplicates_allowed=not idempotence)
        if transactions:
            copy = Copiers(bootstrap, topic, f"{topic}-out", partitions, copiers,
                           {p: len(v) for p, v in inputs.items()}, seed, log, rate=rate)
            copy.start()
        else:
            workload = Clients(bootstrap, plan, log)
            workload.start()

        # -- fault phase
        stalled = False
        fault_deadline = time.monotonic() + duration if duration is not None else None
        next_fault = time.monotonic() + rng.uniform(*interval_s)
        last_injected = time.monotonic()
        while True:
            now = time.monotonic()
            if fault_deadline is not None and now >= fault_deadline:
                break
            if now - last_injected > STALL_S:
                states = {p: zk.partition_state(topic, p) for p in range(partitions)}
                summary.problems.append(f"no fault could be injected for {STALL_S:g}s: the cluster did not recover "
                                        f"(brokers {nemesis.state}, partitions {states})")
                summary.healed = False
                stalled = True
                break
            if faults is not None and nemesis.faults >= faults and now >= next_fault:
                break
            nemesis.tick()
            if now >= next_fault and (faults is None or nemesis.faults < faults):
                try:
                    injected = nemesis.inject()
                except Exception as exc:  # e.g. the victim died on its own meanwhile
                    log(f"fault injection failed: {type(exc).__name__}: {exc}")
                    injected = False
                if injected:
                    last_injected = time.monotonic()
                    next_fault = time.monotonic() + rng.uniform(*interval_s)
                else:
                    next_fault = time.monotonic() + 0.5
            time.sleep(0.1)

        # -- heal
        log("healing: resuming and restarting every broker")
        back = nemesis.heal(timeout_s=heal_timeout_s)
        summary.healed = back and not stalled
        if not back:
            summary.problems.append(f"brokers not all back within {heal_timeout_s:g}s: {nemesis.state}")
        full = wait(lambda: nemesis.all_isr_full(), heal_timeout_s)
        if not full:
            summary.healed = False
            states = {p: zk.partition_state(topic, p) for p in range(partitions)}
            summary.problems.append(f"not every partition has all 3 replicas in its ISR: {states}")
        if copy is not None:
            log("waiting for the copiers to commit every input record")
            if not copy.wait_done(heal_timeout_s * 2):
                summary.problems.append(f"the copiers did not commit every input record within {heal_timeout_s * 2:g}s")
            copy.close()
        else:
            assert workload is not None
            log("stopping producers")
            workload.stop_producers()
            summary.longest_unavailable_ms = workload.longest_gap_ms()
            if nemesis.zk_servers:
                _zookeeper_figures(summary, nemesis, workload)

        # -- replicas identical up to the HW (they converge once producing stops)
        for t in [topic, f"{topic}-out"] if copy is not None else [topic]:
            for p in range(partitions):
                result: list[str] = [""]

                def identical(p: int = p, t: str = t) -> bool:
                    same, desc = compare_replicas(brokers, t, p, nemesis.brokers)
                    result[0] = desc
                    return same
                if not wait(identical, 30.0):
                    summary.divergent.append(result[0])
                    summary.problems.append(f"replicas differ: {result[0]}")

        if copy is not None:
            _check_copy(summary, copy, bootstrap, topic, partitions, inputs)
            events.finish()
            summary.leader_elections = events.count("leader_elected")
            summary.unclean = events.count("unclean_election")
            summary.problems += copy.problems + nemesis.problems
            summary.ok = (not summary.problems and not summary.divergent and summary.healed)
            return summary

        # -- final log and the checks
        final = read_final_log(bootstrap, topic, partitions)
        workload.stop_consumers()
        events.finish()
        with workload.lock:
            history = workload.history
            verdict = check_records(history, {(topic, p): log for p, log in final.items()}, plan.duplicates_allowed)
            summary.failed = history.failed
            summary.unresolved = history.unresolved
        fill_summary(summary, verdict, final)
        summary.leader_elections = events.count("leader_elected")
        summary.unclean = events.count("unclean_election")
        final_epochs = {p: zk.partition_state(topic, p).leader_epoch for p in range(partitions)}
        summary.epoch_bumps = sum(final_epochs[p] - initial_epochs[p] for p in range(partitions))
        summary.problems += workload.problems + nemesis.problems
        if summary.lost:
            summary.problems.append(f"{summary.lost} acknowledged records are not at their acknowledged offset")
        if summary.vanished_reads:
            summary.problems.append(f"{summary.vanished_reads} records read by consumers are not in the final log")
        if not summary.acked:
            summary.problems.append("no record was acknowledged")
        if idempotence and summary.duplicated:
            summary.problems.append(f"{summary.duplicated} values are in the log more than once although "
                                    f"the producers are idempotent")
        if summary.reordered:
            summary.problems.append(f"{summary.reordered} acknowledged records are at a lower offset than a record "
                                    f"their producer had acknowledged before sending them")
        summary.ok = (verdict.ok and not summary.divergent

                      and summary.healed and summary.acked > 0 and not workload.problems and not nemesis.problems)
    except Exception as exc:
        summary.ok = False
        summary.problems.append(f"the run failed: {type(exc).__name__}: {exc}")
    finally:
        if nemesis is not None:
            summary.faults = nemesis.faults
            summary.fault_log = nemesis.fault_log
        if events is not None:
            dump_timeline(dir, events, summary)
        if workload is not None:
            workload.stop_producing.set()
            workload.stop_consuming.set()
        if copy is not None:
            copy.stop.set()
        if events is not None:
            events.stop.set()
        if zk is not None:
            zk.close()
        if started_here:
            try:
                launcher.down(dir)
            except Exception as exc:
                summary.problems.append(f"stopping the cluster: {exc}")
        if links is not None:
            try:
                links.close()
            except Exception as exc:
                summary.problems.append(f"removing the link faults' rules and cgroups: {exc}")
                summary.ok = False
        summary.elapsed_s = time.monotonic() - t_start
        if tmp is not None and summary.ok and not keep:
            shutil.rmtree(tmp, ignore_errors=True)
            summary.dir = ""
    return summary


def _check_copy(summary: Summary, copy: Copiers, bootstrap: str, topic: str, partitions: int,
                inputs: dict[int, list[str]]) -> None:
    """The transactional checks of a copier run (see :mod:`minikafka.faults.txn_checker`)."""
    from ..client.sync import Consumer
    from ..client.types import TopicPartition

    final = read_final_log(bootstrap, f"{topic}-out", partitions, isolation_level="read_committed")
    outputs = {p: [v for _, v in sorted(log.items())] for p, log in final.items()}
    with Consumer(bootstrap, group_id=copy.group, isolation_level="read_committed", enable_auto_commit=False) as c:
        committed = {p: c.committed(TopicPartition(topic, p)) or 0 for p in range(partitions)}
    with copy.lock:
        verdict = check_transactions(inputs, committed, outputs, partitions, set(copy.aborted))
        summary.txn_commits, summary.txn_aborts = copy.commits, copy.aborts
        summary.txn_failures, summary.txn_fenced = copy.failures, copy.fenced
    summary.acked = verdict.committed_inputs
    summary.lost = len(verdict.missing)
    summary.duplicated = len(verdict.duplicated)
    summary.txn_violations = verdict.violations
    summary.final_offsets = {p: len(v) for p, v in outputs.items()}
    summary.problems += verdict.problems()
    if verdict.committed_inputs != sum(len(v) for v in inputs.values()):
        summary.problems.append(f"{verdict.committed_inputs} of {sum(len(v) for v in inputs.values())} input records "
                                f"committed (committed offsets {committed})")
