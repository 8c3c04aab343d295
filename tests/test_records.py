"""The record-batch format: encode, validate, stamp, split and decode."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.errors import CorruptMessageError, InvalidRecordError
from minikafka.protocol.records import (
    CRC_START,
    HEADER_SIZE,
    LENGTH_OVERHEAD,
    MAGIC,
    encode_batch,
    iter_records,
    read_header,
    split_batches,
    stamp,
    validate_batch,
)


def recs(*values: bytes, ts: int = 1000) -> list[tuple]:
    return [(None, v, None, ts + i) for i, v in enumerate(values)]


def test_encode_validate_round_trip():
    batch = encode_batch([(b"k1", b"v1", [("h", b"x")], 1000), (None, b"v2", None, 1005), (b"k3", None, (), 999)])
    h = validate_batch(batch)
    assert h.base_offset == 0
    assert h.leader_epoch == -1
    assert h.magic == MAGIC
    assert h.attributes == 0
    assert h.record_count == 3
    assert h.last_offset_delta == 2
    assert h.last_offset == 2 and h.next_offset == 3
    assert h.base_timestamp == 1000
    assert h.max_timestamp == 1005
    assert h.size == len(batch) == h.batch_length + LENGTH_OVERHEAD
    out = list(iter_records(batch))
    assert [r.offset for r in out] == [0, 1, 2]
    assert [(r.key, r.value) for r in out] == [(b"k1", b"v1"), (None, b"v2"), (b"k3", None)]
    assert [r.timestamp for r in out] == [1000, 1005, 999]
    assert out[0].headers == [("h", b"x")]
    assert out[1].headers == [] and out[2].headers == []


def test_empty_batch_is_refused():
    with pytest.raises(InvalidRecordError):
        encode_batch([])


def test_encode_with_offset_and_epoch():
    batch = encode_batch(recs(b"a", b"b"), base_offset=40, leader_epoch=7)
    h = validate_batch(batch)
    assert (h.base_offset, h.leader_epoch, h.last_offset) == (40, 7, 41)
    assert [r.offset for r in iter_records(batch)] == [40, 41]


def test_stamp_keeps_crc_valid_and_sets_offset_and_epoch():
    batch = encode_batch(recs(b"a", b"b", b"c"))
    crc = read_header(batch).crc
    stamped = stamp(batch, 100, 5)
    h = validate_batch(stamped)  # no CorruptMessageError
    assert (h.base_offset, h.leader_epoch, h.crc) == (100, 5, crc)
    assert len(stamped) == len(batch)
    assert stamped[CRC_START:] == batch[CRC_START:]
    assert [r.offset for r in iter_records(stamped)] == [100, 101, 102]
    assert [r.value for r in iter_records(stamped)] == [b"a", b"b", b"c"]
    # stamping twice is the same as stamping once with the last values
    assert stamp(stamp(batch, 1, 1), 100, 5) == stamped


def test_split_concatenated_batches():
    b1 = stamp(encode_batch(recs(b"a", b"b")), 0, 1)
    b2 = stamp(encode_batch(recs(b"c")), 2, 1)
    b3 = stamp(encode_batch(recs(b"d", b"e", b"f")), 3, 2)
    parts = split_batches(b1 + b2 + b3)
    assert [raw for _, raw in parts] == [b1, b2, b3]
    assert [(h.base_offset, h.last_offset, h.leader_epoch) for h, _ in parts] == [(0, 1, 1), (2, 2, 1), (3, 5, 2)]
    assert split_batches(b"") == []
    assert [r.value for r in iter_records(b1 + b2 + b3)] == [b"a", b"b", b"c", b"d", b"e", b"f"]


def test_iter_records_min_offset():
    data = stamp(encode_batch(recs(b"a", b"b")), 0, 0) + stamp(encode_batch(recs(b"c", b"d")), 2, 0)
    assert [r.offset for r in iter_records(data, min_offset=1)] == [1, 2, 3]
    assert [r.offset for r in iter_records(data, min_offset=3)] == [3]
    assert list(iter_records(data, min_offset=4)) == []


def flip(buf: bytes, at: int) -> bytes:
    out = bytearray(buf)
    out[at] ^= 0x01
    return bytes(out)


@pytest.mark.parametrize("at", [CRC_START, CRC_START + 3, HEADER_SIZE - 1, HEADER_SIZE, -1])
def test_crc_mismatch_is_corrupt(at):
    batch = encode_batch(recs(b"hello", b"world"))
    bad = flip(batch, at if at >= 0 else len(batch) + at)
    with pytest.raises(CorruptMessageError):
        validate_batch(bad)
    with pytest.raises(CorruptMessageError):
        split_batches(bad)
    with pytest.raises(CorruptMessageError):
        list(iter_records(bad))


def test_crc_field_itself_corrupt():
    batch = encode_batch(recs(b"x"))
    with pytest.raises(CorruptMessageError, match="CRC"):
        validate_batch(flip(batch, 17))


def test_bad_magic_is_corrupt():
    batch = bytearray(encode_batch(recs(b"x")))
    batch[16] = 1
    with pytest.raises(CorruptMessageError, match="magic"):
        validate_batch(bytes(batch))


def test_truncated_header_is_corrupt():
    batch = encode_batch(recs(b"x"))
    for n in (1, 11, 12, HEADER_SIZE - 1):
        with pytest.raises(CorruptMessageError):
            validate_batch(batch[:n])
        with pytest.raises(CorruptMessageError):
            read_header(batch[:n])


def test_truncated_body_is_corrupt():
    batch = encode_batch(recs(b"a" * 50, b"b" * 50))
    for n in (HEADER_SIZE, HEADER_SIZE + 1, len(batch) - 1):
        with pytest.raises(CorruptMessageError):
            validate_batch(batch[:n])
        with pytest.raises(CorruptMessageError):
            split_batches(batch[:n])


@pytest.mark.parametrize("validate", [True, False])
def test_trailing_partial_batch_is_corrupt(validate):
    b1 = encode_batch(recs(b"a"))
    b2 = stamp(encode_batch(recs(b"b", b"c")), 1, 0)
    for cut in (1, HEADER_SIZE - 1, HEADER_SIZE + 2, len(b2) - 1):
        with pytest.raises(CorruptMessageError):
            split_batches(b1 + b2[:cut], validate=validate)


def test_length_smaller_than_header_is_corrupt():
    batch = bytearray(encode_batch(recs(b"x")))
    struct.pack_into(">i", batch, 8, 10)
    with pytest.raises(CorruptMessageError):
        validate_batch(bytes(batch))


def test_record_count_mismatch_is_corrupt():
    batch = bytearray(encode_batch(recs(b"x", b"y")))
    struct.pack_into(">i", batch, 23, 5)  # last_offset_delta no longer count - 1
    with pytest.raises(CorruptMessageError):
        validate_batch(bytes(batch))


def test_validate_at_position():
    b1 = encode_batch(recs(b"a"))
    b2 = stamp(encode_batch(recs(b"b")), 1, 3)
    h = validate_batch(b1 + b2, len(b1))
    assert (h.base_offset, h.leader_epoch) == (1, 3)


record_st = st.tuples(
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)),
    st.integers(min_value=0, max_value=2**40),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(record_st, min_size=1, max_size=6), min_size=1, max_size=5),
       st.integers(min_value=0, max_value=2**40), st.integers(min_value=0, max_value=2**31 - 1))
def test_round_trip_property(batches, base, epoch):
    data = b""
    offset = base
    expected = []
    for rs in batches:
        raw = encode_batch(rs)
        data += stamp(raw, offset, epoch)
        for i, (k, v, hs, ts) in enumerate(rs):
            expected.append((offset + i, ts, k, v, [tuple(h) for h in (hs or [])]))
        offset += len(rs)
    parts = split_batches(data)
    assert len(parts) == len(batches)
    assert all(h.leader_epoch == epoch for h, _ in parts)
    assert b"".join(raw for _, raw in parts) == data
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_records(data)]
    assert got == expected


def test_split_without_validation_rejects_a_length_shorter_than_a_header():
    import struct

    import pytest

    from minikafka.errors import CorruptMessageError
    from minikafka.protocol.records import encode_batch, split_batches
    bad = bytearray(encode_batch([(None, b"v", None, 1)]))
    struct.pack_into(">i", bad, 8, -12)
    with pytest.raises(CorruptMessageError):
        split_batches(bytes(bad), validate=False)
