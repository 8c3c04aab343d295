"""Compaction (cleanup.policy=compact): the log cleaner's pure rules, the batch rewrite,
the replica core, and disk storage of cleaned segments (no processes)."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka import config as cfg
from minikafka.errors import CorruptMessageError, InvalidConfigError, InvalidRecordError
from minikafka.log import cleaner
from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import (
    encode_batch, iter_records, read_header, rewrite_batch, split_batches, stamp, validate_batch,
)
from minikafka.replication.partition import LeaderState, PartitionReplica

BIG = 1 << 30
DAY = 86_400_000


def put(log: PartitionLog, *records, ts: int = 0, compression: str = "none", epoch: int = 0) -> None:
    """Append one batch of ``(key, value)`` records (key None: no key) at ``ts``."""
    batch = encode_batch([(None if k is None else k.encode(), None if v is None else v.encode(), None, ts)
                          for k, v in records], compression=compression)
    data = stamp(batch, log.log_end_offset, epoch)
    log.append(read_header(data), data)


def content(log: PartitionLog) -> list[tuple[int, str | None, str | None]]:
    return [(r.offset, r.key and r.key.decode(), r.value and r.value.decode())
            for r in iter_records(log.read(log.log_start_offset, BIG))]


def clean(log: PartitionLog, hw: int | None = None, now: int = 0, ratio: float = 0.0, tombstone_ms: int = DAY,
          lag_ms: int = 0, max_lag_ms: int | None = None):
    plan = cleaner.plan(log, log.log_end_offset if hw is None else hw, now, clean_upto=log.cleaned_upto,
                        delete_retention_ms=tombstone_ms, min_cleanable_ratio=ratio, min_compaction_lag_ms=lag_ms,
                        max_compaction_lag_ms=max_lag_ms)
    if plan is not None:
        log.replace_head(plan.replaced, [(g.base_offset, list(g.batches)) for g in plan.segments])
        log.cleaned_upto = plan.clean_upto
    return plan


# -- the batch rewrite ---------------------------------------------------------------------

@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_rewritten_batch_keeps_its_offsets_epoch_and_codec(codec):
    batch = stamp(encode_batch([(b"k%d" % i, b"v%d" % i, [("h", b"x")], 1000 + i) for i in range(5)],
                               compression=codec, producer_id=7, producer_epoch=1, base_sequence=20), 40, 3)
    h = read_header(batch)
    out = rewrite_batch(h, batch, lambda off: off in (41, 43))
    nh = validate_batch(out)  # CRC and counts hold
    assert (nh.base_offset, nh.last_offset, nh.leader_epoch, nh.compression) == (40, 44, 3, codec)
    assert (nh.producer_id, nh.producer_epoch, nh.base_sequence, nh.record_count) == (7, 1, 20, 2)
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in iter_records(out)] == [
        (41, b"k1", b"v1", 1001, [("h", b"x")]), (43, b"k3", b"v3", 1003, [("h", b"x")])]
    assert nh.base_timestamp == 1001 and nh.max_timestamp == 1003
    assert rewrite_batch(h, batch, lambda off: True) == batch  # nothing removed: the same bytes
    assert rewrite_batch(h, batch, lambda off: False) is None


# -- the cleaner's rules ---------------------------------------------------------------------

def test_the_last_record_per_key_stays_and_offsets_never_move():
    log = PartitionLog(segment_bytes=1024)
    for i in range(30):
        put(log, (f"k{i % 3}", f"v{i}"))
    assert len(log.segments) > 2
    plan = clean(log)
    active = log.segments[-1].base_offset
    kept = [(o, k, v) for o, k, v in content(log) if o < active]
    # below the active segment, each key at most once, with its last value there
    assert len({k for _, k, _ in kept}) == len(kept)
    for o, k, v in kept:
        assert v == f"v{o}"
    assert plan.records_removed == active - len(kept)
    # the active segment is untouched, and the LEO did not move
    assert [o for o, _, _ in content(log) if o >= active] == list(range(active, 30))
    assert log.log_end_offset == 30
    # each key's latest value is still readable
    latest = {k: v for _, k, v in content(log)}
    assert latest == {"k0": "v27", "k1": "v28", "k2": "v29"}


def test_only_closed_segments_below_the_high_watermark_are_cleaned():
    log = PartitionLog(segment_bytes=1024)
    for i in range(40):
        put(log, ("same", f"v{i}"))
    ends = log.segment_ends()
    assert clean(log, hw=ends[0] - 1) is None  # not even the first segment is committed
    plan = clean(log, hw=ends[1])
    assert plan.replaced == 2 and plan.clean_upto == ends[1]
    # the one record kept below ends[1] is the last of the two cleaned segments
    below = [o for o, _, _ in content(log) if o < ends[1]]
    assert below == [ends[1] - 1]
    # records above the HW are all there
    assert [o for o, _, _ in content(log) if o >= ends[1]] == list(range(ends[1], 40))


def test_tombstones_stay_for_delete_retention_ms_then_go():
    log = PartitionLog(segment_bytes=1024)
    put(log, ("a", "1"), ("b", "1"), ts=0)
    put(log, ("a", None), ts=1000)  # delete a
    for i in range(40):
        put(log, ("c", f"{i}"), ts=2000)
    clean(log, now=5000, tombstone_ms=DAY)
    assert (2, "a", None) in content(log)  # young tombstone kept: slow readers still see the delete
    assert not any(k == "a" and v == "1" for _, k, v in content(log))
    plan = clean(log, now=1000 + DAY + 1, tombstone_ms=DAY, ratio=0.0)
    assert plan is None or plan.tombstones_removed == 0  # nothing new is dirty: no pass is due ...
    log.cleaned_upto = 0  # ... until the next pass over the same segments (a restart, new data)
    plan = clean(log, now=1000 + DAY + 1, tombstone_ms=DAY)
    assert plan.tombstones_removed == 1
    assert not any(k == "a" for _, k, _ in content(log))
    assert any(k == "b" for _, k, _ in content(log))


def test_the_dirty_ratio_decides_when_a_pass_is_due():
    log = PartitionLog(segment_bytes=1024)
    for i in range(40):
        put(log, (f"k{i % 4}", f"v{i}"))
    assert clean(log, ratio=0.5) is not None
    for i in range(3):
        put(log, (f"k{i}", "x" * 200))  # a little new data: the dirty share is small
    assert clean(log, ratio=0.9) is None
    assert clean(log, ratio=0.0) is not None


def test_min_compaction_lag_keeps_young_segments_uncleaned():
    log = PartitionLog(segment_bytes=1024)
    for i in range(40):
        put(log, ("k", f"v{i}"), ts=i * 1000)
    assert clean(log, now=40_000, lag_ms=100_000) is None  # every record is younger than the lag
    plan = clean(log, now=40_000, lag_ms=20_000)
    assert plan is not None and 0 < plan.clean_upto <= 21  # only records at least 20 s old
    assert [o for o, _, _ in content(log) if o >= plan.clean_upto] == list(range(plan.clean_upto, 40))


def test_max_compaction_lag_cleans_an_old_dirty_segment_below_the_dirty_ratio():
    log = PartitionLog(segment_bytes=1024)
    for i in range(40):
        put(log, (f"k{i % 4}", f"v{i}"), ts=1000)
    assert clean(log, now=1000, ratio=0.5) is not None
    for i in range(3):
        put(log, (f"k{i}", "x" * 300), ts=1000)  # a little new data: the dirty share is small
    put(log, ("k0", "last"), ts=1000)
    assert clean(log, now=11_000, ratio=0.9) is None  # below the ratio
    assert clean(log, now=11_000, ratio=0.9, max_lag_ms=10_000) is None  # the oldest dirty record is not older yet
    plan = clean(log, now=11_001, ratio=0.9, max_lag_ms=10_000)
    assert plan is not None and plan.records_removed > 0
    assert ("k0", "last") in [(k, v) for _, k, v in content(log)]


def test_keyless_records_go_and_control_batches_stay():
    log = PartitionLog(segment_bytes=1024)
    put(log, (None, "no key"))
    control = stamp(encode_batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", None, 0)], is_control=True),
                    log.log_end_offset, 0)
    log.append(read_header(control), control)
    for i in range(30):
        put(log, ("k", f"{i}"))
    clean(log)
    data = log.read(0, BIG)
    heads = [h for h, _ in split_batches(data)]
    assert any(h.is_control for h in heads)
    assert not any(r.key is None for r in iter_records(data))


def test_cleaned_segments_merge_while_they_fit_and_keep_their_first_base():
    log = PartitionLog(segment_bytes=2048)
    for i in range(60):
        put(log, ("k", f"{i}" * 10))
    before = [s.base_offset for s in log.segments]
    plan = clean(log)
    assert plan.replaced == len(before) - 1
    assert len(plan.segments) == 1 and log.segments[0].base_offset == before[0] == 0
    assert [s.base_offset for s in log.segments[1:]] == before[-1:]
    assert log.size_bytes == sum(s.size_bytes for s in log.segments)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1, max_size=120),
       st.integers(0, 2**31))
def test_cleaning_keeps_every_keys_latest_value(ops, seed):
    """Whatever the writes, cleaning changes no key's latest value (tombstones kept: young)."""
    rnd = random.Random(seed)
    log = PartitionLog(segment_bytes=1024)
    for key, delete in ops:
        put(log, (f"k{key}", None if delete else f"v{rnd.random()}"))
    def latest():
        return {k: v for _, k, v in content(log)}
    before = latest()
    offsets_before = {o: (k, v) for o, k, v in content(log)}
    clean(log)
    assert latest() == before
    assert all(offsets_before[o] == (k, v) for o, k, v in content(log))  # offsets never move
    assert log.log_end_offset == len(ops)


# -- the replica core ------------------------------------------------------------------------------

def leader(compacted: bool = True) -> PartitionReplica:
    p = PartitionReplica("t", 0, 1, PartitionLog(segment_bytes=1024))
    p.compacted = compacted
    p.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
    return p


def test_a_compacted_topic_refuses_records_without_a_key():
    p = leader()
    with pytest.raises(InvalidRecordError, match="without key"):
        p.append_as_leader(encode_batch([(b"k", b"v", None, 0), (None, b"v", None, 0)]), 1, 1)
    assert p.log_end_offset == 0
    p.append_as_leader(encode_batch([(b"k", b"v", None, 0)]), 1, 1)
    assert p.log_end_offset == 1
    leader(compacted=False).append_as_leader(encode_batch([(None, b"v", None, 0)]), 1, 1)


def test_a_follower_appends_a_compacted_leader_log_with_its_gaps():
    lead = leader()
    for i in range(40):
        lead.append_as_leader(encode_batch([(b"k", b"%d" % i, None, 0)]), 1, 1)
    eff = lead.clean(0, DAY, 0.0)
    assert eff.cleaned is not None and eff.events[0][0] == "cleaned"
    f = PartitionReplica("t", 0, 2, PartitionLog(segment_bytes=1024))
    f.become_follower(LeaderState(1, 0, (1, 2), (1, 2), 0, 1), 0)
    offset = 0
    while offset < lead.log_end_offset:
        data = lead.read(offset, 1 << 20, for_follower=True)
        f.append_as_follower(data, lead.high_watermark)
        offset = f.log_end_offset
    assert content(f.log) == content(lead.log)
    assert f.log_end_offset == 40


def test_cleanup_policy_and_ratio_configs():
    assert cfg.compacts("compact") and cfg.compacts("compact,delete") and not cfg.compacts("delete")
    assert cfg.validate_topic_config({"cleanup.policy": "delete,compact"})["cleanup.policy"] == "compact,delete"
    with pytest.raises(InvalidConfigError, match="cleanup.policy"):
        cfg.validate_topic_config({"cleanup.policy": "forever"})
    with pytest.raises(InvalidConfigError, match="min.cleanable.dirty.ratio"):
        cfg.validate_topic_config({"min.cleanable.dirty.ratio": "1.5"})


# -- disk storage ------------------------------------------------------------------------------

def test_cleaned_segments_are_rewritten_on_disk_and_reload_with_their_gaps(tmp_path):
    from minikafka.broker.storage import DiskStorage

    s = DiskStorage(str(tmp_path), broker_id=1)
    log = PartitionLog(segment_bytes=1024)
    batches = []
    for i in range(40):
        before = log.log_end_offset
        put(log, (f"k{i % 2}", f"v{i}"))
        batches.append(next(log.batches_from(before)).data)
    for data in batches:  # mirror as the broker does, batch by batch
        s.append("t", 0, [data], log)
    old_bases = [seg.base_offset for seg in log.segments]
    plan = clean(log)
    s.replace_segments("t", 0, log, len(plan.segments), old_bases[:plan.replaced])
    files = sorted(int(p.name[:-4]) for p in (tmp_path / "t-0").glob("*.log"))
    assert files == [seg.base_offset for seg in log.segments]
    again, _ = DiskStorage(str(tmp_path), broker_id=1).load("t", 0, compacted=True)
    assert content(again) == content(log)
    assert [seg.base_offset for seg in again.segments] == [seg.base_offset for seg in log.segments]
    assert again.log_end_offset == 40
    # a truncation rewrites the files: each batch stays in its segment's file, also where
    # the cleaner removed a segment's first batches
    log.truncate_to(39)
    s.truncate("t", 0, log)
    files = sorted(int(p.name[:-4]) for p in (tmp_path / "t-0").glob("*.log"))
    assert files == [seg.base_offset for seg in log.segments]
    again, _ = DiskStorage(str(tmp_path), broker_id=1).load("t", 0, compacted=True)
    assert content(again) == content(log) and again.log_end_offset == 39


def test_a_merged_away_segment_left_by_a_crash_is_recognised_on_load(tmp_path):
    from minikafka.broker.storage import DiskStorage

    s = DiskStorage(str(tmp_path), broker_id=1)
    log = PartitionLog(segment_bytes=1024)
    for i in range(40):
        before = log.log_end_offset
        put(log, ("k", f"v{i}"))
        s.append("t", 0, [next(log.batches_from(before)).data], log)
    d = tmp_path / "t-0"
    second = sorted(d.glob("*.log"))[1]
    leftover = second.read_bytes()
    old_bases = [seg.base_offset for seg in log.segments]
    plan = clean(log)
    s.replace_segments("t", 0, log, len(plan.segments), old_bases[:plan.replaced])
    assert not second.exists()  # merged into the first
    second.write_bytes(leftover)  # as if the broker died before removing it
    again, _ = DiskStorage(str(tmp_path), broker_id=1).load("t", 0, compacted=True)
    assert content(again) == content(log) and not second.exists()


def test_the_spark_source_decodes_a_compacted_log_with_its_gaps():
    from minikafka.spark.arrow import arrow_schema, decode, spark_schema

    log = PartitionLog(segment_bytes=1024)
    for i in range(40):
        put(log, (f"k{i % 3}", f"v{i}"), compression="gzip" if i % 2 else "none")
    clean(log)
    expected = content(log)
    assert len(expected) < 40
    batch = decode(log.read(0, BIG), 0, 40, "t", 0, arrow_schema(spark_schema()))
    rows = batch.to_pydict()
    assert rows["offset"] == [o for o, _, _ in expected]
    assert [v.decode() for v in rows["value"]] == [v for _, _, v in expected]


def test_a_pass_computed_on_a_snapshot_is_dropped_when_the_log_head_changed():
    """The broker computes a pass away from the log (in a thread): if retention or a
    truncation changed the head meanwhile, the result is not applied."""
    p = leader()
    for i in range(40):
        p.append_as_leader(encode_batch([(b"k", b"%d" % i, None, 0)]), 1, 1)
    inp = p.clean_input(0, 0.0)
    plan = cleaner.compute(inp, 0, DAY)
    for i in range(5):  # appends at the tail do not touch the snapshotted head
        p.append_as_leader(encode_batch([(b"k", b"x", None, 0)]), 1, 1)
    assert inp.still_matches(p.log)
    p.advance_log_start(p.log.segment_ends()[0], "test")  # retention took the first segment
    assert not inp.still_matches(p.log)
    before = content(p.log)
    eff = p.apply_clean(inp, plan)
    assert eff.cleaned is None and content(p.log) == before
    # the next pass starts over from the log as it is
    assert p.clean(0, DAY, 0.0).cleaned is not None


# -- an active producer's last batch (Kafka's BatchRetention.RETAIN_EMPTY) ------------------

def test_an_emptied_batch_is_kept_as_a_header_only_when_it_is_an_active_producers_last():
    batch = stamp(encode_batch([(b"k", b"v", None, 1000 + i) for i in range(3)], compression="gzip",
                               producer_id=7, producer_epoch=2, base_sequence=30), 40, 3)
    h = read_header(batch)
    assert rewrite_batch(h, batch, lambda off: False) is None
    empty = rewrite_batch(h, batch, lambda off: False, keep_empty=True)
    e = validate_batch(empty)  # a valid batch: CRC and counts hold
    assert (e.base_offset, e.last_offset, e.leader_epoch, e.record_count) == (40, 42, 3, 0)
    assert (e.producer_id, e.producer_epoch, e.base_sequence, e.compression) == (7, 2, 30, "none")
    assert e.base_timestamp == e.max_timestamp == 1002
    assert list(iter_records(empty)) == []
    with pytest.raises(CorruptMessageError, match="no records"):  # a producer may not send one
        split_batches(empty, deep=True)


def test_a_replica_rebuilt_from_a_cleaned_log_still_knows_the_producers_last_sequence():
    lead = leader()
    for seq in range(20):  # producer 7's batches, all of them superseded by the plain producer's below
        lead.append_as_leader(encode_batch([(b"k", b"p%d" % seq, None, 0)], producer_id=7, producer_epoch=0,
                                           base_sequence=seq), 1, 1)
    last_of_7 = lead.log_end_offset - 1
    for i in range(40):
        lead.append_as_leader(encode_batch([(b"k", b"%d" % i, None, 0)]), 1, 1)
    eff = lead.clean(0, DAY, 0.0)
    assert eff.cleaned is not None
    kept = [read_header(b.data) for b in lead.log.batches_from(0) if read_header(b.data).producer_id == 7]
    assert [(h.base_offset, h.record_count, h.base_sequence) for h in kept] == [(last_of_7, 0, 19)]
    assert content(lead.log)[-1][2] == "39"
    # a new replica fetches the cleaned log and rebuilds producer 7's state from it ...
    f = PartitionReplica("t", 0, 2, PartitionLog(segment_bytes=1024))
    f.compacted = True
    f.become_follower(LeaderState(1, 0, (1, 2), (1, 2), 0, 1), 0)
    offset = 0
    while offset < lead.log_end_offset:
        f.append_as_follower(lead.read(offset, 1 << 20, for_follower=True), lead.high_watermark)
        offset = f.log_end_offset
    assert f.producers.producers[7].last_seq == 19
    # ... so as the next leader it takes producer 7's next batch (without the empty batch
    # it would not know the producer: OUT_OF_ORDER_SEQUENCE_NUMBER for sequence 20)
    f.become_leader(LeaderState(2, 1, (1, 2), (2,), 0, 2), 0)
    f.append_as_leader(encode_batch([(b"k", b"p20", None, 0)], producer_id=7, producer_epoch=0, base_sequence=20),
                       1, 1)
    assert content(f.log)[-1][2] == "p20"


def test_recovery_takes_an_empty_batch_in_a_compacted_log_only():
    from minikafka.log.recovery import check_recovered_batch
    batch = stamp(encode_batch([(b"k", b"v", None, 0)], producer_id=7, producer_epoch=0, base_sequence=0), 5, 0)
    empty = read_header(rewrite_batch(read_header(batch), batch, lambda off: False, keep_empty=True))
    check_recovered_batch(empty, 3, 0, None, compacted=True)
    with pytest.raises(CorruptMessageError, match="does not match its 0 records"):
        check_recovered_batch(empty, 5, 0, None, compacted=False)
