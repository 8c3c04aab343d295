"""Spark's own Kafka source and sink, ``format("kafka")`` (spark-sql-kafka-0-10 and Kafka's
Java client inside it), against the brokers' Kafka listeners.

The session's SparkSession has the connector from ``spark.jars.packages`` (conftest.py);
records are produced and read back with minikafka's own client through the brokers'
msgpack listeners, so each side is checked by the other.
"""
from __future__ import annotations

import itertools
import json

import pytest

from minikafka import Admin
from process_helpers import wait_for
from test_spark_source import consume_committed, new_topic, produce

pytestmark = pytest.mark.process
_queries = itertools.count()

# Kafka's Java client: short timeouts and backoffs, so that a dead broker is noticed quickly
FAST_CLIENT = {
    "kafka.request.timeout.ms": "10000",
    "kafka.default.api.timeout.ms": "20000",
    "kafka.reconnect.backoff.max.ms": "1000",
    "kafka.retry.backoff.ms": "100",
    "kafka.metadata.max.age.ms": "2000",
}


def kafka_read(spark, cluster, **options):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", cluster.kafka_bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def rows(df) -> list[tuple]:
    """(topic, partition, offset, key, value, timestamp ms, headers) sorted, as consume_committed gives."""
    out = []
    for r in df.selectExpr("topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS ts",
                           "timestampType", "headers").collect():
        assert r.timestampType == 0  # CreateTime
        hs = [(h.key, None if h.value is None else bytes(h.value)) for h in (r.headers or [])]
        out.append((r.topic, r.partition, r.offset, None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value), r.ts, hs))
    return sorted(out)


def test_batch_read_returns_what_was_produced(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=3)
    produce(cluster.bootstrap, topic, [
        {"value": b"v%d" % i, "key": None if i % 5 == 0 else b"k%d" % (i % 7), "partition": i % 3,
         "headers": [("n", b"%d" % i)] if i % 2 else []}
        for i in range(300)])
    expected = consume_committed(cluster.bootstrap, topic)
    assert len(expected) == 300
    df = kafka_read(spark, cluster, subscribe=topic, startingOffsets="earliest", endingOffsets="latest",
                    includeHeaders="true")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    assert rows(df) == expected

    # an offset range per assigned partition: [10, 60) of partition 0, [0, 5) of partition 2
    ranged = kafka_read(spark, cluster, assign=json.dumps({topic: [0, 2]}),
                        startingOffsets=json.dumps({topic: {"0": 10, "2": -2}}),
                        endingOffsets=json.dumps({topic: {"0": 60, "2": 5}}), includeHeaders="true")
    assert rows(ranged) == [r for r in expected if (r[1] == 0 and 10 <= r[2] < 60) or (r[1] == 2 and r[2] < 5)]

    # subscribePattern names the same records
    assert kafka_read(spark, cluster, subscribePattern=topic.replace("-", ".") + "$").count() == 300


def _leaders(cluster, topic: str) -> dict[int, int]:
    with Admin(cluster.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return {p.partition: p.leader for p in desc.partitions}


def test_stream_through_a_broker_kill_and_a_restart_from_the_checkpoint(spark, cluster, tmp_path):
    """Kafka source -> file sink with a checkpoint: Spark promises exactly-once output (the
    source replays offset ranges, the file sink commits each batch once in _spark_metadata)."""
    topic = new_topic(cluster.bootstrap, partitions=3, config={"min.insync.replicas": "2"}, prefix="kstream")
    out, ckpt = tmp_path / "out", tmp_path / "checkpoint"

    def start():
        df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", cluster.kafka_bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").options(**FAST_CLIENT).load())
        return (df.selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
                .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
                .start())

    def batch(tag: str, n: int) -> list[str]:
        values = [f"{tag}-{i}" for i in range(n)]
        produce(cluster.bootstrap, topic, [{"value": v.encode(), "partition": i % 3} for i, v in enumerate(values)])
        return values

    produced = batch("before", 150)
    victim = _leaders(cluster, topic)[0]
    query = start()
    try:
        query.processAllAvailable()
        cluster.kill(victim, "KILL")
        wait_for(lambda: victim not in _leaders(cluster, topic).values() and -1 not in _leaders(cluster, topic).values(),
                 30, message="new leaders for every partition of the killed broker")
        produced += batch("during", 150)  # acks=all: the 2 live replicas
        query.processAllAvailable()  # the Java consumer finds the new leaders
    finally:
        query.stop()
    try:
        produced += batch("stopped", 90)  # while no query runs: the checkpoint says where to go on
        query = start()  # the same checkpoint, the broker still dead
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    finally:
        cluster.start(victim)
    produced += batch("restarted", 60)
    query = start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    written = spark.read.parquet(str(out)).collect()  # through the sink's _spark_metadata: committed batches only
    assert sorted(r.value for r in written) == sorted(produced), "every record exactly once"
    assert len({(r.partition, r.offset) for r in written}) == len(produced) == 450
    assert sorted((r[1], r[2]) for r in consume_committed(cluster.bootstrap, topic)) == \
        sorted((r.partition, r.offset) for r in written)


def test_batch_write_reads_back_with_the_consumer(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=3)
    data = [(f"k{i % 9}", f"value-{i}", i % 3, [("n", str(i).encode())]) for i in range(600)]
    df = spark.createDataFrame(data, "key string, value string, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    (df.write.format("kafka").option("kafka.bootstrap.servers", cluster.kafka_bootstrap)
       .option("topic", topic).option("kafka.acks", "all").mode("append").save())
    got = consume_committed(cluster.bootstrap, topic)
    assert sorted((r[4].decode(), r[1], r[3].decode(), r[6]) for r in got) == \
        sorted((v, p, k, [("n", h[0][1])]) for k, v, p, h in data)
    for p in range(3):  # offsets 0..199 in each partition, none twice
        assert sorted(r[2] for r in got if r[1] == p) == list(range(200))


def test_write_stream_from_one_topic_into_another(spark, cluster, tmp_path):
    source, sink = new_topic(cluster.bootstrap, partitions=2), new_topic(cluster.bootstrap, partitions=3)
    produce(cluster.bootstrap, source, [{"key": b"k%d" % i, "value": b"v%d" % i} for i in range(200)])
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", cluster.kafka_bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest").load())
    query = (df.selectExpr("key", "upper(CAST(value AS STRING)) AS value")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", cluster.kafka_bootstrap)
             .option("topic", sink).option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
        produce(cluster.bootstrap, source, [{"key": b"k%d" % i, "value": b"v%d" % i} for i in range(200, 300)])
        query.processAllAvailable()
    finally:
        query.stop()
    got = consume_committed(cluster.bootstrap, sink)
    # the Kafka sink is at least once; with no failure here each record is written once
    assert sorted((r[3], r[4]) for r in got) == sorted((b"k%d" % i, b"V%d" % i) for i in range(300))
    # the default partitioner: one key, one partition
    assert all(len({r[1] for r in got if r[3] == k}) == 1 for k in {r[3] for r in got})
