"""Client internals without a real cluster.

* batching: records grouped per partition, the batch_size bound, readiness, retries;
* record decoding: a fetch answer may start below the position, those records are skipped;
* the producer, consumer, admin and CLI against a tiny in-process fake broker that
  speaks the real wire format (msgpack over HTTP, real record batches).
"""
from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aiohttp import web

from minikafka import errors
from minikafka.client.accumulator import RecordAccumulator, record_size
from minikafka.client.connection import parse_bootstrap
from minikafka.client.consumer import AIOConsumer
from minikafka.client.partitioner import partition_for_key
from minikafka.client.producer import normalize_acks, normalize_headers, to_bytes
from minikafka.protocol.rpc import codec
from minikafka.protocol.records.batch import encode_batch, iter_records, split_batches, stamp

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- accumulator

def rec(value: bytes, key: bytes | None = None, ts: int = 1000):
    return (key, value, [], ts)


def test_records_are_grouped_per_partition():
    acc = RecordAccumulator(batch_size=65536, linger_ms=5)
    for i in range(30):
        acc.append("t", i % 3, rec(b"v%d" % i), None, now_ms=0)
    acc.append("u", 0, rec(b"x"), None, now_ms=0)
    batches = list(acc.batches())
    assert sorted(b.tp for b in batches) == [("t", 0), ("t", 1), ("t", 2), ("u", 0)]
    t1 = next(b for b in batches if b.tp == ("t", 1))
    assert [r[1] for r in t1.records] == [b"v%d" % i for i in range(1, 30, 3)]


def test_batch_size_bounds_batches():
    acc = RecordAccumulator(batch_size=1000, linger_ms=5)
    value = b"x" * 100
    for _ in range(50):
        acc.append("t", 0, rec(value), None, now_ms=0)
    batches = list(acc.batches())
    assert len(batches) > 1
    assert sum(len(b) for b in batches) == 50
    for b in batches:
        assert b.size <= 1000
        assert len(b.encode()) <= 1000 + 64  # the estimate is close to the encoded size
    assert all(b.closed for b in batches[:-1])


def test_a_record_larger_than_batch_size_gets_its_own_batch():
    acc = RecordAccumulator(batch_size=100, linger_ms=5)
    acc.append("t", 0, rec(b"a"), None, now_ms=0)
    acc.append("t", 0, rec(b"b" * 500), None, now_ms=0)
    acc.append("t", 0, rec(b"c"), None, now_ms=0)
    assert [len(b) for b in acc.batches()] == [1, 1, 1]


def test_readiness_linger_full_muted_flush():
    acc = RecordAccumulator(batch_size=1000, linger_ms=50)
    acc.append("t", 0, rec(b"a"), None, now_ms=100)
    ready, wait = acc.ready(now_ms=110, muted=set())
    assert ready == [] and wait == 40
    assert acc.ready(now_ms=150, muted=set())[0] == [("t", 0)]
    assert acc.ready(now_ms=110, muted=set(), flushing=True)[0] == [("t", 0)]
    assert acc.ready(now_ms=500, muted={("t", 0)})[0] == []
    for _ in range(20):  # fill a batch: ready at once
        acc.append("t", 1, rec(b"y" * 100), None, now_ms=110)
    assert ("t", 1) in acc.ready(now_ms=110, muted=set())[0]


def test_retry_goes_back_to_the_front_after_its_backoff():
    acc = RecordAccumulator(batch_size=40, linger_ms=0)
    for v in (b"first", b"second", b"third"):
        acc.append("t", 0, rec(v * 3), None, now_ms=0)
    first = acc.pop(("t", 0))
    first.attempts, first.retry_at_ms = 1, 200
    acc.reenqueue(first)
    ready, wait = acc.ready(now_ms=100, muted=set())
    assert ready == [] and wait == 100
    assert acc.ready(now_ms=200, muted=set())[0] == [("t", 0)]
    assert acc.pop(("t", 0)) is first
    assert acc.pop(("t", 0)).records[0][1] == b"second" * 3


def test_expire_fails_only_old_batches():
    acc = RecordAccumulator(batch_size=30, linger_ms=0)
    acc.append("t", 0, rec(b"old" * 5), None, now_ms=0)
    acc.append("t", 0, rec(b"new" * 5), None, now_ms=900)
    expired = acc.expire(now_ms=1000, delivery_timeout_ms=500)
    assert [b.records[0][1] for b in expired] == [b"old" * 5]
    assert [b.records[0][1] for b in acc.batches()] == [b"new" * 5]


def test_batch_encodes_once_and_completes_offsets():
    import concurrent.futures

    acc = RecordAccumulator()
    futs = [concurrent.futures.Future() for _ in range(3)]
    for i, f in enumerate(futs):
        acc.append("t", 2, (b"k", b"v%d" % i, [("h", b"1")], 5000 + i), f, now_ms=0)
    batch = acc.pop(("t", 2))
    raw = batch.encode()
    assert batch.encode() is raw
    decoded = list(iter_records(stamp(raw, 40, 3)))
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in decoded] == [
        (40 + i, b"k", b"v%d" % i, 5000 + i, [("h", b"1")]) for i in range(3)
    ]
    batch.complete(40)
    assert [(f.result().partition, f.result().offset, f.result().timestamp) for f in futs] == [
        (2, 40, 5000), (2, 41, 5001), (2, 42, 5002)]


def test_a_cancelled_future_does_not_break_completion():
    import concurrent.futures

    acc = RecordAccumulator()
    a, b = concurrent.futures.Future(), concurrent.futures.Future()
    acc.append("t", 0, rec(b"1"), a, now_ms=0)
    acc.append("t", 0, rec(b"2"), b, now_ms=0)
    a.cancel()
    acc.pop(("t", 0)).complete(7)
    assert b.result().offset == 8


def test_record_size_counts_key_value_headers():
    assert record_size(None, None, None) < record_size(b"k", b"v" * 10, [("name", b"vv")])


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_batches_are_compressed_with_the_accumulators_codec(codec):
    acc = RecordAccumulator(compression_type=codec)
    for i in range(50):
        acc.append("t", 0, (None, b"value %d " % i * 10, [("h", b"1")], 1000 + i), None, now_ms=0)
    raw = acc.pop(("t", 0)).encode()
    h = split_batches(raw, deep=True)[0][0]
    assert h.compression == codec and h.record_count == 50
    assert [r.value for r in iter_records(raw)] == [b"value %d " % i * 10 for i in range(50)]


def test_compression_type_is_checked():
    from minikafka.client.producer import AIOProducer

    with pytest.raises(ValueError, match="compression_type"):
        RecordAccumulator(compression_type="brotli")
    with pytest.raises(errors.ClientError, match="compression_type must be one of"):
        AIOProducer("127.0.0.1:1", compression_type="snapy")


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


def fetch_answer(topic: str, partition: int, data: bytes, hw: int, code: int = 0) -> dict:
    return {"partitions": [{"topic": topic, "partition": partition, "error_code": code, "message": "",
                            "high_watermark": hw, "log_end_offset": hw, "records": data}]}


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


# ---------------------------------------------------------------- small helpers

def test_value_conversion():
    assert to_bytes("hé", "value") == "hé".encode()
    assert to_bytes(bytearray(b"x"), "value") == b"x"
    assert to_bytes(None, "value") is None
    with pytest.raises(TypeError, match="value must be bytes"):
        to_bytes(5, "value")
    assert normalize_headers({"a": "1", "b": None}) == [("a", b"1"), ("b", None)]
    with pytest.raises(TypeError):
        normalize_headers([(1, b"x")])


def test_acks_and_bootstrap_parsing():
    assert [normalize_acks(a) for a in ("all", -1, "1", 0)] == [-1, -1, 1, 0]
    with pytest.raises(errors.ClientError):
        normalize_acks(2)
    assert parse_bootstrap("h1:1, h2:2") == [("h1", 1), ("h2", 2)]
    assert parse_bootstrap(["[::1]:9092", ("h", 3)]) == [("::1", 9092), ("h", 3)]
    for bad in ("", "nohost", "h:x", "h:70000"):
        with pytest.raises(errors.ClientError):
            parse_bootstrap(bad)


# ---------------------------------------------------------------- fake broker

class FakeBroker:
    """One broker that leads every partition and commits at once (HW = LEO)."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], list[tuple[int, bytes]]] = {}
        self.leo: dict[tuple[str, int], int] = {}
        self.topics: dict[str, int] = {}
        self.inject: dict[tuple[str, int], list[int]] = {}  # produce error codes to answer first
        self.hold_first: dict[tuple[str, int], float] = {}  # seconds the next produce of a partition waits
        self.check_sequences = True  # refuse idempotent batches out of sequence, as a leader does
        self.heard_from_controller = True  # False: metadata answers as a just-restarted broker (no controller, no topics)
        self.next_seq: dict[tuple[int, tuple[str, int]], int] = {}
        self.requests: list[tuple[str, dict]] = []
        self.appended: asyncio.Event | None = None
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    # lifecycle (the server runs on its own loop thread)
    def start(self) -> "FakeBroker":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    async def _start(self) -> None:
        self.appended = asyncio.Event()
        app = web.Application(client_max_size=100 * 1024 * 1024)
        app.router.add_post("/v1/{api}", self._handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def create(self, name: str, partitions: int) -> None:
        self.topics[name] = partitions
        for p in range(partitions):
            self.logs[(name, p)] = []
            self.leo[(name, p)] = 0

    # protocol
    async def _handle(self, request: web.Request) -> web.Response:
        api = request.match_info["api"]
        body = codec.unpack(await request.read())
        self.requests.append((api, body))
        answer = await getattr(self, "api_" + api)(body)
        return web.Response(body=codec.pack({"error_code": 0, "error": "NONE", "message": "", **answer}),
                            content_type="application/msgpack")

    async def api_metadata(self, body: dict) -> dict:
        if not self.heard_from_controller:
            return {"cluster_id": "fake", "controller_id": -1, "controller_epoch": -1,
                    "brokers": [{"id": 1, "host": "127.0.0.1", "port": self.port}], "topics": []}
        topics = [{"name": t, "error_code": 0, "error": "NONE", "message": "", "partitions": [
            {"partition": p, "leader": 1, "leader_epoch": 0, "replicas": [1], "isr": [1], "offline_replicas": [],
             "error_code": 0, "error": "NONE", "message": ""} for p in range(n)]} for t, n in self.topics.items()]
        # a named topic it does not have is answered as by a broker with auto.create.topics.enable=false
        topics += [{"name": t, "error_code": 3, "error": "UNKNOWN_TOPIC_OR_PARTITION", "message": "", "partitions": []}
                   for t in body.get("topics") or () if t not in self.topics]
        return {"cluster_id": "fake", "controller_id": 1, "controller_epoch": 1,
                "brokers": [{"id": 1, "host": "127.0.0.1", "port": self.port}], "topics": topics}

    async def api_init_producer_id(self, body: dict) -> dict:
        self.next_producer_id = getattr(self, "next_producer_id", 1000) + 1
        return {"producer_id": self.next_producer_id, "producer_epoch": 0}

    async def api_produce(self, body: dict) -> dict:
        out = []
        for p in body["partitions"]:
            tp = (p["topic"], p["partition"])
            entry = {"topic": tp[0], "partition": tp[1], "error_code": 0, "error": "NONE", "message": "",
                     "base_offset": -1, "log_append_time": -1, "log_start_offset": 0}
            if tp in self.hold_first:
                await asyncio.sleep(self.hold_first.pop(tp))
            if self.inject.get(tp):
                code = self.inject[tp].pop(0)
                entry.update(error_code=code, error=errors.error_name(code))
            elif self.check_sequences and (code := self._sequence_error(tp, p["records"])):
                entry.update(error_code=code, error=errors.error_name(code))
            elif tp not in self.logs:
                entry.update(error_code=3, error="UNKNOWN_TOPIC_OR_PARTITION")
            else:
                entry["base_offset"] = self.leo[tp]
                for h, raw in split_batches(p["records"]):
                    self.logs[tp].append((self.leo[tp], stamp(raw, self.leo[tp], 0)))
                    self.leo[tp] += h.record_count
                self.appended.set()
                self.appended = asyncio.Event()
            out.append(entry)
        return {"partitions": out}

    def _sequence_error(self, tp: tuple[str, int], records: bytes) -> int:
        """0, or OUT_OF_ORDER_SEQUENCE_NUMBER as a leader answers a batch that does not
        continue its producer's sequence (and records it when it does).  A producer the
        partition has no state for is taken at any sequence, as by Kafka 2.5+."""
        for h, _ in split_batches(records):
            if h.producer_id < 0:
                continue
            key = (h.producer_id, tp)
            expected = self.next_seq.get(key)
            if expected is not None and h.base_sequence != expected:
                return 45
            self.next_seq[key] = h.base_sequence + h.record_count
        return 0

    def _read(self, p: dict) -> dict:
        tp = (p["topic"], p["partition"])
        entry = {"topic": tp[0], "partition": tp[1], "error_code": 0, "error": "NONE", "message": "",
                 "high_watermark": self.leo.get(tp, 0), "log_start_offset": 0,
                 "log_end_offset": self.leo.get(tp, 0), "leader_epoch": 0, "records": b""}
        if tp not in self.logs:
            entry.update(error_code=3, error="UNKNOWN_TOPIC_OR_PARTITION")
        elif p["fetch_offset"] > self.leo[tp]:
            entry.update(error_code=1, error="OFFSET_OUT_OF_RANGE")
        else:
            chunks, size = [], 0
            for base, raw in self.logs[tp]:
                last = base + split_batches(raw, validate=False)[0][0].last_offset_delta
                if last < p["fetch_offset"]:
                    continue
                if chunks and size + len(raw) > p.get("partition_max_bytes", 1 << 20):
                    break
                chunks.append(raw)
                size += len(raw)
            entry["records"] = b"".join(chunks)
        return entry

    async def api_fetch(self, body: dict) -> dict:
        parts = [self._read(p) for p in body["partitions"]]
        if not any(e["records"] or e["error_code"] for e in parts) and body.get("max_wait_ms", 0) > 0:
            try:
                await asyncio.wait_for(self.appended.wait(), body["max_wait_ms"] / 1000)
            except asyncio.TimeoutError:
                pass
            parts = [self._read(p) for p in body["partitions"]]
        return {"partitions": parts}

    async def api_list_offsets(self, body: dict) -> dict:
        return {"partitions": [{"topic": p["topic"], "partition": p["partition"], "error_code": 0, "error": "NONE",
                                "message": "", "leader_epoch": 0,
                                "offset": 0 if p["timestamp"] == -2 else self.leo[(p["topic"], p["partition"])]}
                               for p in body["partitions"]]}

    async def api_create_topics(self, body: dict) -> dict:
        out = []
        for t in body["topics"]:
            entry = {"name": t["name"], "error_code": 0, "error": "NONE", "message": ""}
            if t["name"] in self.topics:
                entry.update(error_code=36, error="TOPIC_ALREADY_EXISTS", message=f"topic {t['name']} exists")
            elif t["replication_factor"] > 1:
                entry.update(error_code=38, error="INVALID_REPLICATION_FACTOR", message="only 1 broker")
            else:
                self.create(t["name"], t["num_partitions"])
            out.append(entry)
        return {"topics": out}

    async def api_delete_topics(self, body: dict) -> dict:
        out = []
        for name in body["topics"]:
            entry = {"name": name, "error_code": 0, "error": "NONE", "message": ""}
            if self.topics.pop(name, None) is None:
                entry.update(error_code=3, error="UNKNOWN_TOPIC_OR_PARTITION")
            else:
                for tp in [tp for tp in self.logs if tp[0] == name]:
                    del self.logs[tp], self.leo[tp]
            out.append(entry)
        return {"topics": out}

    async def api_elect_leaders(self, body: dict) -> dict:
        return {"partitions": [{"topic": p["topic"], "partition": p["partition"], "error_code": 84,
                                "error": "ELECTION_NOT_NEEDED", "message": ""} for p in body["partitions"] or ()]}

    async def api_replica_state(self, body: dict) -> dict:
        return {"broker_id": 1, "replicas": [
            {"topic": t, "partition": p, "role": "leader", "leader": 1, "leader_epoch": 0, "log_start_offset": 0,
             "log_end_offset": leo, "high_watermark": leo, "isr": [1], "remote_leos": {}, "epochs": [[0, 0]],
             "checksum": None} for (t, p), leo in self.leo.items()]}


@pytest.fixture
def broker():
    b = FakeBroker().start()
    yield b
    b.stop()


def values_of(broker: FakeBroker, topic: str, partition: int) -> list[bytes]:
    data = b"".join(raw for _, raw in broker.logs[(topic, partition)])
    return [r.value for r in iter_records(data)]


def test_sync_producer_10000_records_then_consumer(broker):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 3)
    p = Producer(broker.bootstrap, acks="all")
    futs = [p.send("t", b"value-%d" % i, key=None if i % 2 else b"k%d" % (i % 10)) for i in range(10000)]
    p.flush()
    p.close()
    mds = [f.result(0) for f in futs]
    assert sum(broker.leo.values()) == 10000
    for i, md in enumerate(mds):
        if i % 2 == 0:
            assert md.partition == partition_for_key(b"k%d" % (i % 10), 3)
    # offsets per partition are 0..n-1 in send order
    for part in range(3):
        offs = [md.offset for md in mds if md.partition == part]
        assert offs == list(range(len(offs)))
    produce_calls = sum(1 for api, _ in broker.requests if api == "produce")
    assert produce_calls < 200  # batched, not one request per record

    c = Consumer(broker.bootstrap, auto_offset_reset="earliest")
    tps = [TopicPartition("t", i) for i in range(3)]
    c.assign(tps)
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 10000 and time.monotonic() < deadline:
        got.extend(c.poll(timeout_ms=500))
    assert len(got) == 10000
    by_part = {}
    for r in got:
        by_part.setdefault(r.partition, []).append(r.offset)
    for part, offs in by_part.items():
        assert offs == list(range(len(offs)))
    assert {r.value for r in got} == {b"value-%d" % i for i in range(10000)}
    assert c.position(tps[0]) == broker.leo[("t", 0)]
    c.close()


def test_retriable_errors_are_retried_in_order(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [6, 6, 19]  # NOT_LEADER_OR_FOLLOWER twice, NOT_ENOUGH_REPLICAS once
    p = Producer(broker.bootstrap, linger_ms=0, batch_size=50, retry_backoff_ms=10)
    futs = [p.send("t", b"v%02d" % i) for i in range(30)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(30))
    assert values_of(broker, "t", 0) == [b"v%02d" % i for i in range(30)]
    metadata_calls = sum(1 for api, _ in broker.requests if api == "metadata")
    assert metadata_calls >= 2  # bootstrap + at least one refresh after NOT_LEADER_OR_FOLLOWER


def _log_values(broker, tp):
    """(offset, value) of every record in the fake broker's log of ``tp``, in log order."""
    return [(r.offset, r.value) for _, raw in broker.logs[tp] for r in iter_records(raw)]


def _sent_batches(broker, tp=("t", 0)):
    """(producer_id, producer_epoch, base_sequence, record_count) of every produce request's batch."""
    out = []
    for api, body in broker.requests:
        if api == "produce":
            for p in body["partitions"]:
                if (p["topic"], p["partition"]) == tp:
                    h = split_batches(p["records"])[0][0]
                    out.append((h.producer_id, h.producer_epoch, h.base_sequence, h.record_count))
    return out


def test_idempotent_producer_numbers_batches_and_retries_keep_their_sequence(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [6, 7]  # NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=1)
    assert p._core.enable_idempotence  # the default with acks=all
    futs = [p.send("t", b"v%02d" % i) for i in range(12)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(12))
    sent = _sent_batches(broker)
    pid = sent[0][0]
    assert pid > 0 and all(b[0] == pid and b[1] == 0 for b in sent)
    assert sent[0][2] == sent[1][2] == sent[2][2] == 0  # the first batch twice retried, same sequence
    seqs = [b[2] for b in sent[2:]]
    counts = [b[3] for b in sent[2:]]
    assert seqs == [sum(counts[:i]) for i in range(len(counts))]  # consecutive, no gap
    assert [api for api, _ in broker.requests].count("init_producer_id") == 1


def test_a_batch_that_overtakes_its_predecessor_is_refused_and_sent_again_after_it(broker, monkeypatch):
    from minikafka import Producer
    from minikafka.client import producer as producer_mod

    monkeypatch.setattr(producer_mod, "LEADER_KNOWS_MS", 60_000)  # however slow this machine is
    broker.create("t", 1)
    broker.check_sequences = True
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=5)
    first = p.send("t", b"v00").result(10)  # the leader knows the producer from here on
    broker.hold_first[("t", 0)] = 0.5  # the next produce is slow: the (full) batches behind it overtake it
    futs = [p.send("t", b"v%02d" % i) for i in range(1, 40)]
    p.flush()
    p.close()
    assert [first.offset] + [f.result().offset for f in futs] == list(range(40))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(40)]
    sent = _sent_batches(broker)
    assert len(sent) > len(set(sent)), "a batch that overtook its predecessor was sent again"


def test_a_producers_first_batches_to_a_leader_go_one_at_a_time(broker):
    """A leader takes a batch of a producer it has no state for at any sequence (Kafka
    2.5+), so it cannot refuse a batch that overtook the producer's first one: until the
    leader took one, the partition's batches go one at a time, in order."""
    from minikafka import Producer

    broker.create("t", 1)
    broker.hold_first[("t", 0)] = 0.5  # the first produce is slow: nothing may overtake it
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=5)
    futs = [p.send("t", b"v%02d" % i) for i in range(40)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(40))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(40)]
    sent = _sent_batches(broker)
    assert sent[1][2] == sent[0][3], "the second request carries the batch after the first"


def test_a_leader_that_may_have_forgotten_an_idle_producer_gets_one_batch_at_a_time(broker, monkeypatch):
    """An idle producer's state expires on the leader (producer.id.expiration.ms): after
    LEADER_KNOWS_MS without an answer the partition starts again with one batch in flight."""
    from minikafka import Producer
    from minikafka.client import producer as producer_mod

    monkeypatch.setattr(producer_mod, "LEADER_KNOWS_MS", 50)
    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=200, retry_backoff_ms=10,
                 max_in_flight_requests_per_connection=5)
    assert p.send("t", b"v00").result(10).offset == 0
    broker.next_seq.clear()  # the leader expired the producer
    time.sleep(0.2)
    broker.hold_first[("t", 0)] = 0.5
    futs = [p.send("t", b"v%02d" % i) for i in range(1, 40)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(1, 40))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(40)]


def test_while_a_batch_is_in_flight_the_next_waits_for_its_answer_unless_it_fills(broker, monkeypatch):
    from minikafka import Producer
    from minikafka.client import producer as producer_mod

    monkeypatch.setattr(producer_mod, "LEADER_KNOWS_MS", 60_000)  # however slow this machine is
    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=400, max_in_flight_requests_per_connection=5)
    assert p.send("t", b"known").result(10).offset == 0  # the leader knows the producer from here on
    broker.hold_first[("t", 0)] = 0.5  # the next produce is answered late
    first = p.send("t", b"first")
    deadline = time.monotonic() + 10
    while len(_sent_batches(broker)) < 2:
        assert time.monotonic() < deadline, "the first batch was not sent"
        time.sleep(0.01)
    futs = [p.send("t", b"v%02d" % i) for i in range(3)]  # linger 0, but one batch is in flight
    time.sleep(0.2)
    assert len(_sent_batches(broker)) == 2, "a batch that is not full went while another was in flight"
    more = [p.send("t", b"w%02d" % i) for i in range(40)]  # these fill batches: full ones go at once
    deadline = time.monotonic() + 10
    while len(_sent_batches(broker)) < 3:
        assert time.monotonic() < deadline, "a full batch waited for the batch in flight"
        time.sleep(0.01)
    assert not first.done()  # still in flight: the full batch went beside it
    p.flush()
    p.close()
    assert [f.result().offset for f in [first, *futs, *more]] == list(range(1, 45))


def test_without_idempotence_one_batch_per_partition_is_in_flight(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.hold_first[("t", 0)] = 0.3
    p = Producer(broker.bootstrap, acks=1, linger_ms=0, batch_size=200, max_in_flight_requests_per_connection=5)
    futs = [p.send("t", b"v%02d" % i) for i in range(12)]
    p.flush()
    p.close()
    assert [f.result().offset for f in futs] == list(range(12))
    assert [r[1][-3:] for r in _log_values(broker, ("t", 0))] == [b"v%02d" % i for i in range(12)]


def test_a_broken_sequence_fails_the_batch_and_takes_a_new_producer_id(broker):
    from minikafka import Producer

    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks="all", linger_ms=0)
    assert p.send("t", b"a").result(10).offset == 0
    broker.inject[("t", 0)] = [45]  # OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(errors.OutOfOrderSequenceNumberError):
        p.send("t", b"b").result(10)
    assert p.send("t", b"c").result(10).offset == 1
    p.close()
    sent = _sent_batches(broker)
    assert sent[-1][0] != sent[0][0] and sent[-1][2] == 0  # new producer id, sequences from 0


def test_idempotence_needs_acks_all():
    from minikafka import Producer

    with pytest.raises(errors.ClientError, match="enable_idempotence needs acks='all'"):
        Producer("127.0.0.1:1", acks=1, enable_idempotence=True)


def test_non_retriable_error_fails_the_records(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [10]  # MESSAGE_TOO_LARGE
    p = Producer(broker.bootstrap, linger_ms=0)
    fut = p.send("t", b"x")
    with pytest.raises(errors.MessageTooLargeError):
        fut.result(10)
    assert p.send("t", b"y").result(10).offset == 0
    p.close()


def test_delivery_timeout_bounds_retries(broker):
    from minikafka import Producer

    broker.create("t", 1)
    broker.inject[("t", 0)] = [19] * 1000
    p = Producer(broker.bootstrap, linger_ms=0, retry_backoff_ms=20, delivery_timeout_ms=300)
    fut = p.send("t", b"x")
    with pytest.raises(errors.NotEnoughReplicasError):
        fut.result(10)
    p.close()


def test_acks_0_resolves_with_offset_minus_one(broker):
    from minikafka import Producer

    broker.create("t", 1)
    p = Producer(broker.bootstrap, acks=0)
    md = p.send("t", "text is utf-8").result(10)
    assert md.offset == -1 and md.partition == 0
    p.flush()
    p.close()
    assert [api for api, body in broker.requests if api == "produce" and body["acks"] == 0]


def test_unknown_topic_and_partition(broker):
    from minikafka import Producer

    broker.create("t", 2)
    p = Producer(broker.bootstrap, max_block_ms=200)
    for bad_topic in (None, ""):  # the first send of a producer checks its topic too
        with pytest.raises(TypeError, match="topic must be a non-empty str"):
            p.send(bad_topic, b"x")
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        p.send("missing", b"x").result(10)
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        p.send("t", b"x", partition=5).result(10)
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        p.partitions_for("missing")
    assert p.partitions_for("t") == {0, 1}
    with pytest.raises(TypeError):
        p.send("t", 123)
    topic = "t"
    assert p.send(topic, b"x").result(10).offset >= 0
    # the same topic object again skips its check, the record's other checks still apply
    for bad in [dict(value=123), dict(value=b"x", key=5), dict(value=b"x", headers=[(1, b"v")])]:
        with pytest.raises(TypeError):
            p.send(topic, **bad)
    for bad_topic in ("", None, 7):
        with pytest.raises(TypeError, match="topic must be a non-empty str"):
            p.send(bad_topic, b"x")
    record = p.send(topic, "hé", key=bytearray(b"k"), headers={"h": "v"}).result(10)
    assert record.topic == "t"
    p.close()
    with pytest.raises(errors.ClientError):
        p.send("t", b"x")


def test_records_wait_for_a_topic_that_appears(broker):
    from minikafka import Producer

    p = Producer(broker.bootstrap, retry_backoff_ms=20)
    fut = p.send("later", b"x", key=b"k")
    time.sleep(0.2)
    broker.create("later", 4)
    md = fut.result(10)
    assert md.partition == partition_for_key(b"k", 4)
    p.close()


def test_headers_and_timestamps_round_trip(broker):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 1)
    with Producer(broker.bootstrap) as p:
        p.send("t", b"v", key=b"k", headers=[("trace", b"abc"), ("none", None)], timestamp_ms=123456).result(10)
    with Consumer(broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("t", 0)])
        recs = c.poll(timeout_ms=5000)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in recs] == [
        (b"k", b"v", 123456, [("trace", b"abc"), ("none", None)])]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_produce_and_consume(broker, codec):
    from minikafka import Consumer, Producer, TopicPartition

    broker.create("t", 1)
    with Producer(broker.bootstrap, compression_type=codec, linger_ms=20) as p:
        futs = [p.send("t", b"value-%d" % i * 5, key=b"k%d" % i, headers=[("i", b"%d" % i)]) for i in range(300)]
        p.flush()
        assert [f.result(10).offset for f in futs] == list(range(300))
    hs = [split_batches(raw, deep=True)[0][0] for _, raw in broker.logs[("t", 0)]]
    assert {h.compression for h in hs} == {codec}
    with Consumer(broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("t", 0)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 300 and time.monotonic() < deadline:
            got.extend(c.poll(timeout_ms=500))
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
        (i, b"k%d" % i, b"value-%d" % i * 5, [("i", b"%d" % i)]) for i in range(300)]


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


def test_admin(broker):
    from minikafka import Admin, Producer

    with Admin(broker.bootstrap) as admin:
        admin.create_topic("a", 2, 1)
        with pytest.raises(errors.TopicAlreadyExistsError):
            admin.create_topic("a", 2, 1)
        with pytest.raises(errors.InvalidReplicationFactorError):
            admin.create_topic("b", 1, 3)
        assert admin.list_topics() == ["a"]
        with Producer(broker.bootstrap) as p:
            p.send("a", b"x", partition=1)
        (desc,) = admin.describe_topics(["a"])
        assert desc.name == "a" and len(desc.partitions) == 2
        p1 = desc.partitions[1]
        assert (p1.leader, p1.replicas, p1.isr, p1.high_watermark, p1.log_end_offset) == (1, [1], [1], 1, 1)
        assert p1.replica_leos == {1: 1} and p1.replica_hws == {1: 1}
        with pytest.raises(errors.UnknownTopicOrPartitionError):
            admin.describe_topics(["nope"])
        cl = admin.cluster()
        assert cl.controller_id == 1 and [b.id for b in cl.brokers] == [1]
        from minikafka import TopicPartition

        outcome = admin.elect_leaders([TopicPartition("a", 0)])
        assert isinstance(outcome[TopicPartition("a", 0)], errors.ElectionNotNeededError)
        admin.delete_topic("a")
        assert admin.list_topics() == []
        with pytest.raises(errors.UnknownTopicOrPartitionError):
            admin.delete_topic("a")


def test_describe_leaves_unanswered_brokers_at_minus_one(broker):
    from minikafka.client.admin import AIOAdmin

    broker.create("t", 1)

    async def go():
        async with AIOAdmin(broker.bootstrap) as admin:
            await admin.metadata.refresh()
            # A second, unreachable broker that hosts a replica.
            admin.metadata.brokers[2] = ("127.0.0.1", 1)
            orig = admin.metadata.refresh

            async def keep_extra():
                await orig()
                admin.metadata.brokers[2] = ("127.0.0.1", 1)
                pi = admin.metadata.topics["t"].partitions[0]
                admin.metadata.topics["t"].partitions[0] = type(pi)(**{**pi.__dict__, "replicas": [1, 2]})

            admin.metadata.refresh = keep_extra
            return await admin.describe_topics()

    (desc,) = asyncio.run(go())
    assert desc.partitions[0].replica_leos == {1: 0, 2: -1}


def test_metadata_skips_a_broker_that_has_not_heard_from_the_controller(broker):
    """A broker just restarted answers metadata with no controller and no topics until the
    controller's UpdateMetadata reaches it; the client asks the next broker instead of
    taking its topics for deleted (as Kafka's clients ignore an empty metadata answer)."""
    from minikafka import Admin

    broker.create("t", 1)
    fresh = FakeBroker().start()
    try:
        fresh.heard_from_controller = False
        with Admin(f"{fresh.bootstrap},{broker.bootstrap}") as admin:
            (desc,) = admin.describe_topics(["t"])
            assert desc.name == "t"
        with Admin(fresh.bootstrap) as admin:  # no other broker: its answer is the one there is
            with pytest.raises(errors.UnknownTopicOrPartitionError):
                admin.describe_topics(["t"])
    finally:
        fresh.stop()


def test_no_broker_reachable_is_one_error():
    from minikafka import Producer

    with pytest.raises(errors.NetworkExceptionError, match="127.0.0.1:1"):
        Producer("127.0.0.1:1")


async def test_aio_clients(broker):
    from minikafka.aio import AIOAdmin, AIOConsumer, AIOProducer, TopicPartition

    async with AIOAdmin(broker.bootstrap) as admin:
        await admin.create_topic("t", 1, 1)
    async with AIOProducer(broker.bootstrap, linger_ms=0) as p:
        md = await p.send_and_wait("t", b"one")
        fut = await p.send("t", b"two")
        await p.flush()
        assert fut.done() and (await fut).offset == md.offset + 1
    async with AIOConsumer(broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("t", 0)])
        recs = await c.poll(timeout_ms=5000)
        assert [r.value for r in recs] == [b"one", b"two"]
        assert c.group_id is None
        with pytest.raises(errors.ClientError, match="needs a group_id"):
            c.subscribe(["t"])


# ---------------------------------------------------------------- CLI against the fake broker

def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "minikafka", *args], input=stdin, capture_output=True,
                          text=True, timeout=60, env=env, stdin=None if stdin is not None else subprocess.DEVNULL)


def test_cli_topics_produce_consume(broker):
    bs = ["--bootstrap-server", broker.bootstrap]
    r = cli("topics", "create", "t", "--partitions", "2", "--replication-factor", "1", *bs)
    assert r.returncode == 0 and r.stdout == "Created topic t.\n", r.stderr
    r = cli("topics", "create", "t", "--partitions", "2", "--replication-factor", "1", *bs)
    assert r.returncode == 2 and r.stderr.startswith("minikafka: error: TOPIC_ALREADY_EXISTS")
    r = cli("topics", "list", *bs)
    assert r.stdout == "t\n"
    r = cli("produce", "t", "--key-separator", ":", *bs, stdin="a:1\nb:2\nc:3\n")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stderr
    r = cli("produce", "t", "--partition", "1", *bs, stdin="x\ny\n")
    assert r.returncode == 0, r.stderr
    r = cli("consume", "t", "--from-beginning", "--partition", "1", "--max-messages", "2", *bs)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [v.decode() for v in values_of(broker, "t", 1)[:2]]
    assert values_of(broker, "t", 1)[-2:] == [b"x", b"y"]
    r = cli("consume", "t", "--from-beginning", "--timeout-ms", "1500", "--print-offset", *bs)
    lines = sorted(r.stdout.splitlines())
    assert len(lines) == 5
    assert all(line.count(":") == 3 for line in lines)
    keyed = {line.split(":")[2]: line.split(":")[3] for line in lines if line.split(":")[2] != "null"}
    assert keyed == {"a": "1", "b": "2", "c": "3"}
    r = cli("topics", "describe", "t", *bs)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert re.fullmatch(r"Topic: t\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: 1", out[0])
    assert out[2].startswith("Topic: t\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tLeaderEpoch: 0\tHighWatermark: ")
    assert out[2].endswith("\tLEO: 1=" + out[2].split("HighWatermark: ")[1].split("\t")[0])
    r = cli("topics", "describe", "--json", *bs)
    import json

    doc = json.loads(r.stdout)
    assert doc["topics"][0]["partitions"][0]["replica_leos"].keys() == {"1"}


def test_cli_produce_compression_type(broker):
    bs = ["--bootstrap-server", broker.bootstrap]
    broker.create("z", 1)
    r = cli("produce", "z", "--compression-type", "zstd", *bs, stdin="a\nb\nc\n")
    assert r.returncode == 0, r.stderr
    assert {split_batches(raw)[0][0].compression for _, raw in broker.logs[("z", 0)]} == {"zstd"}
    assert values_of(broker, "z", 0) == [b"a", b"b", b"c"]
    r = cli("produce", "z", "--compression-type", "brotli", *bs, stdin="a\n")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_cli_errors_are_one_line(broker):
    bs = ["--bootstrap-server", broker.bootstrap]
    for args, stdin in [
        (("produce", "missing", *bs), "x\n"),
        (("consume", "missing", *bs), None),
        (("topics", "describe", "missing", *bs), None),
        (("produce", "t2", "--key-separator", ":", *bs), "nokey\n"),
        (("topics", "create", "x", "--partitions", "1", "--replication-factor", "1", "--config", "bad", *bs), None),
        (("topics", "list", "--bootstrap-server", "127.0.0.1:1"), None),
    ]:
        broker.create("t2", 1)
        r = cli(*args, stdin=stdin)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("minikafka: error:"), r.stderr
        assert "ssl:default" not in r.stderr and "call failed" not in r.stderr, r.stderr


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


def test_plain_records_joining_an_open_batch_keep_the_batch_size_and_the_order(broker):
    """Records without key, partition or headers join the open batch of their sticky
    partition on a short road; mixed with keyed, headered and placed records they still
    fill batches no further than batch_size and keep their send order per partition."""
    from minikafka import Producer

    broker.create("t", 3)
    value = b"v" * 100
    per_batch = (2000 - 61) // record_size(None, value, None)  # 61: the batch header
    with Producer(broker.bootstrap, acks="all", batch_size=2000, linger_ms=50) as p:
        futs = []
        for i in range(3000):
            v = b"%05d" % i + value[5:]
            if i % 97 == 0:
                futs.append(p.send("t", v, key=b"k%d" % i))
            elif i % 89 == 0:
                futs.append(p.send("t", v, headers=[("h", b"x")]))
            elif i % 83 == 0:
                futs.append(p.send("t", v, partition=i % 3))
            else:
                futs.append(p.send("t", v))
        p.flush()
    mds = [f.result(0) for f in futs]
    for part in range(3):
        sent = [b"%05d" % i for i, md in enumerate(mds) if md.partition == part]
        assert [v[:5] for v in values_of(broker, "t", part)] == sent
        assert [md.offset for md in mds if md.partition == part] == list(range(len(sent)))
        counts = [len(list(iter_records(raw))) for _, raw in broker.logs[("t", part)]]
        assert max(counts) <= per_batch, counts
    assert len({md.partition for md in mds}) == 3, "the sticky partition moves on as batches fill"


def test_a_kept_future_does_not_keep_its_records_bytes(broker):
    """``send`` queues the future alone, carrying its record to the loop; once handed
    over (and the batch acknowledged) the future lets the value and key go, so that a
    program keeping its futures does not keep every record it sent."""
    import sys

    from minikafka import Producer

    broker.create("t", 1)
    values = [bytes([65 + i % 26]) * (1000 + i) for i in range(50)]
    keys = [b"key-%d" % i for i in range(50)]
    before = [sys.getrefcount(v) for v in values] + [sys.getrefcount(k) for k in keys]
    with Producer(broker.bootstrap, acks="all", linger_ms=0) as p:
        futs = [p.send("t", v, key=k) for v, k in zip(values, keys)]
        p.flush()
    assert [f.result(0).offset for f in futs] == list(range(50))
    assert [sys.getrefcount(v) for v in values] + [sys.getrefcount(k) for k in keys] == before


def test_linger_0_makes_a_batch_ready_at_once():
    acc = RecordAccumulator(batch_size=65536, linger_ms=0)
    acc.append("t", 0, (None, b"x", (), 0), None, now_ms=100)
    assert acc.ready(100, set()) == ([("t", 0)], None)


def test_linger_0_hands_a_record_to_the_loop_with_one_wake_up(broker):
    """acks=all, linger_ms=0: a record is sent without a flush, and its hand-off to the
    producer's loop thread is one call into the loop (one wake-up of its selector)."""
    from minikafka import Producer

    broker.create("t", 1)
    with Producer(broker.bootstrap, acks="all", linger_ms=0) as p:
        p.send("t", b"first").result(10)  # metadata and producer id are in place
        loop = p._lt.loop
        calls = []
        real = loop.call_soon_threadsafe

        def counting(fn, *args, **kw):
            calls.append(fn)
            return real(fn, *args, **kw)

        loop.call_soon_threadsafe = counting
        try:
            for i in range(3):
                before = len(calls)
                assert p.send("t", b"one at a time %d" % i).result(10).offset == i + 1
                assert len(calls) - before == 1, calls[before:]
        finally:
            del loop.call_soon_threadsafe
