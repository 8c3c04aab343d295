"""A transactional consume-transform-produce workload for the fault suite (what Kafka's
TransactionalMessageCopier does in its exactly-once system tests).

Before the faults, :func:`fill_input` writes ``in-<i>`` records to the input topic.
Then :class:`Copiers` runs one thread per copier; each owns some input partitions and a
transactional id, and loops: begin a transaction, read a few records (read_committed),
write two outputs per input (to the output partition of the same number and the next:
each transaction touches several partitions), commit the input positions inside the
transaction (``send_offsets_to_transaction``), then commit — or, one time in five,
abort on purpose; at most ``rate`` input records per second, so that the copying lasts
through the faults.  After an abort or any failure it starts again from the group's
committed offsets; a fenced or broken producer is replaced by a new instance with the
same transactional id, which fences the old one and aborts its open transaction.
Every abort that completed is recorded: its outputs must never be visible
(:mod:`minikafka.faults.txn_checker` checks the whole run).
"""
from __future__ import annotations

import random
import threading
import time
from typing import Any, Callable

from ..errors import KafkaError
from ..faults.txn_checker import output_value

GROUP_PREFIX = "copier"
BATCH = 10  # input records per transaction at most


def fill_input(bootstrap: str, topic: str, partitions: int, per_partition: int) -> dict[int, list[str]]:
    """Write ``per_partition`` records to each input partition (acks=all, idempotent);
    returns partition -> values by offset."""
    from ..client.sync import Producer

    values = {p: [f"in-{p}-{i}" for i in range(per_partition)] for p in range(partitions)}
    with Producer(bootstrap, acks="all", linger_ms=5) as producer:
        futures = [producer.send(topic, v, partition=p) for p in range(partitions) for v in values[p]]
        for f in futures:
            f.result(120)
    return values


class Copiers:
    """The copier threads and what they did: aborted attempts, commits, failures."""

    def __init__(self, bootstrap: str, input_topic: str, output_topic: str, partitions: int, copiers: int,
                 ends: dict[int, int], seed: int, log: Callable[[str], None], rate: float | None = None) -> None:
        self.bootstrap = bootstrap
        self.input_topic, self.output_topic = input_topic, output_topic
        self.partitions = partitions
        self.ends = ends  # input partition -> its last offset + 1
        self.group = f"{GROUP_PREFIX}-{input_topic}"
        self.log = log
        self.rate = rate  # input records per second per copier (None: as fast as it goes)
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.aborted: set[tuple[str, int]] = set()  # (transactional id, attempt) whose abort completed
        self.commits = 0
        self.aborts = 0
        self.failures = 0  # transactions that ended in an error (outcome unknown or aborted)
        self.fenced = 0  # producers replaced after a fatal error
        self.problems: list[str] = []
        self.stop = threading.Event()
        self.done: dict[int, threading.Event] = {}
        self._threads: list[threading.Thread] = []
        self._assignment = {c: [p for p in range(partitions) if p % copiers == c] for c in range(copiers)}

    def start(self) -> None:
        for c, parts in self._assignment.items():
            if not parts:
                continue
            self.done[c] = threading.Event()
            t = threading.Thread(target=self._run, args=(c, parts), name=f"copier-{c}", daemon=True)
            self._threads.append(t)
            t.start()

    def wait_done(self, timeout_s: float) -> bool:
        """Whether every copier committed all its input within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        for ev in self.done.values():
            if not ev.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True

    def close(self, timeout_s: float = 60.0) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(timeout_s)
            if t.is_alive():
                self.problems.append(f"{t.name} did not stop within {timeout_s:g}s")

    # -- one copier ------------------------------------------------------------------
    def _producer(self, tid: str) -> Any:
        from ..client.sync import Producer

        while not self.stop.is_set():
            producer = None
            try:
                producer = Producer(self.bootstrap, transactional_id=tid, linger_ms=2, request_timeout_ms=15000,
                                    max_block_ms=60000, transaction_timeout_ms=30000)
                producer.init_transactions()
                return producer
            except KafkaError as exc:
                self.log(f"{tid}: init_transactions failed, retrying: {exc}")
                if producer is not None:
                    producer.close(5)
                time.sleep(0.5)
        return None

    def _run(self, c: int, parts: list[int]) -> None:
        try:
            self._copy(c, parts)
        except Exception as exc:  # a bug: the run reports it
            self.problems.append(f"copier {c} crashed: {type(exc).__name__}: {exc}")

    def _copy(self, c: int, parts: list[int]) -> None:
        from ..client.sync import Consumer
        from ..client.types import TopicPartition

        tid = f"{self.group}-{c}"
        tps = [TopicPartition(self.input_topic, p) for p in parts]
        consumer = Consumer(self.bootstrap, group_id=self.group, enable_auto_commit=False, fetch_max_wait_ms=100,
                            isolation_level="read_committed", auto_offset_reset="earliest", request_timeout_ms=15000)
        producer = self._producer(tid)
        attempt = 0
        try:
            consumer.assign(tps)
            self._rewind(consumer, tps)
            while not self.stop.is_set() and producer is not None:
                positions = {tp: consumer.position(tp) for tp in tps}
                if all(positions[tp] >= self.ends[tp.partition] for tp in tps):
                    self.done[c].set()
                    time.sleep(0.2)
                    continue
                attempt += 1
                try:
                    producer.begin_transaction()
                    records = consumer.poll(timeout_ms=300, max_records=BATCH)
                    for r in records:
                        out = output_value(r.value.decode(), tid, attempt)
                        for q in sorted({r.partition % self.partitions, (r.partition + 1) % self.partitions}):
                            producer.send(self.output_topic, out, partition=q)
                    producer.send_offsets_to_transaction({tp: consumer.position(tp) for tp in tps}, self.group)
                    if records and self.rng.random() < 0.2:
                        producer.abort_transaction(30)
                        with self.lock:
                            self.aborted.add((tid, attempt))
                            self.aborts += 1
                        self._rewind(consumer, tps)
                        continue
                    producer.commit_transaction(60)
                    with self.lock:
                        self.commits += 1
                    if self.rate and records:
                        self.stop.wait(len(records) / self.rate)
                except KafkaError as exc:
                    with self.lock:
                        self.failures += 1
                    self.log(f"{tid} attempt {attempt}: {exc}")
                    producer = self._recover(producer, tid, attempt)
                    self._rewind(consumer, tps)
        finally:
            consumer.close()
            if producer is not None:
                producer.close(10)

    def _recover(self, producer: Any, tid: str, attempt: int) -> Any:
        """After a failed transaction: abort it if the producer still can (the abort is
        then known); otherwise replace the producer (the new instance's init fences the
        old one and aborts whatever it left open; that outcome is not recorded)."""
        if producer.transaction_state in ("IN_TRANSACTION", "ABORTABLE_ERROR"):
            try:
                producer.abort_transaction(30)
                with self.lock:
                    self.aborted.add((tid, attempt))
                return producer
            except KafkaError as exc:
                self.log(f"{tid} attempt {attempt}: abort failed: {exc}")
        if producer.transaction_state == "READY":
            return producer
        with self.lock:
            self.fenced += 1
        producer.close(5)
        return self._producer(tid)

    def _rewind(self, consumer: Any, tps: list) -> None:
        """Back to the group's committed offsets (stable: no transaction holds them)."""
        deadline = time.monotonic() + 120
        while not self.stop.is_set():
            try:
                for tp in tps:
                    consumer.seek(tp, consumer.committed(tp) or 0)
                return
            except KafkaError as exc:
                if time.monotonic() > deadline:
                    raise
                self.log(f"reading the committed offsets failed, retrying: {exc}")
                time.sleep(0.5)
