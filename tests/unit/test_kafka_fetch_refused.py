"""A refused partition in a consumer's Fetch answer, as Kafka 3.9 writes it (found by the
differential fuzzer, minikafka/reference/fuzz*.py): no offsets at all, and aborted
transactions null or empty depending on where Kafka refused it."""
from __future__ import annotations

from minikafka.broker.kafka.handlers import fetched_partition
from minikafka.errors import NotLeaderOrFollowerError, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from minikafka.protocol.rpc.types import AbortedTransaction, FetchPartitionResponse


def _entry(error=None, aborted=None) -> FetchPartitionResponse:  # noqa: ANN001
    return FetchPartitionResponse(topic="t", partition=0, high_watermark=-1 if error else 7, log_start_offset=0,
                                  log_end_offset=7, leader_epoch=0, last_stable_offset=-1 if error else 7,
                                  aborted_transactions=aborted, records=b"" if error else b"batches", error=error)


def test_an_offset_out_of_range_carries_no_log_start_offset():
    got = fetched_partition(_entry(OffsetOutOfRangeError("offset 9 is past the end")))
    assert (got["high_watermark"], got["last_stable_offset"], got["log_start_offset"]) == (-1, -1, -1)
    assert got["aborted_transactions"] is None and got["records"] == b""


def test_an_unknown_partition_has_an_empty_list_of_aborted_transactions_other_refusals_null():
    assert fetched_partition(_entry(UnknownTopicOrPartitionError("t-0")))["aborted_transactions"] == []
    assert fetched_partition(_entry(NotLeaderOrFollowerError("not here")))["aborted_transactions"] is None


def test_a_partition_read_keeps_its_offsets_and_aborted_transactions():
    got = fetched_partition(_entry(aborted=[AbortedTransaction(producer_id=4, first_offset=2)]))
    assert (got["high_watermark"], got["last_stable_offset"], got["log_start_offset"]) == (7, 7, 0)
    assert got["aborted_transactions"] == [{"producer_id": 4, "first_offset": 2}] and got["records"] == b"batches"
