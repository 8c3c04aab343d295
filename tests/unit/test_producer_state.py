"""The idempotent producer's sequence rules, on the pure replication core."""
from __future__ import annotations

import pytest

from minikafka.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceNumberError,
)
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, read_header
from minikafka.replication.partition import LeaderState, PartitionReplica
from minikafka.replication.producer_state import BATCH_WINDOW, MAX_SEQUENCE, ProducerStateManager, next_sequence


def header(seq: int, n: int = 1, pid: int = 7, epoch: int = 0, base_offset: int = 0):
    raw = encode_batch([(None, b"v%d" % i, None, 1000 + i) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    from dataclasses import replace
    return replace(read_header(raw), base_offset=base_offset)


def appended(state: ProducerStateManager, seq: int, n: int, offset: int, **kw):
    h = header(seq, n, base_offset=offset, **kw)
    assert state.check(h) is None
    state.update(h)
    return h


def test_in_order_batches_are_appended_and_a_retry_is_a_duplicate():
    s = ProducerStateManager()
    appended(s, 0, 3, 0)
    appended(s, 3, 2, 3)
    dup = s.check(header(0, 3))
    assert (dup.first_offset, dup.last_offset) == (0, 2)
    dup = s.check(header(3, 2))
    assert (dup.first_offset, dup.last_offset) == (3, 4)
    assert s.describe() == [{"producer_id": 7, "producer_epoch": 0, "last_sequence": 4, "last_offset": 4,
                             "last_timestamp": 1001, "current_txn_start_offset": -1,
                             "coordinator_epoch": -1}]


def test_a_gap_is_out_of_order():
    s = ProducerStateManager()
    appended(s, 0, 3, 0)
    with pytest.raises(OutOfOrderSequenceNumberError, match="expected sequence 3, got 4"):
        s.check(header(4))
    with pytest.raises(OutOfOrderSequenceNumberError):
        s.check(header(1, 2))  # overlaps but is not one of the remembered batches


def test_an_unknown_producer_is_taken_at_any_sequence_then_held_to_it():
    """Kafka 2.5+ (KIP-360): a producer the partition has no state for (new here, expired,
    or its state lost with the log) starts wherever its sequence is; from then on a gap is
    OUT_OF_ORDER_SEQUENCE_NUMBER and a retry a duplicate."""
    s = ProducerStateManager()
    appended(s, 5, 2, 0)  # sequences 5-6, the first batch this partition sees of producer 7
    assert s.describe()[0]["last_sequence"] == 6
    with pytest.raises(OutOfOrderSequenceNumberError, match="expected sequence 7, got 9"):
        s.check(header(9))
    with pytest.raises(OutOfOrderSequenceNumberError, match="expected sequence 7, got 0"):
        s.check(header(0))  # sequence 0 is no longer special either
    dup = s.check(header(5, 2))
    assert (dup.first_offset, dup.last_offset) == (0, 1)
    appended(s, 7, 1, 2)


def test_an_unknown_producer_at_any_epoch_then_the_epoch_rules_apply():
    s = ProducerStateManager()
    appended(s, 40, 1, 0, epoch=3)
    with pytest.raises(InvalidProducerEpochError):
        s.check(header(41, epoch=2))  # older than the epoch the partition now knows
    with pytest.raises(OutOfOrderSequenceNumberError, match="must start at sequence 0"):
        s.check(header(41, epoch=4))  # a known producer's new epoch starts at 0
    appended(s, 0, 1, 1, epoch=4)
    assert s.describe()[0]["producer_epoch"] == 4


def test_a_producer_known_only_by_its_marker_must_start_at_zero():
    """A transaction marker gives the producer an epoch here without batches: its next
    batch of that epoch is held to sequence 0 (Kafka: the last sequence is -1)."""
    from minikafka.protocol.records.control import COMMIT, encode_marker

    s = ProducerStateManager()
    s.update(read_header(encode_marker(7, 0, True, 1, 1000)), (COMMIT, 1))
    with pytest.raises(OutOfOrderSequenceNumberError, match="expected sequence 0, got 3"):
        s.check(header(3))
    assert s.check(header(0)) is None


def test_epoch_bump_restarts_sequences_and_fences_the_old_epoch():
    s = ProducerStateManager()
    appended(s, 0, 2, 0, epoch=0)
    with pytest.raises(OutOfOrderSequenceNumberError, match="must start at sequence 0"):
        s.check(header(2, epoch=1))
    appended(s, 0, 1, 2, epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        s.check(header(2, epoch=0))  # the zombie with the old epoch
    assert s.describe()[0]["producer_epoch"] == 1


def test_only_the_last_five_batches_are_remembered():
    s = ProducerStateManager()
    for i in range(BATCH_WINDOW + 1):
        appended(s, i, 1, i)
    assert s.check(header(1)) is not None  # still in the window
    with pytest.raises(OutOfOrderSequenceNumberError):
        s.check(header(0))  # fell out of the window: no longer recognized


def test_sequences_wrap_at_int_max():
    assert next_sequence(MAX_SEQUENCE) == 0
    assert next_sequence(MAX_SEQUENCE - 1, 3) == 1
    s = ProducerStateManager()
    s.update(header(0, base_offset=0))
    s.producers[7].batches.clear()
    s.update(header(MAX_SEQUENCE - 1, 2, base_offset=1))  # sequences 2^31-2 .. 2^31-1
    assert s.check(header(0, base_offset=3)) is None


def test_batches_without_a_producer_id_are_not_tracked():
    s = ProducerStateManager()
    h = header(-1, pid=-1, epoch=-1)
    assert s.check(h) is None
    s.update(h)
    assert len(s) == 0


# -- through the partition replica ------------------------------------------------------
def leader() -> PartitionReplica:
    r = PartitionReplica("t", 0, 1)
    r.become_leader(LeaderState(leader=1, leader_epoch=0, isr=(1,), replicas=(1,), zk_version=0,
                                controller_epoch=1), now_ms=0)
    return r


def batch(seq: int, n: int = 2, pid: int = 9, epoch: int = 0) -> bytes:
    return encode_batch([(None, b"x", None, 5)] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_leader_answers_a_retried_batch_with_its_original_offsets_and_writes_it_once():
    r = leader()
    first, _ = r.append_as_leader(batch(0), required_acks=-1, min_insync_replicas=1)
    r.append_as_leader(batch(2), required_acks=-1, min_insync_replicas=1)
    again, eff = r.append_as_leader(batch(0), required_acks=-1, min_insync_replicas=1)
    assert (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset) == (0, 1)
    assert not eff.appended and r.log_end_offset == 4
    with pytest.raises(OutOfOrderSequenceNumberError):
        r.append_as_leader(batch(7), required_acks=-1, min_insync_replicas=1)
    assert r.log_end_offset == 4  # nothing stored


def test_state_follows_truncation_and_a_new_leader_dedupes_the_old_leaders_batches():
    old = leader()
    for seq in (0, 2, 4):
        old.append_as_leader(batch(seq), required_acks=1, min_insync_replicas=1)
    # a follower replicates everything, then becomes leader
    f = PartitionReplica("t", 0, 2)
    f.become_follower(LeaderState(leader=1, leader_epoch=0, isr=(1, 2), replicas=(1, 2), zk_version=0,
                                  controller_epoch=1), now_ms=0)
    f.needs_truncation = False
    f.append_as_follower(old.read(0, 1 << 20, for_follower=True), leader_hw=6)
    assert f.producers.describe()[0]["last_sequence"] == 5
    f.truncate_to(4)  # the last batch is cut: its sequences are forgotten too
    assert f.producers.describe()[0]["last_sequence"] == 3
    f.become_leader(LeaderState(leader=2, leader_epoch=1, isr=(2,), replicas=(1, 2), zk_version=1,
                                controller_epoch=1), now_ms=0)
    dup, _ = f.append_as_leader(batch(2), required_acks=1, min_insync_replicas=1)
    assert (dup.base_offset, dup.last_offset) == (2, 3)
    res, _ = f.append_as_leader(batch(4), required_acks=1, min_insync_replicas=1)  # the cut batch, retried
    assert (res.base_offset, res.last_offset) == (4, 5)


def test_producer_state_is_rebuilt_from_a_loaded_log():
    old = leader()
    old.append_as_leader(batch(0, pid=3), required_acks=1, min_insync_replicas=1)
    log = PartitionLog()
    from minikafka.protocol.records.batch import split_batches
    for h, raw in split_batches(old.read(0, 1 << 20, for_follower=True)):
        log.append(h, raw)
    r = PartitionReplica("t", 0, 1, log)
    assert r.producers.describe()[0]["producer_id"] == 3
