"""Topic ids (KIP-516) on a broker: the metadata cache's two lookups, the Kafka listener's
translation of Fetch v13 between ids and names, and partition.metadata on disk."""
from __future__ import annotations

import uuid

import pytest

from minikafka.broker.kafka.topic_ids import fetch_request_by_name, fetch_response_by_id
from minikafka.broker.metadata_cache import MetadataCache
from minikafka.broker.storage import DiskStorage, Storage, parse_partition_metadata
from minikafka.protocol.kafka import apis
from minikafka.protocol.kafka.wire import Reader, Writer
from minikafka.protocol.rpc.types import PartitionState, UpdateMetadataRequest
from minikafka.protocol.topic_ids import ZERO_TOPIC_ID, to_uuid

A, B = "EjRWeJCrze_-3LoJh2VDIQ", "1sLTnxnrQ8WzHtZbU2t4Nw"


def _update(cache: MetadataCache, states: list[tuple[str, str]], deleted: list[str] | None = None) -> None:
    cache.update(UpdateMetadataRequest(controller_id=1, controller_epoch=1, live_brokers=[], deleted_topics=deleted or [],
                                       partition_states=[PartitionState(topic=t, partition=0, controller_epoch=1, leader=1,
                                                                        leader_epoch=0, isr=[1], zk_version=0,
                                                                        replicas=[1], topic_id=i) for t, i in states]))


def test_the_metadata_cache_knows_ids_both_ways_and_forgets_deleted_topics():
    cache = MetadataCache()
    _update(cache, [("t", A)])
    assert cache.topic_id("t") == A and cache.topic_name(A) == "t"
    assert cache.topic_id("other") == ZERO_TOPIC_ID and cache.topic_name(B) is None
    assert cache.topic_name(ZERO_TOPIC_ID) is None
    _update(cache, [], deleted=["t"])
    assert cache.topic_name(A) is None and cache.topic_id("t") == ZERO_TOPIC_ID
    _update(cache, [("t", A)])
    _update(cache, [("t", B)])  # created again under the same name: the old id is no one's
    assert cache.topic_name(A) is None and cache.topic_name(B) == "t"


def test_fetch_v13_by_id_is_served_by_name_and_answered_by_id():
    cache = MetadataCache()
    _update(cache, [("t", A)])
    partition = {"partition": 0, "fetch_offset": 5, "current_leader_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 100, "last_fetched_epoch": -1}
    req = {"topics": [{"topic_id": to_uuid(A), "partitions": [partition]},
                      {"topic_id": to_uuid(B), "partitions": [{**partition, "partition": 2}]}],
           "forgotten_topics_data": [{"topic_id": to_uuid(A), "partitions": [1]},
                                     {"topic_id": to_uuid(B), "partitions": [0]}]}
    by_name, unknown = fetch_request_by_name(req, cache)
    assert [t["topic"] for t in by_name["topics"]] == ["t"]
    assert [t["topic"] for t in by_name["forgotten_topics_data"]] == ["t"]
    assert [t["topic_id"] for t in unknown] == [to_uuid(B)]
    layer_answer = {"error_code": 0, "session_id": 0, "responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 9, "records": b"x"}]}]}
    answer = fetch_response_by_id(layer_answer, unknown, cache)
    assert [(t["topic_id"], t["partitions"][0]["error_code"]) for t in answer["responses"]] == [
        (to_uuid(A), 0), (to_uuid(B), 100)]  # 100: UNKNOWN_TOPIC_ID
    assert answer["responses"][1]["partitions"][0]["partition_index"] == 2
    # the answer encodes in v13 with ids only
    w = Writer()
    apis.FETCH.response.encode(w, answer, 13, True)
    back = apis.FETCH.response.decode(Reader(w.getvalue()), 13, True)
    assert [t["topic_id"] for t in back["responses"]] == [uuid.UUID(bytes=to_uuid(A).bytes), to_uuid(B)]
    # a whole-request error answers no topic, not even the unknown ones
    refused = fetch_response_by_id({"error_code": 71, "session_id": 0, "responses": []}, unknown, cache)
    assert refused["responses"] == []


def test_partition_metadata_is_kafkas_file(tmp_path):
    storage = DiskStorage(str(tmp_path / "data"), broker_id=1)
    assert storage.read_topic_id("t", 0) is None
    storage.write_topic_id("t", 0, A)
    path = tmp_path / "data" / "t-0" / "partition.metadata"
    assert path.read_text() == f"version: 0\ntopic_id: {A}"
    assert storage.read_topic_id("t", 0) == A
    assert storage.local_partitions() == [("t", 0)]
    memory = Storage(str(tmp_path / "mem"))
    memory.write_topic_id("t", 0, A)
    assert memory.read_topic_id("t", 0) is None and not (tmp_path / "mem" / "t-0").exists()


@pytest.mark.parametrize("text", ["", "version: 0", "version: 1\ntopic_id: " + A, "topic_id: " + A + "\nversion: 0",
                                  "version: 0\ntopic_id: nope", "version: 0\ntopic_id: " + A + "\nextra: 1"])
def test_a_malformed_partition_metadata_is_refused(text):
    with pytest.raises(ValueError):
        parse_partition_metadata(text)
    assert parse_partition_metadata(f"version: 0\ntopic_id: {A}\n") == A
