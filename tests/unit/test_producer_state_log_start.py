"""Producer state across log-start moves (Kafka 2.5+, KIP-360): DeleteRecords and retention
delete batches, not producers.  A producer whose every batch is below the log start keeps
its sequence and epoch, an open transaction that began there keeps the LSO, followers that
follow the leader's log start keep the same state, and the state as of the log start
survives truncation and a restart (the producer snapshot).  Producers go only by
producer.id.expiration.ms."""
from __future__ import annotations

import pytest

from minikafka import config as cfg
from minikafka.errors import KafkaStorageError, OutOfOrderSequenceNumberError
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, iter_records, split_batches
from minikafka.protocol.records.control import ABORT, read_marker
from minikafka.replication.partition import LeaderState, PartitionReplica

L, F = 1, 2
BIG = 1 << 30
T0 = 1_700_000_000_000


def idem(pid: int, seq: int, n: int = 2, ts: int = T0, transactional: bool = False) -> bytes:
    return encode_batch([(None, b"v%d" % (seq + i), None, ts) for i in range(n)], producer_id=pid,
                        producer_epoch=0, base_sequence=seq, is_transactional=transactional)


def leader(isr: tuple[int, ...] = (L,)) -> PartitionReplica:
    p = PartitionReplica("t", 0, L)
    p.become_leader(LeaderState(L, 0, isr, (L, F), 0, 1), 0)
    return p


def produce(p: PartitionReplica, records: bytes) -> tuple[int, int]:
    res, _ = p.append_as_leader(records, 1, 1)
    return res.base_offset, res.last_offset


def state(p: PartitionReplica, pid: int) -> dict:
    return next(d for d in p.producers.describe() if d["producer_id"] == pid)


def visible(p: PartitionReplica, offset: int) -> list[str]:
    """What a read_committed consumer keeps from ``offset``: records below the LSO minus
    those of the aborted transactions the fetch names (as Kafka's consumers apply them)."""
    data, aborted = p.read_committed(offset, BIG)
    pending = sorted((a.first_offset, a.producer_id) for a in aborted)
    skipping: set[int] = set()
    out = []
    for h, raw in split_batches(data, validate=False):
        while pending and pending[0][0] <= h.last_offset:
            skipping.add(pending.pop(0)[1])
        if h.is_control:
            if read_marker(h, raw)[0] == ABORT:
                skipping.discard(h.producer_id)
            continue
        if h.is_transactional and h.producer_id in skipping:
            continue
        out += [r.value.decode() for r in iter_records(raw) if r.offset >= offset]
    return out


def test_delete_records_past_all_of_a_producers_batches_keeps_the_producer():
    p = leader()
    produce(p, idem(7, 0))
    produce(p, idem(7, 2))
    p.delete_records(-1)  # the log start passes every batch of producer 7
    assert p.log.log_start_offset == 4 and len(p.log) == 0
    assert state(p, 7)["last_sequence"] == 3
    # its retry of the last batch is still a duplicate, a gap still out of order ...
    assert produce(p, idem(7, 2)) == (2, 3)
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(p, idem(7, 9))
    # ... and its next batch follows on
    assert produce(p, idem(7, 4)) == (4, 5)


def test_a_committed_transaction_below_the_log_start_leaves_its_producer_able_to_go_on():
    """The issue's script: 10 records committed, DeleteRecords to 10 (the marker's offset),
    and the producer's next transaction continues its sequence."""
    p = leader()
    for seq in range(0, 10, 2):
        produce(p, idem(5, seq, transactional=True))
    p.append_marker(5, 0, True, 0, T0)
    p.delete_records(10)
    produce(p, idem(5, 10, transactional=True))
    p.append_marker(5, 0, True, 0, T0)
    assert visible(p, 10) == ["v10", "v11"]
    assert p.last_stable_offset == p.high_watermark == 14
    p.delete_records(-1)  # to the high watermark: every batch of the producer is gone
    assert state(p, 5)["last_sequence"] == 11
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(p, idem(5, 13, transactional=True))
    assert produce(p, idem(5, 12, transactional=True)) == (14, 15)


def test_an_open_transaction_below_the_log_start_stays_open_and_bounds_the_lso_at_the_start():
    p = leader()
    produce(p, idem(5, 0, transactional=True))  # offsets 0-1, transaction open
    produce(p, encode_batch([(None, b"plain", None, T0)]))  # offset 2
    p.delete_records(-1)
    assert p.producers.ongoing == {5: 0}
    assert p.last_stable_offset == 3  # the log start: nothing below it is readable anyway
    produce(p, idem(5, 2, transactional=True))  # offsets 3-4
    assert p.last_stable_offset == 3
    p.append_marker(5, 0, False, 0, T0)  # ABORT at 5
    assert p.last_stable_offset == p.high_watermark == 6
    assert [(a.first_offset, a.last_offset) for a in p.producers.aborted] == [(0, 5)]
    assert visible(p, 3) == []  # the aborted records at 3-4 are skipped


def test_retention_keeps_the_producers_of_the_segments_it_deletes():
    p = leader()
    p.log.segment_bytes = 1  # every batch gets a segment of its own
    for seq in range(0, 8, 2):
        produce(p, idem(7, seq, ts=T0))
    produce(p, idem(8, 0, ts=T0 + 1000))
    p.apply_retention(T0 + 2000, retention_ms=1500, retention_bytes=-1)  # producer 7's segments go
    assert p.log.log_start_offset == 8
    assert state(p, 7)["last_sequence"] == 7
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(p, idem(7, 1))
    assert produce(p, idem(7, 8)) == (10, 11)


def follower_of(p: PartitionReplica) -> PartitionReplica:
    f = PartitionReplica("t", 0, F)
    f.become_follower(LeaderState(L, 0, (L, F), (L, F), 0, 1), 0)
    f.needs_truncation = False
    return f


def test_an_in_sync_follower_keeps_the_same_state_and_accepts_the_next_batch_as_leader():
    p = leader(isr=(L, F))
    f = follower_of(p)
    produce(p, idem(7, 0))
    produce(p, idem(7, 2, transactional=True))
    f.append_as_follower(p.read(0, BIG, for_follower=True), p.high_watermark)
    p.update_follower_fetch(F, f.log_end_offset, 0)
    p.delete_records(-1)
    # the follower's next fetch carries the leader's log start
    f.append_as_follower(p.read(f.log_end_offset, BIG, for_follower=True), p.high_watermark, p.log.log_start_offset)
    assert f.log.log_start_offset == p.log.log_start_offset == 4
    assert f.producers.describe() == p.producers.describe()
    assert f.producers.ongoing == p.producers.ongoing == {7: 2}
    f.become_leader(LeaderState(F, 1, (F,), (L, F), 1, 1), 0)
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(f, idem(7, 1, transactional=True))
    assert produce(f, idem(7, 4, transactional=True)) == (4, 5)
    assert f.last_stable_offset == 4


def test_a_follower_that_restarts_its_log_at_the_leaders_start_has_no_state_for_the_producer():
    """Producer snapshots are not replicated (nor in Kafka): a replica that empties its log
    and starts at the leader's log start knows no producer that wrote below it; as leader
    it takes that producer's next batch at whatever sequence it carries (Kafka 2.5+), and
    holds it to its sequence from there."""
    p = leader()
    produce(p, idem(7, 0))
    p.delete_records(-1)
    f = follower_of(p)
    f.handle_out_of_range(p.log_end_offset, p.log.log_start_offset)
    assert f.log.log_start_offset == 2 and f.producers.describe() == []
    f.become_leader(LeaderState(F, 1, (F,), (L, F), 1, 1), 0)
    assert produce(f, idem(7, 2)) == (2, 3)
    assert state(f, 7)["last_sequence"] == 3
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(f, idem(7, 0))


def test_truncation_after_the_log_start_moved_rebuilds_from_the_state_at_the_log_start():
    p = leader()
    produce(p, idem(7, 0))
    produce(p, idem(8, 0))
    p.delete_records(-1)
    produce(p, idem(7, 2))  # offsets 4-5
    produce(p, idem(7, 4))  # offsets 6-7, to be cut
    p.truncate_to(6)
    assert state(p, 7)["last_sequence"] == 3
    assert state(p, 8)["last_sequence"] == 1
    assert produce(p, idem(7, 4)) == (6, 7)


def test_producers_expire_by_producer_id_expiration_ms_unless_a_transaction_is_open():
    p = leader()
    produce(p, idem(7, 0, ts=T0))
    produce(p, idem(8, 0, ts=T0, transactional=True))
    produce(p, idem(9, 0, ts=T0 + 5000))
    p.delete_records(-1)
    eff = p.expire_producers(T0 + 4999, expiration_ms=5000)
    assert sorted(d["producer_id"] for d in p.producers.describe()) == [7, 8, 9]
    eff = p.expire_producers(T0 + 5000, expiration_ms=5000)
    assert sorted(d["producer_id"] for d in p.producers.describe()) == [8, 9]
    assert eff.producer_snapshot_changed and [k for k, _ in eff.events] == ["producers_expired"]
    produce(p, idem(9, 2))
    p.truncate_to(6)  # a rebuild does not bring the expired producer back
    assert sorted(d["producer_id"] for d in p.producers.describe()) == [8, 9]
    assert produce(p, idem(7, 6)) == (6, 7)  # an expired producer is unknown: any sequence starts it again
    assert state(p, 7)["last_sequence"] == 7


def test_the_producer_snapshot_restores_the_producers_below_the_log_start():
    p = leader()
    produce(p, idem(7, 0, transactional=True))
    p.append_marker(7, 0, True, 3, T0)
    produce(p, idem(8, 0, transactional=True))  # offsets 3-4, open
    eff = p.delete_records(4)  # inside producer 8's batch
    assert eff.producer_snapshot_changed and p.producers.base_offset == 4
    text = p.producers.encode_base()
    # a restart: the log as loaded from disk starts at the checkpointed log start
    log = PartitionLog()
    log.truncate_fully_and_start_at(3)
    for h, raw in split_batches(p.read(4, BIG, for_follower=True)):
        log.append(h, raw)
    log.advance_log_start(4)
    restarted = PartitionReplica("t", 0, L, log=log, high_watermark=5)
    assert restarted.load_producer_snapshot(text)
    assert restarted.producers.describe() == p.producers.describe()
    assert restarted.producers.ongoing == p.producers.ongoing == {8: 3}
    assert restarted.last_stable_offset == p.last_stable_offset == 4


def test_a_snapshot_that_does_not_fit_the_log_is_ignored_and_garbage_is_a_storage_error():
    p = leader()
    produce(p, idem(7, 0))
    p.delete_records(-1)
    text = p.producers.encode_base()
    later = PartitionReplica("t", 0, L, log=PartitionLog(log_start_offset=10))
    assert not later.load_producer_snapshot(text)  # taken below this log's start
    assert later.producers.describe() == []
    with pytest.raises(KafkaStorageError):
        later.load_producer_snapshot("{not json")
    with pytest.raises(KafkaStorageError):
        later.load_producer_snapshot('{"version": 99, "offset": 10, "producers": []}')


def test_producer_id_expiration_ms_is_a_dynamic_broker_config_with_kafkas_default():
    c = cfg.BrokerConfig(broker_id=1, zookeeper_connect="z")
    assert c.get("producer.id.expiration.ms") == 86_400_000
    assert c.get("producer.id.expiration.check.interval.ms") == 600_000
    assert "producer.id.expiration.ms" in cfg.DYNAMIC_BROKER_CONFIGS
    assert cfg.validate_dynamic_broker_config({"producer.id.expiration.ms": 1000}) == {
        "producer.id.expiration.ms": "1000"}


def test_disk_storage_keeps_the_snapshot_and_the_log_start_of_an_emptied_log(tmp_path):
    """DeleteRecords to the high watermark leaves no batch: the empty active segment's file
    keeps the log start for a restart before log-start-offset-checkpoint is written, and
    the producer snapshot goes with it."""
    from minikafka.broker.storage import DiskStorage

    p = leader()
    s = DiskStorage(str(tmp_path), broker_id=1)
    for seq in (0, 2):
        _, eff = p.append_as_leader(idem(7, seq), 1, 1)
        s.append("t", 0, eff.appended, p.log)
    eff = p.delete_records(-1)
    assert eff.producer_snapshot_changed and eff.log_start_changed
    s.write_producer_snapshot("t", 0, p.producers.base_offset, p.producers.encode_base())
    s.delete_segments("t", 0, p.log)
    s.close()
    assert sorted(f.name for f in (tmp_path / "t-0").iterdir() if f.suffix in (".log", ".snapshot")) == [
        "00000000000000000004.log", "00000000000000000004.snapshot"]
    again = DiskStorage(str(tmp_path), broker_id=1)
    log, epochs = again.load("t", 0)  # no checkpoint read
    restarted = PartitionReplica("t", 0, L, log=log, epochs=epochs)
    assert restarted.log.log_start_offset == 4
    assert restarted.load_producer_snapshot(again.read_producer_snapshot("t", 0))
    assert restarted.producers.describe() == p.producers.describe()
