"""acks=all latency of librdkafka (confluent-kafka) through the Kafka listener, in a process of its own.

    python -m minikafka.bench.rdkafka_latency --bootstrap HOST:PORT --topic T --rate 1000 --seconds 10

A Producer (``acks=all``, ``linger.ms=0`` unless ``--linger-ms``, not idempotent unless
``--idempotent``, librdkafka's other defaults) sends ``rate``
records/s for ``seconds``; each record's time from ``produce()`` to its delivery report
is its acknowledgement latency.  A Consumer in the same process (assigned at the end
offsets, ``fetch.wait.max.ms`` 500 as librdkafka's default) notes when each record
arrives: the end-to-end latency of a committed record.  Each value carries its send
time.  One JSON line goes to stdout: p50, p99 and p99.9 of both, in ms.
"""
from __future__ import annotations

import argparse
import json
import struct
import threading
import time

from .pacing import paced


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


def measure(bootstrap: str, topic: str, rate: int, seconds: float, value_size: int, linger_ms: int = 0,
            idempotent: bool = False) -> dict:
    """Run the producer and the consumer; the figures as a dict."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    total = int(rate * seconds)
    pad = b"x" * max(0, value_size - 8)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{time.time_ns()}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 500})
    parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    tps = []
    for p in sorted(parts):
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        tps.append(TopicPartition(topic, p, high))
    consumer.assign(tps)
    arrived: list[float] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set() and len(arrived) < total:
            msg = consumer.poll(0.1)
            if msg is not None and not msg.error():
                arrived.append(time.perf_counter() - struct.unpack(">d", msg.value()[:8])[0])

    reader = threading.Thread(target=read, name="latency-reader")
    reader.start()
    acked: list[float] = []
    failed = [0]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": linger_ms,
                         "enable.idempotence": idempotent})

    def report(err, msg) -> None:  # noqa: ANN001 (librdkafka's callback)
        if err is not None:
            failed[0] += 1
            return
        acked.append(time.perf_counter() - struct.unpack(">d", msg.value()[:8])[0])

    # Delivery reports run in a thread of their own, as soon as they come; the sending
    # loop sleeps between records (poll() rounds its timeout down to whole ms, and a
    # loop of poll(0.0005) would spin a core).
    sending = threading.Event()

    def deliver() -> None:
        while sending.is_set() or len(producer):
            producer.poll(0.05)

    sending.set()
    reporter = threading.Thread(target=deliver, name="latency-delivery")
    reporter.start()
    try:
        for _ in paced(rate, total):
            producer.produce(topic, struct.pack(">d", time.perf_counter()) + pad, on_delivery=report)
        sending.clear()
        reporter.join(60)
        producer.flush(60)
        deadline = time.monotonic() + 30
        while len(arrived) < total and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        reader.join(10)
        consumer.close()
    acked.sort()
    arrived.sort()
    return {"p50_ms": _pct(acked, 0.5), "p99_ms": _pct(acked, 0.99), "p999_ms": _pct(acked, 0.999),
            "e2e_p50_ms": _pct(arrived, 0.5), "e2e_p99_ms": _pct(arrived, 0.99), "e2e_p999_ms": _pct(arrived, 0.999),
            "records": len(acked), "consumed": len(arrived), "failed": failed[0]}


def main() -> None:
    """The command line: the figures as one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--linger-ms", type=int, default=0)
    ap.add_argument("--idempotent", action="store_true",
                    help="enable.idempotence (at most 5 requests in flight per broker, as Kafka's Java producer)")
    a = ap.parse_args()
    print(json.dumps(measure(a.bootstrap, a.topic, a.rate, a.seconds, a.value_size, a.linger_ms, a.idempotent)))


if __name__ == "__main__":
    main()
