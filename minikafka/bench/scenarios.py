"""The suite's scenarios. Each function runs its scenario once and returns its figures.

A :class:`Target` says where: the HTTP bootstrap servers, the Kafka listeners (for the C
client through kcat) and, when the suite started the cluster itself, its folder, so that
the failover and memory scenarios can kill brokers and read their memory.
"""
from __future__ import annotations

import contextlib
import glob
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from .. import errors
from ..metric_names import BYTES_IN
from ..client.sync import Admin, Consumer, Producer
from ..client.types import TopicPartition
from ..cluster import free_ports, launcher
from ..cluster.state import load
from . import aio_latency, broker_metrics
from .figures import ack_and_arrival_ms, percentile
from .pacing import paced
from .workload import Workload, kcat_path


@dataclass
class Target:
    """The cluster the scenarios run against (``bootstrap`` empty: only its Kafka listeners)."""

    bootstrap: str
    kafka_bootstrap: str | None = None
    cluster_dir: str | None = None  # set when the suite started the cluster (failover, memory)


def start_cluster(folder: str) -> Target:
    """Start a 3-broker cluster (memory storage, ZooKeeper, both listeners) in ``folder`` on
    free ports outside the ephemeral range; its Target.  No free ports: ClientError."""
    try:
        base = free_ports.free_port_block(7)  # ZooKeeper, 3 brokers, 3 Kafka listeners
    except free_ports.NoFreePorts as exc:
        raise errors.ClientError(str(exc)) from None
    launcher.up(folder, brokers=3, zookeeper_port=base, base_port=base + 1, kafka_base_port=base + 4,
                storage="memory")
    brokers = [b for _, b in sorted(load(folder).brokers.items())]
    kafka = ",".join(f"{b.host}:{b.kafka_port}" for b in brokers if b.kafka_port)
    return Target(",".join(b.endpoint for b in brokers), kafka or None, cluster_dir=folder)


def create_topic(target: Target, topic: str, partitions: int, rf: int, min_isr: int | None = None) -> None:
    """Create ``topic`` and wait until every partition has a leader."""
    config = {"min.insync.replicas": str(min_isr)} if min_isr else None
    with Admin(target.bootstrap) as admin:
        admin.create_topic(topic, partitions, rf, config=config)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            (desc,) = admin.describe_topics([topic])
            if all(p.leader >= 0 and len(p.isr) == rf for p in desc.partitions):
                return
            time.sleep(0.1)
    raise errors.ClientError(f"topic {topic} has no leaders with a full ISR after 60 s")


def end_offsets(target: Target, topic: str) -> dict[int, int]:
    """Partition -> high watermark; through the Kafka listener when ``target`` has no HTTP
    bootstrap servers (Apache Kafka, :mod:`.versus`)."""
    if not target.bootstrap:
        from .kafka_wire import end_offsets as kafka_end_offsets
        assert target.kafka_bootstrap
        return kafka_end_offsets(target.kafka_bootstrap, topic)
    with Consumer(target.bootstrap) as consumer:
        parts = sorted(consumer.partitions_for_topic(topic))
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in parts])
    return {tp.partition: off for tp, off in ends.items()}


class DeliveryCount:
    """A delivery callback, ``(metadata, error)``, as an application's would be: it counts
    the records delivered and failed.  One object for all records (no closure per record)."""

    def __init__(self) -> None:
        self.delivered = 0
        self.failed = 0

    def __call__(self, metadata: object, error: BaseException | None) -> None:
        if error is None:
            self.delivered += 1
        else:
            self.failed += 1


def produce_python(target: Target, work: Workload, topic: str, acks: str | int, bulk: bool = False,
                   enable_idempotence: bool | None = None, on_delivery: bool = False) -> dict:
    """Our blocking Producer: ``send`` per record (or one ``send_many`` of them all when
    ``bulk``), the futures kept, then flush; records/s, MB/s.  ``enable_idempotence``
    None: the producer's default (on with acks=all).  ``on_delivery``: a delivery
    callback per record too (a :class:`DeliveryCount`), whose count is checked."""
    value = work.value
    config = {} if enable_idempotence is None else {"enable_idempotence": enable_idempotence}
    count = DeliveryCount() if on_delivery else None
    with Producer(target.bootstrap, acks=acks, **config) as producer:
        start = time.perf_counter()
        if bulk:
            futures = producer.send_many(topic, [value] * work.records, on_delivery=count)
        elif count is not None:
            send = producer.send
            futures = [send(topic, value, on_delivery=count) for _ in range(work.records)]
        else:
            send = producer.send
            futures = [send(topic, value) for _ in range(work.records)]
        producer.flush()
        elapsed = time.perf_counter() - start
    failed = sum(1 for f in futures if f.exception(0) is not None)
    if failed:
        raise errors.ClientError(f"{failed} of {work.records} records were not acknowledged")
    if count is not None and count.delivered != work.records:
        raise errors.ClientError(f"the delivery callback saw {count.delivered} of {work.records} records delivered")
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed}


# Transactional rows: a commit every this many records (a fixed count, so that both clients
# commit the same transactions whatever their speed).
TXN_COMMIT_EVERY = 1_000


def produce_transactional(target: Target, work: Workload, topic: str, commit_every: int = TXN_COMMIT_EVERY) -> dict:
    """Our Producer with a ``transactional_id`` (acks=all, idempotent): the same records as
    :func:`produce_python`, ``send`` per record, in transactions of ``commit_every``
    records (``begin_transaction``, the sends, ``commit_transaction``, which flushes and
    waits for EndTxn).  ``init_transactions`` is not timed.  records/s, MB/s and the
    number of transactions."""
    value = work.value
    with Producer(target.bootstrap, acks="all", transactional_id=f"bench-{topic}") as producer:
        producer.init_transactions()
        send = producer.send
        futures = []
        transactions = 0
        start = time.perf_counter()
        for first in range(0, work.records, commit_every):
            producer.begin_transaction()
            futures += [send(topic, value) for _ in range(min(commit_every, work.records - first))]
            producer.commit_transaction()
            transactions += 1
        elapsed = time.perf_counter() - start
    failed = sum(1 for f in futures if f.exception(0) is not None)
    if failed:
        raise errors.ClientError(f"{failed} of {work.records} transactional records were not acknowledged")
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed, "transactions": transactions}


def produce_confluent(target: Target, work: Workload, topic: str, transactional: bool,
                      commit_every: int = TXN_COMMIT_EVERY, on_delivery: bool = True) -> dict | None:
    """confluent-kafka (librdkafka) through the Kafka listener, acks=all and idempotent
    (``linger.ms`` 5): the same records, ``produce`` per record, then ``flush``; with
    ``transactional`` in transactions of ``commit_every`` records (``init_transactions``
    not timed).  None without confluent-kafka or a Kafka listener.  Checks every record
    was delivered: with ``on_delivery`` (the default) by a delivery callback per record,
    without it by ``flush`` leaving nothing behind."""
    if importlib.util.find_spec("confluent_kafka") is None or not target.kafka_bootstrap:
        return None
    import confluent_kafka

    conf = {"bootstrap.servers": target.kafka_bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": 5, "queue.buffering.max.messages": 1_000_000}
    if transactional:
        conf["transactional.id"] = f"bench-confluent-{topic}"
    producer = confluent_kafka.Producer(conf)
    failed = [0]

    def delivered(err, msg) -> None:
        if err is not None:
            failed[0] += 1

    def produce(n: int) -> None:
        for _ in range(n):
            while True:
                try:
                    if on_delivery:
                        producer.produce(topic, work.value, on_delivery=delivered)
                    else:
                        producer.produce(topic, work.value)
                    break
                except BufferError:  # the local queue is full: serve delivery reports
                    producer.poll(0.05)

    transactions = 0
    if transactional:
        producer.init_transactions(60)
    start = time.perf_counter()
    if transactional:
        for first in range(0, work.records, commit_every):
            producer.begin_transaction()
            produce(min(commit_every, work.records - first))
            producer.commit_transaction(60)
            transactions += 1
    else:
        produce(work.records)
    left = producer.flush(120)
    elapsed = time.perf_counter() - start
    if left or failed[0]:
        raise errors.ClientError(f"confluent-kafka: {failed[0] + left} of {work.records} records not delivered")
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed, "transactions": transactions}


def transaction_cost(target: Target, work: Workload, topics: tuple[str, str], client: str,
                     commit_every: int = TXN_COMMIT_EVERY) -> dict | None:
    """One run of the transactional producer's cost: the idempotent producer, then the
    transactional one (``client`` "python" or "confluent-kafka"), each to a fresh RF 3
    acks=all topic of ``topics``; their records/s and ``ratio`` (transactional over
    idempotent, of this run).  None when the client cannot run."""
    if client == "python":
        idem = produce_python(target, work, topics[0], "all", enable_idempotence=True)
        txn = produce_transactional(target, work, topics[1], commit_every)
    else:
        idem = produce_confluent(target, work, topics[0], False)
        if idem is None:
            return None
        txn = produce_confluent(target, work, topics[1], True, commit_every)
        assert txn is not None
    return {"idempotent_records_per_s": idem["records_per_s"], "records_per_s": txn["records_per_s"],
            "ratio": txn["records_per_s"] / idem["records_per_s"], "transactions": txn["transactions"]}


def produce_kcat(target: Target, work: Workload, topic: str, acks: str) -> dict | None:
    """librdkafka (kcat) producing the same records through the Kafka listener; None
    without kcat or without a Kafka listener. Checks the records arrived."""
    kcat = kcat_path()
    if kcat is None or not target.kafka_bootstrap:
        return None
    before = sum(end_offsets(target, topic).values())
    start = time.perf_counter()
    done = subprocess.run([kcat, "-b", target.kafka_bootstrap, "-X", f"acks={acks}", "-X", "linger.ms=5",
                           "-P", "-t", topic, "-l", work.lines_file()],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    # end offsets are high watermarks: with acks=1 the followers may still be catching up
    deadline = time.monotonic() + 60
    written = sum(end_offsets(target, topic).values()) - before
    while done.returncode == 0 and written < work.records and time.monotonic() < deadline:
        time.sleep(0.2)
        written = sum(end_offsets(target, topic).values()) - before
    if done.returncode != 0 or written != work.records:
        raise errors.ClientError(f"kcat wrote {written} of {work.records} records: {done.stderr.strip()[-300:]}")
    return {"records_per_s": work.records / elapsed, "mb_per_s": work.mb / elapsed}


PEER_MODULES = {"kafka-python": "kafka", "aiokafka": "aiokafka"}


def needs_peer(client: str) -> str:
    """The skip reason of a peer client's row."""
    return f"needs {client} (pip install 'minikafka[dev]') and the Kafka listener"


def produce_peer(target: Target, work: Workload, topic: str, client: str) -> dict | None:
    """A pure-Python peer of our Producer (``client`` "kafka-python" or "aiokafka")
    producing the same records through the Kafka listener, acks=all, ``linger_ms`` 5, in a
    process of its own (:mod:`minikafka.bench.peer_produce`); None without the library or
    a Kafka listener.  Checks the records arrived."""
    if importlib.util.find_spec(PEER_MODULES[client]) is None or not target.kafka_bootstrap:
        return None
    before = sum(end_offsets(target, topic).values())
    done = subprocess.run([sys.executable, "-m", "minikafka.bench.peer_produce", "--client", client,
                           "--bootstrap", target.kafka_bootstrap, "--topic", topic, "--records", str(work.records),
                           "--value", work.value.decode()], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise errors.ClientError(f"the {client} produce run failed: {done.stderr.strip()[-500:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if "missing" in out:
        return None
    written = sum(end_offsets(target, topic).values()) - before
    if out["failed"] or written != work.records:
        raise errors.ClientError(f"{client}: {out['failed']} of {work.records} records failed, {written} written")
    return out


def consume_python(target: Target, topic: str, mode: str = "records") -> dict:
    """Our blocking Consumer reading ``topic`` from the start to its end offsets: ``mode``
    "records" (``poll``), "batches" (``poll_batches``, nothing decoded; bytes are the
    batches'), "values" (``poll_batches`` and ``values()``) or "arrow" (``to_arrow()``)."""
    with Consumer(target.bootstrap, auto_offset_reset="earliest") as consumer:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        total = sum(consumer.end_offsets(tps).values())
        n = nbytes = 0
        start = time.perf_counter()
        while n < total:
            if mode == "records":
                for r in consumer.poll(timeout_ms=1000):
                    n += 1
                    nbytes += len(r.value or b"")
            elif mode == "values":
                for b in consumer.poll_batches(timeout_ms=1000):
                    values = b.values()
                    n += len(values)
                    nbytes += sum(len(v) for v in values if v is not None)
            elif mode == "batches":
                for b in consumer.poll_batches(timeout_ms=1000):
                    n += len(b)
                    nbytes += len(b.raw)
            else:
                for b in consumer.poll_batches(timeout_ms=1000):
                    table = b.to_arrow()
                    n += table.num_rows
                    nbytes += table.column("value").nbytes
        elapsed = time.perf_counter() - start
    return {"records_per_s": n / elapsed, "mb_per_s": nbytes / 1e6 / elapsed, "records": n, "elapsed_s": elapsed}


KCAT_PREFETCH_MESSAGES = 2_000_000


def consume_kcat(target: Target, topic: str) -> dict | None:
    """kcat reading ``topic`` from the start to the end through the Kafka listener."""
    kcat = kcat_path()
    if kcat is None or not target.kafka_bootstrap:
        return None
    total = sum(end_offsets(target, topic).values())
    start = time.perf_counter()
    # librdkafka stops fetching once its prefetch queue holds queued.min.messages (100,000
    # by default, shared by every partition of kcat's simple consumer) and fetches again
    # only after about a second (fetch.queue.backoff.ms from librdkafka 2.2 on), whatever
    # the broker.  A queue larger than what kcat reads in that second keeps it fetching,
    # so the line measures the brokers, not that backoff.
    proc = subprocess.Popen([kcat, "-b", target.kafka_bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                             "-X", f"queued.min.messages={KCAT_PREFETCH_MESSAGES}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = nbytes = 0
    assert proc.stdout is not None
    while chunk := proc.stdout.read(1 << 20):
        lines += chunk.count(b"\n")
        nbytes += len(chunk)
    proc.wait(600)
    elapsed = time.perf_counter() - start
    if lines != total:
        raise errors.ClientError(f"kcat read {lines} of {total} records")
    return {"records_per_s": lines / elapsed, "mb_per_s": (nbytes - lines) / 1e6 / elapsed}


@contextlib.contextmanager
def _arrivals(target: Target, topic: str, fetch_max_wait_ms: int, total: int) -> Iterator[list[float]]:
    """A consumer thread on ``topic`` (from its end) noting, for each record, the time since
    the send time its value starts with; the list it fills, until ``total`` or the exit."""
    arrived: list[float] = []
    stop = threading.Event()
    with Consumer(target.bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=fetch_max_wait_ms) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))])
        consumer.poll(timeout_ms=100)  # positions at the end before the first record

        def read() -> None:
            while not stop.is_set() and len(arrived) < total:
                for r in consumer.poll(timeout_ms=200):
                    arrived.append(time.perf_counter() - struct.unpack(">d", r.value[:8])[0])

        reader = threading.Thread(target=read, name="bench-latency-reader")
        reader.start()
        try:
            yield arrived
        finally:
            stop.set()
            reader.join(10)


def _wait_for(done: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)


def latency(target: Target, topic: str, rate: int, seconds: float, value_size: int) -> dict:
    """acks=all at a fixed ``rate`` records/s for ``seconds``: produce-to-consume latency.

    Each value carries its send time; a consumer reading the same topic (records are
    handed out only below the high watermark, so this is the end-to-end latency of a
    committed record) notes when each arrives.
    """
    pad = b"x" * max(0, value_size - 8)
    total = int(rate * seconds)
    with _arrivals(target, topic, 50, total) as latencies:
        with Producer(target.bootstrap, acks="all") as producer:  # default linger (5 ms, as librdkafka)
            for _ in paced(rate, total):
                producer.send(topic, struct.pack(">d", time.perf_counter()) + pad)
            producer.flush()
        _wait_for(lambda: len(latencies) >= total, 60)
    latencies.sort()
    return {"p50_ms": percentile(latencies, 0.5) * 1000, "p99_ms": percentile(latencies, 0.99) * 1000,
            "p999_ms": percentile(latencies, 0.999) * 1000, "records": len(latencies)}


def acks_latency_python(target: Target, topic: str, rate: int, seconds: float, value_size: int) -> dict:
    """Our Producer at acks=all with ``linger_ms=0`` sending ``rate`` records/s for
    ``seconds``: each record's time from ``send`` to its acknowledgement (p50, p99, p99.9),
    and from ``send`` to its arrival at a Consumer of the same topic (msgpack listener,
    ``fetch_max_wait_ms=500``: a parked fetch that missed the high watermark's move
    would show as that wait) as ``e2e_*``."""
    pad = b"x" * max(0, value_size - 8)
    acked: list[float] = []
    total = int(rate * seconds)
    with _arrivals(target, topic, 500, total) as arrived:
        with Producer(target.bootstrap, acks="all", linger_ms=0) as producer:
            for _ in paced(rate, total):
                t = time.perf_counter()
                fut = producer.send(topic, struct.pack(">d", t) + pad)
                fut.add_done_callback(lambda f, t=t: acked.append(time.perf_counter() - t))
            producer.flush()
        _wait_for(lambda: len(arrived) >= total, 30)
    return ack_and_arrival_ms(acked, arrived)


def acks_latency_asyncio(target: Target, topic: str, rate: int, seconds: float, value_size: int) -> dict:
    """The same with our asyncio client: ``AIOProducer`` and ``AIOConsumer`` on one event
    loop in this process (:mod:`.aio_latency`), no hand-off between threads per record."""
    return aio_latency.acks_latency_asyncio(target.bootstrap, topic, rate, seconds, value_size)


NEEDS_CONFLUENT = "needs confluent-kafka (pip install confluent-kafka) and the Kafka listener"


def acks_latency_rdkafka(target: Target, topic: str, rate: int, seconds: float, value_size: int,
                         linger_ms: int = 0, idempotent: bool = False) -> dict | None:
    """The same as :func:`acks_latency_python` with librdkafka (confluent-kafka, ``acks=all``,
    ``linger.ms`` 0 unless told) through the Kafka listener, producer and consumer in a
    process of their own (:mod:`minikafka.bench.rdkafka_latency`).  ``idempotent``: at most
    5 requests in flight per broker, as Kafka's Java producer.  None without confluent-kafka
    or a Kafka listener."""
    if importlib.util.find_spec("confluent_kafka") is None or not target.kafka_bootstrap:
        return None
    done = subprocess.run([sys.executable, "-m", "minikafka.bench.rdkafka_latency", "--bootstrap",
                           target.kafka_bootstrap, "--topic", topic, "--rate", str(rate), "--seconds", str(seconds),
                           "--value-size", str(value_size), "--linger-ms", str(linger_ms),
                           *(["--idempotent"] if idempotent else [])], capture_output=True, text=True, timeout=seconds + 180)
    if done.returncode != 0:
        raise errors.ClientError(f"the librdkafka latency run failed: {done.stderr.strip()[-500:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if out["failed"] or out["records"] != int(rate * seconds):
        raise errors.ClientError(f"librdkafka: {out['records']} of {int(rate * seconds)} records acknowledged, "
                                 f"{out['failed']} failed")
    return out


def leaders_of(target: Target, topic: str) -> dict[int, int]:
    """Partition -> leader broker id."""
    with Admin(target.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return {p.partition: p.leader for p in desc.partitions}


def controller_of(target: Target) -> int:
    with Admin(target.bootstrap) as admin:
        return admin.cluster().controller_id


def failover(target: Target, topic: str, how: str, rate: int = 2000, value_size: int = 100) -> dict | None:
    """Produce acks=all to one partition of an RF 3 topic at ``rate`` records/s while the
    partition's leader is SIGKILLed (``leader``), the controller is SIGKILLed
    (``controller``; a partition it does not lead) or the leader stops cleanly (``controlled``, SIGTERM: controlled
    shutdown); the broker is started again afterwards.

    Figures: ``to_first_ack_ms`` (from the fault to the first acknowledgement of a record
    sent after it), ``longest_stall_ms`` (the longest time without any acknowledgement)
    and ``failed`` (records not acknowledged). None unless the suite owns the cluster.
    """
    if target.cluster_dir is None:
        return None
    leaders = leaders_of(target, topic)
    if how == "controller":
        # a partition the controller does not lead: killing a controller that also leads
        # would measure both failovers at once
        victim = controller_of(target)
        partition = min(p for p, leader in leaders.items() if leader != victim)
    else:
        partition = min(leaders)
        victim = leaders[partition]
    if victim < 0:
        raise errors.ClientError("no leader or controller to stop")
    value = b"x" * value_size
    acks: list[float] = []
    fault_at: list[float] = []
    lock = threading.Lock()
    acked_after = [0]

    first_after: list[float] = []  # the first ack of a record sent after the fault

    def acked(fut, sent_at: float) -> None:
        if fut.exception(0) is None:
            t = time.perf_counter()
            with lock:
                acks.append(t)
                if fault_at and sent_at > fault_at[0]:
                    acked_after[0] += 1
                    if not first_after:
                        first_after.append(t)

    def fault() -> None:
        fault_at.append(time.perf_counter())
        if how == "controlled":
            launcher.stop(target.cluster_dir, victim)
        else:
            launcher.kill(target.cluster_dir, victim, "KILL")

    futures = []
    faulter = threading.Timer(1.0, fault)
    with Producer(target.bootstrap, acks="all", linger_ms=0, delivery_timeout_ms=60_000,
                  request_timeout_ms=10_000) as producer:
        start = time.perf_counter()
        faulter.start()
        i = 0
        while True:
            now = time.perf_counter()
            if fault_at and (acked_after[0] >= rate // 2 or now - fault_at[0] > 30):
                break  # half a second's worth acknowledged after the fault
            due = start + i / rate
            if due > now:
                time.sleep(due - now)
            fut = producer.send(topic, value, partition=partition)
            fut.add_done_callback(lambda f, t=time.perf_counter(): acked(f, t))
            futures.append(fut)
            i += 1
        producer.flush()
    faulter.join()
    failed = sum(1 for f in futures if f.exception(0) is not None)
    launcher.start(target.cluster_dir, victim, wait=True)
    _wait_full_isr(target, topic)
    acks.sort()
    first = first_after[0] if first_after else None
    gaps = [b - a for a, b in zip(acks, acks[1:])]
    return {"to_first_ack_ms": (first - fault_at[0]) * 1000 if first else float("nan"),
            "longest_stall_ms": max(gaps) * 1000 if gaps else float("nan"), "failed": failed}


def _wait_full_isr(target: Target, topic: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    with Admin(target.bootstrap) as admin:
        while time.monotonic() < deadline:
            try:
                (desc,) = admin.describe_topics([topic])
                if all(p.leader >= 0 and len(p.isr) == len(p.replicas) for p in desc.partitions):
                    return
            except errors.KafkaError:
                pass
            time.sleep(0.2)
    raise errors.ClientError(f"{topic}: the ISR did not fill again within {timeout_s:.0f} s")


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def memory(target: Target, work: Workload, topic: str) -> dict | None:
    """Brokers' resident memory per stored record copy (memory storage): the growth of
    every broker's RSS while ``work`` is produced at RF 3, over records x 3. None unless
    the suite owns the cluster."""
    if target.cluster_dir is None:
        return None
    pids = [b.pid for b in load(target.cluster_dir).brokers.values() if b.pid]
    before = sum(_rss_bytes(p) for p in pids)
    with Producer(target.bootstrap, acks="all") as producer:
        producer.send_many(topic, [work.value] * work.records)
        producer.flush()
    time.sleep(0.5)
    after = sum(_rss_bytes(p) for p in pids)
    copies = work.records * 3
    return {"bytes_per_record": (after - before) / copies, "value_size": work.value_size,
            "rss_mb": after / 1e6}


def catchup(target: Target, work: Workload, topic: str) -> dict | None:
    """A follower restarted empty (memory storage) behind ``work`` committed records: the
    rate at which it refetches, until it is back in the ISR of ``topic``.  None unless
    the suite owns the cluster.

    The follower refetches every partition it hosts at once, not only this topic's, so
    the rate counts all it appends (its ``minikafka_bytes_in_total``, sampled every 50 ms
    from its registration until the ISR takes it back); ``topic_mb_per_s`` is this
    topic's record bytes over the same time, from its registration."""
    if target.cluster_dir is None:
        return None
    with Producer(target.bootstrap, acks="all") as producer:
        producer.send_many(topic, [work.value] * work.records)
        producer.flush()
    leaders = leaders_of(target, topic)
    with Admin(target.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    follower = next(r for r in desc.partitions[0].replicas if r != leaders[0])
    launcher.kill(target.cluster_dir, follower, "KILL")
    launcher.start(target.cluster_dir, follower, wait=True)
    start = time.perf_counter()
    deadline = time.monotonic() + 300
    samples: list[tuple[float, int]] = []
    with Admin(target.bootstrap) as admin:
        info = None
        while info is None and time.monotonic() < deadline:  # the metadata lists it once the controller told
            info = next((b for b in admin.cluster().brokers if b.id == follower), None)
            if info is None:
                time.sleep(0.05)
        if info is None:
            raise errors.ClientError(f"broker {follower} is not in the cluster's metadata 300 s after its restart")
        while time.monotonic() < deadline:
            (desc,) = admin.describe_topics([topic])
            rejoined = follower in desc.partitions[0].isr and desc.partitions[0].leader >= 0
            samples.append((time.perf_counter(), _bytes_in(info.host, info.port)))  # after: it holds the topic
            # until the controller has seen the restart, the ISR may still list the follower
            # from before its kill: back only once it also holds at least the topic's records
            if rejoined and samples[-1][1] >= work.records * len(work.value):
                break
            time.sleep(0.05)
        else:
            raise errors.ClientError(f"broker {follower} did not rejoin the ISR of {topic} within 300 s")
    elapsed = time.perf_counter() - start
    _wait_full_isr(target, topic)
    (t0, b0), b1 = samples[0], samples[-1][1]
    t1 = next(t for t, b in samples if b == b1)  # when it last appended
    if t1 - t0 < 0.2 or b1 == b0:  # too quick to see a rate: all it holds over the time since registration
        t0, b0 = start, 0
        t1 = max(t1, start + 1e-3)
    return {"mb_per_s": (b1 - b0) / 1e6 / (t1 - t0), "topic_mb_per_s": work.mb / elapsed,
            "refetched_mb": b1 / 1e6, "seconds": elapsed}


def _bytes_in(host: str, port: int) -> int:
    """A broker's ``minikafka_bytes_in_total`` (batch bytes appended since it started)."""
    return int(broker_metrics.value(broker_metrics.scrape(host, port), BYTES_IN.name))


def with_broker_pauses(target: Target, run: Callable[[], dict | None]) -> dict | None:
    """``run()``'s figures with the brokers' loop lag, stalls and GC pauses over it added
    (:mod:`.broker_metrics`); unchanged without our brokers' listeners (``bootstrap`` empty)."""
    if not target.bootstrap:
        return run()
    with broker_metrics.pauses(target.bootstrap) as pauses:
        out = run()
    return None if out is None else {**out, **pauses}


def spark_count(target: Target, topic: str, runs: int) -> list[dict] | None:
    """``spark.read.format("minikafka")...load().count()`` of ``topic``, ``runs`` times on
    one local[2] SparkSession (its ~20 s start is not timed): records/s of each count.
    None when pyspark is not installed."""
    if importlib.util.find_spec("pyspark") is None:
        return None
    from ..spark import local_session

    total = sum(end_offsets(target, topic).values())
    spark = local_session("minikafka-bench")
    try:
        out = []
        for _ in range(runs):
            start = time.perf_counter()
            n = (spark.read.format("minikafka").option("kafka.bootstrap.servers", target.bootstrap)
                 .option("subscribe", topic).load().count())
            elapsed = time.perf_counter() - start
            if n != total:
                raise errors.ClientError(f"Spark counted {n} of {total} committed records")
            out.append({"records_per_s": n / elapsed, "records": n})
        return out
    finally:
        spark.stop()


# ----- Kafka's own performance tools (Java) ------------------------------------------------
JARS_ENV = "MINIKAFKA_KAFKA_JARS"
JAR_CACHE_ENV = "MINIKAFKA_JAR_CACHE"
NEEDS_JAVA = "needs Java and Kafka's jars (scripts/kafka-jars.sh 4, or MINIKAFKA_KAFKA_JARS=DIR)"


def kafka_tools_jars() -> str | None:
    """A folder holding kafka-tools and everything it needs: ``$MINIKAFKA_KAFKA_JARS``, else the
    newest version in the cache scripts/kafka-jars.sh fills (``$MINIKAFKA_JAR_CACHE``, by default
    ~/.cache/minikafka/jars/<version>/); None without Java or without such a folder."""
    if shutil.which("java") is None:
        return None
    given = os.environ.get(JARS_ENV)
    if given:
        return given if glob.glob(os.path.join(given, "kafka-tools-*.jar")) else None
    cache = os.environ.get(JAR_CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "minikafka", "jars")
    found = [d for d in glob.glob(os.path.join(cache, "*")) if glob.glob(os.path.join(d, "kafka-tools-*.jar"))]

    def version(path: str) -> tuple:
        return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.-]", os.path.basename(path)))
    return max(found, key=version) if found else None


def _kafka_tool(jars: str, cls: str, *args: str, timeout_s: float = 600) -> str:
    """Run org.apache.kafka.tools.``cls`` unchanged; its stdout (ClientError when it fails)."""
    done = subprocess.run(["java", "-cp", os.path.join(jars, "*"), f"org.apache.kafka.tools.{cls}", *args],
                          capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise errors.ClientError(f"{cls} exited {done.returncode}: {(done.stderr or done.stdout).strip()[-500:]}")
    return done.stdout


_PRODUCER_PERF = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max "
    r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def parse_producer_performance(out: str) -> dict:
    """ProducerPerformance's closing line: records/s, MB/s and its send-to-ack latencies."""
    found = _PRODUCER_PERF.findall(out)
    if not found:
        raise errors.ClientError(f"no summary line in ProducerPerformance's output: {out.strip()[-300:]}")
    n, rps, mbps, avg, mx, p50, p95, p99, p999 = found[-1]
    return {"records": int(n), "records_per_s": float(rps), "mb_per_s": float(mbps), "avg_ms": float(avg),
            "max_ms": float(mx), "p50_ms": float(p50), "p95_ms": float(p95), "p99_ms": float(p99),
            "p999_ms": float(p999)}


def producer_performance(target: Target, topic: str, records: int, value_size: int, acks: str) -> dict | None:
    """Kafka's ProducerPerformance (Java, the class behind kafka-producer-perf-test.sh) through the
    Kafka listener, as fast as it goes; None without Java, the jars or a Kafka listener.
    Checks the records arrived."""
    jars = kafka_tools_jars()
    if jars is None or not target.kafka_bootstrap:
        return None
    before = sum(end_offsets(target, topic).values())
    out = _kafka_tool(jars, "ProducerPerformance", "--topic", topic, "--num-records", str(records),
                      "--record-size", str(value_size), "--throughput", "-1", "--producer-props",
                      f"bootstrap.servers={target.kafka_bootstrap}", f"acks={acks}", "linger.ms=5")
    figures = parse_producer_performance(out)
    written = sum(end_offsets(target, topic).values()) - before
    if figures["records"] != records or written != records:
        raise errors.ClientError(f"ProducerPerformance sent {figures['records']} and wrote {written} of {records}")
    return figures


def parse_consumer_performance(out: str) -> dict:
    """ConsumerPerformance's CSV (a header line, then one line of figures)."""
    lines = [line for line in out.splitlines() if line.count(",") >= 5]
    if len(lines) < 2 or not lines[0].startswith("start.time"):
        raise errors.ClientError(f"no figures in ConsumerPerformance's output: {out.strip()[-300:]}")
    row = dict(zip((h.strip() for h in lines[0].split(",")), (v.strip() for v in lines[-1].split(","))))
    return {"records": int(float(row["data.consumed.in.nMsg"])), "records_per_s": float(row["fetch.nMsg.sec"]),
            "mb_per_s": float(row["fetch.MB.sec"]), "with_join_records_per_s": float(row["nMsg.sec"]),
            "join_ms": float(row["rebalance.time.ms"]), "fetch_ms": float(row["fetch.time.ms"])}


def consumer_performance(target: Target, topic: str) -> dict | None:
    """Kafka's ConsumerPerformance (kafka-consumer-perf-test.sh) reading ``topic`` from the start to
    its end offsets in a new group; records/s of its fetching (without the group join, reported
    apart). None without Java, the jars or a Kafka listener."""
    jars = kafka_tools_jars()
    if jars is None or not target.kafka_bootstrap:
        return None
    total = sum(end_offsets(target, topic).values())
    out = _kafka_tool(jars, "ConsumerPerformance", "--bootstrap-server", target.kafka_bootstrap, "--topic", topic,
                      "--messages", str(total), "--group", f"bench-consumer-perf-{time.time_ns()}",
                      "--timeout", "60000")
    figures = parse_consumer_performance(out)
    if figures["records"] != total:
        raise errors.ClientError(f"ConsumerPerformance read {figures['records']} of {total} records")
    return figures


_E2E_AVG = re.compile(r"Avg latency: ([\d.]+) ms")
_E2E_PERCENTILES = re.compile(r"Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)")


def parse_end_to_end_latency(out: str) -> dict:
    avg, pct = _E2E_AVG.search(out), _E2E_PERCENTILES.search(out)
    if avg is None or pct is None:
        raise errors.ClientError(f"no latencies in EndToEndLatency's output: {out.strip()[-300:]}")
    return {"avg_ms": float(avg.group(1)), "p50_ms": float(pct.group(1)), "p99_ms": float(pct.group(2)),
            "p999_ms": float(pct.group(3))}


def end_to_end_latency(target: Target, topic: str, records: int, value_size: int) -> dict | None:
    """Kafka's EndToEndLatency (kafka-e2e-latency.sh): one record at a time, acks=all, each sent
    only after the consumer read the one before; the round trip's average and percentiles
    (whole ms). None without Java, the jars or a Kafka listener."""
    jars = kafka_tools_jars()
    if jars is None or not target.kafka_bootstrap:
        return None
    out = _kafka_tool(jars, "EndToEndLatency", target.kafka_bootstrap, topic, str(records), "all", str(value_size))
    return {**parse_end_to_end_latency(out), "records": records}
