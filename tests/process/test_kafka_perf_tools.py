"""Kafka's own performance tools, unchanged, through the Kafka listener of a 3-broker cluster:
ProducerPerformance, ConsumerPerformance and EndToEndLatency (org.apache.kafka.tools, the
classes behind kafka-producer-perf-test.sh, kafka-consumer-perf-test.sh and
kafka-e2e-latency.sh), of both client generations (4.4.0 and 3.9.2). They run as ``minikafka bench suite`` runs them (minikafka/bench/
scenarios.py); the test asserts that they finish, that the records arrived, and that the
figures they print are plausible. Speed is never asserted."""
from __future__ import annotations

import math
import uuid

import pytest

from minikafka.bench import scenarios as sc

pytestmark = pytest.mark.process


@pytest.mark.parametrize("generation", ["4", "3.9"])
def test_producer_consumer_and_end_to_end_performance_tools(cluster, kafka_jars, generation, monkeypatch):
    monkeypatch.setenv(sc.JARS_ENV, str(kafka_jars(generation)))
    target = sc.Target(cluster.bootstrap, cluster.kafka_bootstrap)
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    sc.create_topic(target, topic, 3, 3, 2)

    produced = sc.producer_performance(target, topic, 10_000, 100, "all")
    assert produced is not None and produced["records"] == 10_000
    assert produced["records_per_s"] > 0 and produced["mb_per_s"] >= 0
    assert 0 <= produced["p50_ms"] <= produced["p95_ms"] <= produced["p99_ms"] <= produced["p999_ms"] \
        <= produced["max_ms"] + 1
    assert sum(sc.end_offsets(target, topic).values()) == 10_000

    consumed = sc.consumer_performance(target, topic)
    assert consumed is not None and consumed["records"] == 10_000, "ConsumerPerformance read every record"
    assert consumed["records_per_s"] > 0 and consumed["with_join_records_per_s"] > 0 and consumed["join_ms"] >= 0

    e2e_topic = f"e2e-{uuid.uuid4().hex[:8]}"
    sc.create_topic(target, e2e_topic, 1, 3, 2)
    latency = sc.end_to_end_latency(target, e2e_topic, 200, 100)
    assert latency is not None
    assert math.isfinite(latency["avg_ms"]) and latency["avg_ms"] > 0
    assert 0 <= latency["p50_ms"] <= latency["p99_ms"] <= latency["p999_ms"]
    assert sum(sc.end_offsets(target, e2e_topic).values()) == 200, "one record per round trip, each acknowledged"


def test_the_tools_output_is_parsed():
    """The closing lines of the three tools as Kafka 3.9 and 4.x print them."""
    pp = sc.parse_producer_performance(
        "5000 records sent, 2497.5 records/sec (0.24 MB/sec), 3.1 ms avg latency, 200.0 ms max latency.\n"
        "20000 records sent, 8576.329331 records/sec (0.82 MB/sec), 298.53 ms avg latency, 1901.00 ms max latency, "
        "294 ms 50th, 364 ms 95th, 386 ms 99th, 390 ms 99.9th.\n")
    assert pp["records"] == 20000 and pp["records_per_s"] == 8576.329331 and pp["p999_ms"] == 390
    cp = sc.parse_consumer_performance(
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
        "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
        "2026-11-25 23:52:54:677, 2026-11-25 23:52:56:510, 1.9073, 1.0406, 20000, 10911.0747, 1561, 272, 7.0123, "
        "73529.4118\n")
    assert cp == {"records": 20000, "records_per_s": 73529.4118, "mb_per_s": 7.0123,
                  "with_join_records_per_s": 10911.0747, "join_ms": 1561.0, "fetch_ms": 272.0}
    e2e = sc.parse_end_to_end_latency("0\t148.365094\nAvg latency: 6.9307 ms\nPercentiles: 50th = 5, 99th = 38, "
                                      "99.9th = 148\n")
    assert e2e == {"avg_ms": 6.9307, "p50_ms": 5.0, "p99_ms": 38.0, "p999_ms": 148.0}
    with pytest.raises(Exception, match="no summary"):
        sc.parse_producer_performance("nothing")
