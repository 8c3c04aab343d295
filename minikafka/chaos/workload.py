"""The workload of a fault-injection run: producers and consumers recording what the
cluster acknowledged and what it handed out (Jepsen's client history)."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable


class Workload:
    """Producer and consumer threads and what they observed.

    Producers (acks=all) write unique values ``p{producer}-{seq}`` and record each
    acknowledgement in ``acked`` as ``(partition, offset, value, monotonic time)``;
    consumers read every partition from the beginning and record every value read at
    each ``(partition, offset)`` in ``reads``."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, producers: int, consumers: int,
                 rate_per_producer: float, log: Callable[[str], None], idempotence: bool = True) -> None:
        self.bootstrap = bootstrap
        self.idempotence = idempotence
        self.topic = topic
        self.partitions = partitions
        self.n_producers = producers
        self.n_consumers = consumers
        self.rate = rate_per_producer
        self.log = log
        self.stop_producing = threading.Event()
        self.stop_consuming = threading.Event()
        self.lock = threading.Lock()
        self.acked: list[tuple[int, int, str, float]] = []  # partition, offset, value, monotonic time
        self.failed = 0
        self.sent = 0
        self.errors: dict[str, int] = {}
        self.reads: dict[tuple[int, int], set[str]] = {}  # (partition, offset) -> every value read there
        self.threads: list[threading.Thread] = []
        self.started_at = 0.0
        self.stopped_at = 0.0
        self.problems: list[str] = []

    def start(self) -> None:
        """Start the producer and consumer threads."""
        self.started_at = time.monotonic()
        for i in range(self.n_producers):
            t = threading.Thread(target=self._produce, args=(i,), name=f"chaos-producer-{i}", daemon=True)
            t.start()
            self.threads.append(t)
        for i in range(self.n_consumers):
            t = threading.Thread(target=self._consume, args=(i,), name=f"chaos-consumer-{i}", daemon=True)
            t.start()
            self.threads.append(t)

    def _on_done(self, fut: Any, partition: int, value: str, window: threading.Semaphore) -> None:
        window.release()
        exc = fut.exception()
        with self.lock:
            if exc is None:
                md = fut.result()
                self.acked.append((md.partition, md.offset, value, time.monotonic()))
            else:
                self.failed += 1
                name = type(exc).__name__
                self.errors[name] = self.errors.get(name, 0) + 1

    def _produce(self, index: int) -> None:
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
                value = f"p{index}-{seq}"
                partition = (seq + index) % self.partitions
                try:
                    fut = producer.send(self.topic, value, partition=partition)
                except Exception as exc:
                    window.release()
                    self.problems.append(f"producer {index}: send failed: {exc}")
                    break
                with self.lock:
                    self.sent += 1
                fut.add_done_callback(lambda f, p=partition, v=value: self._on_done(f, p, v, window))
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

    def _consume(self, index: int) -> None:
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
                        key = (r.partition, r.offset)
                        with self.lock:
                            self.reads.setdefault(key, set()).add(value)
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
        with self.lock:
            times = sorted(a[3] for a in self.acked)
        end = self.stopped_at or time.monotonic()
        points = [self.started_at] + [t for t in times if self.started_at <= t <= end] + [end]
        return int(max(b - a for a, b in zip(points, points[1:])) * 1000) if len(points) > 1 else 0
