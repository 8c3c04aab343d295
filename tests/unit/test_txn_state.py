"""The transaction coordinator's core: the state machine of a transactional id and the
records of __transaction_state (minikafka.transactions)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.errors import (
    ConcurrentTransactionsError,
    CorruptMessageError,
    InvalidProducerIdMappingError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ProducerFencedError,
)
from minikafka.transactions import records as rec
from minikafka.transactions.state import (
    MAX_EPOCH,
    TRANSITIONS,
    Effects,
    TransactionMetadata,
    TxnRecord,
    TxnState,
    check_timeout,
)

S = TxnState
A, B = ("a", 0), ("b", 1)


def write(meta: TransactionMetadata, eff: Effects) -> Effects:
    """Play the shell: the record is written, so it is the state now."""
    assert eff.error is None, eff.error
    if eff.write is not None:
        meta.written()
    return eff


def initialized(pid: int = 7, timeout: int = 60000) -> TransactionMetadata:
    m = TransactionMetadata.new("t", pid, timeout, now=0)
    write(m, m.init_producer_id(timeout, None, now=1))
    return m


def ongoing(parts=(A,)) -> TransactionMetadata:
    m = initialized()
    write(m, m.add_partitions(7, 0, frozenset(parts), now=10))
    return m


# -- the table --------------------------------------------------------------------

def test_every_state_has_its_previous_states():
    assert set(TRANSITIONS) == set(TxnState)
    assert TRANSITIONS[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE}
    assert TRANSITIONS[S.COMPLETE_COMMIT] == {S.PREPARE_COMMIT}
    assert [s.id for s in TxnState] == [0, 1, 2, 3, 4, 5, 6, 7]  # Kafka's bytes
    assert [s.label for s in TxnState][:3] == ["Empty", "Ongoing", "PrepareCommit"]


# -- InitProducerId ------------------------------------------------------------------

def test_first_init_writes_empty_with_epoch_0():
    m = TransactionMetadata.new("t", 7, 60000, now=0)
    eff = m.init_producer_id(60000, None, now=5)
    assert eff.write == TxnRecord(7, 0, 60000, S.EMPTY, frozenset(), -1, 5)
    assert m.record.producer_epoch == -1 and m.pending is not None  # not yet written
    m.written()
    assert (m.producer_id, m.producer_epoch, m.state) == (7, 0, S.EMPTY)


def test_a_failed_write_changes_nothing():
    m = initialized()
    before = m.record
    m.add_partitions(7, 0, frozenset([A]), now=3)
    m.write_failed()
    assert m.record == before and m.pending is None


def test_second_init_bumps_the_epoch_and_fences_the_first():
    m = initialized()
    eff = write(m, m.init_producer_id(60000, None, now=2))
    assert (m.producer_id, m.producer_epoch) == (7, 1)
    assert [k for k, _ in eff.events] == ["txn_fenced"]
    assert isinstance(m.add_partitions(7, 0, frozenset([A]), 3).error, ProducerFencedError)


def test_init_with_an_open_transaction_aborts_it_with_a_bumped_epoch():
    m = ongoing([A, B])
    eff = m.init_producer_id(60000, None, now=20)
    assert isinstance(eff.reply, ConcurrentTransactionsError)  # the client retries
    assert m.state is S.PREPARE_EPOCH_FENCE and m.producer_epoch == 1
    assert eff.write is not None and eff.write.state is S.PREPARE_ABORT and eff.write.producer_epoch == 1
    assert eff.markers is not None and not eff.markers.committed and eff.markers.producer_epoch == 1
    assert eff.markers.partitions == {A, B}
    # the zombie is fenced at once
    assert isinstance(m.end_txn(7, 0, True, 21).error, ProducerFencedError)
    m.written()
    assert m.state is S.PREPARE_ABORT
    assert isinstance(m.init_producer_id(60000, None, 22).error, ConcurrentTransactionsError)
    write(m, m.markers_written(23))
    assert m.state is S.COMPLETE_ABORT
    write(m, m.init_producer_id(60000, None, 24))
    assert (m.producer_epoch, m.state) == (2, S.EMPTY)


def test_kip360_bump_with_the_current_epoch_and_its_retry():
    m = initialized()
    write(m, m.init_producer_id(60000, (7, 0), now=2))
    assert m.producer_epoch == 1 and m.record.last_producer_epoch == 0
    write(m, m.init_producer_id(60000, (7, 0), now=3))  # the answer was lost: same epoch again
    assert m.producer_epoch == 1
    assert isinstance(m.init_producer_id(60000, (8, 1), now=4).error, ProducerFencedError)
    assert isinstance(m.init_producer_id(60000, (7, 5), now=4).error, ProducerFencedError)


def test_an_exhausted_epoch_rotates_the_producer_id():
    m = TransactionMetadata("t", TxnRecord(7, MAX_EPOCH - 1, 60000, S.COMPLETE_COMMIT))
    assert m.needs_producer_id(None)
    write(m, m.init_producer_id(60000, None, now=1, new_producer_id=99))
    assert (m.producer_id, m.producer_epoch, m.record.last_producer_id) == (99, 0, 7)


def test_timeouts():
    assert check_timeout(1000, 900000) is None
    assert isinstance(check_timeout(900001, 900000), InvalidTransactionTimeoutError)
    assert isinstance(check_timeout(0, 900000), InvalidTransactionTimeoutError)


# -- AddPartitions, EndTxn --------------------------------------------------------------

@pytest.mark.parametrize("pid, epoch, error", [
    (8, 0, InvalidProducerIdMappingError),
    (7, 1, ProducerFencedError),
])
def test_add_partitions_checks_the_producer(pid, epoch, error):
    m = initialized()
    assert isinstance(m.add_partitions(pid, epoch, frozenset([A]), 2).error, error)


def test_add_partitions_begins_then_adds():
    m = initialized()
    eff = write(m, m.add_partitions(7, 0, frozenset([A]), now=10))
    assert [k for k, _ in eff.events] == ["txn_begin"]
    assert m.record.start_ms == 10 and m.state is S.ONGOING
    assert m.add_partitions(7, 0, frozenset([A]), 11) == Effects()  # nothing to write
    eff = write(m, m.add_partitions(7, 0, frozenset([B]), 12))
    assert m.record.partitions == {A, B} and m.record.start_ms == 10 and not eff.events


def test_a_pending_write_makes_others_wait():
    m = initialized()
    m.add_partitions(7, 0, frozenset([A]), 10)
    assert isinstance(m.add_partitions(7, 0, frozenset([B]), 11).error, ConcurrentTransactionsError)
    assert isinstance(m.end_txn(7, 0, True, 11).error, ConcurrentTransactionsError)


# state, committed -> error (None: success with nothing written; "write": a Prepare record)
END_TXN_TABLE = [
    (S.ONGOING, True, "write"),
    (S.ONGOING, False, "write"),
    (S.EMPTY, True, InvalidTxnStateError),
    (S.EMPTY, False, InvalidTxnStateError),
    (S.PREPARE_COMMIT, True, ConcurrentTransactionsError),
    (S.PREPARE_COMMIT, False, InvalidTxnStateError),
    (S.PREPARE_ABORT, False, ConcurrentTransactionsError),
    (S.PREPARE_ABORT, True, InvalidTxnStateError),
    (S.COMPLETE_COMMIT, True, None),
    (S.COMPLETE_COMMIT, False, InvalidTxnStateError),
    (S.COMPLETE_ABORT, False, None),
    (S.COMPLETE_ABORT, True, InvalidTxnStateError),
]


@pytest.mark.parametrize("state, committed, expected", END_TXN_TABLE)
def test_end_txn_table(state, committed, expected):
    m = TransactionMetadata("t", TxnRecord(7, 3, 60000, state, frozenset([A]) if state is S.ONGOING else frozenset(), 5))
    eff = m.end_txn(7, 3, committed, 9)
    if expected == "write":
        assert eff.write is not None and eff.write.state is (S.PREPARE_COMMIT if committed else S.PREPARE_ABORT)
        assert eff.markers is not None and eff.markers.committed is committed and eff.markers.partitions == {A}
        assert eff.reply is None
    elif expected is None:
        assert eff == Effects()
    else:
        assert isinstance(eff.error, expected)


def test_commit_round_trip():
    m = ongoing([A, B])
    write(m, m.end_txn(7, 0, True, 20))
    assert m.state is S.PREPARE_COMMIT
    assert isinstance(m.add_partitions(7, 0, frozenset([A]), 21).error, ConcurrentTransactionsError)
    eff = write(m, m.markers_written(22))
    assert m.state is S.COMPLETE_COMMIT and m.record.partitions == frozenset()
    assert [k for k, _ in eff.events] == ["txn_commit"]
    write(m, m.add_partitions(7, 0, frozenset([B]), 30))  # the next transaction
    assert m.state is S.ONGOING and m.record.start_ms == 30


def test_timeout_aborts_and_fences():
    m = ongoing()
    assert not m.timed_out(60010) and m.timed_out(60011)
    eff = write(m, m.abort_timed_out(60011))
    assert [k for k, _ in eff.events] == ["txn_timed_out"]
    assert m.state is S.PREPARE_ABORT and m.producer_epoch == 1
    assert isinstance(m.end_txn(7, 0, True, 60012).error, ProducerFencedError)


def test_recover_resends_the_markers_of_a_prepared_transaction():
    m = TransactionMetadata("t", TxnRecord(7, 2, 60000, S.PREPARE_COMMIT, frozenset([A]), 5, 6))
    eff = m.recover()
    assert eff.markers is not None and eff.markers.committed and eff.markers.producer_epoch == 2
    assert TransactionMetadata("t", TxnRecord(7, 2, 60000, S.ONGOING, frozenset([A]))).recover() == Effects()


def test_expiry():
    m = initialized()
    assert not m.expired(100, 1000) and m.expired(1001, 1000)
    write(m, m.expire(1001))
    assert m.state is S.DEAD


# -- the records -----------------------------------------------------------------------

def test_key_and_value_in_kafkas_layout():
    assert rec.encode_key("tx") == b"\x00\x00\x00\x02tx"
    r = TxnRecord(5, 1, 60000, S.ONGOING, frozenset([("a", 1), ("a", 0), ("b", 2)]), 100, 200)
    v = rec.encode_value(r)
    want = (struct.pack(">hqhib", 0, 5, 1, 60000, 1) + struct.pack(">i", 2)
            + b"\x00\x01a" + struct.pack(">iii", 2, 0, 1) + b"\x00\x01b" + struct.pack(">ii", 1, 2)
            + struct.pack(">qq", 200, 100))
    assert v == want
    assert rec.decode_value(v) == r
    empty = TxnRecord(5, 1, 60000, S.COMPLETE_COMMIT, frozenset(), 100, 200)
    assert rec.encode_value(empty)[17:21] == b"\xff\xff\xff\xff"  # null partitions, as Kafka
    assert rec.decode_value(rec.encode_value(empty)) == empty


def test_bad_records_are_corrupt():
    with pytest.raises(CorruptMessageError):
        rec.decode_value(b"\x00\x00\x00")
    with pytest.raises(CorruptMessageError):
        rec.decode_key(b"\x00\x05\x00\x01a")


def test_partition_of_a_transactional_id_is_kafkas():
    # Java: Math.abs("my-txn".hashCode()) % 50
    h = 0
    for ch in "my-txn":
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    h = h - (1 << 32) if h & 0x80000000 else h
    assert rec.partition_for("my-txn", 50) == abs(h) % 50


# -- properties -------------------------------------------------------------------------

records = st.builds(
    TxnRecord, producer_id=st.integers(0, 2**62), producer_epoch=st.integers(0, MAX_EPOCH),
    timeout_ms=st.integers(1, 2**31 - 1), state=st.sampled_from([s for s in TxnState if s is not S.DEAD]),
    partitions=st.frozensets(st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 100)), max_size=6),
    start_ms=st.integers(-1, 2**50), update_ms=st.integers(-1, 2**50))


@given(records)
def test_values_round_trip(r):
    assert rec.decode_value(rec.encode_value(r)) == r


OPS = st.lists(st.one_of(
    st.tuples(st.just("init"), st.booleans()),
    st.tuples(st.just("add"), st.sampled_from([A, B])),
    st.tuples(st.just("end"), st.booleans()),
    st.tuples(st.just("markers"), st.just(None)),
    st.tuples(st.just("timeout"), st.just(None)),
    st.tuples(st.just("fail"), st.just(None)),
), max_size=40)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_every_transition_follows_the_table_and_epochs_never_go_back(ops):
    m = TransactionMetadata.new("t", 7, 1000, now=0)
    write(m, m.init_producer_id(1000, None, now=0))
    now = 1
    for op, arg in ops:
        now += 600
        before, epoch_before = m.state, m.producer_epoch
        if op == "init":
            eff = m.init_producer_id(1000, (m.producer_id, m.producer_epoch) if arg else None, now)
        elif op == "add":
            eff = m.add_partitions(m.producer_id, m.producer_epoch, frozenset([arg]), now)
        elif op == "end":
            eff = m.end_txn(m.producer_id, m.producer_epoch, arg, now)
        elif op == "markers":
            eff = m.markers_written(now) if m.pending is None else Effects()
        elif op == "timeout":
            eff = m.abort_timed_out(now) if m.timed_out(now) else Effects()
        else:
            if m.pending is not None:
                m.write_failed()
            continue
        if eff.error is not None:
            assert m.state is before and m.producer_epoch == epoch_before  # refused: nothing changed
            continue
        if eff.write is not None:
            assert before in TRANSITIONS[eff.write.state] or (
                before is S.ONGOING and eff.write.state is S.PREPARE_ABORT)
            m.written()
        assert m.producer_epoch >= epoch_before
        if m.state is S.ONGOING:
            assert m.record.partitions and m.record.start_ms >= 0
        if m.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            assert not m.record.partitions
        if eff.markers is not None:
            assert m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
            assert eff.markers.producer_epoch == m.producer_epoch
