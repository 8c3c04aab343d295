"""Parked requests wake when what they wait for happens, not when their wait runs out.

The cluster's followers park their fetches for ``replica.fetch.wait.max.ms`` = 5 s and
the consumers theirs for ``fetch.max.wait.ms`` = 5 s.  A record's acks=all round trip
on an idle cluster needs the leader to wake both parked follower fetches at its
append, and a consumer's parked fetch must wake at the high watermark's move.  A
missed wake-up shows as a wait of 5 s; the tests allow half of that, so they check the
mechanism, not a speed.  Both listeners: our clients over msgpack/HTTP and librdkafka
(confluent-kafka) over the Kafka listener.

The last test checks the Kafka listener's pipelining: while an acks=all produce waits
for its commit, the next produce request on the same connection is appended at once,
and the answers still leave in order.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
import uuid

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from minikafka.protocol.kafka import apis, frames
from minikafka.protocol.records.batch import encode_batch
from process_helpers import wait_for
from replica_checks import leader_state, replica_states

pytestmark = pytest.mark.process

WAIT_MS = 5_000
MISSED = WAIT_MS / 1000 / 2  # a round trip this long means a parked request slept its wait out


@pytest.fixture(scope="module")
def slow_waits(tmp_path_factory, request):
    """A 3-broker cluster whose parked follower fetches wait 5 s."""
    from process_helpers import TEST_BROKER_CONFIGS
    from process_helpers import start_cluster, stop_cluster

    dir = tmp_path_factory.mktemp("slow-waits") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3, broker_configs={**TEST_BROKER_CONFIGS,
                                                         "replica.fetch.wait.max.ms": str(WAIT_MS)})


def _topic(cluster) -> str:
    name = f"wake-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})

        def full_isr():
            (desc,) = admin.describe_topics([name])
            p = desc.partitions[0]
            return p.leader >= 0 and len(p.isr) == 3
        wait_for(full_isr, 30, message=f"{name} to have a leader and a full ISR")
    return name


def test_our_acks_all_record_and_consumer_wake_at_once(slow_waits):
    topic = _topic(slow_waits)
    tp = TopicPartition(topic, 0)
    arrived: dict[bytes, float] = {}
    stop = threading.Event()
    with Consumer(slow_waits.bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=WAIT_MS) as consumer, \
            Producer(slow_waits.bootstrap, acks="all", linger_ms=0) as producer:
        consumer.assign([tp])
        consumer.poll(timeout_ms=100)
        producer.send(topic, b"warm-up").result(timeout=30)  # metadata and producer id

        def read() -> None:
            while not stop.is_set():
                for r in consumer.poll(timeout_ms=200):
                    arrived.setdefault(r.value, time.monotonic())

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for i in range(3):
                time.sleep(0.3)  # idle: the follower and consumer fetches park
                value = f"record-{i}".encode()
                sent = time.monotonic()
                producer.send(topic, value).result(timeout=30)
                acked = time.monotonic() - sent
                assert acked < MISSED, f"acks=all took {acked:.2f} s: a parked follower fetch slept its wait out"
                wait_for(lambda: value in arrived, 30, interval_s=0.01, message="the record at the consumer")
                seen = arrived[value] - sent
                assert seen < MISSED, f"the consumer saw the record after {seen:.2f} s: its parked fetch " \
                                      "missed the high watermark's move"
        finally:
            stop.set()
            reader.join(10)


def test_librdkafka_acks_all_record_and_consumer_wake_at_once(slow_waits):
    from confluent_kafka import Consumer as CConsumer
    from confluent_kafka import Producer as CProducer
    from confluent_kafka import TopicPartition as CTP

    topic = _topic(slow_waits)
    producer = CProducer({"bootstrap.servers": slow_waits.kafka_bootstrap, "acks": "all", "linger.ms": 0})
    consumer = CConsumer({"bootstrap.servers": slow_waits.kafka_bootstrap, "group.id": f"g-{topic}",
                          "enable.auto.commit": False, "fetch.wait.max.ms": WAIT_MS})
    reports: list[tuple[object, float]] = []
    try:
        producer.produce(topic, b"warm-up", on_delivery=lambda err, msg: reports.append((err, time.monotonic())))
        producer.flush(30)
        assert reports and reports[0][0] is None
        consumer.assign([CTP(topic, 0, 1)])
        for i in range(3):
            consumer.poll(0.3)  # idle: the fetches park
            reports.clear()
            value = f"record-{i}".encode()
            sent = time.monotonic()
            producer.produce(topic, value, on_delivery=lambda err, msg: reports.append((err, time.monotonic())))
            while not reports and time.monotonic() - sent < 30:
                producer.poll(0.01)
            (err, at), = reports
            assert err is None
            assert at - sent < MISSED, f"acks=all took {at - sent:.2f} s: a parked follower fetch slept its wait out"
            msg = None
            while msg is None and time.monotonic() - sent < 30:
                msg = consumer.poll(0.01)
            assert msg is not None and not msg.error() and msg.value() == value
            seen = time.monotonic() - sent
            assert seen < MISSED, f"the consumer saw the record after {seen:.2f} s: its parked fetch missed " \
                                  "the high watermark's move"
    finally:
        consumer.close()


def test_a_new_partition_joins_the_follower_fetches_already_parked(slow_waits):
    """Every follower already has a fetch parked at every leader (a 3-partition topic
    spreads the leaders); a topic created now is in none of them.  Its first acks=all
    record must not wait for those fetches to run out: the follower calls a parked fetch
    off when a partition joins its fetcher."""
    spread = f"spread-{uuid.uuid4().hex[:8]}"
    with Admin(slow_waits.bootstrap) as admin:
        admin.create_topic(spread, partitions=3, replication_factor=3)
        wait_for(lambda: len({p.leader for p in admin.describe_topics([spread])[0].partitions} - {-1}) == 3, 30,
                 message="three leaders for the spread topic")
    with Producer(slow_waits.bootstrap, acks="all", linger_ms=0) as producer:
        producer.send(spread, b"warm-up").result(timeout=30)  # metadata, producer id, connections
        time.sleep(0.3)  # idle: the follower fetches park
        topic = _topic(slow_waits)
        sent = time.monotonic()
        producer.send(topic, b"first").result(timeout=30)
        acked = time.monotonic() - sent
    assert acked < MISSED, f"the new topic's first acks=all record took {acked:.2f} s: the followers " \
                           "fetched it only when their parked fetches ran out"


def _recv_frame(s: socket.socket) -> bytes:
    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf
    return exact(struct.unpack(">i", exact(4))[0])


def test_a_produce_waiting_for_its_commit_lets_the_next_one_on_its_connection_append(make_cluster):
    cluster = make_cluster(broker_configs={"replica.lag.time.max.ms": "60000"})
    topic = _topic(cluster)
    state = wait_for(lambda: leader_state(cluster, topic, 0), 30, message="the leader's replica state")
    leader = state["leader"]
    follower = next(b for b in state["replicas"] if b != leader)
    port = cluster.kafka_ports[leader]

    def produce(corr: int, value: bytes) -> bytes:
        batch = encode_batch([(None, value, None, int(time.time() * 1000))])
        return frames.encode_request(apis.PRODUCE, 9, corr, "t", {
            "transactional_id": None, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})

    def on_leader() -> dict:
        return replica_states(cluster, topic, 0, brokers=[leader]).get(leader, {})

    # In the ISR but fetching nothing: no commit until it is back.  Everything below
    # happens well within the ZooKeeper session timeout (6 s), which would drop it.
    cluster.kill(follower, "STOP")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(produce(1, b"first") + produce(2, b"second"))
            # both appended while the first still waits for its commit
            wait_for(lambda: on_leader().get("log_end_offset") == 2, 4,
                     message="the second produce to be appended while the first waits")
            assert on_leader()["high_watermark"] == 0
            cluster.resume(follower)
            answers = [frames.decode_response(apis.PRODUCE, 9, _recv_frame(s)) for _ in range(2)]
    finally:
        cluster.resume(follower)
    assert [corr for corr, _ in answers] == [1, 2], "answers leave in the order of the requests"
    offsets = [body["responses"][0]["partition_responses"][0] for _, body in answers]
    assert [(p["error_code"], p["base_offset"]) for p in offsets] == [(0, 0), (0, 1)]
