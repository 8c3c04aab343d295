"""A tiny in-process fake broker for the client unit tests: it speaks the real wire format
(msgpack over HTTP, real record batches) and keeps its logs in memory; the ``broker``
fixture (tests/unit/conftest.py) starts one per test."""
from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from minikafka import errors
from minikafka.protocol.rpc import codec
from minikafka.protocol.rpc.types import ReplicaState, ReplicaStateResponse, encode_ReplicaStateResponse
from minikafka.protocol.records.batch import iter_records, split_batches, stamp
from minikafka.protocol.topic_ids import ZERO_TOPIC_ID


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
        topics = [{"name": t, "topic_id": ZERO_TOPIC_ID, "error_code": 0, "error": "NONE", "message": "", "partitions": [
            {"partition": p, "leader": 1, "leader_epoch": 0, "replicas": [1], "isr": [1], "offline_replicas": [],
             "error_code": 0, "error": "NONE", "message": ""} for p in range(n)]} for t, n in self.topics.items()]
        # a named topic it does not have is answered as by a broker with auto.create.topics.enable=false
        topics += [{"name": t, "topic_id": ZERO_TOPIC_ID, "error_code": 3, "error": "UNKNOWN_TOPIC_OR_PARTITION",
                    "message": "", "partitions": []}
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
                 "log_end_offset": self.leo.get(tp, 0), "leader_epoch": 0, "records": b"",
                 "last_stable_offset": self.leo.get(tp, 0), "aborted_transactions": None}
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
        return {"session_id": 0, "partitions": parts}

    async def api_list_offsets(self, body: dict) -> dict:
        return {"partitions": [{"topic": p["topic"], "partition": p["partition"], "error_code": 0, "error": "NONE",
                                "message": "", "leader_epoch": 0, "timestamp": -1,
                                "offset": 0 if p["timestamp"] == -2 else self.leo[(p["topic"], p["partition"])]}
                               for p in body["partitions"]]}

    async def api_create_topics(self, body: dict) -> dict:
        out = []
        for t in body["topics"]:
            entry = {"name": t["name"], "topic_id": ZERO_TOPIC_ID, "error_code": 0, "error": "NONE", "message": ""}
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
            entry = {"name": name, "topic_id": ZERO_TOPIC_ID, "error_code": 0, "error": "NONE", "message": ""}
            if self.topics.pop(name, None) is None:
                entry.update(error_code=3, error="UNKNOWN_TOPIC_OR_PARTITION", message=f"topic {name} does not exist")
            else:
                for tp in [tp for tp in self.logs if tp[0] == name]:
                    del self.logs[tp], self.leo[tp]
            out.append(entry)
        return {"topics": out}

    async def api_elect_leaders(self, body: dict) -> dict:
        return {"partitions": [{"topic": p["topic"], "partition": p["partition"], "error_code": 84,
                                "error": "ELECTION_NOT_NEEDED", "message": ""} for p in body["partitions"] or ()]}

    async def api_replica_state(self, body: dict) -> dict:
        return encode_ReplicaStateResponse(ReplicaStateResponse(broker_id=1, replicas=[
            ReplicaState(topic=t, partition=p, role="leader", leader=1, leader_epoch=0, log_start_offset=0,
                         log_end_offset=leo, high_watermark=leo, last_stable_offset=leo, isr=[1], remote_leos={},
                         epochs=[[0, 0]], checksum=None) for (t, p), leo in self.leo.items()]))


def values_of(broker: FakeBroker, topic: str, partition: int) -> list[bytes]:
    data = b"".join(raw for _, raw in broker.logs[(topic, partition)])
    return [r.value for r in iter_records(data)]
