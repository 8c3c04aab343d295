"""The consumer's handling of fetch answers without a broker: records below the position
skipped, control batches stepped over, answers after a seek discarded, out-of-range
resets, per-partition order, and poll_batches / max_records."""
from __future__ import annotations


import pytest

from minikafka import errors
from minikafka.client.consumer import AIOConsumer
from minikafka.protocol.records.batch import encode_batch, iter_records, split_batches, stamp
from minikafka.protocol.rpc.types import FetchResponse, decode_FetchResponse


# ---------------------------------------------------------------- record decoding

def stamped(values: list[bytes], base: int) -> bytes:
    return stamp(encode_batch([(None, v, [], 1) for v in values]), base, 0)


def test_iter_records_skips_records_below_the_position():
    data = stamped([b"a", b"b", b"c", b"d", b"e"], 0) + stamped([b"f", b"g"], 5)
    assert [r.offset for r in iter_records(data, min_offset=3)] == [3, 4, 5, 6]
    assert [r.value for r in iter_records(data, min_offset=6)] == [b"g"]
    assert list(iter_records(data, min_offset=7)) == []
    assert len(split_batches(data)) == 2


def make_consumer() -> AIOConsumer:
    return AIOConsumer("127.0.0.1:1", auto_offset_reset="earliest")


def fetch_answer(topic: str, partition: int, data: bytes, hw: int, code: int = 0) -> FetchResponse:
    """A broker's Fetch answer for one partition, as the consumer gets it (decoded from the wire map)."""
    return decode_FetchResponse({"session_id": 0, "partitions": [{
        "topic": topic, "partition": partition, "error_code": code, "error": errors.error_name(code), "message": "",
        "high_watermark": hw, "log_end_offset": hw, "log_start_offset": 0, "leader_epoch": 0,
        "last_stable_offset": hw, "aborted_transactions": None, "records": data}]})


def test_consumer_skips_records_below_its_position_and_advances():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    tp = TopicPartition("t", 0)
    c.assign([tp])
    c.seek(tp, 3)
    data = stamped([b"a", b"b", b"c", b"d", b"e"], 0) + stamped([b"f", b"g"], 5)
    c._handle_fetch({tp: 3}, fetch_answer("t", 0, data, hw=7))
    got = c._drain(max_records=2)
    assert [(r.offset, r.value) for r in got] == [(3, b"d"), (4, b"e")]
    assert c._state[tp].position == 5
    got = c._drain(max_records=None)
    assert [r.offset for r in got] == [5, 6]
    assert c._state[tp].position == 7
    assert c.highwater(tp) == 7


def test_consumer_steps_over_a_fetch_of_control_batches_only():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    tp = TopicPartition("t", 0)
    c.assign([tp])
    c.seek(tp, 2)
    marker = stamp(encode_batch([(b"\0\0\0\0", b"\0" * 6, None, 1)], is_control=True, is_transactional=True), 2, 0)
    c._handle_fetch({tp: 2}, fetch_answer("t", 0, marker, hw=3))
    assert c._drain(None) == [] and c._state[tp].position == 3
    c._handle_fetch({tp: 3}, fetch_answer("t", 0, stamped([b"x"], 3), hw=4))
    assert [(r.offset, r.value) for r in c._drain(None)] == [(3, b"x")]


def test_consumer_discards_an_answer_after_seek():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    tp = TopicPartition("t", 0)
    c.assign([tp])
    c.seek(tp, 0)
    sent = {tp: 0}
    c.seek(tp, 4)
    c._handle_fetch(sent, fetch_answer("t", 0, stamped([b"a", b"b"], 0), hw=2))
    assert c._drain(None) == []
    assert c._state[tp].position == 4


def test_consumer_resets_on_offset_out_of_range():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    tp = TopicPartition("t", 0)
    c.assign([tp])
    c.seek(tp, 99)
    c._handle_fetch({tp: 99}, fetch_answer("t", 0, b"", hw=5, code=errors.OffsetOutOfRangeError.code.code))
    assert c._state[tp].position is None and c._state[tp].reset == "earliest"


def test_consumer_poll_returns_records_ordered_per_partition():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    c.assign([a, b])
    c.seek(a, 0)
    c.seek(b, 0)
    c._handle_fetch({b: 0}, fetch_answer("t", 1, stamped([b"b0", b"b1"], 0), hw=2))
    c._handle_fetch({a: 0}, fetch_answer("t", 0, stamped([b"a0", b"a1"], 0), hw=2))
    got = [(r.partition, r.offset) for r in c._drain(None)]
    assert got == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_seek_requires_an_assigned_partition():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    with pytest.raises(errors.ClientError):
        c.seek(TopicPartition("t", 0), 1)


def test_poll_batches_hands_out_whole_batches_decoded_only_when_asked():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    tp = TopicPartition("t", 0)
    c.assign([tp])
    c.seek(tp, 3)
    first = stamp(encode_batch([(b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)], 1000 + i) for i in range(5)]), 0, 4)
    second = stamp(encode_batch([(None, b"v5", [], 2000), (b"k6", None, [], 2001)], compression="gzip"), 5, 5)
    marker = stamp(encode_batch([(b"\0\0\0\0", b"\0" * 6, None, 1)], is_control=True, is_transactional=True), 7, 5)
    c._handle_fetch({tp: 3}, fetch_answer("t", 0, first + second + marker, hw=8))
    batches = c._drain_batches(None)
    assert c._state[tp].position == 8, "past the marker too"
    assert [(b.first_offset, b.base_offset, b.last_offset, b.leader_epoch, len(b)) for b in batches] == [
        (3, 0, 4, 4, 2), (5, 5, 6, 5, 2)]
    assert bytes(batches[0].raw) == first, "raw is the whole batch as stored, even when the position was inside it"
    assert [r.offset for r in batches[0].records()] == [3, 4]
    assert batches[0].values() == [b"v3", b"v4"] and batches[0].keys() == [b"k3", b"k4"]
    assert batches[1].values() == [b"v5", None] and batches[1].keys() == [None, b"k6"]
    assert batches[1].compression == "gzip"
    table = batches[0].to_arrow(include_headers=True)
    assert table.column("offset").to_pylist() == [3, 4]
    assert table.column("timestamp").cast("int64").to_pylist() == [1003, 1004]
    assert table.column("value").to_pylist() == [b"v3", b"v4"]
    assert table.column("headers").to_pylist() == [[{"key": "h", "value": b"3"}], [{"key": "h", "value": b"4"}]]
    assert batches[1].to_arrow().column("key").to_pylist() == [None, b"k6"]


def test_poll_with_max_records_stops_inside_a_batch_and_poll_batches_goes_on_from_there():
    from minikafka.client.types import TopicPartition

    c = make_consumer()
    tp = TopicPartition("t", 0)
    c.assign([tp])
    c.seek(tp, 0)
    c._handle_fetch({tp: 0}, fetch_answer("t", 0, stamped([b"a", b"b", b"c", b"d"], 0) + stamped([b"e"], 4), hw=5))
    assert [r.value for r in c._drain(max_records=3)] == [b"a", b"b", b"c"]
    assert c._state[tp].position == 3
    rest = c._drain_batches(None)
    assert [(b.first_offset, len(b), b.values()) for b in rest] == [(3, 1, [b"d"]), (4, 1, [b"e"])]
    assert [r.offset for r in rest[0].records()] == [3]
    assert c._state[tp].position == 5
