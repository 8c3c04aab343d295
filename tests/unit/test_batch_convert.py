"""The leader's batch conversion (Kafka's LogValidator): recompression to the topic's
compression.type and LogAppendTime stamping, pure and through the replica core."""
from __future__ import annotations

import pytest

from minikafka import config as cfg
from minikafka.errors import InvalidConfigError
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.batch_convert import convert
from minikafka.protocol.records import encode_batch, iter_records, read_header, validate_batch
from minikafka.replication.partition import LeaderState, PartitionReplica

RECORDS = [(b"k%d" % i, b"value %d " % i * 20, [("h", b"x")], 1_000 + i) for i in range(50)]


def batch(codec: str = "gzip", producer_id: int = 7) -> bytes:
    return encode_batch(RECORDS, compression=codec, producer_id=producer_id, producer_epoch=1, base_sequence=3)


def decoded(data: bytes) -> list[tuple]:
    return [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in iter_records(data)]


@pytest.mark.parametrize("topic_codec, stored", [("producer", "gzip"), ("uncompressed", "none"), ("zstd", "zstd"),
                                                  ("lz4", "lz4"), ("snappy", "snappy"), ("gzip", "gzip")])
def test_the_leader_stores_the_topic_codec_and_the_same_records(topic_codec, stored):
    raw = batch("gzip")
    h, out = convert(raw, topic_codec, None)
    validate_batch(out)
    assert h.compression == stored and read_header(out) == h
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_offset_delta) == (7, 1, 3, 49)
    assert (h.base_timestamp, h.max_timestamp) == (1_000, 1_049)
    assert decoded(out) == decoded(raw)
    if topic_codec in ("producer", "gzip"):
        assert out is raw  # nothing to do


def test_log_append_time_stamps_the_batch_and_every_record_reads_it():
    raw = batch("none")
    h, out = convert(raw, "producer", 5_000_000)
    validate_batch(out)  # the CRC was recomputed
    assert h.log_append_time and h.max_timestamp == 5_000_000 and h.compression == "none"
    assert {r.timestamp for r in iter_records(out)} == {5_000_000}
    assert [r.value for r in iter_records(out)] == [r[1] for r in RECORDS]
    h, out = convert(batch("snappy"), "zstd", 6_000_000)  # recompressed and stamped
    assert (h.compression, h.log_append_time, h.max_timestamp) == ("zstd", True, 6_000_000)
    assert {r.timestamp for r in iter_records(out)} == {6_000_000}


def test_the_replica_core_converts_on_the_leader_and_answers_the_stamp():
    p = PartitionReplica("t", 0, 1, PartitionLog())
    p.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
    res, _ = p.append_as_leader(batch("gzip", producer_id=-1), 1, 1, None, "lz4", 9_000)
    assert (res.base_offset, res.last_offset, res.log_append_time) == (0, 49, 9_000)
    stored = p.read(0, 1 << 20, for_follower=True)
    h = read_header(stored)
    assert (h.compression, h.log_append_time, h.max_timestamp, h.base_offset) == ("lz4", True, 9_000, 0)
    res, _ = p.append_as_leader(batch("gzip", producer_id=-1), 1, 1)  # the defaults: as the producer sent it
    assert res.log_append_time == -1 and read_header(p.read(50, 1 << 20, for_follower=True)).compression == "gzip"


def test_kafka_topic_configs_are_known_with_their_values():
    ok = {"compression.type": "zstd", "message.timestamp.type": "LogAppendTime", "flush.ms": "1000",
          "flush.messages": "10", "index.interval.bytes": "4096", "segment.index.bytes": "10485760",
          "preallocate": "true", "segment.jitter.ms": "0", "max.compaction.lag.ms": "60000",
          "message.downconversion.enable": "false", "file.delete.delay.ms": "1",
          "leader.replication.throttled.replicas": "0:1,1:2", "follower.replication.throttled.replicas": "*",
          "message.timestamp.difference.max.ms": "100", "message.timestamp.before.max.ms": "100",
          "message.timestamp.after.max.ms": "100", "unclean.leader.election.enable": "true",
          "min.compaction.lag.ms": "0", "remote.storage.enable": "false", "local.retention.ms": "-2"}
    assert cfg.validate_topic_config(ok) == ok
    for bad in ({"compression.type": "brotli"}, {"message.timestamp.type": "Now"},
                {"leader.replication.throttled.replicas": "0-1"}, {"max.compaction.lag.ms": "0"}):
        with pytest.raises(InvalidConfigError):
            cfg.validate_topic_config(bad)
    broker = cfg.BrokerConfig(1, "zk")
    assert cfg.topic_setting("compression.type", {}, broker) == "producer"
    assert cfg.topic_setting("message.timestamp.type", {}, broker) == "CreateTime"
    assert cfg.topic_setting("follower.replication.throttled.replicas", {}, broker) == ""
    assert "log.message.timestamp.type" in cfg.DYNAMIC_BROKER_CONFIGS
    assert "leader.replication.throttled.replicas" not in cfg.DYNAMIC_BROKER_CONFIGS
