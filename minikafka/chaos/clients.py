"""The live fault suite's clients: threads that carry out the
:class:`~minikafka.faults.workload.Workload` with the real client library against live
brokers and record it in the :class:`~minikafka.faults.history.History` (under a lock:
the history is not thread-safe)."""
from __future__ import annotations

import functools
import threading
import time
from typing import Any, Callable

from ..errors import KafkaError
from ..faults.history import History, Produce
from ..faults.workload import ProducerPlan, Workload


class Clients:
    """Producer and consumer threads and what they observed.

    Each producer (acks=all, idempotent unless the workload allows duplicates) follows its
    :class:`~minikafka.faults.workload.ProducerPlan` (unique values ``p{producer}-{seq}``)
    and records each send, and its acknowledgement (``ok`` at the offset) or error
    (``fail`` when definite, else ``info``), in ``history``; consumers read every partition from the beginning and
    record every record they are handed.  Times are ``time.monotonic()``."""

    def __init__(self, bootstrap: str, workload: Workload, log: Callable[[str], None]) -> None:
        self.bootstrap = bootstrap
        self.workload = workload
        self.idempotence = not workload.duplicates_allowed
        self.topic = workload.topic
        self.partitions = workload.partitions
        self.rate = workload.rate or 0.0
        self.log = log
        self.stop_producing = threading.Event()
        self.stop_consuming = threading.Event()
        self.lock = threading.Lock()  # guards history and errors
        self.history = History()
        self.errors: dict[str, int] = {}
        self.threads: list[threading.Thread] = []
        self.started_at = 0.0
        self.stopped_at = 0.0
        self.problems: list[str] = []

    def start(self) -> None:
        """Start the producer and consumer threads."""
        self.started_at = time.monotonic()
        for i, plan in enumerate(self.workload.producers):
            t = threading.Thread(target=self._produce, args=(i, plan), name=f"chaos-producer-{i}", daemon=True)
            t.start()
            self.threads.append(t)
        for i, name in enumerate(self.workload.consumers):
            t = threading.Thread(target=self._consume, args=(i, name), name=f"chaos-consumer-{i}", daemon=True)
            t.start()
            self.threads.append(t)

    def _on_done(self, fut: Any, op: Produce, window: threading.Semaphore) -> None:
        window.release()
        exc = fut.exception()
        with self.lock:
            if exc is None:
                self.history.ok(op, time.monotonic(), fut.result().offset)
            else:
                name = type(exc).__name__
                self.history.error(op, time.monotonic(), name, isinstance(exc, KafkaError) and exc.definite)
                self.errors[name] = self.errors.get(name, 0) + 1

    def _produce(self, index: int, plan: ProducerPlan) -> None:
        from ..client.sync import Producer

        window = threading.Semaphore(200)
        try:
            producer = Producer(self.bootstrap, acks="all", linger_ms=5, request_timeout_ms=8000,
                                delivery_timeout_ms=60000, retry_backoff_ms=100, client_id=f"chaos-producer-{index}",
                                enable_idempotence=self.idempotence)
        except Exception as exc:
            self.problems.append(f"producer {index} could not start: {exc}")
            return
        seq = 0
        interval = 1.0 / self.rate if self.rate > 0 else 0.0
        next_at = time.monotonic()
        try:
            while not self.stop_producing.is_set():
                if not window.acquire(timeout=0.2):
                    continue
                value = plan.value(seq)
                partition = plan.partition(seq)
                with self.lock:
                    op = self.history.invoke_produce(plan.name, (self.topic, partition), value, time.monotonic())
                try:
                    fut = producer.send(self.topic, value, partition=partition)
                except Exception as exc:
                    window.release()
                    with self.lock:
                        self.history.fail(op, time.monotonic(), type(exc).__name__)
                    self.problems.append(f"producer {index}: send failed: {exc}")
                    break
                fut.add_done_callback(functools.partial(self._on_done, op=op, window=window))
                seq += 1
                if interval:
                    next_at = max(next_at + interval, time.monotonic() - 1.0)
                    delay = next_at - time.monotonic()
                    if delay > 0:
                        self.stop_producing.wait(delay)
        finally:
            try:
                producer.flush(timeout=70)
            except Exception as exc:
                self.log(f"producer {index}: flush: {exc}")
            try:
                producer.close(timeout=5)
            except Exception:
                pass

    def _consume(self, index: int, name: str) -> None:
        from ..client.sync import Consumer
        from ..client.types import TopicPartition

        tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        positions: dict[int, int] = {}
        while not self.stop_consuming.is_set():
            try:
                consumer = Consumer(self.bootstrap, auto_offset_reset="earliest", request_timeout_ms=8000,
                                    fetch_max_wait_ms=300, client_id=f"chaos-consumer-{index}")
            except Exception as exc:
                self.log(f"consumer {index}: could not start: {exc}")
                self.stop_consuming.wait(1.0)
                continue
            try:
                consumer.assign(tps)
                for tp in tps:
                    if tp.partition in positions:
                        consumer.seek(tp, positions[tp.partition])
                while not self.stop_consuming.is_set():
                    for r in consumer.poll(timeout_ms=300):
                        value = r.value.decode() if r.value is not None else ""
                        with self.lock:
                            self.history.read(name, (self.topic, r.partition), r.offset, value, time.monotonic())
                        positions[r.partition] = r.offset + 1
            except Exception as exc:
                self.log(f"consumer {index}: {type(exc).__name__}: {exc}; restarting it")
                self.stop_consuming.wait(0.5)
            finally:
                try:
                    consumer.close()
                except Exception:
                    pass

    def stop_producers(self, timeout_s: float = 90.0) -> None:
        """Stop producing and wait for the producers to flush what they sent."""
        self.stop_producing.set()
        self.stopped_at = time.monotonic()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            if t.name.startswith("chaos-producer"):
                t.join(max(0.1, deadline - time.monotonic()))

    def stop_consumers(self, timeout_s: float = 20.0) -> None:
        """Stop the consumer threads."""
        self.stop_consuming.set()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            if t.name.startswith("chaos-consumer"):
                t.join(max(0.1, deadline - time.monotonic()))

    def longest_gap_ms(self) -> int:
        """Longest time without any acknowledgement between the start and the stop of producing."""
        end = self.stopped_at or time.monotonic()
        with self.lock:
            return int(self.history.longest_without_ack(self.started_at, end) * 1000)
