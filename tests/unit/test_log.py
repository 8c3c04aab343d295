"""PartitionLog, LeaderEpochCache and the checkpoint text formats."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.errors import CorruptMessageError, KafkaStorageError, OffsetOutOfRangeError
from minikafka.log import checkpoint
from minikafka.log.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LeaderEpochCache
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, iter_records, read_header, split_batches, stamp
from minikafka.replication import rules

BIG = 1 << 30


def make_batch(base: int, n: int, epoch: int = 0, tag: str = "v", size: int = 0) -> bytes:
    pad = b"." * size
    return stamp(encode_batch([(None, f"{tag}{base + i}".encode() + pad, None, 1000 + base + i) for i in range(n)]),
                 base, epoch)


def append(log: PartitionLog, n: int, epoch: int = 0, tag: str = "v", size: int = 0) -> bytes:
    data = make_batch(log.log_end_offset, n, epoch, tag, size)
    log.append(read_header(data), data)
    return data


def offsets(buf: bytes) -> list[int]:
    return [r.offset for r in iter_records(buf)]


def batch_ranges(buf: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h, _ in split_batches(buf)]


def log_with(*sizes: int, epoch: int = 0) -> PartitionLog:
    log = PartitionLog()
    for n in sizes:
        append(log, n, epoch)
    return log


# -- PartitionLog -----------------------------------------------------------------------

def test_empty_log():
    log = PartitionLog()
    assert (log.log_start_offset, log.log_end_offset, len(log), log.size_bytes) == (0, 0, 0, 0)
    assert log.read(0, BIG) == b""
    assert log.checksum(10) == 0


def test_append_is_contiguous():
    log = PartitionLog()
    b1 = append(log, 3)
    b2 = append(log, 1)
    b3 = append(log, 2, epoch=1)
    assert log.log_end_offset == 6
    assert len(log) == 3
    assert log.size_bytes == len(b1) + len(b2) + len(b3)
    assert [(b.base_offset, b.last_offset, b.leader_epoch) for b in log.batches_from(0)] == [(0, 2, 0), (3, 3, 0), (4, 5, 1)]
    assert log.read(0, BIG) == b1 + b2 + b3


@pytest.mark.parametrize("base", [0, 2, 4, 5, 100])
def test_append_with_gap_or_overlap_is_refused(base):
    log = log_with(3)
    data = make_batch(base, 2)
    with pytest.raises(CorruptMessageError):
        log.append(read_header(data), data)
    assert log.log_end_offset == 3 and len(log) == 1


def test_log_with_start_offset():
    log = PartitionLog(log_start_offset=10)
    assert log.log_end_offset == 10
    with pytest.raises(CorruptMessageError):
        append_at(log, 0)
    append_at(log, 10)
    assert log.log_end_offset == 12
    assert offsets(log.read(10, BIG)) == [10, 11]


def append_at(log: PartitionLog, base: int) -> None:
    data = make_batch(base, 2)
    log.append(read_header(data), data)


def test_read_returns_whole_batch_containing_offset():
    log = log_with(3, 4, 2)  # batches [0,2] [3,6] [7,8]
    assert batch_ranges(log.read(0, BIG)) == [(0, 2), (3, 6), (7, 8)]
    assert batch_ranges(log.read(1, BIG)) == [(0, 2), (3, 6), (7, 8)]
    assert batch_ranges(log.read(3, BIG)) == [(3, 6), (7, 8)]
    assert batch_ranges(log.read(5, BIG)) == [(3, 6), (7, 8)]
    assert batch_ranges(log.read(8, BIG)) == [(7, 8)]
    assert log.read(9, BIG) == b""  # at the LEO: nothing, no error


def test_read_max_bytes_bound_and_at_least_one_batch():
    log = PartitionLog()
    sizes = [len(append(log, 2, size=100)) for _ in range(4)]
    one = sizes[0]
    assert batch_ranges(log.read(0, 1)) == [(0, 1)]  # at least one batch, even over max_bytes
    assert batch_ranges(log.read(0, 0)) == [(0, 1)]
    assert batch_ranges(log.read(0, one)) == [(0, 1)]
    assert batch_ranges(log.read(0, one * 2 - 1)) == [(0, 1)]
    assert batch_ranges(log.read(0, one * 2)) == [(0, 1), (2, 3)]
    assert batch_ranges(log.read(3, one * 3)) == [(2, 3), (4, 5), (6, 7)]
    assert batch_ranges(log.read(5, 1)) == [(4, 5)]
    for max_bytes in range(0, sum(sizes) + 10, 37):
        out = log.read(0, max_bytes)
        assert len(out) <= max(max_bytes, one)


def test_read_upto_bound():
    log = log_with(3, 4, 2)  # [0,2] [3,6] [7,8]
    assert log.read(0, BIG, upto=0) == b""
    assert log.read(0, BIG, upto=2) == b""  # batch [0,2] has last offset 2 >= 2
    assert batch_ranges(log.read(0, BIG, upto=3)) == [(0, 2)]
    assert batch_ranges(log.read(0, BIG, upto=6)) == [(0, 2)]
    assert batch_ranges(log.read(0, BIG, upto=7)) == [(0, 2), (3, 6)]
    assert batch_ranges(log.read(4, BIG, upto=7)) == [(3, 6)]
    assert batch_ranges(log.read(0, BIG, upto=9)) == [(0, 2), (3, 6), (7, 8)]
    assert batch_ranges(log.read(0, BIG, upto=100)) == [(0, 2), (3, 6), (7, 8)]
    assert log.read(7, BIG, upto=7) == b""
    # upto wins over the at-least-one-batch rule
    assert log.read(3, 1, upto=5) == b""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=10), st.data())
def test_read_bounds_property(sizes, data):
    log = log_with(*sizes)
    leo = log.log_end_offset
    offset = data.draw(st.integers(0, leo))
    upto = data.draw(st.one_of(st.none(), st.integers(0, leo + 3)))
    max_bytes = data.draw(st.integers(0, 2000))
    out = log.read(offset, max_bytes, upto)
    ranges = batch_ranges(out)
    bound = leo if upto is None else upto
    assert all(last < bound for _, last in ranges)
    if ranges:
        assert ranges[0][0] <= offset <= ranges[0][1]
        assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(len(ranges) - 1))
        assert len(ranges) == 1 or len(out) <= max_bytes
    else:
        # nothing only when the batch holding the offset is not below the bound (or offset is the LEO)
        first = next(log.batches_from(offset), None)
        assert offset == leo or first is None or first.last_offset >= bound


@pytest.mark.parametrize("offset", [-1, 11, 100])
def test_read_out_of_range(offset):
    log = log_with(4, 6)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(offset, BIG)


def test_read_below_log_start_out_of_range():
    log = PartitionLog(log_start_offset=5)
    append_at(log, 5)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, BIG)
    assert offsets(log.read(5, BIG)) == [5, 6]
    assert log.read(7, BIG) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(8, BIG)


def test_truncate_to_batch_boundary():
    log = log_with(3, 4, 2)  # [0,2] [3,6] [7,8]
    assert log.truncate_to(7) == 7
    assert log.log_end_offset == 7 and len(log) == 2
    assert batch_ranges(log.read(0, BIG)) == [(0, 2), (3, 6)]
    assert log.size_bytes == len(log.read(0, BIG))


def test_truncate_to_removes_straddling_batch_whole():
    log = log_with(3, 4, 2)
    assert log.truncate_to(5) == 3  # [3,6] straddles 5: removed whole
    assert log.log_end_offset == 3
    assert batch_ranges(log.read(0, BIG)) == [(0, 2)]
    assert log.size_bytes == len(log.read(0, BIG))
    # appending continues at the new LEO
    append(log, 1)
    assert batch_ranges(log.read(0, BIG)) == [(0, 2), (3, 3)]


def test_truncate_to_at_or_past_leo_is_noop():
    log = log_with(3, 4)
    before = log.read(0, BIG)
    assert log.truncate_to(7) == 7
    assert log.truncate_to(100) == 7
    assert log.read(0, BIG) == before


def test_truncate_to_zero_and_below_start():
    log = log_with(3, 4)
    assert log.truncate_to(0) == 0
    assert len(log) == 0 and log.size_bytes == 0
    log2 = PartitionLog(log_start_offset=4)
    append_at(log2, 4)
    assert log2.truncate_to(1) == 4
    assert len(log2) == 0


def test_truncate_fully_and_start_at():
    log = log_with(3, 4)
    log.truncate_fully_and_start_at(20)
    assert (log.log_start_offset, log.log_end_offset, len(log), log.size_bytes) == (20, 20, 0, 0)
    append_at(log, 20)
    assert offsets(log.read(20, BIG)) == [20, 21]


def test_batch_boundary_at_or_below():
    log = log_with(3, 4, 2)  # [0,2] [3,6] [7,8]
    assert [log.batch_boundary_at_or_below(o) for o in range(11)] == [0, 0, 0, 3, 3, 3, 3, 7, 7, 9, 9]


def test_checksum_of_equal_prefixes():
    a = PartitionLog()
    b = PartitionLog()
    for log in (a, b):
        append(log, 2, epoch=0)
        append(log, 3, epoch=1)
    append(a, 2, epoch=1, tag="a")
    append(b, 2, epoch=2, tag="b")
    assert a.checksum(5) == b.checksum(5)
    assert a.checksum(2) == b.checksum(2)
    assert a.checksum(4) == a.checksum(2)  # only batches entirely below upto count
    assert a.checksum(7) != b.checksum(7)
    assert a.checksum(2) != a.checksum(5)
    b.truncate_to(5)
    append(b, 2, epoch=1, tag="a")
    assert a.checksum(7) == b.checksum(7)
    assert a.checksum(100) == b.checksum(100)


def test_checksum_differs_for_same_offsets_different_records():
    a = PartitionLog()
    b = PartitionLog()
    append(a, 1, tag="x")
    append(b, 1, tag="y")
    assert a.checksum(1) != b.checksum(1)
    assert a.checksum(0) == b.checksum(0) == 0


# -- LeaderEpochCache ---------------------------------------------------------------------

def test_assign_rules():
    c = LeaderEpochCache()
    assert c.latest_epoch == UNDEFINED_EPOCH
    assert c.assign(0, 0) is True
    assert c.assign(0, 0) is False  # same epoch: ignored
    assert c.assign(0, 5) is False
    assert c.assign(-1, 3) is False  # undefined epoch: ignored
    assert c.assign(2, 3) is True
    assert c.assign(1, 7) is False  # older than the latest: ignored
    assert c.entries == [(0, 0), (2, 3)]
    assert c.latest_epoch == 2
    assert c.start_offset_of(2) == 3
    assert c.start_offset_of(1) == UNDEFINED_OFFSET
    # a newer epoch starting at or before existing entries replaces them
    assert c.assign(3, 3) is True
    assert c.entries == [(0, 0), (3, 3)]
    assert c.assign(5, 0) is True
    assert c.entries == [(5, 0)]


def test_assign_empty_epochs_at_same_offset():
    c = LeaderEpochCache([(0, 0), (1, 4)])
    assert c.assign(2, 4)  # epoch 1 held no record: it is replaced
    assert c.entries == [(0, 0), (2, 4)]


def test_constructor_goes_through_assign():
    c = LeaderEpochCache([(0, 0), (2, 5), (1, 9), (4, 5)])
    assert c.entries == [(0, 0), (4, 5)]


END_OFFSET_TABLE = [
    # entries, requested, leo, expected
    ([], 0, 10, (UNDEFINED_EPOCH, UNDEFINED_OFFSET)),
    ([(0, 0)], UNDEFINED_EPOCH, 10, (UNDEFINED_EPOCH, UNDEFINED_OFFSET)),
    ([(0, 0)], 0, 10, (0, 10)),
    ([(0, 0)], 3, 10, (UNDEFINED_EPOCH, UNDEFINED_OFFSET)),  # newer than the latest: undefined, as in Kafka
    ([(0, 0), (2, 4), (5, 9)], 0, 12, (0, 4)),
    ([(0, 0), (2, 4), (5, 9)], 1, 12, (0, 4)),  # unknown epoch: the largest epoch below it
    ([(0, 0), (2, 4), (5, 9)], 2, 12, (2, 9)),
    ([(0, 0), (2, 4), (5, 9)], 4, 12, (2, 9)),
    ([(0, 0), (2, 4), (5, 9)], 5, 12, (5, 12)),
    ([(0, 0), (2, 4), (5, 9)], 7, 12, (UNDEFINED_EPOCH, UNDEFINED_OFFSET)),
    # older than every entry: the requested epoch ends where the first known epoch starts
    ([(3, 0), (5, 6)], 1, 12, (1, 0)),
    ([(3, 2), (5, 6)], 2, 12, (2, 2)),
    ([(3, 2), (5, 6)], 0, 12, (0, 2)),
]


@pytest.mark.parametrize("entries,requested,leo,expected", END_OFFSET_TABLE)
def test_end_offset_for_table(entries, requested, leo, expected):
    assert LeaderEpochCache(entries).end_offset_for(requested, leo) == expected
    assert rules.end_offset_for(entries, requested, leo) == expected


def test_truncate_from_end():
    c = LeaderEpochCache([(0, 0), (2, 4), (5, 9)])
    assert c.truncate_from_end(10) is False
    assert c.entries == [(0, 0), (2, 4), (5, 9)]
    assert c.truncate_from_end(9) is True  # an entry starting at the end offset goes
    assert c.entries == [(0, 0), (2, 4)]
    assert c.truncate_from_end(5) is False
    assert c.truncate_from_end(1) is True
    assert c.entries == [(0, 0)]
    assert c.truncate_from_end(0) is True
    assert c.entries == [] and c.latest_epoch == UNDEFINED_EPOCH


def test_clear():
    c = LeaderEpochCache([(0, 0), (2, 4)])
    c.clear()
    assert c.entries == []


@st.composite
def epoch_entries(draw):
    n = draw(st.integers(0, 8))
    epochs = sorted(draw(st.sets(st.integers(0, 40), min_size=n, max_size=n)))
    starts = sorted(draw(st.lists(st.integers(0, 100), min_size=n, max_size=n)))
    # strictly increasing start offsets, as assign keeps them
    entries, last = [], -1
    for e, s in zip(epochs, starts):
        s = max(s, last + 1)
        entries.append((e, s))
        last = s
    return entries


@settings(max_examples=400, deadline=None)
@given(epoch_entries(), st.integers(-1, 45), st.integers(0, 200))
def test_end_offset_for_matches_reference(entries, requested, extra):
    leo = (entries[-1][1] if entries else 0) + extra
    cache = LeaderEpochCache(entries)
    assert cache.entries == entries
    got = cache.end_offset_for(requested, leo)
    assert got == rules.end_offset_for(entries, requested, leo)
    epoch, end = got
    if entries and requested >= 0:
        assert epoch <= max(requested, entries[-1][0])
        assert end <= leo
    if epoch >= 0 and epoch >= entries[0][0]:
        assert epoch in [e for e, _ in entries]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 20), st.integers(0, 50)), max_size=12))
def test_assign_keeps_cache_monotonic(ops):
    c = LeaderEpochCache()
    for e, s in ops:
        c.assign(e, s)
        es = c.entries
        assert all(es[i][0] < es[i + 1][0] for i in range(len(es) - 1))
        assert all(es[i][1] < es[i + 1][1] for i in range(len(es) - 1))


# -- checkpoint formats ----------------------------------------------------------------------

def test_offsets_checkpoint_format():
    text = checkpoint.format_offsets({("t", 1): 42, ("a", 0): 7, ("t", 0): 0})
    assert text == "0\n3\na 0 7\nt 0 0\nt 1 42\n"
    assert checkpoint.parse_offsets(text) == {("a", 0): 7, ("t", 0): 0, ("t", 1): 42}
    assert checkpoint.parse_offsets(checkpoint.format_offsets({})) == {}
    assert checkpoint.format_offsets({}) == "0\n0\n"


def test_epochs_checkpoint_format():
    text = checkpoint.format_epochs([(0, 0), (3, 17)])
    assert text == "0\n2\n0 0\n3 17\n"
    assert checkpoint.parse_epochs(text) == [(0, 0), (3, 17)]
    assert checkpoint.parse_epochs("0\n0\n") == []


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.tuples(st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True), st.integers(0, 1000)),
                       st.integers(0, 2**62), max_size=10),
       epoch_entries())
def test_checkpoint_round_trip_property(offsets_map, entries):
    assert checkpoint.parse_offsets(checkpoint.format_offsets(offsets_map)) == offsets_map
    assert checkpoint.parse_epochs(checkpoint.format_epochs(entries)) == entries


@pytest.mark.parametrize("text", [
    "",
    "\n",
    "x\n0\n",
    "1\n0\n",  # unsupported version
    "0\n",  # no count
    "0\nx\n",
    "0\n2\nt 0 5\n",  # fewer entries than the count
    "0\n1\nt 0\n",  # missing field
    "0\n1\nt 0 5 9\n",  # extra field
    "0\n1\nt x 5\n",
    "0\n1\nt 0 y\n",
    "0\n-1\n",
    "0\n1\nt 0 5\nu 0 6\n",  # more entries than the count
])
def test_offsets_checkpoint_malformed(text):
    with pytest.raises(KafkaStorageError):
        checkpoint.parse_offsets(text)


@pytest.mark.parametrize("text", [
    "",
    "0\n1\n",
    "0\n1\n3\n",
    "0\n1\n3 4 5\n",
    "0\n1\na 4\n",
    "0\n1\n3 b\n",
    "2\n1\n3 4\n",
    "0\n1\n3 4\n5 6\n",
])
def test_epochs_checkpoint_malformed(text):
    with pytest.raises(KafkaStorageError):
        checkpoint.parse_epochs(text)


# -- disk storage: Kafka's record batch v2 and the format marker ------------------------------

def store(storage, topic, partition, batches, segment_bytes):
    """Append ``batches`` to a log that rolls at ``segment_bytes`` and mirror them to ``storage``,
    as the broker does; returns the log."""
    plog = PartitionLog(segment_bytes=segment_bytes)
    for data in batches:
        plog.append(read_header(data), data)
    storage.append(topic, partition, batches, plog)
    return plog


def test_disk_storage_marks_a_new_data_dir_and_reloads_v2_batches(tmp_path):
    from minikafka.broker.storage import DiskStorage

    d = tmp_path / "broker-1"
    s = DiskStorage(str(d), broker_id=1)
    meta = (d / "meta.properties").read_text().splitlines()
    assert "version=0" in meta and "broker.id=1" in meta and "minikafka.record.format=2" in meta
    batches = [stamp(encode_batch([(None, b"v%d" % i * 20, None, i)], compression=c), i, 0)
               for i, c in enumerate(["none", "gzip", "snappy", "lz4", "zstd", "none"])]
    store(s, "t", 0, batches, segment_bytes=300)
    assert len(list((d / "t-0").glob("*.log"))) > 1  # rolled by size
    log, _ = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert log.log_end_offset == 6
    assert [r.value for r in iter_records(log.read(0, BIG))] == [b"v%d" % i * 20 for i in range(6)]


def test_disk_storage_keeps_segment_files_open_for_appends_up_to_a_cap(tmp_path, monkeypatch):
    import os

    from minikafka.broker import storage as storage_mod

    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(storage_mod.os, "open", lambda path, *a: (opened.append(str(path)), real_open(path, *a))[1])
    s = storage_mod.DiskStorage(str(tmp_path), broker_id=1, max_open_segments=2)
    logs = {p: PartitionLog(segment_bytes=400) for p in range(4)}
    for i in range(30):  # batch by batch, round robin over 4 partitions: more partitions than open files
        for p, plog in logs.items():
            data = stamp(encode_batch([(None, b"p%d-%d" % (p, i) * 10, None, i)]), plog.log_end_offset, 0)
            plog.append(read_header(data), data)
            s.append("t", p, [data], plog)
            assert s.open_segment_files() <= 2
    one = PartitionLog(segment_bytes=400)
    opened.clear()
    for i in range(30):  # one partition alone: a file opened per segment, not per append
        data = stamp(encode_batch([(None, b"x%d" % i * 10, None, i)]), one.log_end_offset, 0)
        one.append(read_header(data), data)
        s.append("u", 0, [data], one)
    segment_files = [p for p in opened if p.endswith(".log")]
    assert len(one.segments) > 2 and len(segment_files) == len(one.segments)
    one.truncate_to(17)  # a truncation rewrites the files; appends go on in the right file
    s.truncate("u", 0, one)
    data = stamp(encode_batch([(None, b"after", None, 0)]), one.log_end_offset, 0)
    one.append(read_header(data), data)
    s.append("u", 0, [data], one)
    s.close()
    assert s.open_segment_files() == 0
    fresh = storage_mod.DiskStorage(str(tmp_path), broker_id=1)
    for p, plog in logs.items():
        again, _ = fresh.load("t", p)
        assert [r.value for r in iter_records(again.read(0, BIG))] == [r.value for r in iter_records(plog.read(0, BIG))]
        assert again.log_end_offset == 30
    again, _ = fresh.load("u", 0)
    assert [r.value for r in iter_records(again.read(0, BIG))] == [b"x%d" % i * 10 for i in range(17)] + [b"after"]


def test_disk_storage_refuses_a_data_dir_of_the_old_format(tmp_path):
    from minikafka.broker.storage import DiskStorage, Storage
    from minikafka.errors import ClientError

    d = tmp_path / "old"
    (d / "t-0").mkdir(parents=True)
    (d / "t-0" / "00000000000000000000.log").write_bytes(b"\x00" * 60)  # whatever minikafka wrote before
    with pytest.raises(ClientError) as info:
        DiskStorage(str(d))
    seg = d / "t-0" / "00000000000000000000.log"
    assert str(info.value) == (f"data dir {d} has no meta.properties and {seg} is not in Kafka's record batch v2 "
                               "format (it is 60 bytes long, less than a batch header): it was written by an older minikafka; "
                               "remove it or point --data-dir elsewhere")
    Storage(str(d))  # memory storage never reads segments: no refusal ...
    assert not (d / "meta.properties").exists()  # ... and no marker that would let disk storage in
    with pytest.raises(ClientError):
        DiskStorage(str(d))


def test_a_lost_meta_properties_is_written_again_when_the_segments_are_kafka_batches(tmp_path, caplog):
    """As Kafka writes meta.properties into a log dir that has none; the only copy of a
    single-replica partition is kept, not called another format."""
    from minikafka.broker.storage import DiskStorage

    d = _disk_log_with_epochs(tmp_path)
    (d / "meta.properties").unlink()
    log, _ = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert log.log_end_offset == 6
    assert "minikafka.record.format=2" in (d / "meta.properties").read_text()
    assert "no meta.properties: written again" in caplog.text


def test_disk_storage_refuses_another_record_format(tmp_path):
    from minikafka.broker.storage import DiskStorage
    from minikafka.errors import ClientError

    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=1\nminikafka.record.format=3\n")
    with pytest.raises(ClientError, match="minikafka.record.format=3"):
        DiskStorage(str(tmp_path))


def test_an_empty_existing_data_dir_is_marked(tmp_path):
    from minikafka.broker.storage import DiskStorage

    (tmp_path / "t-0").mkdir()  # a partition folder without segments
    DiskStorage(str(tmp_path))
    assert "minikafka.record.format=2" in (tmp_path / "meta.properties").read_text()
    DiskStorage(str(tmp_path))  # and opens again


# -- damaged files: detected, said in the log, recovered safely --------------------------------

def _disk_log_with_epochs(tmp_path):
    from minikafka.broker.storage import DiskStorage

    d = tmp_path / "broker-1"
    s = DiskStorage(str(d), broker_id=1)
    # offsets 0-1 at epoch 0, 2-3 at epoch 2, 4-5 at epoch 5
    batches = [stamp(encode_batch([(None, b"v%d" % i * 10, None, i)]), i, epoch)
               for i, epoch in enumerate([0, 0, 2, 2, 5, 5])]
    store(s, "t", 0, batches, segment_bytes=200)
    s.write_epochs("t", 0, [(0, 0), (2, 2), (5, 4)])
    return d


@pytest.mark.parametrize("damage", ["garbage\n\x00\xff", "0\n3\n0 0\n2 2\n", "", "7\n1\n0 0\n"])
def test_an_unreadable_epoch_checkpoint_is_rebuilt_from_the_log(tmp_path, caplog, damage):
    from minikafka.broker.storage import DiskStorage

    d = _disk_log_with_epochs(tmp_path)
    (d / "t-0" / "leader-epoch-checkpoint").write_text(damage)
    log, epochs = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert log.log_end_offset == 6
    assert epochs.entries == [(0, 0), (2, 2), (5, 4)]
    assert "leader-epoch-checkpoint is unreadable" in caplog.text and "rebuilt from the log" in caplog.text
    # and written back, so the next start reads it
    assert checkpoint.parse_epochs((d / "t-0" / "leader-epoch-checkpoint").read_text()) == [(0, 0), (2, 2), (5, 4)]


def test_an_unreadable_hw_checkpoint_is_set_aside_and_every_hw_starts_unknown(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    d = _disk_log_with_epochs(tmp_path)
    s = DiskStorage(str(d), broker_id=1)
    s.write_hw_checkpoint({("t", 0): 6})
    assert s.read_hw_checkpoint() == {("t", 0): 6}
    (d / "replication-offset-checkpoint").write_bytes(b"0\n1\nt 0 six\n")
    assert s.read_hw_checkpoint() == {}
    assert "replication-offset-checkpoint is unreadable" in caplog.text
    assert (d / "replication-offset-checkpoint.corrupt").exists()


def test_a_damaged_batch_in_the_middle_of_a_segment_cuts_the_log_there(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    d = _disk_log_with_epochs(tmp_path)
    first = sorted((d / "t-0").glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    second = read_header(bytes(data)).size  # the second batch starts here
    data[second + 70] ^= 0xFF  # a flipped bit in its records: its CRC no longer matches
    first.write_bytes(bytes(data))
    log, epochs = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert log.log_end_offset == 1  # only the batch before the damage stays; the rest is re-fetched
    assert [r.value for r in iter_records(log.read(0, BIG))] == [b"v0" * 10]
    assert epochs.entries == [(0, 0)]
    assert "invalid batch" in caplog.text and "fetches them again from the leader" in caplog.text
    assert len(list((d / "t-0").glob("*.log"))) == 1  # later segments removed


# -- offsets the CRC does not cover: checked on load -------------------------------------------

def test_recovery_accepts_a_batch_that_follows_the_log_in_its_segment():
    from minikafka.log.recovery import check_recovered_batch

    h = read_header(stamp(encode_batch([(None, b"v", None, 0)] * 3), 10, 0))
    check_recovered_batch(h, 10, 0, 13, compacted=False)
    check_recovered_batch(h, 4, 0, None, compacted=True)  # a compacted log has gaps


@pytest.mark.parametrize("base,leo,seg,nxt,compacted,why", [
    (12, 10, 0, None, False, "does not follow the log end offset 10"),  # a gap in a log that has none
    (8, 10, 0, None, True, "does not follow the log end offset 10"),  # overlaps the batch before
    (10, 10, 11, None, False, "below its segment's base offset 11"),
    (10, 10, 0, 12, False, "past the next segment's base offset 12"),
    (10 + (1 << 40), 10, 0, None, False, "does not follow"),  # a flipped byte of the base offset
    (-5, 0, 0, None, True, "negative"),
])
def test_recovery_refuses_offsets_that_do_not_fit(base, leo, seg, nxt, compacted, why):
    from minikafka.log.recovery import check_recovered_batch

    h = read_header(stamp(encode_batch([(None, b"v", None, 0)] * 3), base, 0))
    with pytest.raises(CorruptMessageError, match=why):
        check_recovered_batch(h, leo, seg, nxt, compacted)


def test_recovery_refuses_a_last_offset_its_records_do_not_fill():
    import dataclasses

    from minikafka.log.recovery import check_recovered_batch

    h = read_header(stamp(encode_batch([(None, b"v", None, 0)] * 3), 10, 0))
    wide = dataclasses.replace(h, last_offset_delta=5)  # 3 records spread over 6 offsets
    with pytest.raises(CorruptMessageError, match="does not match its 3 records"):
        check_recovered_batch(wide, 10, 0, None, compacted=False)
    check_recovered_batch(wide, 10, 0, None, compacted=True)  # the cleaner removed records


def test_a_flipped_base_offset_byte_cuts_the_log_there(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    d = _disk_log_with_epochs(tmp_path)
    last = sorted((d / "t-0").glob("*.log"))[-1]
    data = bytearray(last.read_bytes())
    h = read_header(bytes(data))
    data[2] ^= 0x01  # a byte of the base offset: outside the CRC
    last.write_bytes(bytes(data))
    log, _ = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert log.log_end_offset == h.base_offset  # cut at the damaged batch, no gap, nothing at wrong offsets
    assert [r.offset for r in iter_records(log.read(0, BIG))] == list(range(h.base_offset))
    assert "invalid batch" in caplog.text and "does not follow the log end offset" in caplog.text


def test_a_once_compacted_log_keeps_its_gaps_after_its_topic_goes_back_to_delete(tmp_path):
    """cleanup.policy compact -> delete: the cleaner's gaps stay in the files.  The broker
    marked the log when it hosted it compacted, so recovery keeps them (an unmarked log
    with the same gap is cut there)."""
    from minikafka.broker.storage import DiskStorage

    def gapped(name: str) -> DiskStorage:
        s = DiskStorage(str(tmp_path / name), broker_id=1)
        batches = [stamp(encode_batch([(b"k", b"v%d" % i, None, i)]), off, 0) for i, off in enumerate([0, 1, 5, 6])]
        plog = PartitionLog(segment_bytes=10_000)
        for data in batches:
            plog.append(read_header(data), data, allow_gap=True)  # as a follower of a compacted leader
        s.append("t", 0, batches, plog)
        return s

    gapped("marked").mark_compacted("t", 0)
    log, _ = DiskStorage(str(tmp_path / "marked"), broker_id=1).load("t", 0, compacted=False)
    assert [r.offset for r in iter_records(log.read(0, BIG))] == [0, 1, 5, 6]
    gapped("unmarked")
    log, _ = DiskStorage(str(tmp_path / "unmarked"), broker_id=1).load("t", 0, compacted=False)
    assert log.log_end_offset == 2  # not compacted as far as it knows: a gap is damage


def test_damage_in_the_only_copy_is_refused_and_left_as_it_is(tmp_path):
    from minikafka.broker.storage import DiskStorage

    d = _disk_log_with_epochs(tmp_path)
    last = sorted((d / "t-0").glob("*.log"))[-1]
    data = bytearray(last.read_bytes())
    data[2] ^= 0x01  # a byte of the base offset
    last.write_bytes(bytes(data))
    before = {p.name: p.read_bytes() for p in (d / "t-0").glob("*.log")}
    with pytest.raises(KafkaStorageError, match="holds the only copy of offsets .* the log is not cut"):
        DiskStorage(str(d), broker_id=1).load("t", 0, keep_damage=True)
    assert {p.name: p.read_bytes() for p in (d / "t-0").glob("*.log")} == before
