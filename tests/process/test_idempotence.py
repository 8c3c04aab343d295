"""Idempotent producers on real brokers: a retried batch is written once, also by a new
leader after the old one was SIGKILLed; sequence gaps and fenced epochs are refused; a
producer the partition does not know (a topic deleted and created again) is taken at its
next sequence, as by Kafka 2.5+; producer ids come from blocks in
/latest_producer_id_block; Kafka clients with enable.idempotence get the same guarantees."""
from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections import Counter

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition, errors
from minikafka.protocol.rpc.codec import pack, unpack
from minikafka.protocol.records.batch import encode_batch
from minikafka.zk import layout
from process_helpers import wait_for

pytestmark = pytest.mark.process


def rpc(port: int, api: str, body: dict) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/{api}", data=pack(body),
                                 headers={"Content-Type": "application/msgpack"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return unpack(resp.read())


def new_topic(cluster, partitions=1, rf=3) -> str:
    name = f"idem-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions=partitions, replication_factor=rf, config={"min.insync.replicas": "2"})
    wait_for(lambda: describe(cluster, name).leader >= 0, 30, message="a leader")
    return name


def describe(cluster, topic):
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    return d.partitions[0]


def produce(cluster, broker_id: int, topic: str, batch: bytes, acks: int = -1) -> dict:
    answer = rpc(cluster.brokers[broker_id], "produce", {"acks": acks, "timeout_ms": 20000, "partitions": [
        {"topic": topic, "partition": 0, "records": batch}]})
    return answer["partitions"][0]


def batch(pid: int, seq: int, values: list[bytes], epoch: int = 0) -> bytes:
    return encode_batch([(None, v, None, 1_700_000_000_000) for v in values],
                        producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def values(cluster, topic: str, expect: int) -> list[bytes]:
    out = []
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + 30
        while len(out) < expect and time.monotonic() < deadline:
            out.extend(r.value for r in c.poll(timeout_ms=500))
        out.extend(r.value for r in c.poll(timeout_ms=300))  # anything beyond is a duplicate
    return out


def test_a_retried_batch_is_written_once_and_gaps_and_old_epochs_are_refused(cluster):
    topic = new_topic(cluster)
    leader = describe(cluster, topic).leader
    pid = rpc(cluster.brokers[leader], "init_producer_id", {})["producer_id"]
    first = produce(cluster, leader, topic, batch(pid, 0, [b"a", b"b"]))
    again = produce(cluster, leader, topic, batch(pid, 0, [b"a", b"b"]))
    assert first["error"] == again["error"] == "NONE"
    assert first["base_offset"] == again["base_offset"] == 0
    with urllib.request.urlopen(f"http://127.0.0.1:{cluster.brokers[leader]}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert any(line.startswith("minikafka_duplicate_batches_total ") and float(line.split()[1]) >= 1
               for line in metrics.splitlines())
    assert produce(cluster, leader, topic, batch(pid, 2, [b"c"]))["base_offset"] == 2
    gap = produce(cluster, leader, topic, batch(pid, 9, [b"x"]))
    assert gap["error"] == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    # a producer this partition has no state for starts at whatever sequence it carries (Kafka 2.5+)
    other = pid + 1_000_000
    unknown = produce(cluster, leader, topic, batch(other, 4, [b"u"]))
    assert (unknown["error"], unknown["base_offset"]) == ("NONE", 3)
    assert produce(cluster, leader, topic, batch(other, 6, [b"x"]))["error"] == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert produce(cluster, leader, topic, batch(pid, 0, [b"d"], epoch=1))["base_offset"] == 4  # epoch bump
    zombie = produce(cluster, leader, topic, batch(pid, 3, [b"x"], epoch=0))
    assert zombie["error"] == "INVALID_PRODUCER_EPOCH"
    assert values(cluster, topic, 5) == [b"a", b"b", b"c", b"u", b"d"]
    # the leader shows its producer; `topics describe --json` carries the same list
    producers = wait_for(lambda: describe(cluster, topic).producers, 10, message="producer state")
    assert producers == [{"producer_id": pid, "producer_epoch": 1, "last_sequence": 0, "last_offset": 4,
                          "last_timestamp": 1_700_000_000_000},
                         {"producer_id": other, "producer_epoch": 0, "last_sequence": 4, "last_offset": 3,
                          "last_timestamp": 1_700_000_000_000}]
    from process_helpers import run_cli

    r = run_cli("topics", "describe", topic, "--json", "--bootstrap-server", cluster.bootstrap)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["topics"][0]["partitions"][0]["producers"] == producers


def test_producer_ids_are_unique_across_brokers_and_blocks_live_in_zookeeper(cluster):
    ids = [rpc(cluster.brokers[b], "init_producer_id", {})["producer_id"] for b in (1, 2, 3) for _ in range(3)]
    assert len(set(ids)) == len(ids)
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.zk_connect, timeout=10)
    zk.start(10)
    try:
        block = json.loads(zk.get(layout.PRODUCER_ID_BLOCK)[0])
    finally:
        zk.stop()
        zk.close()
    assert block["version"] == 1 and block["broker"] in (1, 2, 3)
    assert int(block["block_end"]) - int(block["block_start"]) == 999
    assert max(ids) <= int(block["block_end"])
    # a transactional id is its transaction coordinator's: the other brokers answer NOT_COORDINATOR
    found: list[dict] = []
    wait_for(lambda: found.append(rpc(cluster.brokers[1], "find_coordinator", {"key": "tx", "key_type": 1}))
             or found[-1]["error"] == "NONE", 60, message="the transaction coordinator of 'tx'")
    coordinator = found[-1]["node_id"]
    for b in (1, 2, 3):
        if b != coordinator:
            assert rpc(cluster.brokers[b], "init_producer_id", {"transactional_id": "tx"})["error"] == "NOT_COORDINATOR"


def test_a_new_leader_dedupes_the_retry_of_a_batch_the_killed_leader_wrote(make_cluster):
    c = make_cluster(brokers=3)
    topic = new_topic(c)
    leader = describe(c, topic).leader
    pid = rpc(c.brokers[leader], "init_producer_id", {})["producer_id"]
    assert produce(c, leader, topic, batch(pid, 0, [b"a"]))["base_offset"] == 0
    # written and replicated (acks=1 answers first; wait until every replica has it),
    # then the leader dies before the producer hears back: the producer retries.
    assert produce(c, leader, topic, batch(pid, 1, [b"b", b"c"]), acks=1)["base_offset"] == 1
    wait_for(lambda: set(describe(c, topic).replica_leos.values()) == {3}, 30, message="the batch on every replica")
    c.kill(leader)
    new = wait_for(lambda: (lambda p: p.leader if p.leader not in (-1, leader) else None)(describe(c, topic)),
                   60, message="a new leader")
    retry = produce(c, new, topic, batch(pid, 1, [b"b", b"c"]))
    assert (retry["error"], retry["base_offset"]) == ("NONE", 1)
    assert produce(c, new, topic, batch(pid, 3, [b"d"]))["base_offset"] == 3
    assert values(c, topic, 4) == [b"a", b"b", b"c", b"d"]


def test_default_producer_writes_each_record_once_through_leader_kills(make_cluster):
    """Our Producer (acks=all: idempotent by default) keeps sending while the leader is
    SIGKILLed, twice (the first victim restarted in between): every acknowledged record
    is stored, none twice."""
    c = make_cluster(brokers=3)
    topic = new_topic(c)
    with Producer(c.bootstrap, acks="all", linger_ms=2, request_timeout_ms=4000, retry_backoff_ms=50) as p:
        futs = []
        victim = None
        for i in range(3000):
            futs.append(p.send(topic, b"%d" % i, partition=0))
            if i in (1000, 2000):
                if victim is not None:
                    c.start(victim)
                victim = describe(c, topic).leader
                c.kill(victim)
            if i % 200 == 0:
                time.sleep(0.01)
        p.flush()
        ok = [i for i, f in enumerate(futs) if f.exception(1) is None]
    c.start(victim)
    stored = values(c, topic, len(ok))
    counts = Counter(stored)
    assert not [v for v, n in counts.items() if n > 1], "duplicates"
    assert not set(b"%d" % i for i in ok) - set(counts), "acknowledged records lost"
    assert len(ok) >= 2500


def test_confluent_kafka_idempotent_producer_through_a_leader_kill(make_cluster):
    from confluent_kafka import Producer as CProducer

    c = make_cluster(brokers=3)
    topic = new_topic(c)
    acked: list[int] = []
    p = CProducer({"bootstrap.servers": c.kafka_bootstrap, "enable.idempotence": True, "linger.ms": 5,
                   "message.timeout.ms": 60000})
    for i in range(2000):
        p.produce(topic, str(i).encode(), partition=0,
                  on_delivery=lambda err, msg: acked.append(int(msg.value())) if err is None else None)
        p.poll(0)
        if i == 1000:
            p.flush(30)
            c.kill(describe(c, topic).leader)
    assert p.flush(90) == 0
    stored = values(c, topic, len(acked))
    counts = Counter(int(v) for v in stored)
    assert not [v for v, n in counts.items() if n > 1], "duplicates"
    assert set(acked) <= set(counts) and len(acked) == 2000


def recreate(cluster, topic: str) -> None:
    """Delete ``topic`` and create it again under the same name (a new topic id, empty)."""
    with Admin(cluster.bootstrap) as admin:
        old_id = admin.describe_topics([topic])[0].topic_id
        admin.delete_topic(topic)

    def created() -> bool:
        try:
            with Admin(cluster.bootstrap) as admin:
                admin.create_topic(topic, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
            return True
        except errors.TopicAlreadyExistsError:  # its deletion is still under way
            return False

    wait_for(created, 60, message=f"{topic} created again")
    wait_for(lambda: describe(cluster, topic).leader >= 0, 30, message="a leader of the new topic")
    with Admin(cluster.bootstrap) as admin:
        assert admin.describe_topics([topic])[0].topic_id != old_id


def test_confluent_kafka_goes_on_in_a_topic_deleted_and_created_again(cluster):
    """librdkafka's idempotent producer keeps its producer id, epoch and the partition's
    next sequence number across the deletion; the new, empty partition has no state for it
    and takes that sequence, as Kafka 2.5+ does (a leader that answers UNKNOWN_PRODUCER_ID
    instead makes librdkafka bump its epoch and start again at sequence 0)."""
    from confluent_kafka import Producer as CProducer

    topic = new_topic(cluster)
    reports: list[tuple[str | None, bytes]] = []
    p = CProducer({"bootstrap.servers": cluster.kafka_bootstrap, "enable.idempotence": True, "linger.ms": 5,
                   "message.timeout.ms": 60000})

    def send(tag: str) -> None:
        for i in range(5):
            p.produce(topic, f"{tag}{i}".encode(), partition=0,
                      on_delivery=lambda err, msg: reports.append((err and err.name(), msg.value())))
        assert p.flush(60) == 0

    send("old")
    (before,) = wait_for(lambda: describe(cluster, topic).producers, 10, message="producer state")
    assert before["last_sequence"] == 4
    recreate(cluster, topic)
    send("new")
    assert reports == [(None, f"{tag}{i}".encode()) for tag in ("old", "new") for i in range(5)]
    assert values(cluster, topic, 5) == [b"new%d" % i for i in range(5)]
    # the same producer id and epoch, sequences 5-9: taken as they came, no epoch bump to recover
    (after,) = wait_for(lambda: describe(cluster, topic).producers, 10, message="producer state")
    assert (after["producer_id"], after["producer_epoch"], after["last_sequence"], after["last_offset"]) == \
        (before["producer_id"], before["producer_epoch"], 9, 4)


def test_our_producer_goes_on_in_a_topic_deleted_and_created_again(cluster):
    topic = new_topic(cluster)
    with Producer(cluster.bootstrap, acks="all", linger_ms=0, retry_backoff_ms=50) as p:
        assert [p.send(topic, b"old%d" % i, partition=0).result(30).offset for i in range(5)] == list(range(5))
        recreate(cluster, topic)
        futs = [p.send(topic, b"new%d" % i, partition=0) for i in range(5)]
        assert [f.result(60).offset for f in futs] == list(range(5))
    assert values(cluster, topic, 5) == [b"new%d" % i for i in range(5)]
