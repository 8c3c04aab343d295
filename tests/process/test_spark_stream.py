"""The minikafka Spark source in streaming: micro-batches of committed records, admission
control, restarts from a checkpoint, leader failover and data loss.

One SparkSession (local[2]) for the whole run; queries wait with processAllAvailable().
"""
from __future__ import annotations

import itertools
import json

import pytest

from minikafka import Consumer, TopicPartition
from process_helpers import wait_for
from test_spark_source import consume_committed, new_topic, produce, spark_rows

pytestmark = pytest.mark.process
_queries = itertools.count()


def stream(spark, bootstrap: str, **options):
    reader = spark.readStream.format("minikafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def to_memory(df, prefix: str = "sink"):
    name = f"{prefix}_{next(_queries)}"
    return df.writeStream.format("memory").queryName(name).start(), name


def batch_sizes(query) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def test_stream_picks_up_newly_committed_records_over_triggers(spark, cluster):
    topic = new_topic(cluster.bootstrap, prefix="stream")
    produce(cluster.bootstrap, topic, [{"value": b"first-%d" % i, "key": b"k%d" % (i % 4)} for i in range(90)])
    query, table = to_memory(stream(spark, cluster.bootstrap, subscribe=topic, startingOffsets="earliest",
                                    includeHeaders="true"))
    try:
        query.processAllAvailable()
        assert spark.table(table).count() == 90
        produce(cluster.bootstrap, topic, [{"value": b"second-%d" % i, "headers": [("h", b"x")]} for i in range(60)])
        query.processAllAvailable()
        assert spark_rows(spark.table(table)) == consume_committed(cluster.bootstrap, topic)
        assert len(batch_sizes(query)) >= 2 and sum(batch_sizes(query)) == 150
        progress = query.lastProgress["sources"][0]
        assert json.loads(progress["endOffset"]) == json.loads(progress["latestOffset"])
    finally:
        query.stop()


def test_starting_offsets_latest_skips_what_is_already_there(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=2, prefix="latest")
    produce(cluster.bootstrap, topic, [{"value": b"old-%d" % i} for i in range(20)])
    query, table = to_memory(stream(spark, cluster.bootstrap, subscribe=topic))  # default: latest
    try:
        query.processAllAvailable()
        produce(cluster.bootstrap, topic, [{"value": b"new-%d" % i} for i in range(10)])
        query.processAllAvailable()
        assert sorted(bytes(r.value) for r in spark.table(table).collect()) == sorted(b"new-%d" % i for i in range(10))
    finally:
        query.stop()


def test_max_offsets_per_trigger_caps_each_micro_batch(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=3, prefix="capped")
    produce(cluster.bootstrap, topic, [{"value": b"%d" % i, "partition": i % 3} for i in range(300)])
    query, table = to_memory(stream(spark, cluster.bootstrap, subscribe=topic, startingOffsets="earliest",
                                    maxOffsetsPerTrigger="60"))
    try:
        query.processAllAvailable()
        assert batch_sizes(query) == [60] * 5  # 20 per partition each time: the backlogs are equal
        ends = [json.loads(p["sources"][0]["endOffset"]) for p in query.recentProgress if p["numInputRows"]]
        assert ends[0] == {topic: {"0": 20, "1": 20, "2": 20}}
        assert spark.table(table).select("partition", "offset").distinct().count() == 300
    finally:
        query.stop()


def test_restart_from_checkpoint_continues_without_gaps_or_repeats(spark, cluster, tmp_path):
    topic = new_topic(cluster.bootstrap, partitions=3, prefix="restart")
    seen: list[tuple[int, int, int]] = []  # (batch id, partition, offset) as each micro-batch delivers them

    def collect(df, batch_id):
        seen.extend((batch_id, r.partition, r.offset) for r in df.select("partition", "offset").collect())

    def run(**options):
        df = stream(spark, cluster.bootstrap, subscribe=topic, maxOffsetsPerTrigger="40", **options)
        return df.writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path / "ckpt")).start()

    produce(cluster.bootstrap, topic, [{"value": b"a%d" % i} for i in range(100)])
    first = run(startingOffsets="earliest")
    try:
        first.processAllAvailable()
    finally:
        first.stop()
    first_batches = {b for b, _, _ in seen}
    assert len(first_batches) >= 3 and len(seen) == 100

    produce(cluster.bootstrap, topic, [{"value": b"b%d" % i} for i in range(80)])
    # startingOffsets only applies to a new query: the checkpoint wins.
    second = run(startingOffsets="latest")
    try:
        second.processAllAvailable()
    finally:
        second.stop()
    pairs = [(p, o) for _, p, o in seen]
    assert len(pairs) == len(set(pairs)) == 180, "no record twice"
    committed = consume_committed(cluster.bootstrap, topic)
    assert sorted(pairs) == sorted((r[1], r[2]) for r in committed), "no gap"
    assert min(b for b, _, _ in seen if b not in first_batches) > max(first_batches)

    # Trigger.AvailableNow from the same checkpoint: what is there now, then the query ends.
    produce(cluster.bootstrap, topic, [{"value": b"c%d" % i} for i in range(30)])
    df = stream(spark, cluster.bootstrap, subscribe=topic, maxOffsetsPerTrigger="20")
    third = (df.writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    assert third.awaitTermination(120)
    pairs = [(p, o) for _, p, o in seen]
    assert len(pairs) == len(set(pairs)) == 210


def _leader_of(bootstrap: str, topic: str, partition: int) -> int:
    from minikafka import Admin
    with Admin(bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc.partitions[partition].leader


def test_leader_killed_between_micro_batches_loses_and_duplicates_nothing(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=3, rf=3, prefix="stream-failover")
    produce(cluster.bootstrap, topic, [{"value": b"before-%d" % i} for i in range(150)])
    query, table = to_memory(stream(spark, cluster.bootstrap, subscribe=topic, startingOffsets="earliest"))
    victim = _leader_of(cluster.bootstrap, topic, 0)
    try:
        query.processAllAvailable()
        assert spark.table(table).count() == 150
        cluster.kill(victim, "KILL")
        query.processAllAvailable()  # the next trigger meets the dead leader and waits for a new one
        produce(cluster.bootstrap, topic, [{"value": b"after-%d" % i} for i in range(150)])
        query.processAllAvailable()
        assert spark_rows(spark.table(table), headers=False) == consume_committed(cluster.bootstrap, topic)
        assert _leader_of(cluster.bootstrap, topic, 0) != victim
    finally:
        query.stop()
        cluster.start(victim)


def test_truncated_offsets_fail_the_query_or_are_skipped(spark, cluster):
    victim = 3
    topic = new_topic(cluster.bootstrap, partitions=1, rf=1, assignment={0: [victim]}, prefix="stream-loss",
                      config={"unclean.leader.election.enable": "true"})
    produce(cluster.bootstrap, topic, [{"value": b"v%d" % i} for i in range(40)])
    strict, strict_table = to_memory(stream(spark, cluster.bootstrap, subscribe=topic, startingOffsets="earliest"))
    lenient, lenient_table = to_memory(stream(spark, cluster.bootstrap, subscribe=topic, startingOffsets="earliest",
                                              failOnDataLoss="false"))
    try:
        strict.processAllAvailable()
        lenient.processAllAvailable()
        cluster.kill(victim, "KILL")
        cluster.start(victim)  # memory storage: back with an empty log, elected uncleanly

        tp = TopicPartition(topic, 0)

        def hw() -> int | None:
            try:
                with Consumer(cluster.bootstrap, request_timeout_ms=5000) as c:
                    return c.end_offsets([tp])[tp]
            except Exception:
                return None
        wait_for(lambda: hw() == 0, timeout_s=60, message="the empty replica leading")
        produce(cluster.bootstrap, topic, [{"value": b"new-%d" % i} for i in range(5)])  # offsets 0-4 again

        # The queries notice when their next trigger sees the new log end (0 or 5 by then).
        with pytest.raises(Exception, match=rf"Partition {topic}-0's offset was changed from 40 to [05], "
                                            "some data may have been missed"):
            strict.processAllAvailable()
        lenient.processAllAvailable()  # logs a warning and goes on from the new end
        produce(cluster.bootstrap, topic, [{"value": b"later-%d" % i} for i in range(3)])
        lenient.processAllAvailable()
        got = [(r.offset, bytes(r.value)) for r in spark.table(lenient_table).collect()]
        assert len(got) == len(set(got))
        old = [(i, b"v%d" % i) for i in range(40)]
        later = [(5 + i, b"later-%d" % i) for i in range(3)]
        assert set(old) | set(later) <= set(got)
        # Whether new-0..4 were read depends on whether the truncation was seen before they came.
        assert set(got) - set(old) - set(later) <= {(i, b"new-%d" % i) for i in range(5)}
    finally:
        strict.stop()
        lenient.stop()


def test_stream_option_errors_are_clear(spark, cluster):
    with pytest.raises(Exception, match="unknown option 'maxoffsetspertriger'"):
        stream(spark, cluster.bootstrap, subscribe="x", maxOffsetsPerTriger="10")
    query, _ = to_memory(stream(spark, cluster.bootstrap, subscribe="x", endingOffsets="latest"))
    try:
        with pytest.raises(Exception, match="ending offset not valid in streaming queries"):
            query.processAllAvailable()
    finally:
        query.stop()
