"""Compaction on a real 3-broker cluster (disk storage): a compacted topic keeps the last
value per key on every replica, tombstones go after delete.retention.ms, Kafka's clients
(kcat) read a compacted log with its offset gaps, keyless records and DeleteRecords are
refused, __consumer_offsets is compacted, and a restarted broker reloads its cleaned
segments."""
from __future__ import annotations

import subprocess

import pytest

from minikafka import errors
from minikafka.client.sync import Admin, Consumer, Producer
from minikafka.client.types import TopicPartition

from process_helpers import wait_for
from test_metrics import scrape

pytestmark = pytest.mark.process

SEGMENT = 1024  # the smallest segment.bytes: many closed segments from little data
KEYS = 8


def _read_all(handle, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    with Consumer(handle.bootstrap, auto_offset_reset="earliest") as c:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        with Admin(handle.bootstrap) as admin:
            (desc,) = admin.describe_topics([topic])
        hw = desc.partitions[0].high_watermark
        out: list[tuple[int, bytes | None, bytes | None]] = []
        while c.position(tp) < hw:
            out += [(r.offset, r.key, r.value) for r in c.poll(500)]
        return out


def _produce(handle, topic: str, records) -> None:
    with Producer(handle.bootstrap, acks="all", linger_ms=0, batch_size=256) as p:
        futures = [p.send(topic, value, key=key) for key, value in records]
        p.flush()
        for f in futures:
            f.result(30)


def _cleaned_on_every_broker(handle, topic: str) -> bool:
    for b in (1, 2, 3):
        m = scrape(int(handle.endpoint(b).rsplit(":", 1)[1]))
        if m is None or not m.value("minikafka_log_cleaner_records_removed_total"):
            return False
    return True


def _sizes(handle, topic: str) -> list[int]:
    """Each broker's minikafka_log_size_bytes for the topic's partition 0; -1 where the
    broker does not answer or hosts no replica yet (a restarted broker gets its replicas
    from the controller's LeaderAndIsr once it has registered)."""
    sizes = []
    for b in (1, 2, 3):
        m = scrape(int(handle.endpoint(b).rsplit(":", 1)[1]))
        try:
            sizes.append(-1 if m is None else m.value("minikafka_log_size_bytes", topic=topic, partition=0))
        except KeyError:
            sizes.append(-1)
    return sizes


@pytest.fixture(scope="module")
def compacting(tmp_path_factory, request):
    from process_helpers import cluster_fixture

    dir = tmp_path_factory.mktemp("compaction") / "minikafka"
    handle = cluster_fixture(request, dir, brokers=3, storage="disk",
                              broker_configs={"log.cleaner.backoff.ms": "300"})
    with Admin(handle.bootstrap) as admin:
        common = {"cleanup.policy": "compact", "segment.bytes": str(SEGMENT), "min.cleanable.dirty.ratio": "0.01"}
        admin.create_topic("latest", partitions=1, replication_factor=3, config=common)
        admin.create_topic("forgetful", partitions=1, replication_factor=3,
                           config={**common, "delete.retention.ms": "0"})
    return handle


def test_a_compacted_topic_keeps_the_last_value_per_key_on_every_replica(compacting):
    records = [(b"key-%d" % (i % KEYS), b"value-%04d" % i) for i in range(400)]
    _produce(compacting, "latest", records)
    full = 400 * 40  # about 40 bytes per record before compaction
    wait_for(lambda: _cleaned_on_every_broker(compacting, "latest") and max(_sizes(compacting, "latest")) < full / 3,
             timeout_s=60, message="every replica compacted its log")
    got = _read_all(compacting, "latest")
    offsets = [o for o, _, _ in got]
    assert offsets == sorted(offsets) and len(got) < 400  # offsets kept, with gaps
    latest = {}
    for o, k, v in got:
        assert v == b"value-%04d" % o  # every record kept is the one written at its offset
        latest[k] = v
    assert latest == {b"key-%d" % k: b"value-%04d" % (392 + k) for k in range(KEYS)}

    # librdkafka (kcat) reads the compacted log through the Kafka listener, gaps and all
    r = subprocess.run(["kcat", "-b", compacting.kafka_bootstrap, "-C", "-t", "latest", "-o", "beginning", "-e",
                        "-f", "%o %k %s\\n"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [line.split() for line in r.stdout.splitlines()]
    assert [int(o) for o, _, _ in lines] == offsets
    assert {k: v for _, k, v in lines} == {k.decode(): v.decode() for k, v in latest.items()}


def test_tombstones_go_after_delete_retention_ms(compacting):
    _produce(compacting, "forgetful", [(b"gone", b"1"), (b"kept", b"1"), (b"gone", None)])
    _produce(compacting, "forgetful", [(b"filler-%d" % (i % 4), b"x" * 30) for i in range(200)])

    def keys() -> set:
        return {k for _, k, _ in _read_all(compacting, "forgetful")}
    wait_for(lambda: b"gone" not in keys(), timeout_s=60, message="the tombstone and the value it deleted are gone")
    assert b"kept" in keys()


def test_keyless_records_and_delete_records_are_refused(compacting):
    with Producer(compacting.bootstrap, acks="all", retries=0) as p:
        with pytest.raises(errors.InvalidRecordError, match="without key"):
            p.send("latest", b"no key").result(30)
    with Admin(compacting.bootstrap) as admin:
        got = admin.delete_records({TopicPartition("latest", 0): 1})
        assert isinstance(got[TopicPartition("latest", 0)], errors.PolicyViolationError)
        configs = admin.describe_configs("latest")
        assert configs["cleanup.policy"] == ("compact", "topic")
    r = subprocess.run(["kcat", "-b", compacting.kafka_bootstrap, "-P", "-t", "latest", "-X", "acks=all"],
                       input="no key\n", capture_output=True, text=True, timeout=60)
    assert "Broker failed to validate record" in r.stderr, r.stderr  # librdkafka words for INVALID_RECORD


def test_consumer_offsets_is_compacted(compacting):
    with Consumer(compacting.bootstrap, group_id="compaction-check", auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("latest", 0)])
        c.poll(1000)
        c.commit({TopicPartition("latest", 0): 5})
    with Admin(compacting.bootstrap) as admin:
        configs = admin.describe_configs("__consumer_offsets")
        assert configs["cleanup.policy"][0] == "compact"
        assert configs["segment.bytes"][0] == "104857600"
        # as Kafka's: commits keep the committing client's codec, whatever the broker's compression.type
        assert configs["compression.type"] == ("producer", "topic")


def test_a_restarted_broker_reloads_its_compacted_segments(compacting):
    before = _read_all(compacting, "latest")
    with Admin(compacting.bootstrap) as admin:
        (desc,) = admin.describe_topics(["latest"])
    follower = next(b for b in desc.partitions[0].replicas if b != desc.partitions[0].leader)
    compacting.kill(follower)
    compacting.start(follower)
    wait_for(lambda: _sizes(compacting, "latest")[follower - 1] > 0, timeout_s=60,
             message="the restarted follower reports its log")
    # the follower's reloaded log is its compacted one (not refetched in full), and it rejoins
    assert _sizes(compacting, "latest")[follower - 1] < 400 * 40 / 3
    def isr() -> int:
        with Admin(compacting.bootstrap) as admin:
            return len(admin.describe_topics(["latest"])[0].partitions[0].isr)
    wait_for(lambda: isr() == 3, timeout_s=60, message="the follower is back in the ISR")
    assert _read_all(compacting, "latest") == before


def test_max_compaction_lag_cleans_a_log_below_its_dirty_ratio(compacting):
    """min.cleanable.dirty.ratio 1.0: once a log has a cleaned part it is never dirty
    enough again; with max.compaction.lag.ms its new records are compacted all the same
    once the oldest of them is that old (KIP-354)."""
    config = {"cleanup.policy": "compact", "segment.bytes": str(SEGMENT), "min.cleanable.dirty.ratio": "1.0"}
    with Admin(compacting.bootstrap) as admin:
        admin.create_topic("lagged", partitions=1, replication_factor=3,
                           config={**config, "max.compaction.lag.ms": "2000"})
        admin.create_topic("unlagged", partitions=1, replication_factor=3, config=config)
    rounds = [[(b"key-%d" % (i % KEYS), b"round-%d-%04d" % (r, i)) for i in range(300)] for r in (1, 2)]
    for topic in ("lagged", "unlagged"):
        _produce(compacting, topic, rounds[0])
    # both logs get a cleaned part before round 2: were round 1 still all dirty when round 2
    # lands, the whole log would be dirty (ratio 1.0) and the cleaner would rightly take it.
    # A pass may come while round 1 is still being written (a busy machine): it cleans what
    # is closed by then, and the rest of round 1 stays dirty below the ratio, like round 2
    for topic in ("lagged", "unlagged"):
        wait_for(lambda: len(_read_all(compacting, topic)) < 300, timeout_s=60,
                 message=f"a cleaned part in the first round of {topic}")
    for topic in ("lagged", "unlagged"):
        _produce(compacting, topic, rounds[1])
    wait_for(lambda: len(_read_all(compacting, "lagged")) < 100, timeout_s=60,
             message="the second round compacted by max.compaction.lag.ms")
    assert len(_read_all(compacting, "unlagged")) >= 300  # below the ratio, without the lag: round 2 stays
    latest = {k: v for _, k, v in _read_all(compacting, "lagged")}
    assert latest == {b"key-%d" % k: b"round-2-%04d" % (299 - (299 - k) % KEYS) for k in range(KEYS)}
