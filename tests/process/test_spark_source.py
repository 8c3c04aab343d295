"""The minikafka Spark source in batch: what it reads is what a consumer reads below the HW.

Spark runs on local[2] with one SparkSession for the whole run (the ``spark`` fixture);
brokers are real processes (``cluster`` / ``make_cluster``).
"""
from __future__ import annotations

import itertools
import json
import logging
import time

import pytest

import pyarrow as pa  # noqa: E402  (the spark extra installs it)

from minikafka import Admin, Consumer, Producer, TopicPartition  # noqa: E402
from minikafka.errors import CorruptMessageError  # noqa: E402
from minikafka.protocol.records.batch import encode_batch, stamp  # noqa: E402
from minikafka.spark.arrow import arrow_schema, decode, spark_schema  # noqa: E402
from minikafka.spark.cluster import SourceClient  # noqa: E402
from minikafka.spark.offsets import DataLossError, OffsetRange  # noqa: E402
from minikafka.spark.options import BATCH, parse_options  # noqa: E402
from minikafka.spark.source import MiniKafkaBatchReader  # noqa: E402
from process_helpers import wait_for  # noqa: E402

KAFKA_SCHEMA = ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
                "timestamp:timestamp,timestampType:int>")
_names = itertools.count()


def new_topic(bootstrap: str, partitions: int = 3, rf: int = 3, assignment: dict | None = None,
              prefix: str = "spark", config: dict | None = None) -> str:
    name = f"{prefix}-{next(_names)}-{int(time.time() * 1000) % 100000}"
    with Admin(bootstrap) as admin:
        admin.create_topic(name, partitions, rf, config=config, assignment=assignment)
    return name


def produce(bootstrap: str, topic: str, records: list[dict], acks="all") -> list:
    with Producer(bootstrap, acks=acks, linger_ms=5) as p:
        futs = [p.send(topic, **r) for r in records]
        p.flush()
        return [f.result(timeout=60) for f in futs]


def consume_committed(bootstrap: str, topic: str) -> list[tuple]:
    """Every record below the HW, read by the plain consumer, as comparable tuples."""
    out = []
    with Consumer(bootstrap, auto_offset_reset="earliest") as c:
        tps = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic))]
        c.assign(tps)
        ends = c.end_offsets(tps)

        def done() -> bool:
            for r in c.poll(timeout_ms=300):
                out.append((r.topic, r.partition, r.offset, r.key, r.value, r.timestamp,
                            [(k, v) for k, v in r.headers]))
            return all(c.position(tp) >= ends[tp] for tp in tps)

        wait_for(done, timeout_s=60, message="the consumer reaching the high watermarks")
    return sorted(out)


def load(spark, bootstrap: str, **options):
    reader = spark.read.format("minikafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def spark_rows(df, headers: bool = True) -> list[tuple]:
    cols = ["topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS ts", "timestampType"]
    rows = df.selectExpr(*cols, *(["headers"] if headers else [])).collect()
    out = []
    for r in rows:
        assert r.timestampType == 0
        hs = [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers] if headers else []
        out.append((r.topic, r.partition, r.offset, None if r.key is None else bytes(r.key),
                    None if r.value is None else bytes(r.value), r.ts, hs))
    return sorted(out)


def offsets_of(df) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for r in df.select("partition", "offset").collect():
        out.setdefault(r.partition, []).append(r.offset)
    return {p: sorted(v) for p, v in sorted(out.items())}


# ----- decoding (no Spark session, no cluster) ------------------------------------------------
def _batches(n_batches: int, per: int, headers: bool = True, compression: str = "none") -> bytes:
    data = b""
    for b in range(n_batches):
        recs = [(None if i % 3 == 0 else b"k%d" % i, b"v%d-%d" % (b, i),
                 [("h", b"x"), ("n", None)] if headers and i % 2 else [], 1_700_000_000_000 + i)
                for i in range(per)]
        data += stamp(encode_batch(recs, compression=compression), b * per, 0)
    return data


@pytest.mark.parametrize("headers", [False, True])
def test_decode_gives_the_arrow_schema_spark_expects_and_honours_the_range(headers):
    schema = arrow_schema(spark_schema(headers))
    batch = decode(_batches(4, 5), 3, 17, "t", 2, schema, headers)
    assert isinstance(batch, pa.RecordBatch) and batch.schema.equals(schema)
    assert batch.column("offset").to_pylist() == list(range(3, 17))
    assert set(batch.column("topic").to_pylist()) == {"t"} and set(batch.column("partition").to_pylist()) == {2}
    first = batch.slice(0, 2).to_pylist()
    assert first[0]["key"] is None and first[0]["value"] == b"v0-3"
    assert first[1]["key"] == b"k4"
    assert set(batch.column("timestampType").to_pylist()) == {0}
    if headers:
        assert batch.column("headers").to_pylist()[0] == [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]
    assert decode(_batches(2, 5), 10, 20, "t", 0, schema, headers) is None


@pytest.mark.parametrize("headers", [False, True])
def test_same_shaped_records_cut_column_wise_decode_as_record_by_record(headers, monkeypatch):
    from minikafka.protocol.records import section as section_mod
    from minikafka.protocol.records.section import uniform_runs

    data = b""
    offset = 0
    base = 1_700_000_000_000
    shapes = [(100, None, lambda i: base + i % 3),  # timestamp deltas of 1 byte
              (70, 4, lambda i: base + (100 + i % 20 if i >= 64 else 0)),  # 2 bytes in the second run
              (9000, 0, lambda i: base),  # offset deltas of 1, 2 and 3 bytes
              (20, 6, lambda i: base - i % 5)]  # negative deltas
    for n, key_size, ts in shapes:
        recs = [(None if key_size is None else (b"%06d" % i)[6 - key_size:], b"%08d" % (offset + i) * 3, [], ts(i))
                for i in range(n)]
        batch = encode_batch(recs)
        assert uniform_runs(batch[61:], n) is not None
        data += stamp(batch, offset, 0)
        offset += n
    schema = arrow_schema(spark_schema(headers))
    fast = [decode(data, lo, hi, "t", 0, schema, headers) for lo, hi in [(0, offset), (50, 9150), (171, 172)]]
    monkeypatch.setattr(section_mod, "uniform_runs", lambda section, count: None)  # record by record
    slow = [decode(data, lo, hi, "t", 0, schema, headers) for lo, hi in [(0, offset), (50, 9150), (171, 172)]]
    for f, s in zip(fast, slow):
        assert f.equals(s)
    assert fast[0].num_rows == offset and fast[2].column("offset").to_pylist() == [171]
    assert fast[0].column("value").to_pylist()[9100] == b"%08d" % 9100 * 3


def test_decode_checks_the_crc():
    data = bytearray(_batches(1, 3))
    data[-2] ^= 0xFF
    with pytest.raises(CorruptMessageError, match="CRC"):
        decode(bytes(data), 0, 3, "t", 0, arrow_schema(spark_schema(False)))


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_decode_of_compressed_batches_equals_uncompressed(compression):
    schema = arrow_schema(spark_schema(True))
    plain = decode(_batches(4, 50), 7, 170, "t", 1, schema, True)
    packed = decode(_batches(4, 50, compression=compression), 7, 170, "t", 1, schema, True)
    assert packed.equals(plain)
    assert packed.num_rows == 163


def test_decode_skips_control_batches_and_matches_iter_records():
    from minikafka.protocol.records.batch import iter_records

    data = (_batches(1, 3) + stamp(encode_batch([(b"\0\0\0\0", b"\0" * 6, None, 5)], is_control=True,
                                                 is_transactional=True), 3, 0)
            + stamp(encode_batch([(b"k", b"last", [("a", b"1")], -5)]), 4, 0))
    batch = decode(data, 0, 10, "t", 0, arrow_schema(spark_schema(True)), True)
    rows = batch.to_pylist()
    expected = list(iter_records(data))
    assert [r["offset"] for r in rows] == [r.offset for r in expected] == [0, 1, 2, 4]
    assert [(r["key"], r["value"]) for r in rows] == [(r.key, r.value) for r in expected]
    assert [[(h["key"], h["value"]) for h in r["headers"]] for r in rows] == [r.headers for r in expected]
    assert batch.column("timestamp").cast(pa.int64()).to_pylist() == [r.timestamp * 1000 for r in expected]


def test_decode_refuses_records_that_do_not_match_the_header():
    import struct

    import crc32c

    good = bytearray(_batches(1, 3, compression="none"))
    struct.pack_into(">i", good, 23, 3)  # lastOffsetDelta 3 ...
    struct.pack_into(">i", good, 57, 4)  # ... recordsCount 4, but 3 records follow
    struct.pack_into(">I", good, 17, crc32c.crc32c(bytes(good[21:])))
    with pytest.raises(CorruptMessageError, match="records section ends inside record 3"):
        decode(bytes(good), 0, 4, "t", 0, arrow_schema(spark_schema(False)))


# ----- batch reads on the session cluster ------------------------------------------------

@pytest.mark.process
def test_batch_read_equals_the_consumer_below_the_hw(spark, cluster):
    topic = new_topic(cluster.bootstrap)
    records = [{"value": b"value-%d" % i, "key": None if i % 5 == 0 else b"key-%d" % (i % 7),
                "headers": [("n", str(i).encode()), ("empty", None)] if i % 3 == 0 else None}
               for i in range(600)]
    produce(cluster.bootstrap, topic, records)
    df = load(spark, cluster.bootstrap, subscribe=topic, includeHeaders="true")
    assert df.schema.simpleString() == KAFKA_SCHEMA[:-1] + ",headers:array<struct<key:string,value:binary>>>"
    assert load(spark, cluster.bootstrap, subscribe=topic).schema.simpleString() == KAFKA_SCHEMA
    assert df.rdd.getNumPartitions() == 3  # one Spark partition per topic-partition
    expected = consume_committed(cluster.bootstrap, topic)
    assert len(expected) == 600
    assert spark_rows(df) == expected
    assert df.count() == 600


@pytest.mark.process
def test_read_committed_reads_below_the_lso_without_aborted_records(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=1, prefix="txn")
    with Producer(cluster.bootstrap, transactional_id=f"spark-{topic}") as p:
        p.init_transactions()
        p.begin_transaction()
        for i in range(5):
            p.send(topic, f"c{i}")
        p.commit_transaction()
        p.begin_transaction()
        for i in range(3):
            p.send(topic, f"a{i}")
        p.flush()
        p.abort_transaction()
        p.begin_transaction()
        p.send(topic, "open").result(30)  # stays open while Spark reads
        committed = load(spark, cluster.bootstrap, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
        assert [bytes(r.value).decode() for r in committed.select("value").collect()] == [f"c{i}" for i in range(5)]
        everything = load(spark, cluster.bootstrap, subscribe=topic)  # read_uncommitted, up to the HW
        assert [bytes(r.value).decode() for r in everything.select("value").collect()] == \
            [f"c{i}" for i in range(5)] + [f"a{i}" for i in range(3)] + ["open"]
        p.abort_transaction()


@pytest.mark.process
def test_offset_options_assign_pattern_and_min_partitions(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=2, prefix="offsets")
    produce(cluster.bootstrap, topic, [{"value": b"%d" % i, "partition": i % 2} for i in range(200)])
    df = load(spark, cluster.bootstrap, subscribe=topic,
              startingOffsets=json.dumps({topic: {"0": 10, "1": -2}}),
              endingOffsets=json.dumps({topic: {"0": 50, "1": -1}}))
    assert offsets_of(df) == {0: list(range(10, 50)), 1: list(range(100))}

    many = load(spark, cluster.bootstrap, subscribe=topic, minPartitions="7")
    assert many.rdd.getNumPartitions() >= 7
    assert offsets_of(many) == {0: list(range(100)), 1: list(range(100))}

    assert offsets_of(load(spark, cluster.bootstrap, assign=json.dumps({topic: [1]}))) == {1: list(range(100))}
    pattern = load(spark, cluster.bootstrap, subscribePattern=topic.replace("offsets", "offs.ts"))
    assert pattern.count() == 200
    # An ending offset above the high watermark reads only what is committed.
    above = load(spark, cluster.bootstrap, subscribe=topic, endingOffsets=json.dumps({topic: {"0": 10_000, "1": 5}}))
    assert offsets_of(above) == {0: list(range(100)), 1: list(range(5))}
    # A topic that does not exist has no partitions (as in Spark): an empty result.
    assert load(spark, cluster.bootstrap, subscribe=f"{topic}-missing").count() == 0


@pytest.mark.process
def test_option_errors_are_clear(spark, cluster):
    def error_of(**options) -> str:
        with pytest.raises(Exception) as info:
            load(spark, cluster.bootstrap, **options).count()
        return str(info.value)

    assert "unknown option 'startingoffset'" in error_of(subscribe="x", startingOffset="earliest")
    assert "One of the following options must be specified" in error_of()
    assert "Only one of the following options can be specified" in error_of(subscribe="x", subscribePattern="x.*")
    assert "starting offset can't be latest for batch queries" in error_of(subscribe="x", startingOffsets="latest")
    assert "option 'maxOffsetsPerTrigger' must be a positive integer" in error_of(subscribe="x", maxOffsetsPerTrigger="x")
    topic = new_topic(cluster.bootstrap, partitions=2, prefix="errors")
    text = error_of(subscribe=topic, startingOffsets=json.dumps({topic: {"0": 0}}))
    assert "you must specify all TopicPartitions" in text and f"{topic}-1" in text
    with pytest.raises(Exception, match="fixed schema"):
        (spark.read.format("minikafka").schema("value string").option("kafka.bootstrap.servers", cluster.bootstrap)
         .option("subscribe", topic).load().count())


# ----- committed only: a paused follower keeps the HW behind the LEO -------------------------------
@pytest.mark.process
def test_only_records_below_the_high_watermark_are_read(spark, make_cluster):
    # The paused follower stays in the ISR (lag 60 s, ZooKeeper session 30 s), so the HW stays put.
    handle = make_cluster(broker_configs={"replica.lag.time.max.ms": "60000", "zookeeper.session.timeout.ms": "30000"})
    topic = new_topic(handle.bootstrap, partitions=1, rf=2, assignment={0: [1, 2]}, prefix="hw")
    leader = handle.endpoint(1)
    produce(leader, topic, [{"value": b"committed-%d" % i} for i in range(20)])
    tp = TopicPartition(topic, 0)
    handle.kill(2, "STOP")
    try:
        acked = produce(leader, topic, [{"value": b"acks1-%d" % i} for i in range(30)], acks=1)
        leo = acked[-1].offset + 1
        with Consumer(leader) as c:
            hw = c.end_offsets([tp])[tp]
        assert (hw, leo) == (20, 50)
        df = load(spark, leader, subscribe=topic)
        assert offsets_of(df) == {0: list(range(hw))}
        assert {r.value for r in df.select("value").collect()} == {b"committed-%d" % i for i in range(20)}
        clamped = load(spark, leader, subscribe=topic, endingOffsets=json.dumps({topic: {"0": leo}}))
        assert offsets_of(clamped) == {0: list(range(hw))}
        with Consumer(leader) as c:
            assert c.end_offsets([tp])[tp] == hw, "the HW must not have moved during the reads"
    finally:
        handle.resume(2)

    def hw_now() -> int:
        with Consumer(leader) as c:
            return c.end_offsets([tp])[tp]
    wait_for(lambda: hw_now() == 50, timeout_s=30, message="the HW reaching the LEO after resume")
    assert offsets_of(load(spark, leader, subscribe=topic)) == {0: list(range(50))}


# ----- leader failover between planning and reading ---------------------------------------------
def _leader_of(bootstrap: str, topic: str, partition: int) -> int:
    with Admin(bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc.partitions[partition].leader


@pytest.mark.process
def test_leader_killed_between_planning_and_reading_loses_and_duplicates_nothing(spark, cluster):
    topic = new_topic(cluster.bootstrap, partitions=3, rf=3, prefix="failover")
    produce(cluster.bootstrap, topic, [{"value": b"v%d" % i, "key": b"k%d" % i} for i in range(900)])
    expected = consume_committed(cluster.bootstrap, topic)
    df = load(spark, cluster.bootstrap, subscribe=topic, includeHeaders="true")
    df.rdd  # plans the read: the offset ranges are fixed now
    produce(cluster.bootstrap, topic, [{"value": b"later-%d" % i} for i in range(30)])  # not in the plan
    victim = _leader_of(cluster.bootstrap, topic, 0)
    cluster.kill(victim, "KILL")
    try:
        # Read at once: the metadata still names the dead leader until its session expires.
        started = time.monotonic()
        assert spark_rows(df) == expected  # read on the new leader, same ranges
        assert _leader_of(cluster.bootstrap, topic, 0) != victim
        assert time.monotonic() - started > 1, "the read should have waited for the election"
    finally:
        cluster.start(victim)


@pytest.mark.process
def test_reader_retries_on_the_new_leader_when_the_old_one_dies(cluster):
    """The same, step by step without Spark: plan, kill the leader, then read each range."""
    topic = new_topic(cluster.bootstrap, partitions=1, rf=3, prefix="reader")
    produce(cluster.bootstrap, topic, [{"value": b"v%d" % i} for i in range(300)])
    opts = parse_options({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic,
                          "kafkaConsumer.pollTimeoutMs": "60000"}, BATCH)
    reader = MiniKafkaBatchReader(opts, spark_schema(False))
    parts = reader.partitions()
    assert [(p.topic, p.partition, p.start, p.end) for p in parts] == [(topic, 0, 0, 300)]
    victim = _leader_of(cluster.bootstrap, topic, 0)
    cluster.kill(victim, "KILL")
    try:
        batches = list(reader.read(parts[0]))
        offsets = [o for b in batches for o in b.column("offset").to_pylist()]
        assert offsets == list(range(300))
        assert _leader_of(cluster.bootstrap, topic, 0) != victim
    finally:
        cluster.start(victim)


# ----- data loss: an unclean election of a replica that lost its log ---------------------------
@pytest.mark.process
def test_offsets_truncated_away_are_data_loss(cluster, caplog):
    victim = 3
    topic = new_topic(cluster.bootstrap, partitions=1, rf=1, assignment={0: [victim]}, prefix="loss",
                      config={"unclean.leader.election.enable": "true"})
    produce(cluster.bootstrap, topic, [{"value": b"v%d" % i} for i in range(40)])
    cluster.kill(victim, "KILL")
    # Memory storage: it comes back with an empty log, out of the ISR, and is elected uncleanly.
    cluster.start(victim)
    with SourceClient(cluster.bootstrap, poll_timeout_ms=60000) as client:
        wait_for(lambda: client.latest([(topic, 0)]) == {(topic, 0): 0}, timeout_s=60,
                 message="the empty replica leading again")
        with pytest.raises(DataLossError) as info:
            list(client.read(OffsetRange(topic, 0, 10, 40), fail_on_data_loss=True))
        assert f"Partition {topic}-0's offset was changed from 40 to 0, some data may have been missed" in str(info.value)
        with caplog.at_level(logging.WARNING, logger="minikafka.spark"):
            assert list(client.read(OffsetRange(topic, 0, 10, 40), fail_on_data_loss=False)) == []
        assert f"Partition {topic}-0's offset was changed from 40 to 0" in caplog.text


# ----- the example job ------------------------------------------------------------------------------
@pytest.mark.process
@pytest.mark.parametrize("fmt", ["minikafka", "kafka"])
def test_example_job_writes_key_counts_and_records_per_minute(spark, cluster, tmp_path, capsys, fmt):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "spark_job.py"
    spec = importlib.util.spec_from_file_location("spark_job", path)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)

    topic = new_topic(cluster.bootstrap, partitions=2, prefix="job")
    base = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
    records = [{"value": b"x", "key": None if i % 10 == 9 else b"user-%d" % (i % 3),
                "timestamp_ms": base + (i % 2) * 60_000} for i in range(100)]
    produce(cluster.bootstrap, topic, records)
    counts_topic = new_topic(cluster.bootstrap, partitions=1, prefix="job-counts")
    bootstrap = cluster.kafka_bootstrap if fmt == "kafka" else cluster.bootstrap  # Spark's own: the Kafka listeners
    summary = job.run_job(spark, bootstrap, topic, tmp_path / "out", output_topic=counts_topic, fmt=fmt)
    assert summary["records"] == 100
    assert dict(summary["top_keys"]) == {"user-0": 30, "user-1": 30, "user-2": 30, None: 10}
    assert [n for _, n in summary["minutes"]] == [50, 50]
    keys = {r.key: r.records for r in spark.read.parquet(str(tmp_path / "out" / "key_counts")).collect()}
    assert keys == {"user-0": 30, "user-1": 30, "user-2": 30, None: 10}
    assert spark.read.parquet(str(tmp_path / "out" / "per_minute")).count() == 2
    assert f"topic {topic}: 100 committed records" in capsys.readouterr().out
    written = {(r[3].decode() if r[3] is not None else None): r[4] for r in consume_committed(cluster.bootstrap, counts_topic)}
    assert written == {"user-0": b"30", "user-1": b"30", "user-2": b"30", None: b"10"}


DOCS_SNIPPET = """
import sys
from pyspark.sql import SparkSession
import minikafka.spark

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \\
    .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
minikafka.spark.register(spark)                       # adds the "minikafka" format

df = (spark.read.format("minikafka")
      .option("kafka.bootstrap.servers", sys.argv[1])
      .option("subscribe", sys.argv[2])
      .load())
print("COUNT", df.count())
spark.stop()
"""


@pytest.mark.process
def test_the_docs_snippet_runs_with_a_python_that_is_not_on_the_path(cluster, tmp_path):
    """docs/spark.md's snippet with a session built before register(): the workers run
    this interpreter, not the ``python3`` of the PATH (here one that cannot run anything)."""
    import os
    import subprocess
    import sys

    topic = new_topic(cluster.bootstrap, partitions=2, rf=1, prefix="snippet")
    produce(cluster.bootstrap, topic, [{"value": b"v%d" % i} for i in range(10)])
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho 'No module named minikafka' >&2\nexit 1\n")
    (fake / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = f"{fake}{os.pathsep}{env.get('PATH', '')}"
    script = tmp_path / "snippet.py"
    script.write_text(DOCS_SNIPPET)
    out = subprocess.run([sys.executable, str(script), cluster.bootstrap, topic], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "COUNT 10" in out.stdout
