"""Kafka's record batch v2: encode, validate, stamp, split, decode, compress, and
interoperate byte for byte with kafka-python's own implementation."""
from __future__ import annotations

import struct

import cramjam
import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.errors import CorruptMessageError, InvalidRecordError, UnsupportedCompressionTypeError
from minikafka.protocol.records.batch import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LENGTH_OVERHEAD,
    MAGIC,
    encode_batch,
    iter_records,
    read_header,
    split_batches,
    stamp,
    validate_batch,
    validate_records,
)
from minikafka.protocol.records.compression import COMPRESSION_TYPES, compress

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def recs(*values: bytes, ts: int = 1000) -> list[tuple]:
    return [(None, v, None, ts + i) for i, v in enumerate(values)]


# -- a test-local, independent encoder for crafting (malformed) batches ---------------------

def varint(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def record(offset_delta: int, value: bytes | None, ts_delta: int = 0, key: bytes | None = None,
           headers=(), extra: bytes = b"", declared_extra: int = 0) -> bytes:
    body = b"\x00" + varint(ts_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        body += varint(len(hk)) + hk + (varint(-1) if hv is None else varint(len(hv)) + hv)
    return varint(len(body) + declared_extra) + body + extra


def raw_batch(section: bytes, count: int, attributes: int = 0, base_ts: int = 0, max_ts: int = 0,
              last_offset_delta: int | None = None) -> bytes:
    """Header + ``section`` with a correct CRC-32C (whatever the section holds)."""
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    tail = struct.pack(">hiqqqhii", attributes, lod, base_ts, max_ts, -1, -1, -1, count) + section
    return struct.pack(">qiibI", 0, len(tail) + 9, -1, 2, crc32c.crc32c(tail)) + tail


# -- layout ------------------------------------------------------------------------------

def test_header_layout_is_kafkas():
    assert HEADER_SIZE == 61 and HEADER.size == 61
    assert CRC_START == 21 and LENGTH_OVERHEAD == 12 and MAGIC == 2
    batch = encode_batch([(b"k", b"v", [("h", b"x")], 1000)], producer_id=77, producer_epoch=3, base_sequence=5)
    base, length, epoch, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count = HEADER.unpack_from(batch)
    assert (base, epoch, magic, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count) == \
        (0, -1, 2, 0, 0, 1000, 1000, 77, 3, 5, 1)
    assert length == len(batch) - 12
    assert crc == crc32c.crc32c(batch[21:])
    # one record: length, attributes 0, timestampDelta 0, offsetDelta 0, key, value, 1 header
    assert batch[61:] == record(0, b"v", key=b"k", headers=[(b"h", b"x")])


def test_defaults_have_no_producer_id():
    h = validate_batch(encode_batch(recs(b"a")))
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (-1, -1, -1)
    assert h.compression == "none" and not h.is_control and not h.is_transactional


def test_encode_validate_round_trip():
    batch = encode_batch([(b"k1", b"v1", [("h", b"x")], 1000), (None, b"v2", None, 1005), (b"k3", None, (), 999)])
    h = validate_records(batch)
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


def test_unknown_compression_name_is_refused():
    with pytest.raises(ValueError, match="compression"):
        encode_batch(recs(b"a"), compression="brotli")


def test_encode_with_offset_and_epoch():
    batch = encode_batch(recs(b"a", b"b"), base_offset=40, leader_epoch=7)
    h = validate_batch(batch)
    assert (h.base_offset, h.leader_epoch, h.last_offset) == (40, 7, 41)
    assert [r.offset for r in iter_records(batch)] == [40, 41]


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_stamp_keeps_crc_valid_and_sets_offset_and_epoch(codec):
    batch = encode_batch(recs(b"a", b"b", b"c"), compression=codec)
    crc = read_header(batch).crc
    stamped = stamp(batch, 100, 5)
    h = validate_records(stamped)  # no CorruptMessageError
    assert (h.base_offset, h.leader_epoch, h.crc) == (100, 5, crc)
    assert h.compression == codec
    assert len(stamped) == len(batch)
    assert stamped[CRC_START:] == batch[CRC_START:]
    assert [r.offset for r in iter_records(stamped)] == [100, 101, 102]
    assert [r.value for r in iter_records(stamped)] == [b"a", b"b", b"c"]
    # stamping twice is the same as stamping once with the last values
    assert stamp(stamp(batch, 1, 1), 100, 5) == stamped


def test_split_concatenated_batches():
    b1 = stamp(encode_batch(recs(b"a", b"b")), 0, 1)
    b2 = stamp(encode_batch(recs(b"c"), compression="gzip"), 2, 1)
    b3 = stamp(encode_batch(recs(b"d", b"e", b"f"), compression="zstd"), 3, 2)
    parts = split_batches(b1 + b2 + b3)
    assert [raw for _, raw in parts] == [b1, b2, b3]
    assert [(h.base_offset, h.last_offset, h.leader_epoch) for h, _ in parts] == [(0, 1, 1), (2, 2, 1), (3, 5, 2)]
    assert split_batches(b"") == []
    assert split_batches(b1 + b2 + b3, deep=True) == parts
    assert [r.value for r in iter_records(b1 + b2 + b3)] == [b"a", b"b", b"c", b"d", b"e", b"f"]


def test_iter_records_min_offset():
    data = stamp(encode_batch(recs(b"a", b"b")), 0, 0) + stamp(encode_batch(recs(b"c", b"d"), compression="lz4"), 2, 0)
    assert [r.offset for r in iter_records(data, min_offset=1)] == [1, 2, 3]
    assert [r.offset for r in iter_records(data, min_offset=3)] == [3]
    assert list(iter_records(data, min_offset=4)) == []


def test_negative_timestamp_deltas_and_empty_bytes():
    batch = encode_batch([(b"", b"", [("", b"")], 5000), (None, None, [("e", None)], 10), (b"k", b"v", None, -3)])
    validate_records(batch)
    h = read_header(batch)
    assert (h.base_timestamp, h.max_timestamp) == (5000, 5000)
    got = [(r.timestamp, r.key, r.value, r.headers) for r in iter_records(batch)]
    assert got == [(5000, b"", b"", [("", b"")]), (10, None, None, [("e", None)]), (-3, b"k", b"v", [])]


def test_unicode_header_names():
    batch = encode_batch([(None, b"v", [("trâce-ид", b"1")], 0)])
    assert next(iter_records(batch)).headers == [("trâce-ид", b"1")]


def test_control_batches_are_skipped():
    data = (stamp(encode_batch(recs(b"a")), 0, 0)
            + stamp(encode_batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", None, 1)],
                                 is_control=True, is_transactional=True, producer_id=9), 1, 0)
            + stamp(encode_batch(recs(b"c")), 2, 0))
    parts = split_batches(data, deep=True)
    assert [h.is_control for h, _ in parts] == [False, True, False]
    assert parts[1][0].is_transactional and parts[1][0].producer_id == 9
    assert [(r.offset, r.value) for r in iter_records(data)] == [(0, b"a"), (2, b"c")]


def test_log_append_time_gives_every_record_the_max_timestamp():
    section = record(0, b"a", ts_delta=0) + record(1, b"b", ts_delta=3)
    batch = raw_batch(section, 2, attributes=0x08, base_ts=100, max_ts=999)
    assert [r.timestamp for r in iter_records(batch)] == [999, 999]


# -- compression ---------------------------------------------------------------------------

@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_compressed_round_trip(codec):
    rs = [(b"key-%d" % i, b"value %d " % i * 20, [("h", b"%d" % i)], 1000 + i) for i in range(200)]
    batch = encode_batch(rs, compression=codec)
    h = validate_records(batch)
    assert h.compression == codec and h.attributes & 0x07 == CODECS[codec]
    if codec != "none":
        assert len(batch) < len(encode_batch(rs)) / 3
    got = [(r.key, r.value, r.headers, r.timestamp) for r in iter_records(batch)]
    assert got == [(k, v, list(hs), ts) for k, v, hs, ts in rs]


def test_snappy_uses_xerial_framing_in_blocks_and_reads_raw_snappy():
    rs = [(None, bytes(range(256)) * 200, None, 0), (None, b"x" * 70000, None, 1)]
    batch = encode_batch(rs, compression="snappy")
    section = batch[HEADER_SIZE:]
    assert section[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    blocks, pos = 0, 16
    while pos < len(section):
        (n,) = struct.unpack_from(">i", section, pos)
        pos += 4 + n
        blocks += 1
    assert pos == len(section) and blocks >= 3  # 32 KiB of input per block
    assert [r.value for r in iter_records(batch)] == [rs[0][1], rs[1][1]]
    # raw (unframed) snappy, as some clients send it
    plain = record(0, b"hello") + record(1, b"world")
    raw = raw_batch(bytes(cramjam.snappy.compress_raw(plain)), 2, attributes=2)
    validate_records(raw)
    assert [r.value for r in iter_records(raw)] == [b"hello", b"world"]


def test_lz4_frames_use_independent_blocks():
    section = encode_batch(recs(b"a" * 1000), compression="lz4")[HEADER_SIZE:]
    assert section[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg = section[4]
    assert flg >> 6 == 1 and flg & 0x20  # version 1, block independence (Kafka's Java client needs it)


def test_unknown_codec_is_unsupported_compression_type():
    batch = raw_batch(record(0, b"a"), 1, attributes=5)
    h = validate_batch(batch)  # header and CRC are fine
    assert h.compression == "unknown(5)"
    with pytest.raises(UnsupportedCompressionTypeError, match="compression codec 5") as e:
        validate_records(batch)
    assert e.value.code.code == 76  # Kafka's UNSUPPORTED_COMPRESSION_TYPE
    with pytest.raises(UnsupportedCompressionTypeError):
        list(iter_records(batch))


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_garbage_compressed_section_is_corrupt(codec):
    batch = raw_batch(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x09garbage!!"
                      if codec == "snappy" else b"not compressed at all", 1, attributes=CODECS[codec])
    validate_batch(batch)
    with pytest.raises(CorruptMessageError, match=codec):
        validate_records(batch)


# -- corruption ----------------------------------------------------------------------------

def flip(buf: bytes, at: int) -> bytes:
    out = bytearray(buf)
    out[at] ^= 0x01
    return bytes(out)


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
@pytest.mark.parametrize("at", [CRC_START, CRC_START + 3, 43, HEADER_SIZE - 1, HEADER_SIZE, -1])
def test_crc_mismatch_is_corrupt(at, codec):
    batch = encode_batch(recs(b"hello", b"world"), compression=codec)
    bad = flip(batch, at if at >= 0 else len(batch) + at)
    with pytest.raises(CorruptMessageError, match="CRC"):
        validate_batch(bad)
    with pytest.raises(CorruptMessageError):
        validate_records(bad)
    with pytest.raises(CorruptMessageError):
        split_batches(bad)
    with pytest.raises(CorruptMessageError):
        list(iter_records(bad))


def test_crc_field_itself_corrupt():
    batch = encode_batch(recs(b"x"))
    with pytest.raises(CorruptMessageError, match="CRC"):
        validate_batch(flip(batch, 17))


def test_bytes_outside_the_crc_are_not_checked():
    batch = encode_batch(recs(b"x"))
    validate_records(flip(flip(batch, 3), 14))  # base offset and leader epoch


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
    section = record(0, b"x") + record(1, b"y")
    # more records than the offset span: corrupt everywhere
    with pytest.raises(CorruptMessageError, match="record count 2 does not match last offset delta 0"):
        validate_batch(raw_batch(section, 2, last_offset_delta=0))  # with a correct CRC
    # fewer: a compacted batch, which a follower or consumer accepts, but a producer may not send
    assert validate_batch(raw_batch(section, 2, last_offset_delta=5)).last_offset == 5
    with pytest.raises(CorruptMessageError, match="record count 2 does not match last offset delta 5"):
        validate_records(raw_batch(section, 2, last_offset_delta=5))
    # none: the empty batch the log cleaner keeps of an active producer's last batch
    # (Kafka's RETAIN_EMPTY), which a follower or consumer accepts, but a producer may not send
    assert validate_batch(raw_batch(b"", 0, last_offset_delta=0)).record_count == 0
    with pytest.raises(CorruptMessageError, match="has no records"):
        validate_records(raw_batch(b"", 0, last_offset_delta=0))


def test_validate_at_position():
    b1 = encode_batch(recs(b"a"))
    b2 = stamp(encode_batch(recs(b"b")), 1, 3)
    h = validate_batch(b1 + b2, len(b1))
    assert (h.base_offset, h.leader_epoch) == (1, 3)
    assert validate_records(b1 + b2, len(b1)) == h


# -- deep validation: a correct CRC over wrong records ---------------------------------------

@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
@pytest.mark.parametrize("case, match", [
    ("fewer records than declared", "ends inside record 2"),
    ("more records than declared", "remain after the 2 records"),
    ("offset delta gap", "record 1 has offset delta 2"),
    ("offset deltas from 1", "record 0 has offset delta 1"),
    ("record longer than its fields", "record 0 declares"),
    ("record shorter than its fields", "record 0"),
    ("null header key", "null key"),
    ("header key not UTF-8", "UTF-8"),
    ("key length -2", "key length -2"),
])
def test_deep_validation_catches_bad_records_behind_a_good_crc(case, match, codec):
    r0, r1 = record(0, b"a"), record(1, b"b")
    section, count = {
        "fewer records than declared": (r0 + r1, 3),
        "more records than declared": (r0 + r1 + record(2, b"c"), 2),
        "offset delta gap": (r0 + record(2, b"b"), 2),
        "offset deltas from 1": (record(1, b"a") + record(2, b"b"), 2),
        "record longer than its fields": (record(0, b"a", extra=b"\x00", declared_extra=1) + r1, 2),
        "record shorter than its fields": (record(0, b"a", declared_extra=-1) + r1, 2),
        # attributes, ts 0, offset 0, key null, value null, 1 header, header key length -1, value ""
        "null header key": (varint(8) + b"\x00\x00\x00\x01\x01\x02\x01\x00", 1),
        "header key not UTF-8": (record(0, b"a", headers=[(b"\xff\xfe", b"v")]), 1),
        "key length -2": (varint(6) + b"\x00\x00\x00" + varint(-2) + b"\x01\x00", 1),
    }[case]
    batch = raw_batch(compress(CODECS[codec], section), count, attributes=CODECS[codec])
    validate_batch(batch)  # the header and CRC look fine
    with pytest.raises(CorruptMessageError, match=match):
        validate_records(batch)
    with pytest.raises(CorruptMessageError):
        split_batches(batch, deep=True)


# -- interop with kafka-python's own implementation -----------------------------------------

kafka_default = pytest.importorskip("kafka.record.default_records")
kafka_memory = pytest.importorskip("kafka.record.memory_records")

SAMPLE = [
    (b"k1", b"v1" * 100, [("h", b"x"), ("n", None)], 1_700_000_000_000),
    (None, b"v2", [], 1_700_000_000_005),
    (b"k3", None, [], 1_699_999_999_999),
    (b"", b"", [("", b"")], 1_700_000_000_001),
]


def kp_batch(records, codec: int, producer_id=-1, producer_epoch=-1, base_sequence=-1) -> bytes:
    """A batch built by kafka-python's DefaultRecordBatchBuilder."""
    bld = kafka_default.DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 24)
    for i, (k, v, hs, ts) in enumerate(records):
        bld.append(i, timestamp=ts, key=k, value=v, headers=list(hs or ()))
    return bytes(bld.build())


def kp_read(data: bytes) -> list[tuple]:
    """Every record of ``data`` as kafka-python's MemoryRecords reads it (CRC checked)."""
    out = []
    mr = kafka_memory.MemoryRecords(data)
    while True:
        batch = mr.next_batch()
        if batch is None:
            return out
        assert batch.validate_crc()
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]))


def ours(data: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_records(data)]


def test_uncompressed_bytes_identical_to_kafka_python():
    theirs = kp_batch(SAMPLE, 0, producer_id=5, producer_epoch=1, base_sequence=9)
    mine = encode_batch(SAMPLE, producer_id=5, producer_epoch=1, base_sequence=9)
    assert stamp(mine, 0, 0) == theirs  # kafka-python writes partition leader epoch 0, we -1


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_kafka_python_reads_our_batches(codec):
    data = stamp(encode_batch(SAMPLE, compression=codec, producer_id=42, producer_epoch=2, base_sequence=7), 1000, 3)
    data += stamp(encode_batch(recs(b"more", b"records"), compression=codec), 1004, 3)
    batch = kafka_memory.MemoryRecords(data).next_batch()
    assert batch.validate_crc()
    assert batch.compression_type == CODECS[codec]
    assert (batch.base_offset, batch.leader_epoch, batch.producer_id, batch.producer_epoch, batch.base_sequence) == \
        (1000, 3, 42, 2, 7)
    assert kp_read(data) == ours(data)
    assert [r[0] for r in kp_read(data)] == [1000, 1001, 1002, 1003, 1004, 1005]
    assert [(k, v, hs, ts) for _, ts, k, v, hs in kp_read(data)[:4]] == [(k, v, hs, ts) for k, v, hs, ts in SAMPLE]


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_we_read_kafka_python_batches(codec):
    rs = SAMPLE + [(b"key-%d" % i, b"value-%d" % i * 30, [("i", b"%d" % i)], 1_700_000_000_000 + i)
                   for i in range(100)]
    data = kp_batch(rs, CODECS[codec], producer_id=11, producer_epoch=0, base_sequence=0)
    h = validate_records(data)
    assert h.compression == codec
    assert (h.record_count, h.producer_id, h.producer_epoch, h.base_sequence) == (len(rs), 11, 0, 0)
    data = stamp(data, 50, 4)
    assert validate_records(data).base_offset == 50
    assert ours(data) == kp_read(data)
    assert [(k, v, hs, ts) for _, ts, k, v, hs in ours(data)] == [(k, v, list(hs), ts) for k, v, hs, ts in rs]


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_a_flipped_byte_after_the_crc_is_refused_by_both(codec):
    data = kp_batch(SAMPLE, CODECS[codec])
    for at in (CRC_START + 1, HEADER_SIZE + 2, len(data) - 1):
        bad = flip(data, at)
        with pytest.raises(CorruptMessageError):
            validate_batch(bad)
        assert not kafka_memory.MemoryRecords(bad).next_batch().validate_crc()


@pytest.mark.parametrize("codec", COMPRESSION_TYPES)
def test_stamp_keeps_the_crc_valid_for_kafka_python(codec):
    data = stamp(encode_batch(SAMPLE, compression=codec), 123456789, 17)
    batch = kafka_memory.MemoryRecords(data).next_batch()
    assert batch.validate_crc() and (batch.base_offset, batch.leader_epoch) == (123456789, 17)


# -- properties --------------------------------------------------------------------------------

record_st = st.tuples(
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)),
    st.integers(min_value=-2**40, max_value=2**42),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(record_st, min_size=1, max_size=6), st.sampled_from(COMPRESSION_TYPES)),
                min_size=1, max_size=5),
       st.integers(min_value=0, max_value=2**40), st.integers(min_value=0, max_value=2**31 - 1))
def test_round_trip_property(batches, base, epoch):
    data = b""
    offset = base
    expected = []
    for rs, codec in batches:
        raw = encode_batch(rs, compression=codec)
        data += stamp(raw, offset, epoch)
        for i, (k, v, hs, ts) in enumerate(rs):
            expected.append((offset + i, ts, k, v, [tuple(h) for h in (hs or [])]))
        offset += len(rs)
    parts = split_batches(data, deep=True)
    assert len(parts) == len(batches)
    assert all(h.leader_epoch == epoch for h, _ in parts)
    assert [h.max_timestamp for h, _ in parts] == [max(r[3] for r in rs) for rs, _ in batches]
    assert b"".join(raw for _, raw in parts) == data
    got = ours(data)
    assert got == expected
    assert kp_read(data) == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=8), st.sampled_from(COMPRESSION_TYPES))
def test_kafka_python_built_batches_property(rs, codec):
    rs = [(k, v, list(hs or ()), ts) for k, v, hs, ts in rs]
    data = kp_batch(rs, CODECS[codec])
    validate_records(data)
    assert ours(data) == [(i, ts, k, v, [tuple(h) for h in hs]) for i, (k, v, hs, ts) in enumerate(rs)]


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=120), st.integers(min_value=1, max_value=5))
def test_random_record_sections_never_crash(section, count):
    """Whatever a client sends behind a good CRC, deep validation answers CORRUPT_MESSAGE or accepts."""
    batch = raw_batch(section, count)
    try:
        h = validate_records(batch)
    except CorruptMessageError:
        return
    assert len(list(iter_records(batch))) == h.record_count


def test_split_without_validation_rejects_a_length_shorter_than_a_header():
    bad = bytearray(encode_batch([(None, b"v", None, 1)]))
    struct.pack_into(">i", bad, 8, -12)
    with pytest.raises(CorruptMessageError):
        split_batches(bytes(bad), validate=False)


# One parser reads every records section (protocol/records/section.py): the leader's check,
# the consumer's decoding and the Spark source's columns.  It walks a section record by
# record, or, for same-shaped records, cuts it column by column with strided slices (the
# fast path).  Both are held to a plain reference decoder written here from the format.
from minikafka.protocol.records import section as _sec  # noqa: E402
from minikafka.protocol.records.varint import varint_bytes  # noqa: E402


def _ref_varint(data: bytes, pos: int) -> tuple[int, int]:
    raw = shift = 0
    while True:
        b = data[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def _reference(data: bytes, count: int) -> tuple[list, ...] | None:
    """The section's columns (deltas, timestamp deltas, keys, values, headers), decoded
    plainly field by field as Kafka's DefaultRecord.readFrom does; None when invalid."""
    cols: tuple[list, ...] = ([], [], [], [], [])
    pos, n = 0, len(data)

    def nullable(pos: int) -> tuple[bytes | None, int]:
        ln, pos = _ref_varint(data, pos)
        if ln < -1 or pos + ln > n:
            raise ValueError("bad length")
        return (None, pos) if ln == -1 else (data[pos:pos + ln], pos + ln)

    try:
        for _ in range(count):
            length, pos = _ref_varint(data, pos)
            if length < 0 or pos + length > n:
                return None
            end = pos + length
            pos += 1  # attributes
            ts_delta, pos = _ref_varint(data, pos)
            delta, pos = _ref_varint(data, pos)
            key, pos = nullable(pos)
            value, pos = nullable(pos)
            nh, pos = _ref_varint(data, pos)
            if nh < 0:
                return None
            headers = []
            for _ in range(nh):
                name, pos = nullable(pos)
                if name is None:
                    return None
                hv, pos = nullable(pos)
                headers.append((name.decode("utf-8"), hv))
            if pos != end:
                return None
            for col, v in zip(cols, (delta, ts_delta, key, value, headers)):
                col.append(v)
    except (IndexError, ValueError, UnicodeDecodeError):
        return None
    return cols if pos == n else None


def _produced(data: bytes, count: int) -> bool:
    """Valid as a producer writes it: decodes, with offset deltas 0..count-1."""
    cols = _reference(data, count)
    return cols is not None and cols[0] == list(range(count))


def _check_ok(data: bytes, count: int) -> bool:
    try:
        _sec.check_section(data, count, "b")
    except CorruptMessageError:
        return False
    return True


def _decoded(data: bytes, count: int) -> tuple[list, ...] | None:
    try:
        return tuple(_sec.decode_section(data, count, "b"))
    except CorruptMessageError:
        return None


def _walked(data: bytes, count: int) -> tuple[list, ...] | None:
    """The record walk alone (the fast path not tried)."""
    try:
        return tuple(_sec._walk(data, count, "b", False, True, True))
    except CorruptMessageError:
        return None


def _agree(data: bytes, count: int) -> None:
    """Check, decode and the walk alone all say what the reference says; and when the
    fast path takes the section, its cut (lists and numpy columns) is the reference's."""
    ref = _reference(data, count)
    assert _check_ok(data, count) == _produced(data, count)
    assert _decoded(data, count) == ref
    assert _walked(data, count) == ref
    runs = _sec.uniform_runs(data, count)
    if runs is not None:
        assert _produced(data, count)
        assert tuple(_sec.cut_runs(data, runs)) == ref
        assert all(not hs for hs in ref[4])
        _assert_numpy_cut(data, runs, ref)


def _assert_numpy_cut(data: bytes, runs: list, ref: tuple[list, ...]) -> None:
    from minikafka.protocol.records.columns import run_arrays

    arrays = run_arrays(data, runs)
    assert arrays.offset_deltas.tolist() == ref[0] and arrays.timestamp_deltas.tolist() == ref[1]
    for got, want in ((arrays.keys, ref[2]), (arrays.values, ref[3])):
        cut = []
        for r, m in zip(runs, got):
            cut += [None] * r.count if m is None else [bytes(row) for row in m]
        assert cut == want


_record = st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=300)),
                    st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
                    st.integers(0, 10_000))


@settings(max_examples=300, deadline=None)
@given(st.lists(_record, min_size=1, max_size=6), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                                            max_size=3),
       st.integers(-3, 3), st.integers(0, 10_000))
def test_the_leaders_record_check_agrees_with_decoding(recs, flips, count_change, cut):
    data = bytearray(_sec.encode_records(recs, 0))
    assert _check_ok(bytes(data), len(recs)) and _produced(bytes(data), len(recs))
    for where, value in flips:
        if data:
            data[where % len(data)] = value
    if cut % 4 == 0 and data:
        del data[cut % len(data):]
    _agree(bytes(data), max(0, len(recs) + count_change))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.just(b"k")),
                          st.one_of(st.none(), st.binary(max_size=20), st.just(b"v" * 9000)),
                          st.one_of(st.just(()), st.just([("h", b"x")])), st.integers(-20_000, 20_000)),
                min_size=1, max_size=8),
       st.integers(0, 9_000))
def test_encoding_writes_plain_and_other_records_alike(recs, first_delta):
    """Plain records (no key, no headers, small deltas) are written from ready pieces,
    the others field by field: decoding gives every field back either way."""
    deltas = [first_delta + i for i in range(len(recs))]
    data = _sec.encode_records(recs, 0, deltas)
    cols = _sec.decode_section(data, len(recs), "b", include_headers=True)
    assert list(cols.offset_deltas) == deltas
    assert list(cols.timestamp_deltas) == [r[3] for r in recs]
    assert list(cols.keys) == [r[0] for r in recs] and list(cols.values) == [r[1] for r in recs]
    assert [list(h) for h in cols.headers] == [list(r[2]) for r in recs]


def test_a_compacted_section_decodes_but_fails_the_leaders_check():
    data = bytes(_sec.encode_records([(None, b"v%d" % i, None, 5) for i in range(20)], 5, list(range(0, 40, 2))))
    assert _decoded(data, 20)[0] == list(range(0, 40, 2))
    with pytest.raises(CorruptMessageError, match="record 1 has offset delta 2 \\(expected 1\\)"):
        _sec.check_section(data, 20, "b")
    assert _sec.uniform_runs(data, 20) is None


# Batches of same-shaped records are checked column by column (uniform_runs); it may
# say "not uniform" for a valid section, never "valid" for one decoding refuses.
def _uniform(data: bytes, count: int) -> bool:
    return _sec.uniform_runs(data, count) is not None


@settings(max_examples=300, deadline=None)
@given(st.integers(16, 300), st.one_of(st.none(), st.integers(0, 12)), st.integers(0, 200),
       st.sampled_from([(0, 0), (0, 60), (70, 4000), (0, 4000)]), st.randoms(use_true_random=False),
       st.lists(st.tuples(st.integers(0, 100_000), st.integers(0, 255)), max_size=3),
       st.integers(-2, 2), st.integers(0, 100_000))
def test_the_column_wise_check_of_same_shaped_records_agrees_with_decoding(
        n, key_size, value_size, ts_range, rnd, flips, count_change, cut):
    recs = [(None if key_size is None else rnd.randbytes(key_size), rnd.randbytes(value_size), [],
             rnd.randint(*ts_range)) for _ in range(n)]
    data = bytearray(_sec.encode_records(recs, 0))
    widths = {len(varint_bytes(r[3])) for r in recs}
    assert _uniform(bytes(data), n) == (len(widths) == 1)  # uniform ts widths: the fast path
    _agree(bytes(data), n)
    for where, value in flips:
        data[where % len(data)] = value
    if cut % 3 == 0:
        del data[cut % len(data):]
    _agree(bytes(data), max(0, n + count_change))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(16, 120), st.one_of(st.none(), st.integers(0, 9)), st.integers(0, 90),
                          st.sampled_from([(0, 0), (0, 63), (64, 8191), (-64, -1), (-8192, -65)])),
                min_size=1, max_size=3),
       st.randoms(use_true_random=False), st.lists(st.integers(0, 1 << 20), max_size=4))
def test_the_strided_cut_decodes_what_the_record_walk_decodes(shapes, rnd, payload_flips):
    """Sections the fast path takes (one or more batches of same-shaped records, the
    payload bytes changed so that they stay same-shaped) decode to the same columns
    by strided slices, by numpy and record by record."""
    for n, key_size, value_size, ts_range in shapes:
        recs = [(None if key_size is None else rnd.randbytes(key_size), rnd.randbytes(value_size), [],
                 rnd.randint(*ts_range)) for _ in range(n)]
        widths = {len(varint_bytes(r[3])) for r in recs}
        if len(widths) != 1:
            recs = [(k, v, h, ts_range[0]) for k, v, h, _ in recs]
        data = bytearray(_sec.encode_records(recs, 0))
        runs = _sec.uniform_runs(bytes(data), n)
        assert runs is not None
        for flip in payload_flips:  # a byte of a key or value changes: still same-shaped
            r = runs[flip % len(runs)]
            j = flip % r.count
            fields = [(r.key_at, r.key_len), (r.value_at, r.value_len)]
            at, length = fields[flip % 2]
            if length > 0:
                data[r.pos + j * r.size + at + flip % length] ^= 0xFF
        assert _uniform(bytes(data), n)
        _agree(bytes(data), n)


def test_the_column_wise_check_covers_offset_deltas_of_one_two_and_three_bytes():
    for n in (64, 65, 8192, 8193, 9000):
        data = bytes(_sec.encode_records([(None, b"v" * 20, [], 1) for _ in range(n)], 0))
        assert _uniform(data, n)
        _agree(data, n)
        assert not _uniform(data, n - 1) and not _uniform(data + b"\0", n)
        swapped = bytearray(data)  # two records' offset deltas swapped: lengths all fine, order wrong
        first, second = 0, len(data) // n
        swapped[first + 3], swapped[second + 3] = swapped[second + 3], swapped[first + 3]  # length, attributes, timestamp delta, offset delta
        assert not _uniform(bytes(swapped), n) and not _check_ok(bytes(swapped), n)
