"""Transactions in one partition: open transactions bound the last stable offset, markers
end them, aborted ones enter the index that read_committed fetches return, and all of it
is a function of the log (followers, restarts and truncation rebuild the same state)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.errors import InvalidProducerEpochError, InvalidRecordError, TransactionCoordinatorFencedError
from minikafka.log import cleaner
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, iter_records, split_batches
from minikafka.protocol.records.control import ABORT, COMMIT, encode_marker, read_marker
from minikafka.replication.partition import LeaderState, PartitionReplica

L, F = 1, 2
BIG = 1 << 30


def txn_batch(pid: int, seq: int, *values: str, epoch: int = 0, key: str | None = None) -> bytes:
    return encode_batch([(key.encode() if key else None, v.encode(), None, 0) for v in values],
                        producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def plain(*values: str, key: str | None = None) -> bytes:
    return encode_batch([(key.encode() if key else None, v.encode(), None, 0) for v in values])


def leader_alone() -> PartitionReplica:
    p = PartitionReplica("t", 0, L)
    p.become_leader(LeaderState(L, 0, (L,), (L,), 0, 1), 0)
    return p


def produce(p: PartitionReplica, records: bytes) -> int:
    res, _ = p.append_as_leader(records, 1, 1)
    return res.base_offset


def visible(p: PartitionReplica, offset: int = 0) -> list[str]:
    """What a read_committed consumer returns: records below the LSO minus aborted ones,
    applying the aborted list as Kafka's consumers do."""
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
        out += [r.value.decode() for r in iter_records(raw)]
    return out


def test_marker_encodes_kafkas_end_transaction_marker():
    raw = encode_marker(7, 3, True, 5, 1000)
    (h, body), = split_batches(raw)
    assert h.is_control and h.is_transactional and (h.producer_id, h.producer_epoch) == (7, 3)
    assert read_marker(h, body) == (COMMIT, 5)
    assert list(iter_records(raw)) == []  # consumers never see control records


def test_open_transaction_holds_the_lso_until_commit():
    p = leader_alone()
    produce(p, plain("a"))
    produce(p, txn_batch(7, 0, "t1", "t2"))
    produce(p, plain("b"))
    assert p.high_watermark == 4
    assert p.last_stable_offset == 1
    assert visible(p) == ["a"]
    res, _ = p.append_marker(7, 0, True, 0, 5)
    assert res.base_offset == 4
    assert p.last_stable_offset == p.high_watermark == 5
    assert visible(p) == ["a", "t1", "t2", "b"]
    assert p.producers.aborted == []


def test_aborted_transaction_is_indexed_and_skipped_by_read_committed():
    p = leader_alone()
    produce(p, txn_batch(7, 0, "x1"))
    produce(p, txn_batch(8, 0, "y1"))
    produce(p, txn_batch(7, 1, "x2"))
    p.append_marker(7, 0, False, 0, 5)
    assert p.last_stable_offset == 1  # producer 8's transaction is still open
    p.append_marker(8, 0, True, 0, 6)
    assert p.last_stable_offset == p.high_watermark == 5
    [a] = p.producers.aborted
    assert (a.producer_id, a.first_offset, a.last_offset) == (7, 0, 3)
    assert visible(p) == ["y1"]
    # read_uncommitted sees everything (but never the markers)
    assert [r.value.decode() for r in iter_records(p.read(0, BIG, for_follower=False))] == ["x1", "y1", "x2"]
    # a fetch starting after the aborted transaction's marker gets no aborted entry
    assert p.read_committed(4, BIG)[1] == []


def test_markers_are_fenced_by_producer_and_coordinator_epochs():
    p = leader_alone()
    produce(p, txn_batch(7, 0, "a", epoch=2))
    with pytest.raises(InvalidProducerEpochError):
        p.append_marker(7, 1, True, 0, 0)
    p.append_marker(7, 2, True, 4, 0)
    with pytest.raises(TransactionCoordinatorFencedError):
        p.append_marker(7, 2, False, 3, 0)


def test_a_producer_cannot_write_control_batches():
    p = leader_alone()
    with pytest.raises(InvalidRecordError):
        p.append_as_leader(encode_marker(7, 0, True, 0, 0), 1, 1)
    assert p.log_end_offset == 0


def test_an_epoch_bump_marker_lets_the_new_epoch_start_at_sequence_zero():
    p = leader_alone()
    produce(p, txn_batch(7, 0, "a", "b"))
    p.append_marker(7, 1, False, 0, 0)  # the coordinator fenced epoch 0 and aborted
    produce(p, txn_batch(7, 0, "c", epoch=1))
    with pytest.raises(InvalidProducerEpochError):
        produce(p, txn_batch(7, 2, "late", epoch=0))
    assert p.producers.ongoing == {7: 3}


def test_followers_and_restarts_rebuild_the_same_state():
    p = leader_alone()
    produce(p, txn_batch(7, 0, "x"))
    produce(p, txn_batch(8, 0, "y"))
    p.append_marker(7, 0, False, 0, 0)
    produce(p, txn_batch(9, 0, "z"))
    st_ = LeaderState(L, 0, (L, F), (L, F), 0, 1)
    f = PartitionReplica("t", 0, F)
    f.become_follower(st_, 0)
    f.append_as_follower(p.read(0, BIG, for_follower=True), p.high_watermark)
    restarted = PartitionReplica("t", 0, L, log=p.log)
    for r in (f, restarted):
        assert r.producers.ongoing == p.producers.ongoing == {8: 1, 9: 3}
        assert r.producers.aborted == p.producers.aborted
        assert r.producers.first_unstable_offset == 1


def test_truncation_below_a_marker_reopens_the_transaction():
    p = leader_alone()
    produce(p, txn_batch(7, 0, "x"))
    p.append_marker(7, 0, True, 0, 0)
    p.truncate_to(1)
    assert p.producers.ongoing == {7: 0}
    assert p.last_stable_offset == 0


def test_cleaner_keeps_markers_and_drops_aborted_records_first():
    log = PartitionLog(segment_bytes=1)  # one batch per segment
    p = PartitionReplica("t", 0, L, log=log)
    p.become_leader(LeaderState(L, 0, (L,), (L,), 0, 1), 0)
    produce(p, plain("v1", key="k"))
    produce(p, txn_batch(7, 0, "aborted", key="k"))
    p.append_marker(7, 0, False, 0, 0)
    produce(p, plain("other", key="j"))
    produce(p, plain("tail", key="z"))
    inp = p.clean_input(0, 0.0)
    assert inp is not None
    p.apply_clean(inp, cleaner.compute(inp, 0, BIG))
    kept = [(h.is_control, [r.value for r in iter_records(raw)]) for h, raw in
            split_batches(p.read(0, BIG, for_follower=True), validate=False)]
    # k's committed value survives (the aborted one never counts), the marker stays
    assert (False, [b"v1"]) in kept
    assert (True, []) in kept
    assert visible(p) == ["v1", "other", "tail"]


def test_cleaner_stops_at_the_lso():
    log = PartitionLog(segment_bytes=1)
    p = PartitionReplica("t", 0, L, log=log)
    p.become_leader(LeaderState(L, 0, (L,), (L,), 0, 1), 0)
    produce(p, txn_batch(7, 0, "open", key="k"))
    produce(p, plain("v2", key="k"))
    produce(p, plain("v3", key="k"))
    assert p.last_stable_offset == 0
    assert p.clean_input(0, 0.0) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["data", "commit", "abort", "plain"]), st.integers(0, 2)),
                min_size=1, max_size=30))
def test_read_committed_returns_exactly_the_committed_records(ops):
    """Against a naive reference: a record is visible to read_committed iff it is not
    transactional, or its transaction committed; nothing at or past the LSO is returned."""
    p = leader_alone()
    seq = {pid: 0 for pid in range(3)}
    open_values: dict[int, list[str]] = {pid: [] for pid in range(3)}
    committed: list[tuple[int, str]] = []  # (offset, value) of visible records
    for i, (op, pid) in enumerate(ops):
        if op == "data":
            off = produce(p, txn_batch(100 + pid, seq[pid], f"v{i}"))
            seq[pid] += 1
            open_values[pid].append((off, f"v{i}"))
        elif op == "plain":
            off = produce(p, plain(f"v{i}"))
            committed.append((off, f"v{i}"))
        elif open_values[pid] or op == "commit":
            p.append_marker(100 + pid, 0, op == "commit", 0, 0)
            if op == "commit":
                committed += open_values[pid]
            open_values[pid] = []
    lso = p.last_stable_offset
    opened = [off for vals in open_values.values() for off, _ in vals[:1]]
    assert lso == min([p.high_watermark, *opened])
    assert visible(p) == [v for off, v in sorted(committed) if off < lso]
