"""Topic ids (KIP-516) end to end, as Kafka 3.9 in ZooKeeper mode has them: the id a
topic gets at creation is the one in /brokers/topics/T (version 3), in each replica's
partition.metadata, in CreateTopics v7 and Metadata answers (confluent-kafka's
describe_topics, Kafka's own TopicCommand), and the one Fetch v13 and DeleteTopics v6
name topics by.  A topic an older cluster wrote without an id gets one from the
controller; a log whose recorded id is another topic's is refused."""
from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from kafka_tools import run_tool, tool_class
from minikafka.protocol.kafka import apis, frames
from minikafka.protocol.topic_ids import ZERO_TOPIC_ID, from_uuid, is_topic_id, to_uuid
from minikafka.zk import layout
from process_helpers import wait_for, zk_client

pytestmark = pytest.mark.process

UNKNOWN_TOPIC_ID = 100


@pytest.fixture(scope="module")
def ids_cluster(tmp_path_factory, request):
    from process_helpers import start_cluster, stop_cluster
    dir = tmp_path_factory.mktemp("topic-ids") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3, storage="disk",
                         broker_configs={"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "200"})


def _request(port: int, api: apis.KafkaApi, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(frames.encode_request(api, version, 7, "topic-ids-test", body))
        size = struct.unpack(">i", _exact(s, 4))[0]
        _, answer = frames.decode_response(api, version, _exact(s, size))
    return answer


def _exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return buf


def _znode(cluster, topic: str) -> dict | None:
    client = zk_client(cluster, authenticated=False)
    try:
        got = client.get(layout.topic_path(topic)) if client.exists(layout.topic_path(topic)) else None
    finally:
        client.stop()
    return None if got is None else json.loads(got[0])


def _any_port(cluster) -> int:
    return next(iter(cluster.kafka_ports.values()))


def _create(cluster, topic: str, partitions: int = 2) -> str:
    """CreateTopics v7; the answer's topic id."""
    answer = _request(_any_port(cluster), apis.CREATE_TOPICS, 7, {"topics": [
        {"name": topic, "num_partitions": partitions, "replication_factor": 3, "assignments": [], "configs": []}],
        "timeout_ms": 30000, "validate_only": False})
    (result,) = answer["topics"]
    assert result["error_code"] == 0, result
    return from_uuid(result["topic_id"])


def test_the_id_given_at_creation_is_everywhere(ids_cluster, kafka_jars):
    from confluent_kafka import Producer, TopicCollection
    from confluent_kafka.admin import AdminClient

    c = ids_cluster
    topic_id = _create(c, "ids")
    assert is_topic_id(topic_id) and topic_id != ZERO_TOPIC_ID
    # /brokers/topics/T as Kafka 3.9 writes it
    znode = _znode(c, "ids")
    assert {k: v for k, v in znode.items() if k != "partitions"} == {
        "version": 3, "topic_id": topic_id, "adding_replicas": {}, "removing_replicas": {}}
    assert sorted(znode["partitions"]) == ["0", "1"]
    # every replica's partition.metadata, as Kafka's PartitionMetadataFile: written when the
    # replica takes its LeaderAndIsr, which CreateTopics' answer does not wait for (it waits
    # for the partitions' leaders in the metadata)
    def six_files() -> list[Path] | None:
        found = sorted(Path(c.dir).glob("broker-*/ids-*/partition.metadata"))
        return found if len(found) == 6 else None
    files = wait_for(six_files, 30, message="six partition.metadata files")
    assert {f.read_text() for f in files} == {f"version: 0\ntopic_id: {topic_id}"}
    # confluent-kafka's describe_topics (Metadata v12) has the znode's id
    admin = AdminClient({"bootstrap.servers": c.kafka_bootstrap})
    (future,) = admin.describe_topics(TopicCollection(["ids"])).values()
    got = future.result(30).topic_id  # librdkafka prints ids in standard base64 (+/): compare the bits
    bits = ((got.get_most_significant_bits() & (2**64 - 1)) << 64) | (got.get_least_significant_bits() & (2**64 - 1))
    assert bits == to_uuid(topic_id).int
    # Kafka's own TopicCommand prints it
    out = run_tool(kafka_jars("3.9"), tool_class("3.9", "kafka-topics"), "--bootstrap-server", c.kafka_bootstrap,
                   "--describe", "--topic", "ids")
    assert out.returncode == 0, out.stderr
    assert f"TopicId: {topic_id}" in out.stdout.splitlines()[0]
    # Metadata v12 by id
    by_id = _request(_any_port(c), apis.METADATA, 12, {"topics": [{"topic_id": to_uuid(topic_id), "name": None}],
                                                       "allow_auto_topic_creation": False})
    assert [(t["name"], from_uuid(t["topic_id"]), t["error_code"]) for t in by_id["topics"]] == [("ids", topic_id, 0)]

    # Fetch v13 names the topic by id: a record produced is read back from the leader
    producer = Producer({"bootstrap.servers": c.kafka_bootstrap, "acks": "all"})
    producer.produce("ids", b"by-id", partition=0)
    assert producer.flush(30) == 0
    leader = next(p["leader_id"] for t in by_id["topics"] for p in t["partitions"] if p["partition_index"] == 0)
    unknown = "EjRWeJCrze_-3LoJh2VDIQ"

    def fetch(ids: list[str]) -> dict:
        return _request(c.kafka_ports[leader], apis.FETCH, 13, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "",
            "topics": [{"topic_id": to_uuid(i), "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]} for i in ids],
            "forgotten_topics_data": []})
    answer = fetch([topic_id, unknown])
    assert answer["error_code"] == 0
    got = {from_uuid(t["topic_id"]): t["partitions"][0] for t in answer["responses"]}
    assert got[topic_id]["error_code"] == 0 and b"by-id" in got[topic_id]["records"]
    assert got[unknown]["error_code"] == UNKNOWN_TOPIC_ID and got[unknown]["records"] == b""

    # DeleteTopics v6 by id (Kafka's Admin.deleteTopics(TopicCollection.ofTopicIds(...)))
    deleted = _request(_any_port(c), apis.DELETE_TOPICS, 6, {"topics": [
        {"name": None, "topic_id": to_uuid(topic_id)}, {"name": None, "topic_id": to_uuid(unknown)}],
        "timeout_ms": 30000})
    assert [(r["name"], from_uuid(r["topic_id"]), r["error_code"]) for r in deleted["responses"]] == [
        ("ids", topic_id, 0), (None, unknown, UNKNOWN_TOPIC_ID)]
    assert wait_for(lambda: _znode(c, "ids") is None, timeout_s=30)
    # created again under the same name: another id, and the old one is unknown
    again = _create(c, "ids")
    assert again != topic_id
    assert fetch([topic_id])["responses"][0]["partitions"][0]["error_code"] == UNKNOWN_TOPIC_ID


def test_a_topic_written_without_an_id_gets_one_from_the_controller(ids_cluster):
    """A version 1 znode, as an older minikafka cluster (or Kafka before 2.8) wrote it."""
    from minikafka import Admin

    c = ids_cluster
    client = zk_client(c)
    try:
        client.create(layout.topic_config_path("legacy"), layout.encode_topic_config({}), makepath=True)
        client.create(layout.topic_path("legacy"), b'{"version":1,"partitions":{"0":[1,2,3]}}')
    finally:
        client.stop()
    assert wait_for(lambda: (_znode(c, "legacy") or {}).get("version") == 3, timeout_s=30)
    znode = _znode(c, "legacy")
    assert znode["partitions"] == {"0": [1, 2, 3]} and is_topic_id(znode["topic_id"])
    with Admin(c.bootstrap) as admin:
        assert wait_for(lambda: admin.describe_topics(["legacy"])[0].topic_id == znode["topic_id"], timeout_s=30)


def test_a_log_of_another_topic_id_is_refused(ids_cluster):
    """Kafka's InconsistentTopicIdException: a replica whose partition.metadata names
    another id (the topic was deleted and created again while the log stayed) is not
    loaded, and the broker says so in its log."""
    c = ids_cluster
    topic_id = _create(c, "stale", partitions=1)
    follower = 3
    path = Path(c.dir) / f"broker-{follower}" / "stale-0" / "partition.metadata"
    assert wait_for(path.exists, timeout_s=30)
    c.kill(follower)
    other = "EjRWeJCrze_-3LoJh2VDIQ"
    path.write_text(f"version: 0\ntopic_id: {other}")
    c.start(follower)
    broker_log = Path(c.dir) / f"broker-{follower}.log"

    def refused() -> bool:
        return broker_log.exists() and "INCONSISTENT_TOPIC_ID" in broker_log.read_text(errors="replace")
    assert wait_for(refused, timeout_s=60)
    text = broker_log.read_text(errors="replace")
    assert other in text and topic_id in text
    assert path.read_text() == f"version: 0\ntopic_id: {other}"  # its files left as they were
