"""The producer against the fake broker: batching, retries in order, idempotence and its
sequences, one batch at a time to a new leader, delivery timeouts, acks=0, unknown topics,
headers, compression, and the hand-off of records to the producer's loop."""
from __future__ import annotations

import time

import pytest

from minikafka import errors
from minikafka.client.accumulator import record_size
from minikafka.client.partitioner import partition_for_key
from minikafka.protocol.records.batch import iter_records, split_batches

from client_fake_broker import values_of


def test_sync_producer_10000_records_then_consumer(broker):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 3)
    p = Producer(broker.bootstrap, acks="all")
    futs = [p.send("t", b"value-%d" % i, key=None if i % 2 else b"k%d" % (i % 10)) for i in range(10000)]
    p.flush()
    p.close()
    mds = [f.result(0) for f in futs]
    assert sum(broker.leo.values()) == 10000
    for i, md in enumerate(mds):
        if i % 2 == 0:
            assert md.partition == partition_for_key(b"k%d" % (i % 10), 3)
    # offsets per partition are 0..n-1 in send order
    for part in range(3):
        offs = [md.offset for md in mds if md.partition == part]
        assert offs == list(range(len(offs)))
    produce_calls = sum(1 for api, _ in broker.requests if api == "produce")
    assert produce_calls < 200  # batched, not one request per record

    c = Consumer(broker.bootstrap, auto_offset_reset="earliest")
    tps = [TopicPartition("t", i) for i in range(3)]
    c.assign(tps)
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 10000 and time.monotonic() < deadline:
        got.extend(c.poll(timeout_ms=500))
    assert len(got) == 10000
    by_part = {}
    for r in got:
        by_part.setdefault(r.partition, []).append(r.offset)
    for part, offs in by_part.items():
        assert offs == list(range(len(offs)))
    assert {r.value for r in got} == {b"value-%d" % i for i in range(10000)}
    assert c.position(tps[0]) == broker.leo[("t", 0)]
    c.close()


def test_retriable_errors_are_retried_in_order(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [6, 6, 19]  # NOT_LEADER_OR_FOLLOWER twice, NOT_ENOUGH_REPLICAS once
    p = Producer(broker.bootstrap, linger_ms=0, batch_size=50, retry_backoff_ms=10)
    futs = [p.send("t", b"v%02d" % i) for i in range(30)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(30))
    assert values_of(broker, "t", 0) == [b"v%02d" % i for i in range(30)]
    metadata_calls = sum(1 for api, _ in broker.requests if api == "metadata")
    assert metadata_calls >= 2  # bootstrap + at least one refresh after NOT_LEADER_OR_FOLLOWER


def _log_values(broker, tp):
    """(offset, value) of every record in the fake broker's log of ``tp``, in log order."""
    return [(r.offset, r.value) for _, raw in broker.logs[tp] for r in iter_records(raw)]


def _sent_batches(broker, tp=("t", 0)):
    """(producer_id, producer_epoch, base_sequence, record_count) of every produce request's batch."""
    out = []
    for api, body in broker.requests:
        if api == "produce":
            for p in body["partitions"]:
                if (p["topic"], p["partition"]) == tp:
                    h = split_batches(p["records"])[0][0]
                    out.append((h.producer_id, h.producer_epoch, h.base_sequence, h.record_count))
    return out


def test_idempotent_producer_numbers_batches_and_retries_keep_their_sequence(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [6, 7]  # NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=1)
    assert p._core.enable_idempotence  # the default with acks=all
    futs = [p.send("t", b"v%02d" % i) for i in range(12)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(12))
    sent = _sent_batches(broker)
    pid = sent[0][0]
    assert pid > 0 and all(b[0] == pid and b[1] == 0 for b in sent)
    assert sent[0][2] == sent[1][2] == sent[2][2] == 0  # the first batch twice retried, same sequence
    seqs = [b[2] for b in sent[2:]]
    counts = [b[3] for b in sent[2:]]
    assert seqs == [sum(counts[:i]) for i in range(len(counts))]  # consecutive, no gap
    assert [api for api, _ in broker.requests].count("init_producer_id") == 1


def test_a_batch_that_overtakes_its_predecessor_is_refused_and_sent_again_after_it(broker, monkeypatch):
    from minikafka import Producer
    from minikafka.client import producer as producer_mod

    monkeypatch.setattr(producer_mod, "LEADER_KNOWS_MS", 60_000)  # however slow this machine is
    broker.create("t", 1)
    broker.check_sequences = True
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=5)
    first = p.send("t", b"v00").result(10)  # the leader knows the producer from here on
    broker.hold_first[("t", 0)] = 0.5  # the next produce is slow: the (full) batches behind it overtake it
    futs = [p.send("t", b"v%02d" % i) for i in range(1, 40)]
    p.flush()
    p.close()
    assert [first.offset] + [f.result().offset for f in futs] == list(range(40))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(40)]
    sent = _sent_batches(broker)
    assert len(sent) > len(set(sent)), "a batch that overtook its predecessor was sent again"


def test_a_producers_first_batches_to_a_leader_go_one_at_a_time(broker):
    """A leader takes a batch of a producer it has no state for at any sequence (Kafka
    2.5+), so it cannot refuse a batch that overtook the producer's first one: until the
    leader took one, the partition's batches go one at a time, in order."""
    from minikafka import Producer

    broker.create("t", 1)
    broker.hold_first[("t", 0)] = 0.5  # the first produce is slow: nothing may overtake it
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=5)
    futs = [p.send("t", b"v%02d" % i) for i in range(40)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(40))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(40)]
    sent = _sent_batches(broker)
    assert sent[1][2] == sent[0][3], "the second request carries the batch after the first"


def test_a_leader_that_may_have_forgotten_an_idle_producer_gets_one_batch_at_a_time(broker, monkeypatch):
    """An idle producer's state expires on the leader (producer.id.expiration.ms): after
    LEADER_KNOWS_MS without an answer the partition starts again with one batch in flight."""
    from minikafka import Producer
    from minikafka.client import producer as producer_mod

    monkeypatch.setattr(producer_mod, "LEADER_KNOWS_MS", 50)
    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=5)
    assert p.send("t", b"v00").result(10).offset == 0
    broker.next_seq.clear()  # the leader expired the producer
    time.sleep(0.2)
    broker.hold_first[("t", 0)] = 0.5
    futs = [p.send("t", b"v%02d" % i) for i in range(1, 40)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(1, 40))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(40)]


def test_while_a_batch_is_in_flight_the_next_waits_for_its_answer_unless_it_fills(broker, monkeypatch):
    from minikafka import Producer
    from minikafka.client import producer as producer_mod

    monkeypatch.setattr(producer_mod, "LEADER_KNOWS_MS", 60_000)  # however slow this machine is
    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=400, max_in_flight_requests_per_connection=5)
    assert p.send("t", b"known").result(10).offset == 0  # the leader knows the producer from here on
    broker.hold_first[("t", 0)] = 0.5  # the next produce is answered late
    first = p.send("t", b"first")
    deadline = time.monotonic() + 10
    while len(_sent_batches(broker)) < 2:
        assert time.monotonic() < deadline, "the first batch was not sent"
        time.sleep(0.01)
    futs = [p.send("t", b"v%02d" % i) for i in range(3)]  # linger 0, but one batch is in flight
    time.sleep(0.2)
    assert len(_sent_batches(broker)) == 2, "a batch that is not full went while another was in flight"
    more = [p.send("t", b"w%02d" % i) for i in range(40)]  # these fill batches: full ones go at once
    deadline = time.monotonic() + 10
    while len(_sent_batches(broker)) < 3:
        assert time.monotonic() < deadline, "a full batch waited for the batch in flight"
        time.sleep(0.01)
    assert not first.done()  # still in flight: the full batch went beside it
    p.flush()
    p.close()
    assert [f.result().offset for f in [first, *futs, *more]] == list(range(1, 45))


def test_without_idempotence_one_batch_per_partition_is_in_flight(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.hold_first[("t", 0)] = 0.3
    p = Producer(broker.bootstrap, acks=1, linger_ms=0, batch_size=200, max_in_flight_requests_per_connection=5)
    futs = [p.send("t", b"v%02d" % i) for i in range(12)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(12))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(12)]


def test_a_broken_sequence_fails_the_batch_and_takes_a_new_producer_id(broker):
    from minikafka import Producer

    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks="all", linger_ms=0)
    assert p.send("t", b"a").result(10).offset == 0
    broker.inject[("t", 0)] = [45]  # OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        p.send("t", b"b").result(10)
    assert p.send("t", b"c").result(10).offset == 1
    p.close()
    sent = _sent_batches(broker)
    assert sent[-1][0] != sent[0][0] and sent[-1][2] == 0  # new producer id, sequences from 0


def test_idempotence_needs_acks_all():
    from minikafka import Producer

    with pytest.raises(errors.ClientError, match="enable_idempotence needs acks='all'"):
        Producer("127.0.0.1:1", acks=1, enable_idempotence=True)


def test_non_retriable_error_fails_the_records(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [10]  # MESSAGE_TOO_LARGE
    p = Producer(broker.bootstrap, linger_ms=0)
    fut = p.send("t", b"x")
    with pytest.raises(errors.MessageTooLargeError):
        fut.result(10)
    assert p.send("t", b"y").result(10).offset == 0
    p.close()


def test_delivery_timeout_bounds_retries(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [19] * 1000
    p = Producer(broker.bootstrap, linger_ms=0, retry_backoff_ms=20, delivery_timeout_ms=300)
    fut = p.send("t", b"x")
    with pytest.raises(errors.NotEnoughReplicasError):
        fut.result(10)
    p.close()


def test_acks_0_resolves_with_offset_minus_one(broker):
    from minikafka import Producer

    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks=0)
    md = p.send("t", "text is utf-8").result(10)
    assert md.offset == -1 and md.partition == 0
    p.flush()
    p.close()
    assert [api for api, body in broker.requests if api == "produce" and body["acks"] == 0]


def test_unknown_topic_and_partition(broker):
    from minikafka import Producer

    broker.create("t", 2)
    p = Producer(broker.bootstrap, max_block_ms=200)
    for bad_topic in (None, ""):  # the first send of a producer checks its topic too
        with pytest.raises(TypeError, match="topic must be a non-empty str"):
            p.send(bad_topic, b"x")
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        p.send("missing", b"x").result(10)
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        p.send("t", b"x", partition=5).result(10)
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        p.partitions_for("missing")
    assert p.partitions_for("t") == {0, 1}
    with pytest.raises(TypeError):
        p.send("t", 123)
    topic = "t"
    assert p.send(topic, b"x").result(10).offset >= 0
    # the same topic object again skips its check, the record's other checks still apply
    for bad in [dict(value=123), dict(value=b"x", key=5), dict(value=b"x", headers=[(1, b"v")])]:
        with pytest.raises(TypeError):
            p.send(topic, **bad)
    for bad_topic in ("", None, 7):
        with pytest.raises(TypeError, match="topic must be a non-empty str"):
            p.send(bad_topic, b"x")
    record = p.send(topic, "hé", key=bytearray(b"k"), headers={"h": "v"}).result(10)
    assert record.topic == "t"
    p.close()
    with pytest.raises(errors.ClientError):
        p.send("t", b"x")


def test_records_wait_for_a_topic_that_appears(broker):
    from minikafka import Producer

    p = Producer(broker.bootstrap, retry_backoff_ms=20)
    fut = p.send("later", b"x", key=b"k")
    time.sleep(0.2)
    broker.create("later", 4)
    md = fut.result(10)
    assert md.partition == partition_for_key(b"k", 4)
    p.close()


def test_headers_and_timestamps_round_trip(broker):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 1)
    with Producer(broker.bootstrap) as p:
        p.send("t", b"v", key=b"k", headers=[("trace", b"abc"), ("none", None)], timestamp_ms=123456).result(10)
    with Consumer(broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("t", 0)])
        recs = c.poll(timeout_ms=5000)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in recs] == [
        (b"k", b"v", 123456, [("trace", b"abc"), ("none", None)])]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_produce_and_consume(broker, codec):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 1)
    with Producer(broker.bootstrap, compression_type=codec, linger_ms=20) as p:
        futs = [p.send("t", b"value-%d" % i * 5, key=b"k%d" % i, headers=[("i", b"%d" % i)]) for i in range(300)]
        p.flush()
        assert [f.result(10).offset for f in futs] == list(range(300))
    hs = [split_batches(raw, deep=True)[0][0] for _, raw in broker.logs[("t", 0)]]
    assert {h.compression for h in hs} == {codec}
    with Consumer(broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("t", 0)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 300 and time.monotonic() < deadline:
            got.extend(c.poll(timeout_ms=500))
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
        (i, b"k%d" % i, b"value-%d" % i * 5, [("i", b"%d" % i)]) for i in range(300)]


def test_plain_records_joining_an_open_batch_keep_the_batch_size_and_the_order(broker):
    """Records without key, partition or headers join the open batch of their sticky
    partition on a short road; mixed with keyed, headered and placed records they still
    fill batches no further than batch_size and keep their send order per partition."""
    from minikafka import Producer

    broker.create("t", 3)
    value = b"v" * 100
    per_batch = (2000 - 61) // record_size(None, value, None)  # 61: the batch header
    with Producer(broker.bootstrap, acks="all", batch_size=2000, linger_ms=50) as p:
        futs = []
        for i in range(3000):
            v = b"%05d" % i + value[5:]
            if i % 97 == 0:
                futs.append(p.send("t", v, key=b"k%d" % i))
            elif i % 89 == 0:
                futs.append(p.send("t", v, headers=[("h", b"x")]))
            elif i % 83 == 0:
                futs.append(p.send("t", v, partition=i % 3))
            else:
                futs.append(p.send("t", v))
        p.flush()
    mds = [f.result(0) for f in futs]
    for part in range(3):
        sent = [b"%05d" % i for i, md in enumerate(mds) if md.partition == part]
        assert [v[:5] for v in values_of(broker, "t", part)] == sent
        assert [md.offset for md in mds if md.partition == part] == list(range(len(sent)))
        counts = [len(list(iter_records(raw))) for _, raw in broker.logs[("t", part)]]
        assert max(counts) <= per_batch, counts
    assert len({md.partition for md in mds}) == 3, "the sticky partition moves on as batches fill"


def test_a_kept_future_does_not_keep_its_records_bytes(broker):
    """``send`` queues the future alone, carrying its record to the loop; once handed
    over (and the batch acknowledged) the future lets the value and key go, so that a
    program keeping its futures does not keep every record it sent."""
    import sys

    from minikafka import Producer

    broker.create("t", 1)
    values = [bytes([65 + i % 26]) * (1000 + i) for i in range(50)]
    keys = [b"key-%d" % i for i in range(50)]
    before = [sys.getrefcount(v) for v in values] + [sys.getrefcount(k) for k in keys]
    with Producer(broker.bootstrap, acks="all", linger_ms=0) as p:
        futs = [p.send("t", v, key=k) for v, k in zip(values, keys)]
        p.flush()
    assert [f.result(0).offset for f in futs] == list(range(50))
    assert [sys.getrefcount(v) for v in values] + [sys.getrefcount(k) for k in keys] == before


def test_linger_0_hands_a_record_to_the_loop_with_one_wake_up(broker):
    """acks=all, linger_ms=0: a record is sent without a flush, and its hand-off to the
    producer's loop thread is one call into the loop (one wake-up of its selector)."""
    from minikafka import Producer

    broker.create("t", 1)
    with Producer(broker.bootstrap, acks="all", linger_ms=0) as p:
        p.send("t", b"first").result(10)  # metadata and producer id are in place
        loop = p._lt.loop
        calls = []
        real = loop.call_soon_threadsafe

        def counting(fn, *args, **kw):
            calls.append(fn)
            return real(fn, *args, **kw)

        loop.call_soon_threadsafe = counting
        try:
            for i in range(3):
                before = len(calls)
                assert p.send("t", b"one at a time %d" % i).result(10).offset == i + 1
                assert len(calls) - before == 1, calls[before:]
        finally:
            del loop.call_soon_threadsafe
