"""The produce scenario with a pure-Python peer client, in a process of its own.

    python -m minikafka.bench.peer_produce --client kafka-python --bootstrap HOST:PORT --topic T --records N --value V

kafka-python's ``KafkaProducer`` or aiokafka's ``AIOKafkaProducer`` through the Kafka
listener: ``acks=all``, ``linger_ms`` 5 (our Producer's default), the library's other
defaults (16 KiB batches; idempotence on in kafka-python, off in aiokafka).  The topic's
metadata is fetched before the clock starts (as our Producer has it from its start);
then ``send`` per record and ``flush``, timed.  Every record's future is checked.  One JSON line goes to stdout:
records/s and MB/s, or ``{"missing": name}`` when the library is not installed.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import time

CLIENTS = {"kafka-python": "kafka", "aiokafka": "aiokafka"}
LINGER_MS = 5


def kafka_python(bootstrap: str, topic: str, records: int, value: bytes) -> tuple[float, int]:
    """kafka-python: elapsed seconds and the number of records that failed."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all", linger_ms=LINGER_MS)
    try:
        producer.partitions_for(topic)
        send = producer.send
        start = time.perf_counter()
        futures = [send(topic, value) for _ in range(records)]
        producer.flush()
        elapsed = time.perf_counter() - start
        return elapsed, sum(1 for f in futures if not f.succeeded())
    finally:
        producer.close()


async def _aiokafka(bootstrap: str, topic: str, records: int, value: bytes) -> tuple[float, int]:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=LINGER_MS)
    await producer.start()
    try:
        await producer.partitions_for(topic)
        send = producer.send
        start = time.perf_counter()
        futures = [await send(topic, value) for _ in range(records)]
        await producer.flush()
        elapsed = time.perf_counter() - start
        return elapsed, sum(1 for f in futures if not f.done() or f.exception() is not None)
    finally:
        await producer.stop()


def measure(client: str, bootstrap: str, topic: str, records: int, value: bytes) -> dict:
    """Run one client sending ``records`` copies of ``value``; its figures as a dict."""
    if importlib.util.find_spec(CLIENTS[client]) is None:
        return {"missing": client}
    if client == "kafka-python":
        elapsed, failed = kafka_python(bootstrap, topic, records, value)
    else:
        elapsed, failed = asyncio.run(_aiokafka(bootstrap, topic, records, value))
    return {"records_per_s": records / elapsed, "mb_per_s": records * len(value) / 1e6 / elapsed,
            "records": records, "failed": failed}


def main() -> None:
    """The command line: the figures as one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", required=True, choices=sorted(CLIENTS))
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--value", required=True, help="the value every record carries (text, sent as UTF-8)")
    a = ap.parse_args()
    print(json.dumps(measure(a.client, a.bootstrap, a.topic, a.records, a.value.encode())))


if __name__ == "__main__":
    main()
