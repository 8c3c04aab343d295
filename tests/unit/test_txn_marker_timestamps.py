"""A transaction marker on a topic with message.timestamp.type=LogAppendTime is stamped as
Kafka's leader stamps every batch it appends there: the LogAppendTime attribute and the
append time as the batch's max timestamp (found by the differential fuzzer: minikafka
wrote markers with CreateTime)."""
from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from minikafka.broker.metrics import Metrics
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.storage import Storage
from minikafka.config import BrokerConfig
from minikafka.protocol.records.batch import encode_batch, split_batches
from minikafka.protocol.records.control import COMMIT, read_marker
from minikafka.protocol.rpc.types import TopicPartition, WritableTxnMarker, WriteTxnMarkersRequest
from minikafka.replication.partition import LeaderState, PartitionReplica

T0 = 1_700_000_000_000


def leader_alone(topic: str = "t") -> PartitionReplica:
    p = PartitionReplica(topic, 0, 1)
    p.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
    return p


def open_transaction(p: PartitionReplica) -> None:
    p.append_as_leader(encode_batch([(b"k", b"v", None, T0 - 5000)], producer_id=7, producer_epoch=0,
                                    base_sequence=0, is_transactional=True), 1, 1)


def marker_header(p: PartitionReplica):  # noqa: ANN201
    (h, raw), = [(h, raw) for h, raw in split_batches(p.read(0, 1 << 20, for_follower=True)) if h.is_control]
    assert read_marker(h, raw) == (COMMIT, 0)
    return h


def test_a_marker_on_a_log_append_time_topic_carries_the_attribute_and_the_append_time():
    p = leader_alone()
    open_transaction(p)
    p.append_marker(7, 0, True, 0, T0, log_append_time=True)
    h = marker_header(p)
    assert h.log_append_time and h.max_timestamp == T0


def test_a_marker_on_a_create_time_topic_stays_create_time():
    p = leader_alone()
    open_transaction(p)
    p.append_marker(7, 0, True, 0, T0)
    h = marker_header(p)
    assert not h.log_append_time and h.max_timestamp == T0


def test_the_replica_manager_stamps_markers_by_the_topics_timestamp_type(tmp_path):
    config = BrokerConfig(1, "zk")
    metrics = Metrics()
    rm = ReplicaManager(config, SimpleNamespace(time=time.time, monotonic=time.monotonic), Storage(str(tmp_path), 1),
                        None, metrics, lambda *args, **kw: None)
    for topic, kind in (("appended", "LogAppendTime"), ("created", "CreateTime")):
        p = leader_alone(topic)
        rm.partitions[(topic, 0)] = p
        rm.topic_configs[topic] = {"message.timestamp.type": kind}
        open_transaction(p)
    request = WriteTxnMarkersRequest(markers=[WritableTxnMarker(
        producer_id=7, producer_epoch=0, committed=True, coordinator_epoch=0,
        partitions=[TopicPartition(topic="appended", partition=0), TopicPartition(topic="created", partition=0)])],
        timeout_ms=5000)
    [result] = asyncio.run(rm.write_txn_markers(request))
    assert [e.error for e in result.partitions] == [None, None]
    assert marker_header(rm.partitions[("appended", 0)]).log_append_time
    assert not marker_header(rm.partitions[("created", 0)]).log_append_time
