"""KIP-467: a produce batch refused because of some of its records names them.

As Kafka's LogValidator, the leader refuses a batch with a keyless record on a compacted
topic with INVALID_RECORD and the index of every keyless record in the batch
(``record_errors``), and ProduceResponse v8+ carries them with ``error_message``, so that
librdkafka fails those records with INVALID_RECORD and the other records of the batch with
_INVALID_DIFFERENT_RECORD, as against Kafka (found by the differential fuzzer)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from minikafka.broker.kafka.connection import Connection
from minikafka.broker.kafka.handlers import KafkaHandlers
from minikafka.errors import InvalidRecordError, InvalidTimestampError
from minikafka.protocol.kafka import apis, frames
from minikafka.protocol.batch_convert import stamp_log_append_time
from minikafka.protocol.records.batch import encode_batch
from minikafka.protocol.rpc.types import ProducePartitionResponse, ProduceResponse
from minikafka.replication.partition import LeaderState, PartitionReplica, refused_records

WHY = "Compacted topic cannot accept message without key in topic partition c-0"


def compacted_leader(compacted: bool = True) -> PartitionReplica:
    p = PartitionReplica("c", 0, 1)
    p.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
    p.compacted = compacted
    return p


def test_the_keyless_records_of_a_batch_for_a_compacted_topic_are_named_by_their_index():
    p = compacted_leader()
    batch = encode_batch([(b"k0", b"a", None, 0), (None, b"b", None, 0), (b"k2", b"c", None, 0),
                          (None, b"d", None, 0)])
    with pytest.raises(InvalidRecordError) as refused:
        p.append_as_leader(batch, 1, 1)
    assert refused.value.record_errors == ((1, WHY), (3, WHY))
    assert refused.value.message == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first three "
        f"errors at most: [RecordError(batchIndex=1, message='{WHY}'), RecordError(batchIndex=3, message='{WHY}')]")
    assert p.log_end_offset == 0  # nothing of the batch is stored
    p.append_as_leader(encode_batch([(b"k0", b"a", None, 0)]), 1, 1)  # keyed records are taken
    assert p.log_end_offset == 1


def test_the_message_shows_the_first_three_record_errors_and_counts_them_all():
    exc = refused_records(InvalidRecordError, [(i, f"r{i}") for i in range(5)])
    assert exc.message.startswith("One or more records have been rejected due to 5 record errors in total")
    assert "batchIndex=2" in exc.message and "batchIndex=3" not in exc.message
    assert len(exc.record_errors) == 5
    assert InvalidRecordError("other").record_errors == ()  # other errors name no records


NOW = 1_700_000_000_000
HOUR = 3_600_000


def test_a_create_time_outside_the_topics_bounds_is_refused_with_invalid_timestamp():
    """message.timestamp.before.max.ms / after.max.ms (the caller turns them into a range
    around its clock): the records outside are named; a batch inside is taken."""
    p = compacted_leader(compacted=False)
    batch = encode_batch([(None, b"a", None, NOW), (None, b"b", None, NOW - 2 * HOUR), (None, b"c", None, NOW + 1)])
    with pytest.raises(InvalidTimestampError) as refused:
        p.append_as_leader(batch, 1, 1, create_time_range=(NOW - HOUR, NOW + HOUR))
    assert refused.value.message == "One or more records have been rejected due to invalid timestamp"
    assert refused.value.record_errors == ((1, f"Timestamp {NOW - 2 * HOUR} of message with offset 1 is out of "
                                                f"range. The timestamp should be within [{NOW - HOUR}, {NOW + HOUR}]"),)
    assert p.log_end_offset == 0
    p.append_as_leader(batch, 1, 1, create_time_range=(NOW - 3 * HOUR, NOW + HOUR))
    p.append_as_leader(batch, 1, 1)  # no bounds: any CreateTime
    assert p.log_end_offset == 6


def test_with_both_kinds_of_record_errors_the_batch_is_invalid_timestamp_naming_all():
    p = compacted_leader()
    batch = encode_batch([(None, b"a", None, NOW), (b"k", b"b", None, 0), (b"k", b"c", None, NOW)])
    with pytest.raises(InvalidTimestampError) as refused:
        p.append_as_leader(batch, 1, 1, create_time_range=(NOW - HOUR, NOW + HOUR))
    assert [i for i, _ in refused.value.record_errors] == [0, 1]
    assert refused.value.record_errors[0][1] == WHY


def test_a_batch_the_producer_stamped_log_append_time_is_refused_on_a_log_append_time_topic():
    p = compacted_leader(compacted=False)
    batch = stamp_log_append_time(encode_batch([(None, b"a", None, NOW), (None, b"b", None, NOW)]), NOW)
    with pytest.raises(InvalidTimestampError) as refused:
        p.append_as_leader(batch, 1, 1, log_append_time_ms=NOW + 5)
    assert [i for i, _ in refused.value.record_errors] == [0, 1]
    assert "Producer should not set timestamp type to LogAppendTime" in refused.value.record_errors[0][1]
    p.append_as_leader(encode_batch([(None, b"a", None, NOW)]), 1, 1, log_append_time_ms=NOW + 5)
    assert p.log_end_offset == 1


def test_the_replica_manager_bounds_create_time_by_the_topics_settings(tmp_path):
    import time

    from minikafka.broker.metrics import Metrics
    from minikafka.broker.replica_manager import ReplicaManager
    from minikafka.broker.storage import Storage
    from minikafka.config import BrokerConfig

    config = BrokerConfig(1, "zk")
    metrics = Metrics()
    clock = SimpleNamespace(time=lambda: NOW / 1000, monotonic=time.monotonic)
    rm = ReplicaManager(config, clock, Storage(str(tmp_path), 1), None, metrics,
                        lambda *args, **kw: None)
    assert rm.create_time_range("t") is None  # Kafka's defaults: unbounded
    rm.topic_configs["t"] = {"message.timestamp.before.max.ms": str(HOUR)}
    assert rm.create_time_range("t") == (NOW - HOUR, NOW + 9223372036854775807)
    rm.topic_configs["t"] = {"message.timestamp.difference.max.ms": str(HOUR),
                             "message.timestamp.after.max.ms": "5"}
    assert rm.create_time_range("t") == (NOW - HOUR, NOW + 5)  # the deprecated one where the other is unset
    leader = PartitionReplica("t", 0, 1)
    leader.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
    rm.partitions[("t", 0)] = leader
    from minikafka.protocol.rpc.types import ProducePartition, ProduceRequest
    request = ProduceRequest(acks=1, timeout_ms=1000, partitions=[ProducePartition(
        topic="t", partition=0, records=encode_batch([(None, b"a", None, NOW), (None, b"b", None, NOW + 10)]))])
    [entry] = asyncio.run(rm.produce(request))
    assert isinstance(entry.error, InvalidTimestampError) and [i for i, _ in entry.error.record_errors] == [1]
    # a record validation refusal answers the partition's log start, as Kafka's (other refusals: -1)
    assert entry.log_start_offset == leader.log.log_start_offset == 0


class _Data:
    """The request layer's produce, answering one refused partition."""

    def __init__(self, error) -> None:  # noqa: ANN001
        self.error = error

    async def produce(self, req, ctx) -> ProduceResponse:  # noqa: ANN001
        return ProduceResponse(partitions=[ProducePartitionResponse(
            topic="c", partition=0, base_offset=-1, log_append_time=-1, log_start_offset=-1, error=self.error)])


def _answer(error, version: int) -> dict:  # noqa: ANN001
    """The Produce answer the Kafka listener encodes for ``error`` at ``version``, decoded as
    a client reads it."""
    handlers = SimpleNamespace(layer=SimpleNamespace(data=_Data(error)))
    request = {"acks": -1, "timeout_ms": 1000, "transactional_id": None,
               "topic_data": [{"name": "c", "partition_data": [{"index": 0, "records": b"x"}]}]}
    body = asyncio.run(KafkaHandlers.produce(handlers, version, request, Connection(external=False, peer="x")))
    frame = frames.encode_response(apis.PRODUCE, version, 7, body)
    correlation, decoded = frames.decode_response(apis.PRODUCE, version, frame[4:])
    assert correlation == 7
    [topic] = decoded["responses"]
    [partition] = topic["partition_responses"]
    return partition


def test_produce_v8_carries_the_record_errors_and_the_error_message():
    error = refused_records(InvalidRecordError, [(1, WHY), (3, WHY)])
    got = _answer(error, 8)
    assert got["error_code"] == InvalidRecordError.code.code
    assert got["record_errors"] == [{"batch_index": 1, "batch_index_error_message": WHY},
                                    {"batch_index": 3, "batch_index_error_message": WHY}]
    assert got["error_message"] == error.message


def test_a_produce_answer_without_record_errors_has_an_empty_list_and_v7_has_no_such_fields():
    assert _answer(InvalidRecordError("a whole batch refused"), 9)["record_errors"] == []
    assert _answer(None, 9)["record_errors"] == [] and _answer(None, 9)["error_message"] is None
    v7 = _answer(refused_records(InvalidRecordError, [(0, WHY)]), 7)  # read back with the fields' defaults
    assert v7["error_code"] == InvalidRecordError.code.code
    assert v7["record_errors"] == [] and v7["error_message"] is None


def test_only_a_record_validation_refusal_carries_an_error_message_as_in_kafka():
    # Kafka's LogAppendResult has a custom message only for a RecordValidationException
    from minikafka.errors import InvalidTimestampError, MessageTooLargeError, NotLeaderOrFollowerError

    assert _answer(InvalidTimestampError("too old"), 9)["error_message"] == "too old"
    for other in (NotLeaderOrFollowerError("moved"), MessageTooLargeError("too big")):
        got = _answer(other, 9)
        assert got["error_code"] == other.code.code and got["error_message"] is None

