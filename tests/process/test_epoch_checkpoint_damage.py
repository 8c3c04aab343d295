"""A follower whose leader-epoch-checkpoint was damaged while it was stopped (its "0 0"
edited to "E 0", E the leader's epoch: the case of issue 48): at start it finds the checkpoint at odds with the
leader epochs stamped in its batches, rebuilds it from them, says so, and after catching
up holds the leader's entries, so it would answer OffsetsForLeaderEpoch rightly as a leader."""
from __future__ import annotations

from pathlib import Path

import pytest

from minikafka import Admin, Producer
from minikafka.cluster.state import load
from minikafka.protocol.records.batch import encode_batch, read_header
from minikafka.rpc import call_sync
from process_helpers import wait_for
from replica_checks import leader_state, replica_states

pytestmark = pytest.mark.process


def test_a_follower_with_a_damaged_epoch_checkpoint_ends_with_the_leaders_entries(make_cluster):
    c = make_cluster(brokers=3, storage="disk")
    topic = "epoch-damage"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3, assignment={0: [1, 2, 3]})
    wait_for(lambda: len(replica_states(c, topic, 0)) == 3, 30, message="three replicas")
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(100):
            p.send(topic, f"epoch-0-{i}".encode()).result(30)
    wait_for(lambda: {b: st["log_end_offset"] for b, st in replica_states(c, topic, 0).items()} == {1: 100, 2: 100, 3: 100},
             30, message="every replica at offset 100")
    c.stop(3)
    # a new leader while broker 3 is away: broker 1 stops, broker 2 leads at a new epoch E
    c.stop(1)
    lead = wait_for(lambda: (st := leader_state(c, topic, 0)) and st["leader"] == 2 and st, 60, message="leader 2")
    epoch = lead["leader_epoch"]
    assert lead["epochs"] == [[0, 0], [epoch, 100]]
    checkpoint = Path(load(c.dir).broker(3).data_dir) / f"{topic}-0" / "leader-epoch-checkpoint"
    assert checkpoint.read_text() == "0\n1\n0 0\n"
    # the damage: broker 3's records put in the leader's epoch E, from offset 0. Unchecked, it
    # asks the leader where epoch E ends, is told its log end, truncates nothing, and never
    # records where E really starts: its epoch cache stays [(E, 0)]
    checkpoint.write_text(f"0\n1\n{epoch} 0\n")
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(100):
            p.send(topic, f"epoch-{epoch}-{i}".encode()).result(30)
    c.start(1)
    c.start(3)
    lead = wait_for(lambda: leader_state(c, topic, 0), 30, message="the leader")
    assert lead["epochs"] == [[0, 0], [epoch, 100]]

    def caught_up() -> bool:
        states = replica_states(c, topic, 0)
        return 3 in states and states[3]["log_end_offset"] == 200 and states[3]["epochs"] == lead["epochs"]

    wait_for(caught_up, 60, message="broker 3 caught up with the leader's epoch entries")
    log = Path(load(c.dir).broker(3).log).read_text()
    assert "leader-epoch-checkpoint disagrees with the log" in log and "rebuilt from the log's batches" in log
    wait_for(lambda: checkpoint.read_text() == f"0\n2\n0 0\n{epoch} 100\n", 30,
             message="the rebuilt and extended checkpoint on disk")


def test_a_leader_whose_epochs_cannot_be_rebuilt_from_its_batches_refuses_leadership(make_cluster):
    """The only copy's last batch says leader epoch 128 (a damaged byte the CRC does not
    cover): its checkpoint disagrees, and its batches cannot stand in for it, since the
    partition never had that epoch. The broker refuses to lead it, says why, and answers
    KAFKA_STORAGE_ERROR, leaving the files as they are."""
    c = make_cluster(brokers=1, storage="disk")
    topic = "epoch-damage-only-copy"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=1)
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(20):
            p.send(topic, f"record-{i}".encode()).result(30)
    c.stop(1)
    segment = sorted((Path(load(c.dir).broker(1).data_dir) / f"{topic}-0").glob("*.log"))[-1]
    raw = bytearray(segment.read_bytes())
    pos = 0
    while pos + read_header(bytes(raw), pos).size < len(raw):  # the last batch
        pos += read_header(bytes(raw), pos).size
    raw[pos + 15] |= 0x80  # the low byte of its partition leader epoch (bytes 12-15): 0 -> 128
    segment.write_bytes(bytes(raw))
    c.start(1)
    log_file = Path(load(c.dir).broker(1).log)
    wait_for(lambda: "holds the only copy" in log_file.read_text(), 30, message="the refusal in the broker's log")
    assert "has leader epoch 128, above the partition's current leader epoch" in log_file.read_text()
    answer = call_sync("127.0.0.1", c.brokers[1], "produce", {"acks": -1, "partitions": [
        {"topic": topic, "partition": 0, "records": encode_batch([(None, b"v", None, 0)])}]}, raise_error=False)
    assert [p["error"] for p in answer["partitions"]] == ["KAFKA_STORAGE_ERROR"]
    assert segment.read_bytes() == bytes(raw)
