"""Reads by time: Spark's timestamp options pick the offsets a Consumer's
offsets_for_times gives (Kafka's ListOffsets by time, below the high watermark)."""
from __future__ import annotations

import pytest

from minikafka import Consumer, TopicPartition
from test_spark_source import load, new_topic, produce

pytestmark = pytest.mark.process

T0 = 1_700_000_000_000


def test_timestamp_options_select_the_offsets_of_offsets_for_times(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=2)
    # partition 0: timestamps T0 + 0, 10, 20, ...; partition 1: T0 + 5, 15, ... (interleaved)
    produce(cluster.bootstrap, topic, [{"value": f"p{i % 2}-{i}".encode(), "partition": i % 2,
                                        "timestamp_ms": T0 + 5 * i} for i in range(200)])
    start_ts, end_ts = T0 + 203, T0 + 707
    with Consumer(cluster.bootstrap) as c:
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        starts = c.offsets_for_times({tp: start_ts for tp in tps})
        ends = c.offsets_for_times({tp: end_ts for tp in tps})
        assert c.offsets_for_times({tps[0]: T0 + 10_000}) == {tps[0]: None}  # no record that late
    assert starts[tps[0]].offset == 21 and starts[tps[0]].timestamp == T0 + 210

    def offsets(df) -> dict[int, tuple[int, int]]:
        rows = df.groupBy("partition").agg({"offset": "min"}).join(
            df.groupBy("partition").agg({"offset": "max"}), "partition").collect()
        return {r["partition"]: (r["min(offset)"], r["max(offset)"]) for r in rows}

    df = load(spark, cluster.bootstrap, subscribe=topic, startingTimestamp=str(start_ts), endingTimestamp=str(end_ts))
    assert offsets(df) == {tp.partition: (starts[tp].offset, ends[tp].offset - 1) for tp in tps}

    by_partition = load(spark, cluster.bootstrap, subscribe=topic,
                        startingOffsetsByTimestamp=f'{{"{topic}":{{"0":{start_ts},"1":{T0}}}}}')
    assert offsets(by_partition) == {0: (starts[tps[0]].offset, 99), 1: (0, 99)}

    # a starting timestamp after every record: an error, or the latest offset (empty read)
    late = str(T0 + 10_000)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        load(spark, cluster.bootstrap, subscribe=topic, startingTimestamp=late).count()
    assert load(spark, cluster.bootstrap, subscribe=topic, startingTimestamp=late,
                startingOffsetsByTimestampStrategy="latest").count() == 0
    # an ending timestamp after every record reads to the end
    assert load(spark, cluster.bootstrap, subscribe=topic, endingTimestamp=late).count() == 200
    # maxRecordsPerPartition: at most 30 records per Spark partition
    capped = load(spark, cluster.bootstrap, subscribe=topic, maxRecordsPerPartition="30")
    assert capped.rdd.getNumPartitions() == 8 and capped.count() == 200
