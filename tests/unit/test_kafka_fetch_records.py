"""A Fetch answer never carries a null records field: a partition with an error gets an
empty blob (Kafka's MemoryRecords.EMPTY), which librdkafka reads, on every version."""
from __future__ import annotations

import pytest

from minikafka.errors import KafkaStorageError
from minikafka.protocol.kafka import apis, frames

STORAGE = KafkaStorageError.code.code
VERSIONS = range(apis.FETCH.min_version, apis.FETCH.max_version + 1)


def _answer(records_entry: dict) -> dict:
    part = {"partition_index": 0, "error_code": STORAGE, "high_watermark": -1,
            "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
            "preferred_read_replica": -1, **records_entry}
    return {"error_code": 0, "session_id": 0, "responses": [{"topic": "t", "partitions": [part]}]}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("entry", [{"records": None}, {}], ids=["None", "missing"])
def test_a_partition_with_an_error_is_answered_with_empty_records_not_null(version, entry):
    frame = frames.encode_response(apis.FETCH, version, 7, _answer(entry))
    _, body = frames.decode_response(apis.FETCH, version, frame[4:])
    part = body["responses"][0]["partitions"][0]
    assert part["error_code"] == STORAGE
    assert part["records"] == b"", f"v{version}: records written as {part['records']!r}, not an empty blob"
    # the last bytes of the frame are the records' length: int32 0 (v4-v11) or uvarint 1 (flexible v12),
    # followed in v12 by the partition's, topic's and response's empty tagged fields
    tail = frame[-4:] if not apis.FETCH.flexible(version) else frame[-4:-3]
    assert tail == (b"\x00\x00\x00\x00" if not apis.FETCH.flexible(version) else b"\x01")


@pytest.mark.parametrize("version", VERSIONS)
def test_records_present_are_written_as_given(version):
    frame = frames.encode_response(apis.FETCH, version, 7, _answer({"records": b"abc"}))
    _, body = frames.decode_response(apis.FETCH, version, frame[4:])
    assert body["responses"][0]["partitions"][0]["records"] == b"abc"
