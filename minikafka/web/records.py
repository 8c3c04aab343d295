"""The dashboard's record browser: the last committed records of one partition.

``GET /api/records?topic=T&partition=P&limit=N`` reads them as a consumer does, from the
partition's leader through its ordinary ``fetch`` API (replica id -1, so nothing at or
above the high watermark is ever returned), starting ``N`` offsets below the high
watermark and further back when a compacted log has gaps.  It returns at most ``N``
records (1 to :data:`MAX_RECORDS`, :data:`DEFAULT_RECORDS` when not given), each with its
offset, the leader epoch of its batch, its timestamp, key, value and headers.

The browser runs in the broker's event loop, so it decompresses no batch whose records
expand past :data:`MAX_BATCH_DECOMPRESSED_BYTES` (at most that much is ever produced):
such a batch is listed in ``skipped_batches`` with its offsets and the reason, instead
of its records.  One answer decompresses at most :data:`MAX_DECOMPRESSED_BYTES` in all.

Keys, values and header values are bytes: UTF-8 text without control characters is
given as text, anything else as hex, and only the first :data:`SHOWN_BYTES` bytes of each
(with the full size).  The page inserts them as text, never as HTML.

Bad parameters are answered with Kafka's error names, never a traceback:
INVALID_REQUEST (400) for a missing topic or a partition or limit that is not an
integer in range, UNKNOWN_TOPIC_OR_PARTITION (404) for a topic or partition the cluster
does not have, and the leader's error (e.g. LEADER_NOT_AVAILABLE, 503) when it cannot be
read now.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import (
    InvalidRequestError,
    KafkaError,
    LeaderNotAvailableError,
    MessageTooLargeError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from ..protocol.records.batch import CONTROL_MASK, batch_records, split_batches
from ..protocol.rpc.messages import EARLIEST_TIMESTAMP as EARLIEST
from ..protocol.rpc.messages import LATEST_TIMESTAMP as LATEST
from ..protocol.rpc.types import (FetchPartition, FetchPartitionResponse, FetchRequest, ListOffsetsPartition,
                                  ListOffsetsPartitionResponse, ListOffsetsRequest, Request)
from ..rpc import R, request

if TYPE_CHECKING:
    from .view import BrokerView, Endpoint

DEFAULT_RECORDS = 20
MAX_RECORDS = 100
# bytes shown of each key, value and header value
SHOWN_BYTES = 1024
# one fetch's size bound, and the most read for one answer (a compacted log may need
# several fetches to find N records)
FETCH_BYTES = 1 << 20
MAX_SCAN_BYTES = 8 << 20
# how many times the start goes further back when a compacted log has fewer records
# than offsets below the high watermark
MAX_STEPS_BACK = 4
# the most bytes one batch's records may expand to for the browser to show them
MAX_BATCH_DECOMPRESSED_BYTES = 8 << 20
# the most bytes of records one answer decompresses, over all its batches
MAX_DECOMPRESSED_BYTES = 32 << 20
LEADER_TIMEOUT_S = 5.0

STATUS = {InvalidRequestError: 400, UnknownTopicOrPartitionError: 404, TopicAuthorizationFailedError: 403}
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def error_body(exc: KafkaError) -> tuple[dict, int]:
    """The JSON answer and HTTP status for a refused record request: Kafka's error name
    and code and a message; 400 or 404 for bad parameters, 503 for the cluster's state."""
    return ({"error": exc.code.name, "error_code": exc.code.code, "message": exc.message},
            STATUS.get(type(exc), 503))


def show_bytes(data: bytes | None) -> dict | None:
    """A key, value or header value for the page: ``text`` (UTF-8 without control
    characters) or ``hex``, at most :data:`SHOWN_BYTES` bytes of it, with the full
    ``size`` and whether it was ``truncated``; None for a null."""
    if data is None:
        return None
    head = bytes(data[:SHOWN_BYTES])
    truncated = len(data) > SHOWN_BYTES
    try:
        # a cut may split a multi-byte character: drop up to 3 bytes of it
        text = head.decode("utf-8") if not truncated else _decode_prefix(head)
    except UnicodeDecodeError:
        text = None
    if text is not None and not _CONTROL_CHARS.search(text):
        return {"encoding": "text", "data": text, "size": len(data), "truncated": truncated}
    return {"encoding": "hex", "data": head.hex(), "size": len(data), "truncated": truncated}


def _decode_prefix(head: bytes) -> str:
    for cut in range(4):
        try:
            return head[:len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    raise UnicodeDecodeError("utf-8", head, 0, len(head), "not UTF-8")


def parse_query(query: Mapping[str, str]) -> tuple[str, int, int]:
    """``(topic, partition, limit)`` from the query string; INVALID_REQUEST when one is
    missing or out of range."""
    topic = query.get("topic", "")
    if not topic:
        raise InvalidRequestError("give the topic: /api/records?topic=T&partition=P&limit=N")
    raw_part = query.get("partition", "")
    if not re.fullmatch(r"\d{1,9}", raw_part):
        raise InvalidRequestError(f"partition must be an integer >= 0, not {raw_part!r}")
    raw_limit = query.get("limit", "") or str(DEFAULT_RECORDS)
    if not re.fullmatch(r"-?\d{1,9}", raw_limit) or not 1 <= int(raw_limit) <= MAX_RECORDS:
        raise InvalidRequestError(f"limit must be an integer from 1 to {MAX_RECORDS}, not {raw_limit!r}")
    return topic, int(raw_part), int(raw_limit)


class RecordReader:
    """Reads the last records of a partition from its leader, as a consumer."""

    def __init__(self, view: "BrokerView", endpoint_of: Any) -> None:
        self.view = view
        self.endpoint_of = endpoint_of  # broker id -> (host, port) of a live broker, or None

    async def _call(self, leader: "Endpoint", req: Request[R]) -> R:
        return await request(self.view.call, leader[0], leader[1], req, LEADER_TIMEOUT_S)

    @staticmethod
    def _check(entry: ListOffsetsPartitionResponse | FetchPartitionResponse) -> None:
        if entry.error is not None:
            raise entry.error

    async def last_records(self, topic: str, partition: int, limit: int) -> dict:
        """At most ``limit`` records below the high watermark, the newest ones."""
        state = self.view.metadata().partitions.get((topic, partition))
        if state is None:
            known = sorted(p for t, p in self.view.metadata().partitions if t == topic)
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} has no partition {partition} (partitions 0 to {known[-1]})" if known
                else f"topic {topic!r} does not exist")
        leader_id = int(state["leader"])
        leader = self.endpoint_of(leader_id) if leader_id >= 0 else None
        if leader is None:
            raise LeaderNotAvailableError(f"{topic}-{partition} has no live leader"
                                          + (f" (broker {leader_id} is gone)" if leader_id >= 0 else ""))
        got = await self._call(leader, ListOffsetsRequest(partitions=[
            ListOffsetsPartition(topic=topic, partition=partition, timestamp=ts) for ts in (EARLIEST, LATEST)]))
        first, latest = got.partitions
        self._check(first)
        self._check(latest)
        log_start, hw = first.offset, latest.offset

        start = max(log_start, hw - limit)
        records: list[dict] = []
        skipped: list[dict] = []
        for _ in range(MAX_STEPS_BACK + 1):
            skipped = []
            records = await self._read(leader, topic, partition, start, hw, skipped)
            if len(records) >= limit or start <= log_start:
                break
            start = max(log_start, start - 4 * (limit - len(records)))
        return {"topic": topic, "partition": partition, "leader": leader_id, "high_watermark": hw,
                "log_start_offset": log_start, "limit": limit, "records": records[-limit:],
                "skipped_batches": skipped}

    async def _read(self, leader: "Endpoint", topic: str, partition: int, start: int, hw: int,
                    skipped: list[dict]) -> list[dict]:
        out: list[dict] = []
        offset, scanned, expanded = start, 0, 0
        while offset < hw and scanned < MAX_SCAN_BYTES and expanded < MAX_DECOMPRESSED_BYTES:
            got = await self._call(leader, FetchRequest(
                max_wait_ms=0, min_bytes=0, max_bytes=FETCH_BYTES,
                partitions=[FetchPartition(topic=topic, partition=partition, fetch_offset=offset,
                                           partition_max_bytes=FETCH_BYTES)]))
            (entry,) = got.partitions
            self._check(entry)
            data = entry.records or b""
            if not data:
                break
            scanned += len(data)
            nxt = offset
            for h, raw in split_batches(data):
                nxt = max(nxt, h.next_offset)
                if h.attributes & CONTROL_MASK:
                    continue
                try:
                    rows = batch_records(h, raw, min(MAX_BATCH_DECOMPRESSED_BYTES,
                                                     max(0, MAX_DECOMPRESSED_BYTES - expanded)))
                except MessageTooLargeError as exc:
                    skipped.append({"base_offset": h.base_offset, "last_offset": h.last_offset,
                                    "error": exc.code.name, "message": exc.message})
                    continue
                expanded += sum(len(k or b"") + len(v or b"") for _, _, k, v, _ in rows)
                for off, ts, key, value, headers in rows:
                    if start <= off < hw:
                        out.append({"offset": off, "leader_epoch": h.leader_epoch, "timestamp": ts,
                                    "key": show_bytes(key), "value": show_bytes(value),
                                    "headers": [{"key": k, "value": show_bytes(v)} for k, v in headers or ()]})
            if nxt <= offset:
                break
            offset = nxt
        return out
