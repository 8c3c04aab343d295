"""Real third-party Kafka clients against the brokers' Kafka listeners.

kcat (librdkafka, Debian's package), confluent-kafka (librdkafka), kafka-python and
aiokafka talk to the cluster unchanged; what one writes the others and our own
clients read, through both protocols (one record format).
"""
from __future__ import annotations

import asyncio
import json
import socket
import struct
import subprocess
import time
import uuid

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from minikafka.protocol.kafka import apis, frames
from process_helpers import wait_for

pytestmark = pytest.mark.process

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def new_topic(cluster, partitions=3, rf=3, **config) -> str:
    name = f"k-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions=partitions, replication_factor=rf,
                           config={k.replace("_", "."): str(v) for k, v in config.items()})
    return name


def kcat(cluster, *args: str, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["kcat", "-b", cluster.kafka_bootstrap, *args], input=input, capture_output=True,
                          timeout=timeout)


def read_all_ours(cluster, topic: str, partitions: int, expect: int, timeout_s: float = 30) -> list:
    """Every record of ``topic`` through our own (msgpack) consumer."""
    out = []
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        while len(out) < expect and time.monotonic() < deadline:
            out.extend(c.poll(timeout_ms=500))
    return out


# -- kcat ------------------------------------------------------------------------------
def test_kcat_lists_brokers_leaders_and_isrs(cluster):
    topic = new_topic(cluster)
    md = wait_for(lambda: _kcat_metadata(cluster, topic), 30, message="kcat -L to show the topic with leaders")
    assert sorted(b["id"] for b in md["brokers"]) == [1, 2, 3]
    assert {b["name"] for b in md["brokers"]} == {f"127.0.0.1:{p}" for p in cluster.kafka_ports.values()}
    (t,) = [t for t in md["topics"] if t["topic"] == topic]
    assert len(t["partitions"]) == 3
    for p in t["partitions"]:
        assert p["leader"] in (1, 2, 3)
        assert sorted(r["id"] for r in p["replicas"]) == [1, 2, 3]
        assert sorted(r["id"] for r in p["isrs"]) == [1, 2, 3]


def _kcat_metadata(cluster, topic):
    r = kcat(cluster, "-L", "-J", "-t", topic)
    if r.returncode != 0:
        return None
    md = json.loads(r.stdout)
    ok = [t for t in md["topics"] if t["topic"] == topic and not t.get("error")
          and all(p["leader"] >= 0 for p in t["partitions"])]
    return md if ok else None


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_round_trip_with_each_codec(cluster, codec):
    topic = new_topic(cluster, partitions=1)
    lines = [f"key{i}:value-{i}-{codec}" for i in range(200)]
    r = kcat(cluster, "-P", "-t", topic, "-K", ":", "-z", codec, "-X", "acks=all",
             input=("\n".join(lines) + "\n").encode())
    assert r.returncode == 0, r.stderr.decode()
    r = kcat(cluster, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k=%s@%o\n")
    assert r.returncode == 0, r.stderr.decode()
    got = r.stdout.decode().splitlines()
    assert got == [f"key{i}=value-{i}-{codec}@{i}" for i in range(200)]
    # Our own clients read the same stored bytes (one record format on both protocols).
    ours = read_all_ours(cluster, topic, 1, 200)
    assert [(r.key, r.value) for r in ours] == [(f"key{i}".encode(), f"value-{i}-{codec}".encode()) for i in range(200)]


def test_kcat_producing_to_an_unknown_topic_creates_it(cluster):
    """auto.create.topics.enable (on by default, as in Kafka) with num.partitions and
    default.replication.factor; invalid names are refused and nothing is created."""
    topic = f"auto-{uuid.uuid4().hex[:8]}"
    r = kcat(cluster, "-P", "-t", topic, "-X", "acks=all", input=b"a\nb\nc\n")
    assert r.returncode == 0, r.stderr.decode()
    r = kcat(cluster, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert r.stdout.decode().splitlines() == ["a", "b", "c"]
    with Admin(cluster.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
        assert len(desc.partitions) == 1 and len(desc.partitions[0].replicas) == 1
    with _raw(cluster) as s:
        s.sendall(frames.encode_request(apis.METADATA, 9, 1, "t", {
            "topics": [{"name": "bad name!"}], "allow_auto_topic_creation": True}))
        _, body = frames.decode_response(apis.METADATA, 9, _recv_frame(s))
        assert body["topics"][0]["error_code"] == 17  # INVALID_TOPIC_EXCEPTION
    with Admin(cluster.bootstrap) as admin:
        assert "bad name!" not in admin.list_topics()


def test_our_producer_to_an_unknown_topic_creates_it_like_a_kafka_producer(cluster):
    """The same broker setting on the msgpack listener: our Producer names the topic it has
    no metadata for in a metadata request that allows auto-creation, instead of waiting
    max_block_ms (60 s) for a topic nobody creates."""
    import time

    from minikafka import Producer
    from minikafka.rpc import call_sync

    topic = f"auto-ours-{uuid.uuid4().hex[:8]}"
    start = time.monotonic()
    with Producer(cluster.bootstrap, acks="all", max_block_ms=30_000) as producer:
        md = producer.send(topic, b"first").result(timeout=30)
    assert (md.topic, md.partition, md.offset) == (topic, 0, 0)
    assert time.monotonic() - start < 25, "created at once, not after max_block_ms"
    host, port = cluster.bootstrap.split(",")[0].rsplit(":", 1)
    plain = call_sync(host, int(port), "metadata", {"topics": [f"not-asked-{topic}"]}, 10)
    assert plain["topics"][0]["error"] == "UNKNOWN_TOPIC_OR_PARTITION", "no creation unless the request allows it"
    with Admin(cluster.bootstrap) as admin:
        assert f"not-asked-{topic}" not in admin.list_topics()
        (desc,) = admin.describe_topics([topic])
        assert len(desc.partitions) == 1 and len(desc.partitions[0].replicas) == 1  # Kafka's defaults


# -- confluent-kafka -------------------------------------------------------------------
def test_confluent_acks_all_keeps_every_acknowledged_record_through_leader_kill(make_cluster):
    from confluent_kafka import Producer as CProducer

    c = make_cluster(brokers=3)
    topic = new_topic(c, partitions=1, rf=3, min_insync_replicas=2)
    wait_for(lambda: _leader(c, topic) in (1, 2, 3), 30, message="a leader")
    acked: list[int] = []
    failed: list[str] = []

    def report(err, msg):
        if err is None:
            acked.append(int(msg.value()))
        else:
            failed.append(str(err))

    p = CProducer({"bootstrap.servers": c.kafka_bootstrap, "acks": "all", "linger.ms": 5,
                   "message.timeout.ms": 60000, "retries": 1000, "retry.backoff.ms": 100})
    killed = None
    for i in range(3000):
        p.produce(topic, str(i).encode(), callback=report)
        p.poll(0)
        if i == 1000:
            p.flush(30)
            killed = _leader(c, topic)
            c.kill(killed, "KILL")
        if i % 100 == 0:
            time.sleep(0.02)
    assert p.flush(90) == 0
    assert killed is not None and len(acked) >= 2000, (len(acked), failed[:5])
    wait_for(lambda: _leader(c, topic) not in (-1, killed), 30, message="a new leader")
    stored = [int(r.value) for r in read_all_ours(c, topic, 1, len(set(acked)), timeout_s=60)]
    missing = set(acked) - set(stored)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:10]}"
    c.start(killed)


def _leader(c, topic) -> int:
    """Partition 0's leader as the cluster's metadata says, -1 when none is known."""
    try:
        with Admin(c.bootstrap) as admin:
            (desc,) = admin.describe_topics([topic])
        return desc.partitions[0].leader
    except Exception:
        return -1


def test_confluent_admin_changes_a_dynamic_broker_config(cluster):
    """IncrementalAlterConfigs on a BROKER resource (/config/brokers/2): broker 2 applies it
    live and DescribeConfigs names the source; a static setting is refused."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})

    def change(name: str, value: str | None, op: AlterConfigOpType) -> None:
        res = ConfigResource(ConfigResource.Type.BROKER, "2", incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op)])
        admin.incremental_alter_configs([res])[res].result(30)

    two = ConfigResource(ConfigResource.Type.BROKER, "2")

    def entry():
        return admin.describe_configs([two])[two].result(30)["message.max.bytes"]

    try:
        change("message.max.bytes", "2000000", AlterConfigOpType.SET)
        got = wait_for(lambda: (lambda e: e if e.value == "2000000" else None)(entry()), 30,
                       message="broker 2 applying the change")
        assert ConfigSource(got.source) == ConfigSource.DYNAMIC_BROKER_CONFIG and not got.is_read_only
        with pytest.raises(Exception, match="INVALID_REQUEST|dynamically"):
            change("replica.lag.time.max.ms", "100", AlterConfigOpType.SET)
    finally:
        change("message.max.bytes", None, AlterConfigOpType.DELETE)
    wait_for(lambda: entry().value != "2000000", 30, message="the change removed")


def test_confluent_admin_topics_partitions_and_configs(cluster):
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap})
    name = f"k-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 2, 3, config={"min.insync.replicas": "2"})])[name].result(30)
    bad = admin.create_topics([NewTopic(name, 2, 3)])[name]
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS|already exists"):
        bad.result(30)
    with pytest.raises(Exception, match="INVALID_REPLICATION_FACTOR|replication factor"):
        admin.create_topics([NewTopic(name + "-x", 1, 9)])[name + "-x"].result(30)

    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["min.insync.replicas"].value == "2"
    assert configs["max.message.bytes"].is_default
    admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[
        ConfigEntry("min.insync.replicas", "3", incremental_operation=AlterConfigOpType.SET)])])[res].result(30)
    assert admin.describe_configs([res])[res].result(30)["min.insync.replicas"].value == "3"
    with pytest.raises(Exception, match="INVALID_CONFIG|unknown topic config"):
        admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[
            ConfigEntry("no.such.setting", "1", incremental_operation=AlterConfigOpType.SET)])])[res].result(30)
    assert admin.describe_configs([res])[res].result(30)["min.insync.replicas"].value == "3"  # unchanged

    admin.create_partitions([NewPartitions(name, 4)])[name].result(60)

    def four_led_partitions():  # the brokers learn of the new partitions asynchronously, as in Kafka
        md = _kcat_metadata(cluster, name)
        return md if md and len(next(t for t in md["topics"] if t["topic"] == name)["partitions"]) == 4 else None

    wait_for(four_led_partitions, 30, message="4 led partitions")
    with pytest.raises(Exception, match="INVALID_PARTITIONS|must be larger"):
        admin.create_partitions([NewPartitions(name, 2)])[name].result(30)

    admin.delete_topics([name])[name].result(60)
    assert name not in admin.list_topics(timeout=10).topics


# -- kafka-python and aiokafka ----------------------------------------------------------
def test_kafka_python_reads_ours_and_we_read_kafka_python(cluster):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP

    topic = new_topic(cluster, partitions=1)
    with Producer(cluster.bootstrap, acks="all") as p:
        for i in range(50):
            p.send(topic, f"ours-{i}".encode(), key=f"k{i}".encode(), partition=0,
                   headers=[("h", f"{i}".encode())], timestamp_ms=1_700_000_000_000 + i)
        p.flush()
    kc = KafkaConsumer(bootstrap_servers=cluster.kafka_bootstrap, auto_offset_reset="earliest",
                       enable_auto_commit=False, consumer_timeout_ms=10000)
    kc.assign([KTP(topic, 0)])
    got = [m for _, m in zip(range(50), kc)]
    kc.close()
    assert [(m.offset, m.key, m.value, m.timestamp) for m in got] == \
        [(i, f"k{i}".encode(), f"ours-{i}".encode(), 1_700_000_000_000 + i) for i in range(50)]
    assert [list(m.headers) for m in got][:2] == [[("h", b"0")], [("h", b"1")]]

    # kafka-python 3 is idempotent by default: InitProducerId, then sequenced batches
    kp = KafkaProducer(bootstrap_servers=cluster.kafka_bootstrap, acks="all", compression_type="gzip")
    for i in range(50):
        kp.send(topic, value=f"theirs-{i}".encode(), key=b"x", partition=0, headers=[("src", b"kp")]).get(30)
    kp.close()
    ours = read_all_ours(cluster, topic, 1, 100)
    assert [r.value for r in ours[50:]] == [f"theirs-{i}".encode() for i in range(50)]
    assert ours[60].headers == [("src", b"kp")]


def test_aiokafka_round_trip_with_each_codec(cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as ATP

    topic = new_topic(cluster, partitions=1)

    async def run() -> list:
        for codec in CODECS:
            producer = AIOKafkaProducer(bootstrap_servers=cluster.kafka_bootstrap, acks="all",
                                        compression_type=None if codec == "none" else codec)
            await producer.start()
            try:
                for i in range(20):
                    await producer.send_and_wait(topic, f"{codec}-{i}".encode(), key=codec.encode(), partition=0,
                                                 headers=[("codec", codec.encode())])
            finally:
                await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.kafka_bootstrap, auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([ATP(topic, 0)])
            out = []
            while len(out) < 20 * len(CODECS):
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                for msgs in batch.values():
                    out.extend(msgs)
            return out
        finally:
            await consumer.stop()

    got = asyncio.run(run())
    assert [m.value for m in got] == [f"{c}-{i}".encode() for c in CODECS for i in range(20)]
    assert [m.offset for m in got] == list(range(20 * len(CODECS)))
    assert all(dict(m.headers)["codec"] == m.key for m in got)


# -- the high watermark rule -------------------------------------------------------------
def test_kafka_consumer_never_sees_records_at_or_above_the_high_watermark(make_cluster):
    from confluent_kafka import Consumer as CConsumer
    from confluent_kafka import TopicPartition as CTP

    # The paused follower must stay in the ISR (and registered) for the whole test.
    c = make_cluster(brokers=2, broker_configs={"replica.lag.time.max.ms": "60000",
                                                "zookeeper.session.timeout.ms": "30000"})
    topic = new_topic(c, partitions=1, rf=2)
    leader = wait_for(lambda: _leader(c, topic) if _leader(c, topic) in (1, 2) else None, 30, message="a leader")
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(10):
            p.send(topic, f"committed-{i}".encode(), partition=0)
    follower = 2 if leader == 1 else 1
    c.kill(follower, "STOP")
    try:
        with Producer(c.bootstrap, acks=1) as p:
            for i in range(10):
                p.send(topic, f"uncommitted-{i}".encode(), partition=0).result(30)
        cc = CConsumer({"bootstrap.servers": c.kafka_bootstrap, "group.id": "unused", "enable.auto.commit": False,
                        "auto.offset.reset": "earliest"})
        cc.assign([CTP(topic, 0, 0)])
        seen = []
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            m = cc.poll(0.5)
            if m is not None and not m.error():
                seen.append(m.value())
        low, high = cc.get_watermark_offsets(CTP(topic, 0), timeout=10)
        cc.close()
        assert seen == [f"committed-{i}".encode() for i in range(10)]
        assert (low, high) == (0, 10)  # the high watermark, not the leader's LEO of 20
    finally:
        c.resume(follower)


# -- protocol robustness ------------------------------------------------------------------
def _raw(cluster):
    port = next(iter(cluster.kafka_ports.values()))
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _recv_frame(s) -> bytes:
    size = struct.unpack(">i", _recv_exact(s, 4))[0]
    return _recv_exact(s, size)


def _recv_exact(s, n) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def test_api_versions_of_an_unknown_version_gets_v0_ranges(cluster):
    with _raw(cluster) as s:
        w = struct.pack(">hhi", 18, 99, 5) + struct.pack(">h", 1) + b"x" + b"\x00\x00\x00"
        s.sendall(struct.pack(">i", len(w)) + w)
        corr, body = frames.decode_response(apis.API_VERSIONS, 0, _recv_frame(s))
        assert corr == 5 and body["error_code"] == 35
        assert {k["api_key"] for k in body["api_keys"]} == set(apis.APIS)
        # ... and the connection stays usable: the same request at v3 succeeds.
        s.sendall(frames.encode_request(apis.API_VERSIONS, 3, 6, "t", {"client_software_name": "t"}))
        corr, body = frames.decode_response(apis.API_VERSIONS, 3, _recv_frame(s))
        assert corr == 6 and body["error_code"] == 0


@pytest.mark.parametrize("junk", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",                      # HTTP on the Kafka port
    struct.pack(">i", 12) + struct.pack(">hhi", 999, 0, 1) + b"\x00\x00\x00\x00",  # unknown API key
    struct.pack(">i", 10) + b"\x00\x03\x00\x01\x00\x00\x00\x01\xff\xf0",  # negative client id length
    struct.pack(">i", 2_000_000_000),                           # frame above socket.request.max.bytes
])
def test_bad_frames_close_the_connection_and_the_broker_keeps_serving(cluster, junk):
    with _raw(cluster) as s:
        s.sendall(junk)
        s.settimeout(10)
        assert s.recv(100) == b""  # closed by the broker
    with _raw(cluster) as s:
        s.sendall(frames.encode_request(apis.METADATA, 9, 1, "t", {"topics": None}))
        _, body = frames.decode_response(apis.METADATA, 9, _recv_frame(s))
        assert len(body["brokers"]) == 3


def test_pipelined_requests_are_answered_in_order(cluster):
    with _raw(cluster) as s:
        s.sendall(b"".join(frames.encode_request(apis.METADATA, v, 100 + v, "t", {"topics": []}) for v in range(10)))
        for v in range(10):
            corr, _ = frames.decode_response(apis.METADATA, v, _recv_frame(s))
            assert corr == 100 + v
