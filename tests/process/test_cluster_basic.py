"""The runnable mini Kafka cluster end to end: topics, placement, leaders, produce and
consume on a real ZooKeeper and 3 real broker processes."""
from __future__ import annotations

import msgpack
import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition, errors
from process_helpers import wait_for


@pytest.mark.process
def test_topic_placement_follows_the_rule_and_every_partition_has_a_leader(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("placement", partitions=3, replication_factor=3)
        (desc,) = admin.describe_topics(["placement"])
    brokers = sorted(cluster.brokers)
    n = len(brokers)
    for p in desc.partitions:
        assert p.replicas == [brokers[(p.partition + j) % n] for j in range(3)]
        assert p.leader == p.replicas[0], "the preferred replica leads a new partition"
        assert p.leader_epoch == 0
        assert sorted(p.isr) == sorted(p.replicas)


@pytest.mark.process
def test_ten_thousand_records_acks_1_come_back_in_order_with_their_offsets(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("ordered", partitions=3, replication_factor=3)
    sent: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: []}
    with Producer(cluster.bootstrap, acks=1, linger_ms=5) as producer:
        futures = [(i, producer.send("ordered", f"value-{i}".encode(), key=f"key-{i % 97}".encode())) for i in range(10_000)]
        producer.flush()
        for i, fut in futures:
            md = fut.result(timeout=30)
            sent[md.partition].append((md.offset, f"value-{i}".encode()))
    for p, entries in sent.items():
        offsets = [o for o, _ in entries]
        assert offsets == list(range(len(entries))), f"partition {p}: offsets are 0..n-1 in send order"
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as consumer:
        tps = [TopicPartition("ordered", p) for p in range(3)]
        consumer.assign(tps)
        got: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: []}

        def all_read() -> bool:
            for r in consumer.poll(timeout_ms=500):
                got[r.partition].append((r.offset, r.value))
            return sum(len(v) for v in got.values()) >= 10_000

        wait_for(all_read, timeout_s=60, message="the consumer did not read back 10,000 records")
    assert got == sent


@pytest.mark.process
def test_bad_topic_requests_get_kafka_errors_and_create_nothing(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("errs", partitions=1, replication_factor=1)
        with pytest.raises(errors.TopicAlreadyExistsError):
            admin.create_topic("errs", partitions=1, replication_factor=1)
        with pytest.raises(errors.InvalidReplicationFactorError):
            admin.create_topic("too-wide", partitions=1, replication_factor=4)
        with pytest.raises(errors.InvalidTopicExceptionError):
            admin.create_topic("bad name!", partitions=1, replication_factor=1)
        with pytest.raises(errors.InvalidConfigError):
            admin.create_topic("bad-config", partitions=1, replication_factor=1, config={"no.such.config": "1"})
        assert "too-wide" not in admin.list_topics()
        assert "bad-config" not in admin.list_topics()
    with Consumer(cluster.bootstrap) as consumer:
        # Like Kafka's consumer: an assigned partition of an unknown topic yields nothing
        # (metadata is retried); the error itself is tested on the wire below.
        consumer.assign([TopicPartition("no-such-topic", 0)])
        assert consumer.poll(timeout_ms=300) == []


def _post(cluster, api: str, body: bytes) -> dict:
    import urllib.request
    port = cluster.brokers[1]
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/{api}", data=body,
                                 headers={"Content-Type": "application/msgpack"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return msgpack.unpackb(resp.read(), raw=False, strict_map_key=False)


def _leader_port(cluster, topic: str, partition: int) -> int:
    with Admin(cluster.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return cluster.brokers[desc.partitions[partition].leader]


@pytest.mark.process
def test_malformed_requests_are_answered_with_errors_and_change_nothing(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("raw", partitions=1, replication_factor=3)
    with Producer(cluster.bootstrap, acks="all") as producer:
        producer.send("raw", b"one").result(timeout=30)

    def leo_and_hw() -> tuple:
        with Admin(cluster.bootstrap) as admin:
            (desc,) = admin.describe_topics(["raw"])
        p = desc.partitions[0]
        return p.high_watermark, tuple(sorted(p.replica_leos.items()))

    before = leo_and_hw()
    assert _post(cluster, "metadata", b"\xc1not msgpack")["error"] == "INVALID_REQUEST"
    assert _post(cluster, "no_such_api", msgpack.packb({}))["error"] == "UNSUPPORTED_VERSION"
    r = _post(cluster, "produce", msgpack.packb({"acks": 1, "partitions": [{"topic": "raw", "partition": 0}]}))
    assert r["error"] == "INVALID_REQUEST" and "records" in r["message"]
    r = _post(cluster, "produce", msgpack.packb({"acks": 7, "partitions": []}))
    assert r["error"] == "INVALID_REQUEST"
    r = _post(cluster, "fetch", msgpack.packb({"partitions": [{"topic": "raw", "partition": 0, "fetch_offset": -5}]}))
    assert r["error"] == "INVALID_REQUEST" and "fetch_offset" in r["message"]

    import urllib.request
    leader = _leader_port(cluster, "raw", 0)

    def post_leader(api: str, body: dict) -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{leader}/v1/{api}", data=msgpack.packb(body),
                                     headers={"Content-Type": "application/msgpack"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return msgpack.unpackb(resp.read(), raw=False, strict_map_key=False)

    r = post_leader("fetch", {"max_wait_ms": 0, "partitions": [{"topic": "raw", "partition": 0, "fetch_offset": 99}]})
    assert r["partitions"][0]["error"] == "OFFSET_OUT_OF_RANGE"
    r = post_leader("fetch", {"max_wait_ms": 0, "partitions": [{"topic": "raw", "partition": 7, "fetch_offset": 0}]})
    assert r["partitions"][0]["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    r = post_leader("produce", {"acks": 1, "partitions": [{"topic": "raw", "partition": 0, "records": b"\x00" * 60}]})
    assert r["partitions"][0]["error"] == "CORRUPT_MESSAGE"
    from minikafka.protocol.records.batch import encode_batch
    good = bytearray(encode_batch([(None, b"x", None, 1)]))
    good[-1] ^= 0xFF  # flip a bit in the records: CRC mismatch
    r = post_leader("produce", {"acks": 1, "partitions": [{"topic": "raw", "partition": 0, "records": bytes(good)}]})
    assert r["partitions"][0]["error"] == "CORRUPT_MESSAGE"
    big = msgpack.packb({"acks": 1, "partitions": [{"topic": "raw", "partition": 0, "records": b"\x00" * (101 * 1024 * 1024)}]})
    try:
        r = post_leader("produce", msgpack.unpackb(big))
        assert r["error"] == "INVALID_REQUEST"
    except urllib.error.HTTPError as exc:
        assert exc.code == 413
        assert msgpack.unpackb(exc.read())["error"] == "INVALID_REQUEST"
    assert leo_and_hw() == before, "bad requests changed nothing stored"
    assert _post(cluster, "api_versions", msgpack.packb({}))["error"] == "NONE", "the broker keeps serving"


@pytest.mark.process
def test_describe_json_reports_every_replica_and_log_checksums(cluster):
    import json

    from process_helpers import run_cli
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("described", partitions=2, replication_factor=3)
    with Producer(cluster.bootstrap, acks="all") as producer:
        for i in range(20):
            producer.send("described", f"v{i}".encode(), partition=i % 2)
        producer.flush()

    def agreed():
        out = run_cli("topics", "describe", "described", "--json", "--bootstrap-server", cluster.bootstrap)
        assert out.returncode == 0, out.stderr
        parts = json.loads(out.stdout)["topics"][0]["partitions"]
        ok = all(p["high_watermark"] == 10 and p["replicas_agree"] and len(p["replica_checksums"]) == 3
                 and set(p["replica_leos"].values()) == {10} for p in parts)
        return parts if ok else None

    parts = wait_for(agreed, timeout_s=20, message="every replica at LEO 10 with equal checksums")
    assert {p["checksum_upto"] for p in parts} == {10}


@pytest.mark.process
def test_send_many_writes_records_in_order_with_keys_and_rejects_mismatched_keys(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("bulk", partitions=2, replication_factor=3)
    values = [f"v{i}".encode() for i in range(5000)]
    keys = [f"k{i % 13}".encode() for i in range(5000)]
    with Producer(cluster.bootstrap, acks="all") as producer:
        with pytest.raises(ValueError, match="5000 values but 2 keys"):
            producer.send_many("bulk", values, keys=keys[:2])
        futures = producer.send_many("bulk", values, keys=keys)
        unkeyed = producer.send_many("bulk", [b"x", b"y"], partition=1)
        producer.flush()
        metas = [f.result(timeout=30) for f in futures]
        assert [f.result(timeout=30).partition for f in unkeyed] == [1, 1]
    by_partition: dict[int, list[tuple[int, bytes, bytes]]] = {0: [], 1: []}
    for m, k, v in zip(metas, keys, values):
        by_partition[m.partition].append((m.offset, k, v))
    assert all(len(v) > 0 for v in by_partition.values()), "13 keys spread over both partitions"
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("bulk", 0), TopicPartition("bulk", 1)])
        got: dict[int, list[tuple[int, bytes, bytes]]] = {0: [], 1: []}

        def all_read() -> bool:
            for r in consumer.poll(timeout_ms=500):
                got[r.partition].append((r.offset, r.key, r.value))
            return sum(len(v) for v in got.values()) >= 5002

        wait_for(all_read, timeout_s=60, message="the consumer did not read back 5,002 records")
    assert got[0] == by_partition[0]
    assert got[1][:len(by_partition[1])] == by_partition[1]
    assert [v for _, _, v in got[1][len(by_partition[1]):]] == [b"x", b"y"]


@pytest.mark.process
def test_an_idempotent_producer_with_five_batches_in_flight_keeps_the_partition_order(cluster):
    # Small batches, so that several of one partition are in flight at once; a batch that
    # reaches the leader before its predecessor is refused by its sequence number and sent
    # again, so the log holds every record once, in send order.
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("inflight", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    n = 20_000
    with Producer(cluster.bootstrap, acks="all", batch_size=1024, linger_ms=0,
                  max_in_flight_requests_per_connection=5) as producer:
        futures = producer.send_many("inflight", [b"%06d" % i for i in range(n)])
        producer.flush()
        offsets = [f.result(timeout=60).offset for f in futures]
    assert offsets == list(range(n)), "offsets follow the send order"
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("inflight", 0)])
        got: list[bytes] = []

        def all_read() -> bool:
            got.extend(r.value for r in consumer.poll(timeout_ms=500))
            return len(got) >= n

        wait_for(all_read, timeout_s=60, message="the consumer did not read back every record")
    assert got == [b"%06d" % i for i in range(n)]


@pytest.mark.process
def test_poll_batches_reads_what_poll_reads_and_moves_the_positions_alike(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("batched", partitions=2, replication_factor=3)
    values = [f"v{i}".encode() for i in range(3000)]
    keys = [f"k{i % 7}".encode() for i in range(3000)]
    with Producer(cluster.bootstrap, acks="all", linger_ms=5) as producer:
        producer.send_many("batched", values, keys=keys)
        producer.flush()
    tps = [TopicPartition("batched", 0), TopicPartition("batched", 1)]

    def read(use_batches: bool) -> tuple[dict, dict, list]:
        got: dict[int, list[tuple[int, bytes, bytes]]] = {0: [], 1: []}
        batch_sizes = []
        with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign(tps)

            def all_read() -> bool:
                if use_batches:
                    for b in consumer.poll_batches(timeout_ms=500):
                        batch_sizes.append(len(b))
                        table = b.to_arrow()
                        assert table.column("value").to_pylist() == b.values()
                        got[b.partition].extend(zip(table.column("offset").to_pylist(), b.keys(), b.values()))
                else:
                    for r in consumer.poll(timeout_ms=500):
                        got[r.partition].append((r.offset, r.key, r.value))
                return sum(len(v) for v in got.values()) >= 3000

            wait_for(all_read, timeout_s=60, message="the consumer did not read back 3,000 records")
            positions = {tp.partition: consumer.position(tp) for tp in tps}
        return got, positions, batch_sizes

    by_record, positions, _ = read(False)
    by_batch, batch_positions, sizes = read(True)
    assert by_batch == by_record
    assert batch_positions == positions == {p: len(by_record[p]) for p in (0, 1)}
    assert max(sizes) > 1, "send_many packs many records per batch"


@pytest.mark.process
def test_wakeup_cuts_a_poll_short_and_an_interrupted_poll_gives_its_records_back(cluster):
    import asyncio
    import signal
    import threading
    import time

    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("woken", partitions=1, replication_factor=3)
    tp = TopicPartition("woken", 0)
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert consumer.poll(timeout_ms=200) == []  # empty topic: the position is resolved (0)
        # wakeup from another thread ends a long poll at once, with nothing handed out
        threading.Timer(0.3, consumer.wakeup).start()
        start = time.monotonic()
        with pytest.raises(errors.WakeupError):
            consumer.poll(timeout_ms=20000)
        assert time.monotonic() - start < 10
        assert consumer.poll(timeout_ms=100) == []  # one wakeup, one WakeupError
        consumer.wakeup()  # with no poll running: the next poll raises
        with pytest.raises(errors.WakeupError):
            consumer.poll(timeout_ms=100)

        with Producer(cluster.bootstrap, acks="all") as producer:
            producer.send_many("woken", [b"a", b"b", b"c"])
            producer.flush()
        assert consumer.position(tp) == 0
        # Ctrl-C lands while the caller waits, and the poll hands out records anyway:
        # they are put back, so a commit after the interrupt does not pass them
        core = consumer._core
        real_poll = core.poll

        async def poll_interrupted_on_the_way(timeout_ms=0, max_records=None):
            signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
            await asyncio.sleep(0.5)  # the caller takes the signal while it waits
            return await real_poll(5000, max_records)

        def interrupt(signum, frame):
            raise KeyboardInterrupt

        old = signal.signal(signal.SIGUSR1, interrupt)
        core.poll = poll_interrupted_on_the_way
        try:
            with pytest.raises(KeyboardInterrupt):
                consumer.poll(timeout_ms=5000)
        finally:
            core.poll = real_poll
            signal.signal(signal.SIGUSR1, old)
        assert consumer.position(tp) == 0
        got: list[bytes] = []
        wait_for(lambda: got.extend(r.value for r in consumer.poll(timeout_ms=500)) or len(got) >= 3,
                 timeout_s=30, message="the records put back were not read again")
        assert got == [b"a", b"b", b"c"]
