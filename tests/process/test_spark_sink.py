"""The minikafka Spark sink: df.write and df.writeStream with Spark's Kafka sink contract,
on real brokers and the session's SparkSession (local[2])."""
from __future__ import annotations

import uuid
from collections import Counter

import pytest

from minikafka import Admin
from minikafka.spark.options import OptionError
from minikafka.spark.sink import parse_sink_options
from process_helpers import wait_for
from test_spark_source import consume_committed, new_topic, produce

pytestmark = pytest.mark.process


def test_batch_write_of_10000_rows_reads_back_the_same(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=3)
    rows = [(f"k{i % 50}", f"value-{i}", i % 3, [("n", str(i).encode())]) for i in range(10_000)]
    df = spark.createDataFrame(rows, "key string, value string, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    (df.write.format("minikafka").option("kafka.bootstrap.servers", cluster.bootstrap)
       .option("topic", topic).mode("append").save())
    got = consume_committed(cluster.bootstrap, topic)
    assert len(got) == 10_000
    by_value = {r[4].decode(): r for r in got}
    for i in (0, 1, 4999, 9999):
        t, partition, _, key, value, _, headers = by_value[f"value-{i}"]
        assert (t, partition, key, headers) == (topic, i % 3, f"k{i % 50}".encode(), [("n", str(i).encode())])
    # ... and the Spark source reads the same rows
    back = (spark.read.format("minikafka").option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("subscribe", topic).load())
    assert back.count() == 10_000
    assert sorted(r.value.decode() for r in back.select("value").collect()) == sorted(f"value-{i}" for i in range(10_000))


def test_topic_column_routes_rows_and_the_topic_option_wins(spark, cluster):
    a, b = new_topic(cluster.bootstrap, partitions=1), new_topic(cluster.bootstrap, partitions=1)
    df = spark.createDataFrame([(a, b"1"), (b, b"2"), (a, b"3")], "topic string, value binary")
    df.write.format("minikafka").option("kafka.bootstrap.servers", cluster.bootstrap).mode("append").save()
    # (two Spark tasks write in parallel: the order across them is not fixed)
    assert sorted(r[4] for r in consume_committed(cluster.bootstrap, a)) == [b"1", b"3"]
    assert [r[4] for r in consume_committed(cluster.bootstrap, b)] == [b"2"]
    # the option wins over the column, as in Spark
    df.write.format("minikafka").option("kafka.bootstrap.servers", cluster.bootstrap) \
        .option("topic", b).mode("append").save()
    assert sorted(r[4] for r in consume_committed(cluster.bootstrap, b)) == [b"1", b"2", b"2", b"3"]


@pytest.mark.parametrize("ddl, options, message", [
    ("key string", {"topic": "t"}, "Required attribute 'value' not found"),
    ("value int", {"topic": "t"}, "value attribute type must be a StringType or BinaryType"),
    ("value string, key int", {"topic": "t"}, "key attribute type must be a StringType or BinaryType"),
    ("value string, partition string", {"topic": "t"}, "partition attribute type must be an IntegerType"),
    ("value string", {}, "topic option required when no 'topic' attribute is present"),
    ("value string", {"topic": "t", "kafka.linger.ms": "soon"}, "kafka.linger.ms' must be a whole number"),
    ("value string", {"topic": "t", "kafka.client.rack": "r1"}, "not supported by the minikafka sink"),
    ("value string", {"topic": "t", "kafka.sasl.mechanism": "GSSAPI"}, "PLAIN only"),
])
def test_write_errors_are_worded_like_sparks(spark, cluster, ddl, options, message):
    df = spark.createDataFrame([], ddl)
    w = df.write.format("minikafka").option("kafka.bootstrap.servers", cluster.bootstrap).mode("append")
    for k, v in options.items():
        w = w.option(k, v)
    with pytest.raises(Exception, match=message):
        w.save()


def test_sink_options_are_parsed_with_producer_meaning():
    opts = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", "kafka.acks": "1",
                               "kafka.enable.idempotence": "false", "kafka.linger.ms": "20"})
    assert opts.producer == {"acks": "1", "enable_idempotence": False, "linger_ms": 20}
    with pytest.raises(OptionError, match="kafka.bootstrap.servers' must be specified"):
        parse_sink_options({"topic": "t"})


def test_a_failed_write_fails_the_job_with_the_brokers_error(spark, cluster):
    # A missing topic with a valid name is created (auto.create.topics.enable, as with
    # Spark's Kafka sink on a Kafka broker); an invalid name cannot be, and the write fails
    # at once with the broker's answer (no wait for max.block.ms).
    df = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="INVALID_TOPIC_EXCEPTION"):
        (df.write.format("minikafka").option("kafka.bootstrap.servers", cluster.bootstrap)
           .option("topic", "no such topic!").option("kafka.max.block.ms", "3000")
           .mode("append").save())
    created = f"sink-auto-{uuid.uuid4().hex[:8]}"
    (df.write.format("minikafka").option("kafka.bootstrap.servers", cluster.bootstrap)
       .option("topic", created).mode("append").save())
    with Admin(cluster.bootstrap) as admin:
        assert created in admin.list_topics()


def test_stream_from_source_to_sink_through_a_leader_kill(spark, make_cluster, tmp_path):
    """readStream minikafka -> writeStream minikafka: every source record reaches the
    sink topic (at-least-once) and, with the idempotent default, none twice."""
    c = make_cluster(brokers=3)
    src = new_topic(c.bootstrap, partitions=2)
    dst = new_topic(c.bootstrap, partitions=2, config={"min.insync.replicas": "2"})
    produce(c.bootstrap, src, [{"value": f"r{i}".encode(), "partition": i % 2} for i in range(2000)])
    query = (spark.readStream.format("minikafka").option("kafka.bootstrap.servers", c.bootstrap)
             .option("subscribe", src).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "400")
             .load().selectExpr("value", "partition")
             .writeStream.format("minikafka").option("kafka.bootstrap.servers", c.bootstrap)
             .option("topic", dst).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        def progressed() -> bool:
            if query.exception() is not None:
                raise AssertionError(f"the query failed: {query.exception()}")
            return query.lastProgress is not None

        wait_for(progressed, 120, message="a first micro-batch")
        with Admin(c.bootstrap) as admin:
            (d,) = admin.describe_topics([dst])
        c.kill(d.partitions[0].leader)
        produce(c.bootstrap, src, [{"value": f"r{i}".encode(), "partition": i % 2} for i in range(2000, 3000)])

        def delivered() -> bool:
            return len(consume_committed(c.bootstrap, dst)) >= 3000

        wait_for(delivered, 180, interval_s=2, message="every source record in the sink topic")
    finally:
        query.stop()
    counts = Counter(r[4] for r in consume_committed(c.bootstrap, dst))
    assert set(counts) == {f"r{i}".encode() for i in range(3000)}
    # duplicates could only come from a replayed micro-batch; a producer retry never makes one
    assert sum(counts.values()) - len(counts) <= 400, "more repeats than one replayed micro-batch"
