"""The producer's record accumulator without a broker: records grouped per partition, the
batch_size bound, readiness (linger, full, muted, flush), retries, expiry, encoding and
compression."""
from __future__ import annotations


import pytest

from minikafka import errors
from minikafka.client.accumulator import RecordAccumulator, record_size
from minikafka.protocol.records.batch import iter_records, split_batches, stamp


# ---------------------------------------------------------------- accumulator

def rec(value: bytes, key: bytes | None = None, ts: int = 1000):
    return (key, value, [], ts)


def test_records_are_grouped_per_partition():
    acc = RecordAccumulator(batch_size=65536, linger_ms=5)
    for i in range(30):
        acc.append("t", i % 3, rec(b"v%d" % i), None, now_ms=0)
    acc.append("u", 0, rec(b"x"), None, now_ms=0)
    batches = list(acc.batches())
    assert sorted(b.tp for b in batches) == [("t", 0), ("t", 1), ("t", 2), ("u", 0)]
    t1 = next(b for b in batches if b.tp == ("t", 1))
    assert [r[1] for r in t1.records] == [b"v%d" % i for i in range(1, 30, 3)]


def test_batch_size_bounds_batches():
    acc = RecordAccumulator(batch_size=1000, linger_ms=5)
    value = b"x" * 100
    for _ in range(50):
        acc.append("t", 0, rec(value), None, now_ms=0)
    batches = list(acc.batches())
    assert len(batches) > 1
    assert sum(len(b) for b in batches) == 50
    for b in batches:
        assert b.size <= 1000
        assert len(b.encode()) <= 1000 + 64  # the estimate is close to the encoded size
    assert all(b.closed for b in batches[:-1])


def test_a_record_larger_than_batch_size_gets_its_own_batch():
    acc = RecordAccumulator(batch_size=100, linger_ms=5)
    acc.append("t", 0, rec(b"a"), None, now_ms=0)
    acc.append("t", 0, rec(b"b" * 500), None, now_ms=0)
    acc.append("t", 0, rec(b"c"), None, now_ms=0)
    assert [len(b) for b in acc.batches()] == [1, 1, 1]


def test_readiness_linger_full_muted_flush():
    acc = RecordAccumulator(batch_size=1000, linger_ms=50)
    acc.append("t", 0, rec(b"a"), None, now_ms=100)
    ready, wait = acc.ready(now_ms=110, muted=set())
    assert ready == [] and wait == 40
    assert acc.ready(now_ms=150, muted=set())[0] == [("t", 0)]
    assert acc.ready(now_ms=110, muted=set(), flushing=True)[0] == [("t", 0)]
    assert acc.ready(now_ms=500, muted={("t", 0)})[0] == []
    for _ in range(20):  # fill a batch: ready at once
        acc.append("t", 1, rec(b"y" * 100), None, now_ms=110)
    assert ("t", 1) in acc.ready(now_ms=110, muted=set())[0]


def test_retry_goes_back_to_the_front_after_its_backoff():
    acc = RecordAccumulator(batch_size=40, linger_ms=0)
    for v in (b"first", b"second", b"third"):
        acc.append("t", 0, rec(v * 3), None, now_ms=0)
    first = acc.pop(("t", 0))
    first.attempts, first.retry_at_ms = 1, 200
    acc.reenqueue(first)
    ready, wait = acc.ready(now_ms=100, muted=set())
    assert ready == [] and wait == 100
    assert acc.ready(now_ms=200, muted=set())[0] == [("t", 0)]
    assert acc.pop(("t", 0)) is first
    assert acc.pop(("t", 0)).records[0][1] == b"second" * 3


def test_expire_fails_only_old_batches():
    acc = RecordAccumulator(batch_size=30, linger_ms=0)
    acc.append("t", 0, rec(b"old" * 5), None, now_ms=0)
    acc.append("t", 0, rec(b"new" * 5), None, now_ms=900)
    expired = acc.expire(now_ms=1000, delivery_timeout_ms=500)
    assert [b.records[0][1] for b in expired] == [b"old" * 5]
    assert [b.records[0][1] for b in acc.batches()] == [b"new" * 5]


def test_batch_encodes_once_and_completes_offsets():
    import concurrent.futures

    acc = RecordAccumulator()
    futs = [concurrent.futures.Future() for _ in range(3)]
    for i, f in enumerate(futs):
        acc.append("t", 2, (b"k", b"v%d" % i, [("h", b"1")], 5000 + i), f, now_ms=0)
    batch = acc.pop(("t", 2))
    raw = batch.encode()
    assert batch.encode() is raw
    decoded = list(iter_records(stamp(raw, 40, 3)))
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in decoded] == [
        (40 + i, b"k", b"v%d" % i, 5000 + i, [("h", b"1")]) for i in range(3)
    ]
    batch.complete(40)
    assert [(f.result().partition, f.result().offset, f.result().timestamp) for f in futs] == [
        (2, 40, 5000), (2, 41, 5001), (2, 42, 5002)]


def test_a_cancelled_future_does_not_break_completion():
    import concurrent.futures

    acc = RecordAccumulator()
    a, b = concurrent.futures.Future(), concurrent.futures.Future()
    acc.append("t", 0, rec(b"1"), a, now_ms=0)
    acc.append("t", 0, rec(b"2"), b, now_ms=0)
    a.cancel()
    acc.pop(("t", 0)).complete(7)
    assert b.result().offset == 8


def test_record_size_counts_key_value_headers():
    assert record_size(None, None, None) < record_size(b"k", b"v" * 10, [("name", b"vv")])


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_batches_are_compressed_with_the_accumulators_codec(codec):
    acc = RecordAccumulator(compression_type=codec)
    for i in range(50):
        acc.append("t", 0, (None, b"value %d " % i * 10, [("h", b"1")], 1000 + i), None, now_ms=0)
    raw = acc.pop(("t", 0)).encode()
    h = split_batches(raw, deep=True)[0][0]
    assert h.compression == codec and h.record_count == 50
    assert [r.value for r in iter_records(raw)] == [b"value %d " % i * 10 for i in range(50)]


def test_compression_type_is_checked():
    from minikafka.client.producer import AIOProducer

    with pytest.raises(ValueError, match="compression_type"):
        RecordAccumulator(compression_type="brotli")
    with pytest.raises(errors.ClientError, match="compression_type must be one of"):
        AIOProducer("127.0.0.1:1", compression_type="snapy")


def test_linger_0_makes_a_batch_ready_at_once():
    acc = RecordAccumulator(batch_size=65536, linger_ms=0)
    acc.append("t", 0, (None, b"x", (), 0), None, now_ms=100)
    assert acc.ready(100, set()) == ([("t", 0)], None)
