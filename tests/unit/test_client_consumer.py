"""The consumer against the fake broker: latest and out-of-range positions."""
from __future__ import annotations


def test_consumer_latest_sees_only_new_records(broker):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 1)
    tp = TopicPartition("t", 0)
    with Producer(broker.bootstrap) as p:
        p.send("t", b"old").result(10)
        with Consumer(broker.bootstrap) as c:
            c.assign([tp])
            assert c.position(tp) == 1
            p.send("t", b"new").result(10)
            assert [r.value for r in c.poll(timeout_ms=5000)] == [b"new"]
            c.seek_to_beginning()
            assert [r.value for r in c.poll(timeout_ms=5000)] == [b"old", b"new"]
            c.seek(tp, 1)
            assert [r.offset for r in c.poll(timeout_ms=5000, max_records=1)] == [1]
            c.seek_to_end(tp)
            assert c.position(tp) == 2
            assert c.poll(timeout_ms=100) == []
            assert c.end_offsets([tp]) == {tp: 2}
            assert c.beginning_offsets([tp]) == {tp: 0}


def test_consumer_out_of_range_resets(broker):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 1)
    tp = TopicPartition("t", 0)
    with Producer(broker.bootstrap) as p:
        for v in (b"a", b"b"):
            p.send("t", v)
    with Consumer(broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        c.seek(tp, 50)
        assert [r.value for r in c.poll(timeout_ms=5000)] == [b"a", b"b"]
