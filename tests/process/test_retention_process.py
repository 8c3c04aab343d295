"""Retention and DeleteRecords on a real 3-broker cluster (disk storage): a busy topic stays
bounded with the same log start on every replica, old records expire by time, consumers
behind the log start reset, DeleteRecords from our CLI and from confluent-kafka, and the
log start survives a broker restart."""
from __future__ import annotations

import json
import os
import time

import pytest

from minikafka import errors
from minikafka.client.sync import Admin, Consumer, Producer
from minikafka.client.types import TopicPartition

from process_helpers import run_cli, wait_for

pytestmark = pytest.mark.process

SEGMENT = 1024  # the smallest segment.bytes


def _desc(handle, topic: str):
    with Admin(handle.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc


def _starts(handle, topic: str) -> list[list[int]]:
    """Each partition's replica log starts (leader first)."""
    return [[p.replica_log_starts[b] for b in p.replicas] for p in _desc(handle, topic).partitions]


def _produce(handle, topic: str, n: int, size: int = 100, timestamp_ms: int | None = None) -> None:
    with Producer(handle.bootstrap, acks="all", linger_ms=0, batch_size=SEGMENT // 4) as p:
        futures = [p.send(topic, b"%06d" % i + b"x" * (size - 6), timestamp_ms=timestamp_ms) for i in range(n)]
        p.flush()
        for f in futures:
            f.result(30)


def _first_offsets(handle, topic: str, reset: str, start: int = 0) -> list[int]:
    with Consumer(handle.bootstrap, auto_offset_reset=reset) as c:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, start)
        got: list[int] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            got = [r.offset for r in c.poll(500)]
        return got


@pytest.fixture(scope="module")
def retained(tmp_path_factory, request):
    from process_helpers import cluster_fixture

    dir = tmp_path_factory.mktemp("retention") / "minikafka"
    handle = cluster_fixture(request, dir, brokers=3, storage="disk",
                              broker_configs={"log.retention.check.interval.ms": "300"})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("bounded", partitions=1, replication_factor=3,
                           config={"segment.bytes": str(SEGMENT), "retention.bytes": str(4 * SEGMENT),
                                   "min.insync.replicas": "2"})
        admin.create_topic("aged", partitions=1, replication_factor=3,
                           config={"segment.bytes": str(SEGMENT), "retention.ms": "60000"})
        admin.create_topic("trimmed", partitions=1, replication_factor=3, config={"segment.bytes": str(SEGMENT)})
    return handle


def test_retention_bytes_bounds_a_busy_topic_with_one_log_start_on_every_replica(retained):
    _produce(retained, "bounded", 600)  # ~70 KB through 1 KB segments, kept to 4 KB
    def bounded() -> bool:
        starts = _starts(retained, "bounded")[0]
        p = _desc(retained, "bounded").partitions[0]
        # retention.bytes, plus at most the active segment, once the check ran after the last append
        return (len(set(starts)) == 1 and starts[0] > 400 and p.high_watermark == 600 and 0 < p.segments <= 6
                and 4 * SEGMENT <= p.size_bytes <= 5 * SEGMENT)
    wait_for(bounded, timeout_s=60, message="every replica's log start moved, to the same offset, size bounded")
    p = _desc(retained, "bounded").partitions[0]
    from test_metrics import scrape

    port = int(retained.endpoint(p.leader).rsplit(":", 1)[1])

    def metrics_agree() -> bool:
        now, m = _desc(retained, "bounded").partitions[0], scrape(port)
        return m is not None and (m.value("minikafka_log_start_offset", topic="bounded", partition=0),
                                  m.value("minikafka_log_segments", topic="bounded", partition=0),
                                  m.value("minikafka_log_size_bytes", topic="bounded", partition=0)) == \
            (now.log_start_offset, now.segments, now.size_bytes)
    wait_for(metrics_agree, timeout_s=20, message="/metrics shows the leader's log start, segments and size")
    # records below the log start are gone for consumers: earliest starts at the log start ...
    assert _first_offsets(retained, "bounded", "earliest")[0] == p.log_start_offset
    # ... and a consumer that does not reset is told so
    with pytest.raises(errors.OffsetOutOfRangeError):
        _first_offsets(retained, "bounded", "none")


def test_records_older_than_retention_ms_expire(retained):
    hour_ago = int(time.time() * 1000) - 3_600_000
    _produce(retained, "aged", 100, timestamp_ms=hour_ago)  # written an hour "ago" (CreateTime)
    _produce(retained, "aged", 1)  # a current record: its segment is the active one and stays
    wait_for(lambda: min(_starts(retained, "aged")[0]) >= 90, timeout_s=60,
             message="segments of hour-old records deleted on every replica")
    p = _desc(retained, "aged").partitions[0]
    assert p.high_watermark == 101 and p.log_end_offset == 101
    assert _first_offsets(retained, "aged", "earliest")[-1] == 100


def test_delete_records_from_the_cli_and_from_confluent_kafka_and_after_a_restart(retained, tmp_path):
    import confluent_kafka
    from confluent_kafka.admin import AdminClient

    _produce(retained, "trimmed", 300)
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"partitions": [{"topic": "trimmed", "partition": 0, "offset": 120}], "version": 1}))
    out = run_cli("topics", "delete-records", "--offset-json-file", str(spec), "--bootstrap-server", retained.bootstrap)
    assert out.returncode == 0, out.stderr
    assert "partition: trimmed-0\tlow_watermark: 120" in out.stdout
    assert _starts(retained, "trimmed") == [[120, 120, 120]]
    assert "LogStartOffset: 120" in run_cli("topics", "describe", "trimmed", "--bootstrap-server",
                                            retained.bootstrap).stdout
    assert _first_offsets(retained, "trimmed", "earliest")[0] == 120

    # above the high watermark: OFFSET_OUT_OF_RANGE, nothing moves
    spec.write_text(json.dumps({"partitions": [{"topic": "trimmed", "partition": 0, "offset": 301}], "version": 1}))
    out = run_cli("topics", "delete-records", "--offset-json-file", str(spec), "--bootstrap-server", retained.bootstrap)
    assert out.returncode == 1 and "OFFSET_OUT_OF_RANGE" in out.stdout
    assert _starts(retained, "trimmed") == [[120, 120, 120]]
    spec.write_text('{"partitions": [{"topic": "trimmed", "partition": 0}]}')
    out = run_cli("topics", "delete-records", "--offset-json-file", str(spec), "--bootstrap-server", retained.bootstrap)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "offset" in out.stderr

    # librdkafka's admin client through the Kafka listener
    admin = AdminClient({"bootstrap.servers": retained.kafka_bootstrap})
    futures = admin.delete_records([confluent_kafka.TopicPartition("trimmed", 0, 200)], operation_timeout=30)
    (fut,) = futures.values()
    assert fut.result(30).low_watermark == 200
    assert _starts(retained, "trimmed") == [[200, 200, 200]]

    # kafka-console-consumer's --offset below the log start: --from-beginning resets to it
    out = run_cli("consume", "trimmed", "--partition", "0", "--offset", "5", "--from-beginning", "--print-offset",
                  "--max-messages", "1", "--bootstrap-server", retained.bootstrap)
    assert out.returncode == 0 and out.stdout.startswith("0:200:"), (out.stdout, out.stderr)

    # a restarted follower keeps its log start (log-start-offset-checkpoint)
    follower = _desc(retained, "trimmed").partitions[0].replicas[1]
    retained.stop(follower)
    retained.start(follower)
    wait_for(lambda: _desc(retained, "trimmed").partitions[0].replica_log_starts.get(follower) == 200, timeout_s=60,
             message="the restarted follower reports its checkpointed log start")
    wait_for(lambda: len(_desc(retained, "trimmed").partitions[0].isr) == 3, timeout_s=60, message="back in the ISR")


def test_the_spark_source_reports_records_below_the_log_start_as_data_loss(retained, spark):
    """A Spark range that starts below the log start (retention or DeleteRecords) is Spark's
    data loss: the query fails with failOnDataLoss=true, reads from the log start with false."""
    from minikafka.spark.cluster import SourceClient
    from minikafka.spark.offsets import DataLossError, OffsetRange

    wait_for(lambda: _starts(retained, "trimmed") == [[200, 200, 200]], timeout_s=60, message="trimmed to 200")
    with SourceClient(retained.bootstrap, poll_timeout_ms=30000) as client:
        with pytest.raises(DataLossError) as info:
            list(client.read(OffsetRange("trimmed", 0, 50, 300), fail_on_data_loss=True))
        assert "Partition trimmed-0's offset was changed from 50 to 200, some data may have been missed" \
            in str(info.value)
    df = (spark.read.format("minikafka").option("kafka.bootstrap.servers", retained.bootstrap)
          .option("assign", json.dumps({"trimmed": [0]}))
          .option("startingOffsets", json.dumps({"trimmed": {"0": 50}}))
          .option("failOnDataLoss", "false").load())
    offsets = sorted(r.offset for r in df.select("offset").collect())
    assert offsets == list(range(200, 300))


def test_topic_configs_show_the_effective_retention(retained):
    """retention.ms of a topic without an override is what the broker applies: log.retention.ms
    is unset, so log.retention.hours (168) gives it, as Kafka's describe shows."""
    with Admin(retained.bootstrap) as admin:
        configs = admin.describe_configs("trimmed")
        assert configs["retention.ms"][0] == str(168 * 3_600_000)
        assert configs["segment.ms"][0] == str(168 * 3_600_000)
        assert configs["retention.bytes"][0] == "-1"
        assert configs["segment.bytes"] == (str(SEGMENT), "topic")


def _log_start(handle, topic: str) -> int:
    return _desc(handle, topic).partitions[0].replica_log_starts.get(1, -2)


def _kill_and_restart(handle) -> None:
    handle.kill(1)
    handle.start(1)

    def leading() -> bool:
        try:  # the restarted broker knows no topic until the controller's metadata reaches it
            return _desc(handle, "solo").partitions[0].leader == 1
        except errors.KafkaError:
            return False
    wait_for(leading, timeout_s=60, message="broker 1 leading again")


@pytest.mark.parametrize("interval_ms, kept", [(3_600_000, False), (300, True)])
def test_a_killed_broker_comes_back_with_the_log_start_it_last_checkpointed(make_cluster, interval_ms, kept):
    # Kafka's rule: log-start-offset-checkpoint is written every
    # log.flush.start.offset.checkpoint.interval.ms, and a broker killed before the write
    # comes back with its first segment's base offset (a DeleteRecords inside it undone)
    handle = make_cluster(brokers=1, storage="disk",
                          broker_configs={"log.flush.start.offset.checkpoint.interval.ms": str(interval_ms)})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("solo", partitions=1, replication_factor=1)
    _produce(handle, "solo", 20)
    with Admin(handle.bootstrap) as admin:
        assert admin.delete_records({TopicPartition("solo", 0): 12}) == {TopicPartition("solo", 0): 12}
    assert _log_start(handle, "solo") == 12
    checkpoint = f"{handle.dir}/broker-1/log-start-offset-checkpoint"
    if kept:
        wait_for(lambda: os.path.exists(checkpoint) and "solo 0 12" in open(checkpoint).read(), timeout_s=30,
                 message="the checkpoint written")
    _kill_and_restart(handle)
    assert _log_start(handle, "solo") == (12 if kept else 0)
    assert _first_offsets(handle, "solo", "earliest")[0] == (12 if kept else 0)
