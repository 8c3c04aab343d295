"""read_committed on real brokers, with transaction markers written the way the
transaction coordinator writes them (WriteTxnMarkers): an open transaction holds the last
stable offset, a committed one appears whole, an aborted one never appears, for our
consumer, confluent-kafka (librdkafka) and kafka-python alike, and all of it survives a
SIGKILL of the leader (the new leader rebuilt the same state from its log)."""
from __future__ import annotations

import time
import urllib.request
import uuid

import pytest

from minikafka import Admin, Consumer, TopicPartition
from minikafka.protocol.records.batch import encode_batch
from minikafka.protocol.rpc.codec import pack, unpack
from minikafka.protocol.rpc.http import CLUSTER_CREDENTIAL_HEADER
from process_helpers import cluster_secret, wait_for

pytestmark = pytest.mark.process


def rpc(port: int, api: str, body: dict, secret: str | None = None) -> dict:
    headers = {"Content-Type": "application/msgpack"}
    if secret is not None:  # as a broker (the transaction coordinator) sends it
        headers[CLUSTER_CREDENTIAL_HEADER] = secret
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/{api}", data=pack(body), headers=headers)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return unpack(resp.read())


def leader_of(cluster, topic: str) -> int:
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    return d.partitions[0].leader


def txn(pid: int, seq: int, *values: str) -> bytes:
    return encode_batch([(None, v.encode(), None, 1_700_000_000_000) for v in values],
                        producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True)


def produce(cluster, topic: str, records: bytes) -> dict:
    answer = rpc(cluster.brokers[leader_of(cluster, topic)], "produce", {"acks": -1, "timeout_ms": 20000, "partitions": [
        {"topic": topic, "partition": 0, "records": records}]})
    (p,) = answer["partitions"]
    assert p["error"] == "NONE", p
    return p


def marker(cluster, topic: str, pid: int, committed: bool) -> None:
    port = cluster.brokers[leader_of(cluster, topic)]
    body = {"markers": [{"producer_id": pid, "producer_epoch": 0, "committed": committed, "coordinator_epoch": 0,
                         "partitions": [{"topic": topic, "partition": 0}]}]}
    # only brokers (holders of the cluster credential) write markers
    assert rpc(port, "write_txn_markers", body)["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    answer = rpc(port, "write_txn_markers", body, cluster_secret(cluster))
    assert "markers" in answer, answer
    (m,) = answer["markers"]
    assert [p["error"] for p in m["partitions"]] == ["NONE"], m


def ours(cluster, topic: str, isolation: str, expect: int) -> list[str]:
    out: list[str] = []
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest", isolation_level=isolation) as c:
        c.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + 30
        while len(out) < expect and time.monotonic() < deadline:
            out += [r.value.decode() for r in c.poll(timeout_ms=300)]
        out += [r.value.decode() for r in c.poll(timeout_ms=500)]  # nothing more may come
    return out


def librdkafka(cluster, topic: str, isolation: str, expect: int) -> list[str]:
    from confluent_kafka import Consumer as CKConsumer, TopicPartition as CKTp

    c = CKConsumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                    "isolation.level": isolation, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([CKTp(topic, 0, 0)])
        out: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(out) < expect:
            m = c.poll(0.3)
            if m is not None and m.error() is None:
                out.append(m.value().decode())
        end = time.monotonic() + 1
        while time.monotonic() < end:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                out.append(m.value().decode())
        return out
    finally:
        c.close()


def kafka_python(cluster, topic: str, expect: int) -> list[str]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTp

    c = KafkaConsumer(bootstrap_servers=cluster.kafka_bootstrap, isolation_level="read_committed",
                      auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=1500)
    try:
        c.assign([KTp(topic, 0)])
        c.seek_to_beginning()
        out: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(out) < expect:
            for batch in c.poll(timeout_ms=300).values():
                out += [r.value.decode() for r in batch]
        for batch in c.poll(timeout_ms=800).values():
            out += [r.value.decode() for r in batch]
        return out
    finally:
        c.close()


def lso(cluster, topic: str) -> int:
    answer = rpc(cluster.brokers[leader_of(cluster, topic)], "list_offsets", {"isolation_level": 1, "partitions": [
        {"topic": topic, "partition": 0, "timestamp": -1}]})
    return answer["partitions"][0]["offset"]


def test_read_committed_sees_committed_transactions_whole_and_aborted_ones_never(make_cluster):
    cluster = make_cluster(brokers=3)
    topic = f"rc-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    wait_for(lambda: leader_of(cluster, topic) >= 0, 30, message="a leader")
    port = cluster.brokers[leader_of(cluster, topic)]
    committed, aborted, still_open = (rpc(port, "init_producer_id", {})["producer_id"] for _ in range(3))

    produce(cluster, topic, txn(committed, 0, "c1", "c2"))        # offsets 0-1
    produce(cluster, topic, encode_batch([(None, b"plain", None, 1_700_000_000_000)]))  # 2
    produce(cluster, topic, txn(aborted, 0, "a1"))                # 3
    produce(cluster, topic, txn(committed, 2, "c3"))              # 4
    assert lso(cluster, topic) == 0  # the committed producer's transaction is still open
    assert ours(cluster, topic, "read_committed", 0) == []
    marker(cluster, topic, committed, True)                       # 5
    assert lso(cluster, topic) == 3  # now the aborted producer's open transaction bounds it
    marker(cluster, topic, aborted, False)                        # 6
    produce(cluster, topic, txn(still_open, 0, "o1"))             # 7: never ended
    produce(cluster, topic, encode_batch([(None, b"after", None, 1_700_000_000_000)]))  # 8
    assert lso(cluster, topic) == 7

    want = ["c1", "c2", "plain", "c3"]
    assert ours(cluster, topic, "read_committed", 4) == want
    assert ours(cluster, topic, "read_uncommitted", 7) == ["c1", "c2", "plain", "a1", "c3", "o1", "after"]
    assert librdkafka(cluster, topic, "read_committed", 4) == want
    assert librdkafka(cluster, topic, "read_uncommitted", 7) == ["c1", "c2", "plain", "a1", "c3", "o1", "after"]
    assert kafka_python(cluster, topic, 4) == want

    # The state is a function of the log: a new leader rebuilds it
    old = leader_of(cluster, topic)
    cluster.kill(old)
    wait_for(lambda: leader_of(cluster, topic) not in (-1, old), 60, message="a new leader")
    wait_for(lambda: lso(cluster, topic) == 7, 60, message="the new leader's LSO at the open transaction")
    assert ours(cluster, topic, "read_committed", 4) == want
    marker(cluster, topic, still_open, False)
    produce(cluster, topic, encode_batch([(None, b"last", None, 1_700_000_000_000)]))
    assert ours(cluster, topic, "read_committed", 6) == want + ["after", "last"]
    assert librdkafka(cluster, topic, "read_committed", 6) == want + ["after", "last"]
