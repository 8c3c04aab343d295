"""``minikafka bench scale``: how a cluster's cost grows with partitions that do nothing.

For each size (total idle partitions) a fresh 3-broker cluster (memory storage, free
ports) is started, and stopped again by pid at the end; with ``against="kafka"`` the same
steps then run on an Apache Kafka 3.9 cluster (:mod:`minikafka.reference.cluster`), after
ours is stopped, never at once.  On each cluster:

1. the brokers' idle CPU and RSS while the cluster is empty (the baseline the partitions add to);
2. topic creation: topics of ``per_topic`` partitions (RF ``rf``) one after another through
   the admin client until there are ``partitions`` of them, timed until every partition
   has a leader in Metadata;
3. once every ISR is full, the brokers' idle CPU in cores over ``idle_seconds``
   (``/proc/PID/stat`` utime+stime, :func:`cores`) and their RSS (``VmRSS``), from which
   the memory per partition replica: (RSS - empty RSS) / (partitions x rf);
4. acks=all latency (idempotent, linger 0) at ``rate`` records/s for ``produce_seconds``
   to one more topic of 3 partitions: our ``AIOProducer`` on minikafka
   (:func:`.aio_latency.acks_latency_asyncio`), confluent-kafka on Kafka
   (:func:`.rdkafka_latency.measure`);
5. optionally (``failover``) the controller's failover: SIGKILL the broker ZooKeeper names
   in ``/controller`` and time until every partition it led has another leader in Metadata;
6. optionally (``restart``, disk storage) a broker's restart: the broker killed by the
   failover (else one SIGKILLed here) starts again, timed until every ISR is full again
   (its catch-up with all its partitions); then a whole-cluster restart: every broker
   stopped (SIGTERM, one after another), then all started at once, timed until every
   partition has a leader again.

With ``bootstrap`` an already running minikafka cluster is measured instead (its broker
pids from ``cluster.json`` in ``dir``); the topics made are deleted after each size.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from ..errors import ClientError, KafkaError
from .figures import percentile

__all__ = ["ScaleOptions", "ScaleRow", "parse_sizes", "validate", "cpu_ticks", "cores", "vmrss_bytes",
           "per_replica_bytes", "topic_sizes", "percentile", "HEADER", "format_row", "table", "run",
           "write_json"]

_stop = threading.Event()  # set by request_stop (SIGINT/SIGTERM at the CLI)

LATENCY_PARTITIONS = 3  # the one busy topic, as the "1,003" rows
AGAINST = ("kafka",)
STORAGES = ("memory", "disk")


@dataclass
class ScaleOptions:
    """What ``minikafka bench scale`` was asked for."""

    partitions: list[int] = field(default_factory=lambda: [1000])
    brokers: int = 3
    rf: int = 3
    per_topic: int = 10
    idle_seconds: float = 30
    rate: int = 1000
    produce_seconds: float = 5
    against: str | None = None
    dir: str | None = None  # parent folder of the clusters' folders (default: a temporary one)
    bootstrap: str | None = None  # measure this running minikafka cluster instead
    failover: bool = False
    restart: bool = False
    storage: str = "memory"  # minikafka's brokers' storage (Kafka's is always its disk)
    kafka_heap: str = "256m"  # each Kafka broker's -Xmx and -Xms


@dataclass
class ScaleRow:
    """One table row: a cluster at one size."""

    partitions: int  # idle partitions plus the latency topic's
    cluster: str
    creation_s: float
    idle_cores: float
    rss_bytes: int
    empty_rss_bytes: int
    per_replica_bytes: float
    ack_p50_ms: float
    ack_p99_ms: float
    records: int = 0
    failover_s: float | None = None
    catch_up_s: float | None = None  # a restarted broker back in every ISR
    cluster_restart_s: float | None = None  # every broker restarted: every partition led again
    note: str = ""
    empty_idle_cores: float | None = None  # the same brokers' idle CPU before any topic, over the same window


# ----- pure parts ------------------------------------------------------------
def parse_sizes(text: str) -> list[int]:
    """``"1000,5000"`` -> ``[1000, 5000]``; ClientError for anything but positive integers."""
    sizes = []
    for part in str(text).split(","):
        part = part.strip().replace("_", "")
        try:
            n = int(part)
        except ValueError:
            raise ClientError(f"--partitions takes numbers separated by commas, not {text!r}") from None
        if n < 1:
            raise ClientError(f"--partitions must be at least 1, not {n}")
        sizes.append(n)
    return sizes


def validate(opts: ScaleOptions) -> None:
    """ClientError (one line, exit 2 at the CLI) for options that cannot be run."""
    if not opts.partitions or any(n < 1 for n in opts.partitions):
        raise ClientError("--partitions must be at least 1")
    if opts.brokers < 1:
        raise ClientError(f"--brokers must be at least 1, not {opts.brokers}")
    if opts.rf < 1 or opts.rf > opts.brokers:
        raise ClientError(f"--rf must be between 1 and --brokers ({opts.brokers}), not {opts.rf}")
    if opts.per_topic < 1:
        raise ClientError(f"--per-topic must be at least 1, not {opts.per_topic}")
    if opts.idle_seconds <= 0 or opts.produce_seconds <= 0:
        raise ClientError("--idle-seconds and --produce-seconds must be more than 0")
    if opts.rate < 1:
        raise ClientError(f"--rate must be at least 1, not {opts.rate}")
    if opts.against is not None and opts.against not in AGAINST:
        raise ClientError(f"--against takes kafka, not {opts.against!r}")
    if opts.against is not None:
        from ..reference.cluster import check_heap
        check_heap(opts.kafka_heap, "--kafka-heap")
    if opts.against is not None and opts.bootstrap:
        raise ClientError("--against kafka starts clusters of its own: leave out --bootstrap-server")
    if opts.failover and opts.bootstrap:
        raise ClientError("--failover kills a broker: only on clusters started here (leave out --bootstrap-server)")
    if opts.storage not in STORAGES:
        raise ClientError(f"--storage takes memory or disk, not {opts.storage!r}")
    if opts.restart and opts.bootstrap:
        raise ClientError("--restart stops brokers: only on clusters started here (leave out --bootstrap-server)")
    if opts.restart and opts.storage != "disk":
        raise ClientError("--restart needs --storage disk: a broker on memory storage restarts empty "
                          "(Kafka's brokers restart with their logs)")


def cpu_ticks(stat_text: str) -> int:
    """utime + stime (clock ticks) from the text of ``/proc/PID/stat``; the command name in
    parentheses may hold spaces and parentheses, so fields count from the last ``)``."""
    fields = stat_text[stat_text.rindex(")") + 2:].split()
    # after the name: state is field 3, utime field 14 and stime field 15 of the whole line
    return int(fields[11]) + int(fields[12])


def cores(before: dict[int, int], after: dict[int, int], seconds: float, hz: int) -> float:
    """CPU used in cores between two samples of pid -> ticks ``seconds`` apart (``hz``
    ticks a second); only pids in both samples count."""
    if seconds <= 0:
        raise ValueError("seconds must be more than 0")
    used = sum(max(0, after[p] - before[p]) for p in before if p in after)
    return used / hz / seconds


def vmrss_bytes(status_text: str) -> int:
    """``VmRSS`` in bytes from the text of ``/proc/PID/status`` (0 when absent, a zombie)."""
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            value, unit = line.split()[1:3]
            return int(value) * {"kB": 1024, "mB": 1024 ** 2, "gB": 1024 ** 3}.get(unit, 1)
    return 0


def per_replica_bytes(rss: int, empty_rss: int, partitions: int, rf: int) -> float:
    """Memory per partition replica: the RSS grown over the empty cluster's, per replica."""
    return (rss - empty_rss) / (partitions * rf)


def topic_sizes(total: int, per_topic: int) -> list[int]:
    """Partition counts of the topics that make ``total`` partitions, ``per_topic`` each (the last one smaller)."""
    full, rest = divmod(total, per_topic)
    return [per_topic] * full + ([rest] if rest else [])


HEADER = ("| partitions | cluster | topic creation | idle CPU (cores, brokers) | brokers' RSS | memory per replica "
          "| ack p50 | ack p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- |")


def _ms(value: float) -> str:
    return "-" if value != value else f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"


def format_row(row: ScaleRow) -> str:
    """The row as a line of the Markdown table under :data:`HEADER`."""
    per = row.per_replica_bytes
    per_text = "-" if per != per else f"{per / 1024:,.1f} KB"
    idle = f"{row.idle_cores:.3f}" + ("" if row.empty_idle_cores is None else f" (empty {row.empty_idle_cores:.3f})")
    line = (f"| {row.partitions:,} | {row.cluster} | {row.creation_s:.1f} s | {idle} | "
            f"{row.rss_bytes / 1e6:,.0f} MB | {per_text} | {_ms(row.ack_p50_ms)} | {_ms(row.ack_p99_ms)} |")
    if row.failover_s is not None:
        line += f" failover {row.failover_s:.2f} s"
    if row.catch_up_s is not None:
        line += f" broker restart {row.catch_up_s:.2f} s"
    if row.cluster_restart_s is not None:
        line += f" cluster restart {row.cluster_restart_s:.2f} s"
    if row.note:
        line += f" {row.note}"
    return line


def table(rows: list[ScaleRow]) -> str:
    """Header and one line per row."""
    return "\n".join([HEADER, *(format_row(r) for r in rows)])


def write_json(path: str, rows: list[ScaleRow], opts: ScaleOptions, notes: list[str]) -> None:
    """The rows and the options as JSON in ``path``."""
    out = {"options": {k: v for k, v in asdict(opts).items() if k != "dir"}, "rows": [asdict(r) for r in rows],
           "notes": notes}
    with open(path, "w") as f:
        json.dump(out, f, indent=2, default=str)


# ----- stopping early ---------------------------------------------------------
def request_stop(signum: int = 0, frame: object = None) -> None:
    """A signal handler: the run stops at its next step (between two topics, polls or
    samples) with KeyboardInterrupt, stopping the clusters it started on the way out.
    A flag rather than an exception in the middle of a client call, which could be taken
    for the call's own failure."""
    _stop.set()


def _check_stop() -> None:
    if _stop.is_set():
        raise KeyboardInterrupt


# ----- /proc ---------------------------------------------------------------
def sample_ticks(pids: list[int]) -> dict[int, int]:
    """pid -> utime+stime now, for the pids that still run."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                out[pid] = cpu_ticks(f.read())
        except (OSError, ValueError, IndexError):
            pass
    return out


def total_rss(pids: list[int]) -> int:
    """The summed VmRSS of ``pids`` in bytes."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += vmrss_bytes(f.read())
        except OSError:
            pass
    return total


def idle_cores(pids: list[int], seconds: float) -> float:
    """The cores ``pids`` used together over the next ``seconds``."""
    t0, before = time.monotonic(), sample_ticks(pids)
    _stop.wait(seconds)  # the measuring window itself, not a wait for readiness
    _check_stop()
    t1, after = time.monotonic(), sample_ticks(pids)
    return cores(before, after, t1 - t0, os.sysconf("SC_CLK_TCK"))


# ----- the clusters --------------------------------------------------------
class Side:
    """A cluster under measurement: its name, its broker pids and what the steps ask of it."""

    name = ""

    def broker_pids(self) -> list[int]:
        raise NotImplementedError

    def create_topic(self, topic: str, partitions: int, rf: int, min_isr: int | None = None) -> None:
        raise NotImplementedError

    def leaders(self, topics: list[str]) -> dict[tuple[str, int], tuple[int, int, int]] | None:
        """(topic, partition) -> (leader, replicas, isr size) from Metadata; None while a topic is unknown."""
        raise NotImplementedError

    def latency(self, topic: str, rate: int, seconds: float) -> dict:
        raise NotImplementedError

    def delete_topics(self, topics: list[str]) -> None:
        """Delete ``topics`` (a running cluster that is left running)."""

    def controller(self) -> int | None:
        return None

    def kill(self, broker_id: int) -> None:
        raise ClientError(f"{self.name}: no failover here")

    def broker_ids(self) -> list[int]:
        raise ClientError(f"{self.name}: no restart here")

    def stop(self, broker_id: int) -> None:
        """SIGTERM (controlled shutdown) and wait until the broker has exited."""
        raise ClientError(f"{self.name}: no restart here")

    def start(self, broker_id: int) -> None:
        """Start a stopped or killed broker again, with its logs (not waiting for it)."""
        raise ClientError(f"{self.name}: no restart here")


class MinikafkaSide(Side):
    """A minikafka cluster through its msgpack listeners."""

    def __init__(self, bootstrap: str, pids: list[int], cluster_dir: str | None = None,
                 zookeeper: str | None = None) -> None:
        from ..client.admin import AIOAdmin
        self.name = "minikafka"
        self.bootstrap = bootstrap
        self._pids = pids
        self.cluster_dir = cluster_dir
        self.zookeeper = zookeeper
        self._loop = asyncio.new_event_loop()

        async def start() -> AIOAdmin:
            admin = AIOAdmin(bootstrap)
            await admin.start()
            return admin
        self._admin = self._loop.run_until_complete(start())

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self._admin.close())
        finally:
            self._loop.close()

    def broker_pids(self) -> list[int]:
        return list(self._pids)

    def create_topic(self, topic: str, partitions: int, rf: int, min_isr: int | None = None) -> None:
        config = {"min.insync.replicas": str(min_isr)} if min_isr else None
        self._loop.run_until_complete(self._admin.create_topic(topic, partitions, rf, config, timeout_ms=60_000))

    def leaders(self, topics: list[str]) -> dict[tuple[str, int], tuple[int, int, int]] | None:
        meta = self._admin.metadata
        self._loop.run_until_complete(meta.refresh())
        out = {}
        for name in topics:
            info = meta.topics.get(name)
            if info is None or not info.partitions:
                return None
            for p, part in info.partitions.items():
                out[(name, p)] = (part.leader, len(part.replicas), len(part.isr))
        return out

    def latency(self, topic: str, rate: int, seconds: float) -> dict:
        from .aio_latency import acks_latency_asyncio
        return acks_latency_asyncio(self.bootstrap, topic, rate, seconds, 100)

    def delete_topics(self, topics: list[str]) -> None:
        if self.cluster_dir is not None:
            return  # a cluster of our own: stopped right after
        for topic in topics:
            try:
                self._loop.run_until_complete(self._admin.delete_topic(topic, timeout_ms=30_000))
            except KafkaError:
                pass

    def controller(self) -> int | None:
        from ..cluster.launcher import _ZkReader
        if not self.zookeeper:
            return None
        with _ZkReader(self.zookeeper) as zk:
            return zk.controller()

    def kill(self, broker_id: int) -> None:
        from ..cluster import launcher
        if self.cluster_dir is None:
            raise ClientError("failover needs a cluster started here")
        launcher.kill(self.cluster_dir, broker_id, "KILL")

    def broker_ids(self) -> list[int]:
        from ..cluster.state import load
        assert self.cluster_dir is not None
        return sorted(load(self.cluster_dir).brokers)

    def stop(self, broker_id: int) -> None:
        from ..cluster import launcher
        assert self.cluster_dir is not None
        launcher.stop(self.cluster_dir, broker_id)

    def start(self, broker_id: int) -> None:
        from ..cluster import launcher
        assert self.cluster_dir is not None
        launcher.start(self.cluster_dir, broker_id, wait=False)


class KafkaSide(Side):
    """An Apache Kafka cluster through confluent-kafka (:mod:`.kafka_wire`)."""

    def __init__(self, reference_dir: str) -> None:
        from ..reference import cluster as reference
        from . import kafka_wire
        self._reference = reference
        self._wire = kafka_wire
        self.dir = reference_dir
        self.state = reference.ReferenceState.load(reference_dir)
        self.name = f"Kafka {self.state.version}"
        self.bootstrap = self.state.bootstrap
        self._admin = kafka_wire._admin(self.bootstrap)

    def close(self) -> None:
        pass

    def broker_pids(self) -> list[int]:
        return [b.pid for b in self.state.brokers.values() if b.pid]

    def create_topic(self, topic: str, partitions: int, rf: int, min_isr: int | None = None) -> None:
        from confluent_kafka.admin import NewTopic
        config = {"min.insync.replicas": str(min_isr)} if min_isr else {}
        future = self._admin.create_topics([NewTopic(topic, partitions, rf, config=config)],
                                           request_timeout=60)[topic]
        future.result(90)

    def leaders(self, topics: list[str]) -> dict[tuple[str, int], tuple[int, int, int]] | None:
        md = self._admin.list_topics(timeout=30).topics
        out = {}
        for name in topics:
            t = md.get(name)
            if t is None or t.error is not None or not t.partitions:
                return None
            for p in t.partitions.values():
                out[(name, p.id)] = (p.leader, len(p.replicas), len(p.isrs))
        return out

    def latency(self, topic: str, rate: int, seconds: float) -> dict:
        from .rdkafka_latency import measure
        return measure(self.bootstrap, topic, rate, seconds, 100, linger_ms=0, idempotent=True)

    def controller(self) -> int | None:
        from ..cluster.launcher import _ZkReader
        with _ZkReader(self.state.zookeeper_connect) as zk:
            return zk.controller()

    def kill(self, broker_id: int) -> None:
        self._reference.kill(self.dir, broker_id)

    def broker_ids(self) -> list[int]:
        return sorted(self.state.brokers)

    def stop(self, broker_id: int) -> None:
        self._reference.signal_broker(self.dir, broker_id, "TERM")

    def start(self, broker_id: int) -> None:
        self._reference.start(self.dir, broker_id)


# ----- the steps -------------------------------------------------------------
def _wait(done: Callable[[], bool], what: str, timeout_s: float) -> float:
    from ..polling import poll

    def step() -> bool:
        _check_stop()
        return done()
    got = poll(step, timeout_s, 0.2, not_yet=(KafkaError, OSError, Exception))
    if not got:
        raise ClientError(f"{what} not within {timeout_s:.0f} s (last: {got.last})")
    return got.seconds


def measure(side: Side, partitions: int, opts: ScaleOptions, say: Callable[[str], None]) -> ScaleRow:
    """The steps on ``side`` (already running and empty of these topics) at one size."""
    pids = side.broker_pids()
    say(f"{side.name} {partitions:,} partitions: the empty cluster idle for {opts.idle_seconds:g} s")
    empty_idle = idle_cores(pids, opts.idle_seconds)
    empty_rss = total_rss(pids)
    stamp = f"{os.getpid()}-{time.time_ns() % 10**9}"
    sizes = topic_sizes(partitions, opts.per_topic)
    topics = [f"scale-{stamp}-{i}" for i in range(len(sizes))]
    min_isr = min(2, opts.rf) if opts.rf > 1 else None
    timeout = 120 + partitions * 0.2
    say(f"{side.name} {partitions:,} partitions: creating {len(topics)} topics")
    start = time.monotonic()
    for topic, n in zip(topics, sizes):
        _check_stop()
        side.create_topic(topic, n, opts.rf, min_isr)

    def all_led() -> bool:
        got = side.leaders(topics)
        return got is not None and len(got) == partitions and all(lead >= 0 for lead, _, _ in got.values())
    _wait(all_led, "a leader for every partition", timeout)
    creation = time.monotonic() - start
    say(f"{side.name} {partitions:,} partitions: created in {creation:.1f} s; waiting for full ISRs")

    def full_isr() -> bool:
        got = side.leaders(topics)
        return got is not None and all(lead >= 0 and isr == reps for lead, reps, isr in got.values())
    _wait(full_isr, "a full ISR for every partition", timeout)
    say(f"{side.name} {partitions:,} partitions: idle for {opts.idle_seconds:g} s")
    idle = idle_cores(pids, opts.idle_seconds)
    rss = total_rss(pids)
    lat_topic = f"scale-{stamp}-latency"
    side.create_topic(lat_topic, LATENCY_PARTITIONS, opts.rf, min_isr)
    say(f"{side.name} {partitions:,} partitions: acks=all at {opts.rate}/s for {opts.produce_seconds:g} s")
    lat = side.latency(lat_topic, opts.rate, opts.produce_seconds)
    row = ScaleRow(partitions=partitions + LATENCY_PARTITIONS, cluster=side.name, creation_s=creation,
                   idle_cores=idle, rss_bytes=rss, empty_rss_bytes=empty_rss,
                   per_replica_bytes=per_replica_bytes(rss, empty_rss, partitions, opts.rf),
                   ack_p50_ms=float(lat["p50_ms"]), ack_p99_ms=float(lat["p99_ms"]),
                   records=int(lat.get("records", 0)), empty_idle_cores=empty_idle)
    killed = None
    if opts.failover:
        row.failover_s, killed = failover(side, topics + [lat_topic], timeout, say)
    if opts.restart:
        row.catch_up_s = broker_restart(side, topics + [lat_topic], killed, timeout, say)
        row.cluster_restart_s = cluster_restart(side, topics + [lat_topic], timeout, say)
    side.delete_topics(topics + [lat_topic])  # a running cluster's (a fresh one is stopped anyway)
    return row


def failover(side: Side, topics: list[str], timeout_s: float, say: Callable[[str], None]
             ) -> tuple[float | None, int | None]:
    """SIGKILL the controller; seconds until every partition it led has another leader in
    Metadata, and the broker killed."""
    controller = side.controller()
    if controller is None:
        return None, None
    before = side.leaders(topics) or {}
    led = [tp for tp, (lead, _, _) in before.items() if lead == controller]
    say(f"{side.name}: SIGKILL of the controller, broker {controller}, leader of {len(led):,} partitions")
    start = time.monotonic()
    side.kill(controller)

    def moved() -> bool:
        got = side.leaders(topics)
        return got is not None and all(got[tp][0] >= 0 and got[tp][0] != controller for tp in led)
    _wait(moved, "a new leader for every partition the controller led", timeout_s)
    return time.monotonic() - start, controller


def _all_in_sync(side: Side, topics: list[str]) -> bool:
    got = side.leaders(topics)
    return got is not None and all(lead >= 0 and isr == reps for lead, reps, isr in got.values())


def broker_restart(side: Side, topics: list[str], killed: int | None, timeout_s: float,
                   say: Callable[[str], None]) -> float:
    """Start ``killed`` again (else SIGKILL a broker other than the controller first); seconds
    from its start until every partition's ISR is full again."""
    if killed is None:
        controller = side.controller()
        killed = next(b for b in reversed(side.broker_ids()) if b != controller)
        say(f"{side.name}: SIGKILL of broker {killed}")
        side.kill(killed)
    say(f"{side.name}: starting broker {killed} again; waiting for every ISR to be full")
    start = time.monotonic()
    side.start(killed)
    _wait(lambda: _all_in_sync(side, topics), "a full ISR for every partition after the broker's restart", timeout_s)
    return time.monotonic() - start


def cluster_restart(side: Side, topics: list[str], timeout_s: float, say: Callable[[str], None]) -> float:
    """Stop every broker (SIGTERM, one after another), then start them all; seconds from the
    first start until every partition has a leader again."""
    ids = side.broker_ids()
    say(f"{side.name}: stopping brokers {ids} (SIGTERM, one after another)")
    for b in ids:
        side.stop(b)
    say(f"{side.name}: starting brokers {ids}; waiting for a leader for every partition")
    start = time.monotonic()
    for b in ids:
        side.start(b)

    def all_led() -> bool:
        got = side.leaders(topics)
        return got is not None and all(lead >= 0 for lead, _, _ in got.values())
    _wait(all_led, "a leader for every partition after the cluster's restart", timeout_s)
    return time.monotonic() - start


def _own_minikafka(folder: str, opts: ScaleOptions):
    """Start a minikafka cluster in ``folder``; its side."""
    from ..cluster import free_ports, launcher
    from ..cluster.state import load
    try:
        base = free_ports.free_port_block(1 + 2 * opts.brokers)
    except free_ports.NoFreePorts as exc:
        raise ClientError(str(exc)) from None
    launcher.up(folder, brokers=opts.brokers, zookeeper_port=base, base_port=base + 1,
                kafka_base_port=base + 1 + opts.brokers, storage=opts.storage)
    state = load(folder)
    bootstrap = ",".join(b.endpoint for _, b in sorted(state.brokers.items()))
    pids = [b.pid for _, b in sorted(state.brokers.items()) if b.pid]
    return MinikafkaSide(bootstrap, pids, folder, state.zookeeper.connect)


def _wait_brokers(side: Side, brokers: int) -> None:
    """Until a throwaway topic of RF ``brokers`` can be made: every broker is registered."""
    def made() -> bool:
        side.create_topic(f"scale-ready-{os.getpid()}-{time.time_ns()}", 1, brokers)
        return True
    _wait(made, f"{brokers} brokers registered", 120)


def run(opts: ScaleOptions, say: Callable[[str], None] = print, on_row: Callable[[ScaleRow], None] = lambda r: None
        ) -> tuple[list[ScaleRow], list[str]]:
    """Every size on minikafka (fresh clusters, or the running one at ``bootstrap``), then on
    Kafka with ``against``; the rows and notes.  Clusters started here are stopped by pid."""
    validate(opts)
    rows: list[ScaleRow] = []
    notes = [f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} at the start",
             f"{opts.brokers} brokers, topics of {opts.per_topic} partitions RF {opts.rf}, idle {opts.idle_seconds:g} s, "
             f"acks=all idempotent linger 0 at {opts.rate}/s for {opts.produce_seconds:g} s to a topic of "
             f"{LATENCY_PARTITIONS} partitions"]
    if opts.against == "kafka":
        from ..reference import cluster as reference
        from . import kafka_wire
        if not kafka_wire.available():
            raise ClientError(f"--against kafka {kafka_wire.NEEDS_CONFLUENT}")
        reference.find_jars()
    parent = opts.dir or tempfile.mkdtemp(prefix="minikafka-scale-")
    try:
        for n in opts.partitions:
            _check_stop()
            if opts.bootstrap:
                rows.append(_on_running(opts, n, say))
            else:
                rows.append(_on_fresh(opts, n, os.path.join(parent, f"minikafka-{n}"), say))
            on_row(rows[-1])
        if opts.against == "kafka":
            for n in opts.partitions:
                _check_stop()
                rows.append(_on_kafka(opts, n, os.path.join(parent, f"kafka-{n}"), say))
                on_row(rows[-1])
    finally:
        if opts.dir is None:
            shutil.rmtree(parent, ignore_errors=True)
    notes.append(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return rows, notes


def _on_fresh(opts: ScaleOptions, n: int, folder: str, say: Callable[[str], None]) -> ScaleRow:
    from ..cluster import launcher
    say(f"starting a {opts.brokers}-broker minikafka cluster in {folder}")
    side = None
    try:
        side = _own_minikafka(folder, opts)
        _wait_brokers(side, opts.rf)
        return measure(side, n, opts, say)
    finally:
        if side is not None:
            side.close()
        launcher.down(folder)


def _on_running(opts: ScaleOptions, n: int, say: Callable[[str], None]) -> ScaleRow:
    from ..cluster.state import DEFAULT_DIR, load
    state = load(opts.dir or DEFAULT_DIR)
    pids = [b.pid for _, b in sorted(state.brokers.items()) if b.pid]
    side = MinikafkaSide(opts.bootstrap or "", pids, None, state.zookeeper.connect)
    try:
        return measure(side, n, opts, say)
    finally:
        side.close()


def _on_kafka(opts: ScaleOptions, n: int, folder: str, say: Callable[[str], None]) -> ScaleRow:
    from ..reference import cluster as reference
    say(f"starting Kafka 3.9 ({opts.brokers} brokers, -Xmx{opts.kafka_heap}) in {folder}")
    side = None
    try:
        reference.up(folder, brokers=opts.brokers, progress=say, heap=opts.kafka_heap)
        side = KafkaSide(folder)
        _wait_brokers(side, opts.rf)
        return measure(side, n, opts, say)
    finally:
        if side is not None:
            side.close()
        if os.path.exists(os.path.join(folder, reference.STATE_FILE)):
            reference.down(folder)
