"""Apache Kafka as the yardstick: the scenarios ``minikafka bench suite --against kafka``
measures on minikafka and then on a Kafka 3.9 cluster (ZooKeeper mode, :mod:`minikafka.reference`)
in the same run, with the same clients through Kafka's protocol on both.

A :class:`Side` is one cluster: its Kafka listeners and how to kill, wipe and start one of
its brokers.  :func:`run_side` runs every :data:`COMPARED` scenario on it, each
``runs`` times.  The suite runs minikafka's side first, stops that cluster, then starts
Kafka's (the two never run at once on the shared cores).

Both clusters use ``zookeeper.session.timeout.ms=6000`` (minikafka's default, and what
:mod:`minikafka.reference.cluster` gives Kafka's brokers): it decides how soon a SIGKILLed
broker is noticed, so it dominates the failover and catch-up figures of both.
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import dataclass
from typing import Callable

from .. import errors
from ..cluster import launcher
from . import kafka_wire as kw
from . import scenarios as sc
from .pacing import paced

SESSION_TIMEOUT_MS = 6000  # zookeeper.session.timeout.ms on both clusters


@dataclass
class Side:
    """One cluster the compared scenarios run on."""

    name: str
    kafka_bootstrap: str
    kill: Callable[[int], None] | None = None  # SIGKILL a broker (None: no control over the brokers)
    wipe: Callable[[int], None] | None = None  # forget a killed broker's data
    start: Callable[[int], None] | None = None  # start a killed broker again (returns at once)

    @property
    def target(self) -> sc.Target:
        return sc.Target("", self.kafka_bootstrap)


def minikafka_side(target: sc.Target) -> Side:
    """minikafka through its Kafka listeners; broker control when the suite owns the cluster
    (memory storage: a broker started again is empty, so wiping is nothing to do)."""
    if not target.kafka_bootstrap:
        raise errors.ClientError("--against kafka needs minikafka's Kafka listeners (--kafka-bootstrap-server)")
    if target.cluster_dir is None:
        return Side("minikafka", target.kafka_bootstrap)
    folder = target.cluster_dir
    return Side("minikafka", target.kafka_bootstrap, kill=lambda b: launcher.kill(folder, b, "KILL"),
                wipe=lambda b: None, start=lambda b: launcher.start(folder, b, wait=False))


def kafka_side(reference_dir: str) -> Side:
    """The Kafka 3.9 reference cluster in ``reference_dir``; a wiped broker loses its log.dirs."""
    from ..reference import cluster as reference

    state = reference.ReferenceState.load(reference_dir)

    def wipe(broker_id: int) -> None:
        shutil.rmtree(state.brokers[broker_id].log_dir, ignore_errors=True)
    return Side(f"Kafka {state.version}", state.bootstrap, kill=lambda b: reference.kill(reference_dir, b),
                wipe=wipe, start=lambda b: reference.start(reference_dir, b))


@dataclass(frozen=True)
class Goal:
    """A goal of minikafka against Kafka: ``ratio_at_least`` / ``ratio_at_most`` compare ours over
    Kafka's; ``within`` bounds ours minus Kafka's (in the figure's unit)."""

    kind: str
    bound: float
    text: str

    def met(self, ours: float, kafka: float) -> bool:
        if self.kind == "ratio_at_least":
            return ours / kafka >= self.bound
        if self.kind == "ratio_at_most":
            return ours / kafka <= self.bound
        return ours - kafka <= self.bound


@dataclass(frozen=True)
class Compared:
    """One scenario measured on both clusters: its row and which way is better."""

    key: str
    scenario: str
    client: str
    figure: str  # the key of the run's dict the row shows
    unit: str
    higher_is_better: bool
    measure: str  # what the ratio compares, for the "vs Kafka" cell: "throughput", "p99", "time"
    extras: tuple[tuple[str, str], ...] = ()  # (key, unit) shown in "also"
    goal: Goal | None = None


def compared(sizes) -> list[Compared]:
    """The compared rows for ``sizes`` (a :class:`~.suite.Sizes`)."""
    rate = f"{sizes.latency_rate:,}/s"
    return [
        Compared("produce_acks1", "produce RF3 acks=1 (both clusters)", "ProducerPerformance (Java)",
                 "records_per_s", "records/s", True, "throughput", (("p99_ms", "ms"),)),
        Compared("produce_acksall", "produce RF3 acks=all min.isr=2 (both clusters)", "ProducerPerformance (Java)",
                 "records_per_s", "records/s", True, "throughput", (("p99_ms", "ms"),),
                 Goal("ratio_at_least", 0.5, ">= 0.5x Kafka's throughput")),
        Compared("consume", "consume (both clusters)", "ConsumerPerformance (Java)", "records_per_s", "records/s",
                 True, "throughput", (("with_join_records_per_s", "records/s"),),
                 Goal("ratio_at_least", 0.5, ">= 0.5x Kafka's throughput")),
        Compared("e2e", f"end-to-end latency acks=all RF3 at {rate}, p99 (both clusters)", "confluent-kafka (C)",
                 "e2e_p99_ms", "ms", False, "p99", (("e2e_p50_ms", "ms"), ("p99_ms", "ms")),
                 Goal("ratio_at_most", 2.0, "<= 2x Kafka's p99")),
        Compared("catchup", f"catch-up of a follower restarted empty, {sizes.catchup_records:,} records "
                            "(both clusters)", "brokers", "seconds", "s", False, "time"),
        Compared("failover", "failover: leader SIGKILL, to the first ack (both clusters)", "confluent-kafka (C)",
                 "to_first_ack_ms", "ms", False, "time", (("failed", "records"),),
                 Goal("within", 1000.0, "within 1 s of Kafka's")),
    ]


# ----- the scenarios, the same on both sides -----------------------------------------------
def producer_performance(side: Side, topic: str, records: int, value_size: int, acks: str) -> dict:
    out = sc.producer_performance(side.target, topic, records, value_size, acks)
    if out is None:
        raise errors.ClientError(sc.NEEDS_JAVA)
    return out


def consumer_performance(side: Side, topic: str, records: int, value_size: int) -> dict:
    """``records`` written by librdkafka (acks=all, linger.ms 5), then ConsumerPerformance reads
    them all (the writing is not timed)."""
    kw.fill(side.kafka_bootstrap, topic, records, value_size)
    out = sc.consumer_performance(side.target, topic)
    if out is None:
        raise errors.ClientError(sc.NEEDS_JAVA)
    return out


def end_to_end(side: Side, topic: str, rate: int, seconds: float, value_size: int) -> dict:
    """librdkafka's producer at ``rate`` records/s and a consumer of the same topic: each
    committed record's time from ``produce()`` to its arrival (``e2e_*``).  The producer is
    set as Kafka's Java producer is by default: acks=all, idempotent (at most 5 requests in
    flight per broker; with librdkafka's unbounded pipelining of one-record requests, Kafka,
    which serves one request per connection at a time, queues them for seconds), ``linger.ms`` 5."""
    out = sc.acks_latency_rdkafka(side.target, topic, rate, seconds, value_size, linger_ms=5, idempotent=True)
    if out is None:
        raise errors.ClientError(kw.NEEDS_CONFLUENT)
    return out


def catchup(side: Side, topic: str, records: int, value_size: int) -> dict | None:
    """``records`` go to ``topic`` (1 partition, RF 3); a follower is SIGKILLed and, once the
    controller has taken it out of the ISR (its ZooKeeper session expired), wiped and started
    again.  ``seconds``: from that start (the process's own start-up included) until the ISR
    takes it back, which needs it to hold every committed record.  None without broker control."""
    if side.kill is None or side.wipe is None or side.start is None:
        return None
    bootstrap = side.kafka_bootstrap
    kw.fill(bootstrap, topic, records, value_size)
    admin = kw._admin(bootstrap)
    leader, replicas, _ = kw.partitions(bootstrap, topic, admin)[0]
    follower = next(r for r in replicas if r != leader)
    side.kill(follower)
    kw.wait_for(lambda: follower not in kw.partitions(bootstrap, topic, admin)[0][2],
                f"{topic}: broker {follower} leaving the ISR after its kill", 120)
    side.wipe(follower)
    start = time.perf_counter()
    side.start(follower)
    kw.wait_for(lambda: follower in kw.partitions(bootstrap, topic, admin)[0][2],
                f"{topic}: broker {follower} back in the ISR", 600, poll_s=0.05)
    seconds = time.perf_counter() - start
    kw.wait_full_isr(bootstrap, topic)
    return {"seconds": seconds, "records": records}


def failover(side: Side, topic: str, rate: int = 2000, value_size: int = 100) -> dict | None:
    """librdkafka (acks=all, idempotent, ``linger.ms`` 0, ``request.timeout.ms`` 10000) sends
    ``rate`` records/s to partition 0 of ``topic`` (RF 3, min.insync.replicas 2); after 1 s its
    leader is SIGKILLed.  ``to_first_ack_ms``: from the kill to the first acknowledgement of a
    record sent after it; ``failed``: records never acknowledged.  The broker is started again
    (with its data) and the ISR refilled before it returns.  None without broker control."""
    if side.kill is None or side.start is None:
        return None
    from confluent_kafka import Producer

    bootstrap = side.kafka_bootstrap
    victim = kw.partitions(bootstrap, topic)[0][0]
    value = b"x" * value_size
    fault_at: list[float] = []
    first_after: list[float] = []
    acked_after = [0]
    failed = [0]
    lock = threading.Lock()

    def report(err, msg, sent_at: float) -> None:  # noqa: ANN001 (librdkafka's callback)
        if err is not None:
            failed[0] += 1
            return
        t = time.perf_counter()
        with lock:
            if fault_at and sent_at > fault_at[0]:
                acked_after[0] += 1
                if not first_after:
                    first_after.append(t)

    def fault() -> None:
        with lock:
            fault_at.append(time.perf_counter())
        side.kill(victim)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "message.timeout.ms": 60_000, "request.timeout.ms": 10_000})
    sending = threading.Event()
    sending.set()

    def deliver() -> None:
        while sending.is_set() or len(producer):
            producer.poll(0.05)

    reporter = threading.Thread(target=deliver, name="bench-failover-delivery")
    reporter.start()
    faulter = threading.Timer(1.0, fault)
    faulter.start()
    try:
        for _ in paced(rate, rate * 60):
            if fault_at and (acked_after[0] >= rate // 2 or time.perf_counter() - fault_at[0] > 30):
                break  # half a second's worth acknowledged after the fault
            t = time.perf_counter()
            producer.produce(topic, value, partition=0, on_delivery=lambda e, m, t=t: report(e, m, t))
    finally:
        sending.clear()
        faulter.join()
        reporter.join(90)
        producer.flush(60)
    side.start(victim)
    kw.wait_full_isr(bootstrap, topic)
    first = first_after[0] if first_after else None
    return {"to_first_ack_ms": (first - fault_at[0]) * 1000 if first else float("nan"), "failed": failed[0]}


def run_side(side: Side, sizes, new_topic: Callable[[str], str], say: Callable[[str], None]) -> dict[str, list[dict] | None]:
    """Every compared scenario on ``side``, ``sizes.runs`` times each, on fresh topics named by
    ``new_topic``; key -> the runs' figures (None: the scenario cannot run on this side)."""
    s = sizes
    boot = side.kafka_bootstrap

    def topic(kind: str, partition_count: int) -> str:
        name = new_topic(kind)
        kw.create_topic(boot, name, partition_count, 3, 2)
        return name

    steps: dict[str, Callable[[], dict | None]] = {
        "produce_acks1": lambda: producer_performance(side, topic("vs-produce", 3), s.produce_records,
                                                      s.value_size, "1"),
        "produce_acksall": lambda: producer_performance(side, topic("vs-produce", 3), s.produce_records,
                                                        s.value_size, "all"),
        "consume": lambda: consumer_performance(side, topic("vs-consume", 3), s.consume_records, s.value_size),
        "e2e": lambda: end_to_end(side, topic("vs-e2e", 3), s.latency_rate, s.latency_seconds, s.value_size),
        "catchup": lambda: catchup(side, topic("vs-catchup", 1), s.catchup_records, s.value_size),
        "failover": lambda: failover(side, topic("vs-failover", 3), value_size=s.value_size),
    }
    # untimed, the same on both sides: the first records through a JVM broker run interpreted
    if s.warmup_records:
        say(f"{side.name}: warming up (ProducerPerformance, {s.warmup_records:,} records, not timed)")
        producer_performance(side, topic("vs-warmup", 3), s.warmup_records, s.value_size, "all")
    out: dict[str, list[dict] | None] = {}
    for c in compared(s):
        runs: list[dict] | None = []
        for i in range(s.runs):
            say(f"{side.name}: {c.scenario.removesuffix(' (both clusters)')}: run {i + 1} of {s.runs}")
            one = steps[c.key]()
            if one is None:
                runs = None
                break
            runs.append(one)
        out[c.key] = runs
    return out


def reference_pids_alive(reference_dir: str) -> list[int]:
    """The recorded pids of the reference cluster in ``reference_dir`` that still run."""
    from ..reference import cluster as reference

    if not os.path.exists(os.path.join(reference_dir, reference.STATE_FILE)):
        return []
    return [p for p in reference.ReferenceState.load(reference_dir).pids() if launcher.proc_state(p) != "dead"]
