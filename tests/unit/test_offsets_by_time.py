"""ListOffsets by time on the partition log: first record at or after a time, max timestamp."""
from __future__ import annotations

from minikafka.log.partition_log import PartitionLog
from minikafka.protocol.records.batch import encode_batch, read_header, stamp


def log_with(*batches: list[int]) -> PartitionLog:
    """A log whose batches hold records with the given timestamps, in order."""
    log = PartitionLog()
    for stamps in batches:
        data = stamp(encode_batch([(None, f"v{ts}".encode(), None, ts) for ts in stamps]), log.log_end_offset, 0)
        log.append(read_header(data), data)
    return log


def test_first_record_at_or_after_the_time():
    log = log_with([100, 110, 120], [130, 140], [150])
    assert log.offset_for_timestamp(0, upto=6) == (100, 0)
    assert log.offset_for_timestamp(110, upto=6) == (110, 1)
    assert log.offset_for_timestamp(111, upto=6) == (120, 2)
    assert log.offset_for_timestamp(135, upto=6) == (140, 4)
    assert log.offset_for_timestamp(151, upto=6) is None


def test_time_lookup_never_answers_at_or_above_the_bound():
    log = log_with([100, 110, 120], [130, 140], [150])
    assert log.offset_for_timestamp(125, upto=3) is None       # offsets 3.. are above the HW
    assert log.offset_for_timestamp(125, upto=4) == (130, 3)
    assert log.offset_for_timestamp(0, upto=0) is None


def test_out_of_order_timestamps_use_the_first_record_reaching_the_time():
    log = log_with([100, 300, 200], [250])
    assert log.offset_for_timestamp(200, upto=4) == (300, 1)   # Kafka: the first offset whose timestamp >= t
    assert log.offset_of_max_timestamp(upto=4) == (300, 1)
    assert log.offset_of_max_timestamp(upto=2) == (300, 1)
    assert log.offset_of_max_timestamp(upto=1) is None         # the largest is at the bound: no answer, as in Kafka
    assert log.offset_of_max_timestamp(upto=0) is None


def test_time_lookup_in_compressed_batches():
    log = PartitionLog()
    for codec, stamps in (("gzip", [100, 110, 120]), ("zstd", [130, 300, 140]), ("lz4", [150])):
        recs = [(None, f"v{ts}".encode(), None, ts) for ts in stamps]
        data = stamp(encode_batch(recs, compression=codec), log.log_end_offset, 0)
        log.append(read_header(data), data)
    assert log.offset_for_timestamp(111, upto=7) == (120, 2)
    assert log.offset_for_timestamp(135, upto=7) == (300, 4)
    assert log.offset_of_max_timestamp(upto=7) == (300, 4)


def test_a_transaction_marker_counts_as_a_record_as_in_kafka():
    """Kafka's time index and max-timestamp lookup go through every record of the log,
    control records included: a marker written after the transaction's records carries
    the coordinator's (later) time, and is the answer when it is the first at or after
    the time asked, or the latest."""
    from minikafka.protocol.records.control import encode_marker

    log = PartitionLog()
    data = stamp(encode_batch([(None, b"a", None, 100), (None, b"b", None, 110)], producer_id=7, producer_epoch=0,
                              base_sequence=0, is_transactional=True), 0, 0)
    log.append(read_header(data), data)
    marker = stamp(encode_marker(7, 0, True, 0, 500), 2, 0)
    log.append(read_header(marker), marker)
    assert log.offset_for_timestamp(111, upto=3) == (500, 2)
    assert log.offset_of_max_timestamp(upto=3) == (500, 2)
    assert log.offset_of_max_timestamp(upto=2) is None          # the marker is past the bound (an LSO, say)


def test_max_timestamp_sees_records_below_the_log_start_as_in_kafka():
    """DeleteRecords moves the log start but Kafka keeps the segments that still hold
    the deleted records (the active one always): its max-timestamp lookup goes through
    them and may answer an offset below the log start (found by the differential fuzzer:
    Kafka 3.9 answered the commit marker below a DeleteRecords to the HW)."""
    log = log_with([100, 900], [300], [200])
    log.advance_log_start(3)                                    # batches below the start stay stored
    assert log.offset_of_max_timestamp(upto=4) == (900, 1)
    log.advance_log_start(4)                                    # to the LEO: the log restarts empty ...
    assert (log.log_start_offset, len(log)) == (4, 0)
    assert log.offset_of_max_timestamp(upto=4) == (900, 1)      # ... but Kafka's active segment still holds 900
    assert log.offset_for_timestamp(0, upto=4) is None          # a time lookup starts at the log start
    for stamps in ([500], [900]):                               # newer records: a tie goes to the older one
        data = stamp(encode_batch([(None, b"v", None, ts) for ts in stamps]), log.log_end_offset, 0)
        log.append(read_header(data), data)
    assert log.offset_of_max_timestamp(upto=6) == (900, 1)
    data = stamp(encode_batch([(None, b"v", None, 950)]), log.log_end_offset, 0)
    log.append(read_header(data), data)
    assert log.offset_of_max_timestamp(upto=7) == (950, 6)
    log.truncate_to(6)
    log.truncate_fully_and_start_at(6)                          # a follower starting over holds nothing
    assert log.offset_of_max_timestamp(upto=6) is None


def test_max_timestamp_past_the_bound_answers_nothing_rather_than_an_earlier_record():
    """Kafka finds the largest timestamp of the whole log, then answers -1 when its offset
    is at or above the last fetchable offset (HW, or LSO under read_committed): an
    open transaction's record with the newest time hides the max timestamp."""
    log = log_with([100, 200], [150], [500])
    assert log.offset_of_max_timestamp(upto=4) == (500, 3)
    assert log.offset_of_max_timestamp(upto=3) is None
