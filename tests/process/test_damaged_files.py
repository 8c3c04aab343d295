"""Damaged files on a disk-storage broker: detected at start, said in its log, and
recovered safely: the log is cut at the damage and fetched again from the leader."""
from __future__ import annotations

from pathlib import Path

import pytest

from minikafka import Admin, Producer
from minikafka.cluster.state import load
from minikafka.protocol.records.batch import encode_batch, read_header
from minikafka.rpc import call_sync
from process_helpers import wait_for
from replica_checks import replica_states, wait_identical

pytestmark = pytest.mark.process


def test_a_broker_restarted_with_damaged_files_recovers_from_the_leader(make_cluster):
    c = make_cluster(brokers=3, storage="disk")
    topic = "damaged"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3, assignment={0: [1, 2, 3]},
                           config={"segment.bytes": "4096"})
    wait_for(lambda: len(replica_states(c, topic, 0)) == 3, 30, message="three replicas")
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(200):  # one batch each: several segments of 4 KiB
            p.send(topic, f"record-{i:04d}".encode() * 4).result(30)
    # a second topic whose damage the CRC cannot see: a flipped byte of a base offset
    shifted = "damaged-offsets"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(shifted, partitions=1, replication_factor=3, assignment={0: [1, 2, 3]})
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(20):
            p.send(shifted, f"record-{i:04d}".encode()).result(30)
    # and a third with one replica, on broker 3: no other copy to fetch from
    only = "damaged-only-copy"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(only, partitions=1, replication_factor=1, assignment={0: [3]})
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(20):
            p.send(only, f"record-{i:04d}".encode()).result(30)
    wait_identical(c, topic, 1, lambda part: [1, 2, 3], timeout_s=60)
    wait_identical(c, shifted, 1, lambda part: [1, 2, 3], timeout_s=60)
    c.stop(3)  # a follower stops cleanly; then its files are damaged on disk
    data_dir = Path(load(c.dir).broker(3).data_dir)
    segments = sorted((data_dir / f"{topic}-0").glob("*.log"))
    assert len(segments) > 2
    middle = segments[1]
    raw = bytearray(middle.read_bytes())
    second = read_header(bytes(raw)).size
    raw[second + 70] ^= 0xFF  # a flipped byte inside the second batch of a middle segment
    middle.write_bytes(bytes(raw))
    (data_dir / f"{topic}-0" / "leader-epoch-checkpoint").write_text("not a checkpoint")
    (data_dir / "replication-offset-checkpoint").write_text("0\n9\n")
    last = sorted((data_dir / f"{shifted}-0").glob("*.log"))[-1]
    raw = bytearray(last.read_bytes())
    pos = 0
    while pos + read_header(bytes(raw), pos).size < len(raw):  # the last batch
        pos += read_header(bytes(raw), pos).size
    raw[pos + 3] ^= 0x01  # its base offset jumps by 2**32: the CRC does not cover it
    last.write_bytes(bytes(raw))
    only_segment = sorted((data_dir / f"{only}-0").glob("*.log"))[-1]
    raw = bytearray(only_segment.read_bytes())
    raw[3] ^= 0x01  # the first batch's base offset
    only_segment.write_bytes(bytes(raw))
    c.start(3)
    # it rejoins with the leader's records: identical replicas, the full ISR
    wait_identical(c, topic, 1, lambda part: [1, 2, 3], timeout_s=60)
    wait_for(lambda: replica_states(c, topic, 0)[1]["isr"] == [1, 2, 3] or
             sorted(replica_states(c, topic, 0)[1]["isr"]) == [1, 2, 3], 60, message="broker 3 back in the ISR")
    assert replica_states(c, topic, 0)[3]["log_end_offset"] == 200
    wait_identical(c, shifted, 1, lambda part: [1, 2, 3], timeout_s=60)
    assert replica_states(c, shifted, 0)[3]["log_end_offset"] == 20
    log = Path(load(c.dir).broker(3).log).read_text()
    assert "invalid batch" in log and "fetches them again from the leader" in log
    assert "leader-epoch-checkpoint is unreadable" in log
    assert "does not follow the log end offset" in log  # the shifted batch was cut, not served
    # the only copy is refused, not cut: offline, its file as it was, and said why
    assert f"{only}-0: invalid batch" in log and "holds the only copy" in log
    assert only_segment.read_bytes() == bytes(raw)
    answer = call_sync("127.0.0.1", c.brokers[3], "produce", {"acks": -1, "partitions": [
        {"topic": only, "partition": 0, "records": encode_batch([(None, b"v", None, 0)])}]}, raise_error=False)
    assert [p["error"] for p in answer["partitions"]] == ["KAFKA_STORAGE_ERROR"]
    assert "replication-offset-checkpoint is unreadable" in log
