"""Run a fuzzer sequence (:mod:`.fuzz_ops`) on one cluster and record every answer, normalized.

:class:`Runner` takes one cluster (its Kafka listeners and its ZooKeeper) and a name prefix,
runs each operation through a real client and returns what the cluster answered, as JSON
values with nothing in them that differs from run to run (producer ids, broker clocks,
ports, broker ids, the prefix):

* admin requests, produce, transactions and groups go through confluent-kafka
  (AdminClient, Producer, Consumer); the answer is Kafka's error name (``NONE``) and the
  offsets, low watermarks or committed offsets it gives;
* Fetch, ListOffsets and OffsetsForLeaderEpoch are built by hand (minikafka's codec of
  Kafka's protocol, :mod:`minikafka.protocol.kafka`) and sent to the partition's leader,
  so that each answer is one request's: its error, high watermark, last stable offset, log
  start offset, aborted transactions and the batches returned (offsets, codec, transactional
  and control flags, producer epoch and sequence, records).  A batch cut off at the end of
  an answer (Kafka sends the bytes up to the size asked; clients drop the partial batch) is
  left out.

Reads wait first for a settled partition (a leader, the full ISR, the high watermark at
the log end, the last stable offset at the high watermark), so that what is compared is
deterministic rather than a race with replication.  :meth:`Runner.state` reads the end
state of every topic and group a sequence used: each partition's batches, log start, high
watermark, last stable offset and aborted transactions, the committed offsets, and the
ZooKeeper znodes of the topics (masked as :mod:`.znodes` masks them).
"""
from __future__ import annotations

import json
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ClientError, error_name
from ..polling import poll
from ..protocol.kafka import apis, frames
from ..protocol.records import batch as batches
from . import fuzz_ops, znodes

ACKS0_WAIT_S = 5.0  # at most this long for the records of an acks=0 produce to reach the log
SETTLE_S = 20.0  # at most this long for a partition to settle before a read (then it is read as it is)
BROKER_CLOCK = 1_700_000_000_000  # a timestamp above this is a broker's clock (LogAppendTime), masked
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
ISOLATION = {"read_uncommitted": 0, "read_committed": 1}
LIST_SPECS = {"earliest": -2, "latest": -1, "max_timestamp": -3}
METADATA_V, FETCH_V, LIST_OFFSETS_V, EPOCH_V = 8, 11, 7, 3


@dataclass(frozen=True)
class Side:
    """One cluster as the fuzzer reaches it."""

    name: str  # "Kafka" or "minikafka"
    bootstrap: str  # its Kafka listeners, host:port,...
    zookeeper: str  # its ZooKeeper connect string
    dir: str = ""  # its folder (reference.json or cluster.json): the pids a fault step signals


def _err(exc: BaseException) -> str:
    """Kafka's (or librdkafka's) error name of a client exception."""
    arg = exc.args[0] if exc.args else None
    if hasattr(arg, "name"):
        return arg.name()
    return f"client:{type(exc).__name__}"


def _text(b: bytes | None) -> str | None:
    return None if b is None else bytes(b).decode("utf-8", "replace")


def _ts(ts: int) -> Any:
    return "<broker clock>" if ts > BROKER_CLOCK else ts - fuzz_ops.BASE_TIMESTAMP


class AppliedConfigs:
    """How many topic-config changes each broker of a cluster has applied, read from the brokers'
    logs in the cluster's folder: Kafka's ``Processing override for entityPath: topics/T`` and
    minikafka's ``topic T overrides now``, one line per broker per change notification.  An
    AlterConfigs is answered once ZooKeeper holds the change, before the brokers have read it;
    a produce right after it would race with that read (on both clusters, by chance)."""

    def __init__(self, folder: str) -> None:
        from pathlib import Path
        root = Path(folder) if folder else None
        self.files = sorted(root.glob("kafka-*.log")) + sorted(root.glob("broker-*.log")) if root else []
        self.read_to: dict[Any, int] = {f: 0 for f in self.files}
        self.counts: dict[Any, dict[str, int]] = {f: {} for f in self.files}

    def _scan(self) -> None:
        import re
        for f in self.files:
            try:
                with open(f, "rb") as fh:
                    fh.seek(self.read_to[f])
                    chunk = fh.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n") + 1  # whole lines only
            self.read_to[f] += end
            for m in re.finditer(rb"entityPath: topics/(\S+) with config|topic (\S+) overrides now", chunk[:end]):
                topic = (m.group(1) or m.group(2)).decode()
                self.counts[f][topic] = self.counts[f].get(topic, 0) + 1

    def snapshot(self, topic: str) -> dict[Any, int]:
        """How many changes of ``topic`` each broker has applied so far."""
        self._scan()
        return {f: c.get(topic, 0) for f, c in self.counts.items()}

    def applied_since(self, topic: str, before: dict[Any, int]) -> bool:
        """Whether every broker has applied a change of ``topic`` since ``before`` (its
        :meth:`snapshot`), each counted against its own number (against the fewest, a broker
        that missed earlier changes while it was down let the others count as applied before
        they read the new one).  True without logs to read."""
        if not self.files:
            return True
        self._scan()
        return all(c.get(topic, 0) > before.get(f, 0) for f, c in self.counts.items())


class Wire:
    """Hand-built Kafka requests to the brokers of one cluster (one connection each)."""

    def __init__(self, bootstrap: str, timeout_s: float = 15.0) -> None:
        self.bootstrap = [tuple(hp.rsplit(":", 1)) for hp in bootstrap.split(",")]
        self.timeout_s = timeout_s
        self.socks: dict[tuple[str, int], socket.socket] = {}
        self.brokers: dict[int, tuple[str, int]] = {}
        self.correlation = 0

    def close(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks.clear()

    def _recv(self, sock: socket.socket, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            got = sock.recv(n - len(out))
            if not got:
                raise ConnectionError("the broker closed the connection")
            out += got
        return bytes(out)

    def ask(self, address: tuple[str, int], api: apis.KafkaApi, version: int, body: dict) -> dict:
        """One request to ``address``; its decoded answer (one retry on a fresh connection)."""
        for attempt in (1, 2):
            sock = self.socks.get(address)
            try:
                if sock is None:
                    sock = self.socks[address] = socket.create_connection(address, timeout=self.timeout_s)
                self.correlation += 1
                sock.sendall(frames.encode_request(api, version, self.correlation, "minikafka-fuzz", body))
                size = struct.unpack(">i", self._recv(sock, 4))[0]
                correlation, answer = frames.decode_response(api, version, self._recv(sock, size))
                if correlation != self.correlation:
                    raise ConnectionError(f"answer to correlation id {correlation}, not {self.correlation}")
                return answer
            except OSError:
                self.socks.pop(address, None)
                if sock is not None:
                    sock.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def metadata(self, topic: str, address: tuple[str, int] | None = None) -> dict | None:
        """The topic's Metadata (v8, never auto-created): ``{partition: {leader, epoch, replicas, isr}}``,
        or None when the cluster does not know it; from the broker at ``address``, else the
        first bootstrap broker that answers.  Remembers the brokers' addresses."""
        last: Exception | None = None
        for host, port in [address] if address else self.bootstrap:
            try:
                md = self.ask((host, int(port)), apis.METADATA, METADATA_V,
                              {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
                break
            except OSError as exc:
                last = exc
        else:
            raise ConnectionError(f"no broker answered Metadata: {last}")
        if not address:
            self.brokers = {b["node_id"]: (b["host"], b["port"]) for b in md["brokers"]}
        t = md["topics"][0]
        if t["error_code"]:
            return None
        return {p["partition_index"]: {"leader": p["leader_id"], "epoch": p["leader_epoch"],
                                       "replicas": p["replica_nodes"], "isr": p["isr_nodes"]}
                for p in t["partitions"]}

    def leader(self, topic: str, partition: int) -> tuple[tuple[str, int], dict | None]:
        """The address to ask about a partition (its leader, else any broker) and its metadata."""
        md = self.metadata(topic) or {}
        p = md.get(partition)
        if p and p["leader"] in self.brokers:
            return self.brokers[p["leader"]], p
        host, port = self.bootstrap[0]
        return (host, int(port)), p

    def list_offset(self, topic: str, partition: int, timestamp: int, isolation: int = 0) -> dict:
        address, _ = self.leader(topic, partition)
        got = self.ask(address, apis.LIST_OFFSETS, LIST_OFFSETS_V, {
            "replica_id": -1, "isolation_level": isolation,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                                        "timestamp": timestamp}]}]})
        p = got["topics"][0]["partitions"][0]
        return {"error": error_name(p["error_code"]), "offset": p["offset"], "timestamp": p["timestamp"],
                "leader_epoch": p["leader_epoch"]}

    def epoch_end(self, topic: str, partition: int, epoch: int) -> dict:
        address, _ = self.leader(topic, partition)
        got = self.ask(address, apis.OFFSET_FOR_LEADER_EPOCH, EPOCH_V, {
            "replica_id": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": -1, "leader_epoch": epoch}]}]})
        p = got["topics"][0]["partitions"][0]
        return {"error": error_name(p["error_code"]), "leader_epoch": p["leader_epoch"], "end_offset": p["end_offset"]}

    def find_coordinator(self, key: str, key_type: int = 0) -> dict | None:
        """FindCoordinator v2's answer for a group (``key_type`` 0) or a transactional id
        (1) from the first bootstrap broker that answers, or None when none does."""
        for host, port in self.bootstrap:
            try:
                return self.ask((host, int(port)), apis.FIND_COORDINATOR, 2, {"key": key, "key_type": key_type})
            except OSError:
                continue
        return None

    def coordinator(self, key: str, key_type: int = 0) -> tuple[str, int]:
        """The coordinator of a group (``key_type`` 0) or a transactional id (1), asked
        again while it is being loaded (for at most SETTLE_S; then the last answer's)."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            got = self.find_coordinator(key, key_type)
            late = time.monotonic() > deadline
            if got is not None and (got["error_code"] == 0 or late):
                return got["host"], got["port"]
            if late:
                raise ConnectionError(f"no broker answered FindCoordinator for {key!r}")
            time.sleep(0.1)

    def transaction_state(self, transactional_id: str) -> str:
        """The id's state at its coordinator (DescribeTransactions v0), or the error's name."""
        got = self.ask(self.coordinator(transactional_id, 1), apis.DESCRIBE_TRANSACTIONS, 0,
                       {"transactional_ids": [transactional_id]})
        (state,) = got["transaction_states"]
        return state["transaction_state"] if state["error_code"] == 0 else error_name(state["error_code"])

    def offset_delete(self, group: str, topic: str, partition: int) -> dict:
        """OffsetDelete v0 to the group's coordinator: the top-level and the partition's error."""
        body = {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": partition}]}]}
        deadline = time.monotonic() + SETTLE_S
        while True:
            got = self.ask(self.coordinator(group), apis.OFFSET_DELETE, 0, body)
            error = error_name(got["error_code"])
            if error not in ("COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE") \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        parts = [error_name(p["error_code"]) for t in got["topics"] for p in t["partitions"]]
        return {"error": error, "partitions": parts}

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, isolation: int) -> dict:
        address, _ = self.leader(topic, partition)
        got = self.ask(address, apis.FETCH, FETCH_V, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max(max_bytes, 1),
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                                                        "fetch_offset": offset, "log_start_offset": -1,
                                                        "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""})
        p = got["responses"][0]["partitions"][0]
        aborted = p["aborted_transactions"]
        found = describe_batches(p["records"] or b"")
        # Only the aborted transactions that start within the batches returned are compared: those
        # a consumer uses. Kafka adds the ones up to its offset index's next entry past the data read
        # (LocalLog.addAbortedTransactions), an artefact of index.interval.bytes.
        end = found[-1]["offsets"][1] if found else -1
        return {"error": error_name(p["error_code"]), "high_watermark": p["high_watermark"],
                "last_stable_offset": p["last_stable_offset"], "log_start_offset": p["log_start_offset"],
                "aborted": None if aborted is None else sorted(a["first_offset"] for a in aborted
                                                               if a["first_offset"] <= end),
                "batches": found}


def describe_batches(buf: bytes) -> list[dict]:
    """Every whole batch in ``buf`` as compared: offsets, flags, producer epoch and sequence
    (the producer id only as present or not) and its records (a control batch: its type)."""
    out = []
    pos, n = 0, len(buf)
    while pos + batches.LENGTH_OVERHEAD <= n:
        length = struct.unpack_from(">i", buf, pos + 8)[0]
        if pos + batches.LENGTH_OVERHEAD + length > n or length < batches.HEADER_SIZE - batches.LENGTH_OVERHEAD:
            break  # a partial batch at the end of the answer
        h = batches.read_header(buf, pos)
        attrs = h.attributes
        entry: dict[str, Any] = {
            "offsets": [h.base_offset, h.last_offset], "codec": CODEC_NAMES.get(attrs & batches.COMPRESSION_MASK),
            "log_append_time": bool(attrs & batches.TIMESTAMP_TYPE_MASK),
            "transactional": bool(attrs & batches.TRANSACTIONAL_MASK), "control": bool(attrs & batches.CONTROL_MASK),
            "producer": "<id>" if h.producer_id >= 0 else -1, "producer_epoch": h.producer_epoch,
            "sequence": h.base_sequence, "leader_epoch": h.leader_epoch, "count": h.record_count,
        }
        raw = bytes(buf[pos:pos + h.size])
        if attrs & batches.CONTROL_MASK:
            keys = batches.section_of(raw, h)[2]
            entry["markers"] = ["COMMIT" if k and struct.unpack_from(">h", k, 2)[0] == 1 else "ABORT" for k in keys]
        else:
            entry["records"] = [[off, _ts(ts), _text(k), _text(v), [[hk, _text(hv)] for hk, hv in (hs or ())]]
                                for off, ts, k, v, hs in batches.batch_records(h, raw)]
        out.append(entry)
        pos += h.size
    return out


class Runner:
    """Runs operations on one cluster with names prefixed by ``prefix``; each :meth:`run`
    answer is a JSON-able dict."""

    def __init__(self, side: Side, prefix: str,
                 fault_step: Callable[[Runner, dict], dict] | None = None) -> None:
        from confluent_kafka.admin import AdminClient
        from kazoo.client import KazooClient

        self.side = side
        self.prefix = prefix
        self.fault_step = fault_step  # fuzz_faults.fault, given by the caller (it imports this module)
        self.admin = AdminClient({"bootstrap.servers": side.bootstrap})
        self.wire = Wire(side.bootstrap)
        self.zk = KazooClient(hosts=side.zookeeper, timeout=10.0)
        self.zk.start(timeout=15)
        self.producers: dict[str, Any] = {}  # "idem:<codec>" or "txn:<id>" -> a Producer kept across operations
        self.used_groups: set[str] = set()  # the groups and transactional ids run so far (short names)
        self.used_txns: set[str] = set()
        self.applied = AppliedConfigs(side.dir)

    def fresh_admin(self) -> None:
        """A new AdminClient (one that remembers no coordinator from before a fault step)."""
        from confluent_kafka.admin import AdminClient
        self.admin = AdminClient({"bootstrap.servers": self.side.bootstrap})

    def close(self) -> None:
        for p in self.producers.values():
            p.flush(5)
        self.producers.clear()
        self.wire.close()
        self.zk.stop()
        self.zk.close()

    # ----- names and waiting ------------------------------------------------------------------
    def name(self, short: str) -> str:
        return self.prefix + short

    def short(self, name: str) -> str:
        return name[len(self.prefix):] if name.startswith(self.prefix) else name

    def _wait(self, done, timeout_s: float = SETTLE_S) -> bool:
        return bool(poll(done, timeout_s, 0.05, not_yet=(OSError, KeyError)))

    def _ready(self, topic: str, partitions: int | None = None) -> bool:
        """Every broker knows the topic with ``partitions`` partitions, each with a leader and its
        full ISR (a broker that has not heard of it yet refuses offset commits for it)."""
        self.wire.metadata(topic)
        for address in list(self.wire.brokers.values()):
            md = self.wire.metadata(topic, address)
            if not md or (partitions is not None and len(md) < partitions) or not all(
                    p["leader"] >= 0 and sorted(p["isr"]) == sorted(p["replicas"]) for p in md.values()):
                return False
        return True

    def _gone(self, topic: str) -> bool:
        """No broker knows the topic any more, nor does ZooKeeper."""
        if self.zk.exists(f"/brokers/topics/{topic}") is not None \
                or self.zk.exists(f"/admin/delete_topics/{topic}") is not None:
            return False
        self.wire.metadata(topic)
        return all(self.wire.metadata(topic, address) is None for address in list(self.wire.brokers.values()))

    def _settled(self, topic: str, partition: int) -> bool:
        md = self.wire.metadata(topic) or {}
        p = md.get(partition)
        if p is None:
            return True  # nothing to wait for
        if p["leader"] < 0 or sorted(p["isr"]) != sorted(p["replicas"]):
            return False
        hw = self.wire.list_offset(topic, partition, -1)
        lso = self.wire.list_offset(topic, partition, -1, 1)
        end = self.wire.epoch_end(topic, partition, p["epoch"])
        return hw["error"] == lso["error"] == end["error"] == "NONE" and hw["offset"] == lso["offset"] == end["end_offset"]

    def settle(self, topic: str, partition: int | None = None) -> None:
        """Until the partition (every partition of the topic) has settled, or :data:`SETTLE_S`."""
        md = self.wire.metadata(topic) or {}
        for p in ([partition] if partition is not None else sorted(md)):
            self._wait(lambda: self._settled(topic, p))

    def _resolve(self, topic: str, partition: int, offset: Any) -> int:
        if offset in ("start", "end"):
            got = self.wire.list_offset(topic, partition, -2 if offset == "start" else -1)
            return got["offset"] if got["error"] == "NONE" else 0
        return int(offset)

    # ----- operations -------------------------------------------------------------------------
    def run(self, op: dict) -> dict:
        """One operation's answer (an exception of the client is an answer too)."""
        if op.get("group"):
            self.used_groups.add(op["group"])
        if op.get("txn"):
            self.used_txns.add(op["txn"])
        try:
            return getattr(self, "_" + op["op"])(op)
        except Exception as exc:  # noqa: BLE001 (what a client raised is compared like an answer)
            return {"raised": _err(exc)}

    def _create_topic(self, op: dict) -> dict:
        from confluent_kafka.admin import NewTopic
        topic = self.name(op["topic"])
        futures = self.admin.create_topics([NewTopic(topic, op["partitions"], op["rf"], config=op["configs"])],
                                           validate_only=op["validate_only"], operation_timeout=30)
        try:
            futures[topic].result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        if not op["validate_only"]:
            self._wait(lambda: self._ready(topic, op["partitions"]), 60)
        return {"error": "NONE"}

    def _create_partitions(self, op: dict) -> dict:
        from confluent_kafka.admin import NewPartitions
        topic = self.name(op["topic"])
        try:
            self.admin.create_partitions([NewPartitions(topic, op["count"])], operation_timeout=30)[topic].result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        self._wait(lambda: self._ready(topic, op["count"]), 60)
        return {"error": "NONE"}

    def _delete_topic(self, op: dict) -> dict:
        topic = self.name(op["topic"])
        try:
            self.admin.delete_topics([topic], operation_timeout=30)[topic].result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        self._wait(lambda: self._gone(topic), 60)
        # A new topic of the same name starts with new producers, all of them: librdkafka keeps the old
        # topic's leader epoch and ignores the new one's lower epochs (KIP-320), so a kept producer may
        # send to the old leader until its batches time out (on the cluster where the leader moved;
        # fault steps, raising the epochs, made it show).
        for key in list(self.producers):
            self.producers.pop(key).flush(5)
        return {"error": "NONE"}

    def _alter_config(self, op: dict) -> dict:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
        topic = self.name(op["topic"])
        kind = AlterConfigOpType.SET if op["operation"] == "SET" else AlterConfigOpType.DELETE
        res = ConfigResource("TOPIC", topic, incremental_configs=[
            ConfigEntry(op["key"], op["value"], incremental_operation=kind)])
        before = self.applied.snapshot(topic)
        try:
            self.admin.incremental_alter_configs([res])[res].result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}

        def stored() -> bool:
            got = self.zk.get(f"/config/topics/{topic}")[0]
            cfg = json.loads(got or b"{}").get("config", {})
            return cfg.get(op["key"]) == op["value"] if op["value"] is not None else op["key"] not in cfg
        self._wait(stored, 10)
        # every broker applies the change from ZooKeeper's notification, and says so in its log
        self._wait(lambda: self.applied.applied_since(topic, before), 10)
        return {"error": "NONE"}

    def _describe_config(self, op: dict) -> dict:
        from confluent_kafka.admin import ConfigResource, ConfigSource
        res = ConfigResource("TOPIC", self.name(op["topic"]))
        try:
            got = self.admin.describe_configs([res])[res].result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        return {"error": "NONE", "configs": {k: [got[k].value, ConfigSource(got[k].source).name]
                                             if k in got else None for k in fuzz_ops.DESCRIBED_CONFIGS}}

    def _producer(self, key: str, **config: Any):  # noqa: ANN202 (confluent_kafka.Producer)
        from confluent_kafka import Producer
        if key not in self.producers:
            self.producers[key] = Producer({"bootstrap.servers": self.side.bootstrap, "linger.ms": 1000,
                                            "message.timeout.ms": 8000, "request.timeout.ms": 5000,
                                            "max.in.flight.requests.per.connection": 1 if key.startswith("plain")
                                            else 5, **config})
        return self.producers[key]

    def _send(self, producer, topic: str, partition: int | None, records: list) -> list:  # noqa: ANN001
        """Produce ``records`` then flush: one batch per partition (the producer learns the
        topic's partitions first, so that none goes ahead of the others). Delivery reports, in order."""
        reports: list[Any] = [None] * len(records)
        producer.list_topics(topic, timeout=10)

        def report(i: int):  # noqa: ANN202
            def done(err, msg) -> None:  # noqa: ANN001
                reports[i] = [err.name() if err else "NONE", msg.offset() if not err else None,
                              msg.partition() if partition is None else None]
            return done

        for i, (key, value, headers, ts) in enumerate(records):
            try:
                producer.produce(topic, value=value, key=key, partition=-1 if partition is None else partition,
                                 headers=[(k, v) for k, v in headers] or None,
                                 timestamp=fuzz_ops.BASE_TIMESTAMP + ts, on_delivery=report(i))
            except Exception as exc:  # noqa: BLE001 (refused before sending: a full queue, an unknown partition)
                reports[i] = [_err(exc), None, None]
        producer.flush(30)
        return reports

    def _produce(self, op: dict) -> dict:
        topic = self.name(op["topic"])
        if self.wire.metadata(topic) is None:
            return {"error": "UNKNOWN_TOPIC_OR_PARTITION (not sent)"}
        if op["idempotent"]:
            producer = self._producer(f"idem:{op['codec']}", **{"enable.idempotence": True,
                                                                "compression.type": op["codec"]})
        else:
            producer = self._producer(f"plain:{op['acks']}:{op['codec']}", acks=str(op["acks"]),
                                      **{"compression.type": op["codec"], "retries": 0})
        before = self._high_watermarks(topic) if op["acks"] == 0 and not op["idempotent"] else None
        delivered = self._send(producer, topic, op["partition"], op["records"])
        if before is not None:
            # acks=0: the producer's "delivered" says only that the request left, so wait (a while)
            # until the records are in the log, as the next request on another connection would
            # otherwise race with them; a batch the leader refused never arrives
            sent = sum(1 for r in delivered if r[0] == "NONE")
            landed = self._wait(lambda: self._high_watermarks(topic) >= before + sent, ACKS0_WAIT_S)
            # a refusal has no answer at acks=0: whether the records reached the log is compared instead
            return {"delivered": delivered, "landed": landed}
        return {"delivered": delivered}

    def _high_watermarks(self, topic: str) -> int:
        """The sum of the topic's partitions' high watermarks."""
        md = self.wire.metadata(topic) or {}
        got = [self.wire.list_offset(topic, p, -1) for p in md]
        return sum(g["offset"] for g in got if g["error"] == "NONE")

    def _txn_producer(self, txn: str, fresh: bool = False):  # noqa: ANN202
        key = f"txn:{txn}"
        if fresh:
            self.producers.pop(key, None)
        new = key not in self.producers
        producer = self._producer(key, **{"transactional.id": self.name(txn), "transaction.timeout.ms": 30000})
        if new:
            try:
                producer.init_transactions(30)
            except Exception:
                self.producers.pop(key, None)
                raise
        return producer

    def _finish(self, producer, key: str, end: str) -> str:  # noqa: ANN001
        """Commit or abort; on an error that asks for it, abort; drop a producer that cannot go on."""
        try:
            (producer.commit_transaction if end == "commit" else producer.abort_transaction)(30)
            return "NONE"
        except Exception as exc:  # noqa: BLE001
            err = exc.args[0] if exc.args else None
            if err is not None and hasattr(err, "txn_requires_abort") and err.txn_requires_abort():
                try:
                    producer.abort_transaction(30)
                except Exception:  # noqa: BLE001
                    self.producers.pop(key, None)
            elif err is None or not hasattr(err, "retriable") or not err.retriable():
                self.producers.pop(key, None)
            return _err(exc)

    def _transaction(self, op: dict) -> dict:
        topic = self.name(op["topic"])
        if self.wire.metadata(topic) is None:
            return {"error": "UNKNOWN_TOPIC_OR_PARTITION (not sent)"}
        key = f"txn:{op['txn']}"
        try:
            producer = self._txn_producer(op["txn"])
            producer.begin_transaction()
        except Exception as exc:  # noqa: BLE001
            self.producers.pop(key, None)
            return {"begin": _err(exc)}
        delivered = self._send(producer, topic, op["partition"], op["records"])
        end = self._finish(producer, key, op["end"])
        # EndTxn is answered once PrepareCommit/PrepareAbort is logged; the markers follow. A
        # partition added to the transaction with nothing appended (every record refused) has
        # no open transaction to hold its LSO back, so settling alone would not wait for its
        # marker, and the next write to it would race with the marker on either cluster.
        self._wait(lambda: self._transaction_ended(op["txn"]))
        self.settle(topic, op["partition"])
        return {"delivered": delivered, "end": end}

    def _transaction_ended(self, txn: str) -> bool:
        """No transaction of ``txn`` between its EndTxn and its markers' completion."""
        try:
            return self.wire.transaction_state(self.name(txn)) not in ("PrepareCommit", "PrepareAbort")
        except (OSError, ValueError):  # ConnectionError is an OSError
            return False  # the coordinator moved or is down: ask again

    def _fence(self, op: dict) -> dict:
        topic = self.name(op["topic"])
        if self.wire.metadata(topic) is None:
            return {"error": "UNKNOWN_TOPIC_OR_PARTITION (not sent)"}
        key = f"txn:{op['txn']}"
        answer: dict[str, Any] = {}
        try:
            old = self._txn_producer(op["txn"])
            if op["open"]:
                old.begin_transaction()
                answer["open"] = self._send(old, topic, op["partition"], op["records"])
        except Exception as exc:  # noqa: BLE001
            answer["first"] = _err(exc)
            old = None
        self.producers.pop(key, None)
        try:
            self._txn_producer(op["txn"])  # the second producer: its InitProducerId fences the first
            answer["init"] = "NONE"
        except Exception as exc:  # noqa: BLE001
            answer["init"] = _err(exc)
        if old is not None:
            try:
                if not op["open"]:
                    old.begin_transaction()
                    answer["late"] = self._send(old, topic, op["partition"], op["records"])
                old.commit_transaction(30)
                answer["first_commit"] = "NONE"
            except Exception as exc:  # noqa: BLE001
                answer["first_commit"] = _err(exc)
        self.settle(topic, op["partition"])  # the fenced transaction's abort markers
        return answer

    def _fetch(self, op: dict) -> dict:
        topic = self.name(op["topic"])
        self.settle(topic, op["partition"])
        offset = self._resolve(topic, op["partition"], op["offset"])
        return self.wire.fetch(topic, op["partition"], offset, op["max_bytes"], ISOLATION[op["isolation"]])

    def _list_offsets(self, op: dict) -> dict:
        topic = self.name(op["topic"])
        self.settle(topic, op["partition"])
        ts = op["timestamp"] if op["spec"] == "timestamp" else LIST_SPECS[op["spec"]]
        got = self.wire.list_offset(topic, op["partition"], ts, ISOLATION[op["isolation"]])
        return {**got, "timestamp": _ts(got["timestamp"]) if got["timestamp"] >= 0 else got["timestamp"]}

    def _leader_epoch(self, op: dict) -> dict:
        topic = self.name(op["topic"])
        self.settle(topic, op["partition"])
        return self.wire.epoch_end(topic, op["partition"], op["epoch"])

    def _delete_records(self, op: dict) -> dict:
        from confluent_kafka import TopicPartition
        topic = self.name(op["topic"])
        self.settle(topic, op["partition"])
        offset = -1 if op["offset"] == "hw" else op["offset"]
        # a new client: the runner's may still name the leader of a topic deleted and created again
        # (librdkafka's cached metadata), which Kafka answers NOT_LEADER_OR_FOLLOWER
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.side.bootstrap})
        futures = admin.delete_records([TopicPartition(topic, op["partition"], offset)], operation_timeout=30)
        try:
            got = next(iter(futures.values())).result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        return {"error": "NONE", "low_watermark": got.low_watermark}

    def _group_partitions(self, op: dict, offset: int):  # noqa: ANN202
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        tp = TopicPartition(self.name(op["topic"]), op["partition"], offset, op.get("metadata") or "")
        return ConsumerGroupTopicPartitions(self.name(op["group"]), [tp])

    def _partition_errors(self, result) -> list:  # noqa: ANN001
        return [[self.short(tp.topic), tp.partition, tp.error.name() if tp.error else "NONE"]
                for tp in result.topic_partitions]

    def _commit_offsets(self, op: dict) -> dict:
        futures = self.admin.alter_consumer_group_offsets([self._group_partitions(op, op["offset"])])
        try:
            return {"partitions": self._partition_errors(next(iter(futures.values())).result(60))}
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}

    def _fetch_offsets(self, op: dict) -> dict:
        from confluent_kafka import ConsumerGroupTopicPartitions
        futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(self.name(op["group"]))])
        try:
            got = next(iter(futures.values())).result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        return {"offsets": sorted([self.short(tp.topic), tp.partition, tp.offset, tp.metadata or "",
                                   tp.error.name() if tp.error else "NONE"] for tp in got.topic_partitions)}

    def _describe_group(self, op: dict) -> dict:
        group = self.name(op["group"])
        try:
            got = self.admin.describe_consumer_groups([group])[group].result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        return {"state": got.state.name, "simple": got.is_simple_consumer_group, "members": len(got.members),
                "assignor": got.partition_assignor}

    def _delete_group(self, op: dict) -> dict:
        group = self.name(op["group"])
        try:
            self.admin.delete_consumer_groups([group])[group].result(60)
        except Exception as exc:  # noqa: BLE001
            return {"error": _err(exc)}
        return {"error": "NONE"}

    def _delete_group_offsets(self, op: dict) -> dict:
        return self.wire.offset_delete(self.name(op["group"]), self.name(op["topic"]), op["partition"])

    def _consume(self, op: dict) -> dict:
        """A consumer joins the group (JoinGroup, SyncGroup, Heartbeat), reads from the committed
        offsets (else the earliest) to the end, commits, and leaves (LeaveGroup)."""
        from confluent_kafka import Consumer, TopicPartition
        topic = self.name(op["topic"])
        md = self.wire.metadata(topic)
        if md is None:
            return {"error": "UNKNOWN_TOPIC_OR_PARTITION (not subscribed)"}
        self.settle(topic)
        iso = ISOLATION[op["isolation"]]
        ends = {p: self.wire.list_offset(topic, p, -1, iso)["offset"] for p in md}
        consumer = Consumer({"bootstrap.servers": self.side.bootstrap, "group.id": self.name(op["group"]),
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": op["isolation"], "session.timeout.ms": 10000,
                             "heartbeat.interval.ms": 1000})
        read: list[list] = []
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 40

            def caught_up() -> bool:
                assigned = consumer.assignment()
                if len(assigned) < len(md):
                    return False
                pos = consumer.position([TopicPartition(topic, p) for p in md])
                return all(tp.offset >= ends[tp.partition] or (ends[tp.partition] == 0 and tp.offset < 0)
                           or _nothing_left(consumer, tp, ends) for tp in pos)
            while time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is not None and not msg.error():
                    read.append([msg.partition(), msg.offset()])
                elif msg is None and caught_up():
                    break
            commit = "NONE"
            try:
                consumer.commit(asynchronous=False)
            except Exception as exc:  # noqa: BLE001
                commit = _err(exc)
        finally:
            consumer.close()
        return {"read": sorted(read), "commit": commit}

    def _fault(self, op: dict) -> dict:
        """A broker picked by its role crashed, stopped or paused, and brought back, by the
        ``fault_step`` this runner was given (:func:`.fuzz_faults.fault`: the answer holds no
        broker id and no time)."""
        if self.fault_step is None:
            raise ClientError("this runner was given no fault step (Runner(..., fault_step=fuzz_faults.fault))")
        return self.fault_step(self, op)

    # ----- the end state ----------------------------------------------------------------------
    def state(self, ops: list[dict]) -> dict:
        """Every topic and group the sequence used, as it is at the end (after settling)."""
        used = fuzz_ops.names(ops)
        out: dict[str, Any] = {"topics": {}, "groups": {}, "znodes": {}}
        for short in sorted(used["topics"]):
            topic = self.name(short)
            md = self.wire.metadata(topic)
            if md is None:
                out["topics"][short] = None
            else:
                self.settle(topic)
                out["topics"][short] = {str(p): self._partition_state(topic, p) for p in sorted(md)}
            out["znodes"].update(self._znodes(topic, short))
        for short in sorted(used["groups"]):
            out["groups"][short] = {"offsets": self._fetch_offsets({"group": short}),
                                    "described": self._describe_group({"group": short})}
        return out

    def _partition_state(self, topic: str, p: int) -> dict:
        start = self.wire.list_offset(topic, p, -2)["offset"]
        hw = self.wire.list_offset(topic, p, -1)["offset"]
        lso = self.wire.list_offset(topic, p, -1, 1)["offset"]
        found: list[dict] = []
        offset = start
        while offset < hw:
            got = self.wire.fetch(topic, p, offset, 1 << 20, 0)
            if got["error"] != "NONE" or not got["batches"]:
                break
            found += got["batches"]
            offset = got["batches"][-1]["offsets"][1] + 1
        aborted: set[int] = set()  # read_committed, page by page as a consumer reads
        offset = start
        while offset < lso:
            got = self.wire.fetch(topic, p, offset, 1 << 20, 1)
            if got["error"] != "NONE" or not got["batches"]:
                break
            aborted.update(got["aborted"] or ())
            offset = got["batches"][-1]["offsets"][1] + 1
        return {"log_start": start, "high_watermark": hw, "last_stable": lso, "batches": found,
                "aborted": sorted(aborted)}

    def _znodes(self, topic: str, short: str) -> dict:
        out = {}
        for path in (f"/brokers/topics/{topic}", f"/config/topics/{topic}"):
            if self.zk.exists(path):
                out[path.replace(topic, short)] = znodes.mask(path, self.zk.get(path)[0])
        base = f"/brokers/topics/{topic}/partitions"
        if self.zk.exists(base):
            for p in sorted(self.zk.get_children(base), key=int):
                path = f"{base}/{p}/state"
                if self.zk.exists(path):
                    state = znodes.mask(path, self.zk.get(path)[0])
                    if isinstance(state, dict) and "controller_epoch" in state:
                        # counts the controller elections of the cluster's life, which seeds share
                        state["controller_epoch"] = "<epoch>"
                    out[path.replace(topic, short)] = state
        return out


def _nothing_left(consumer, tp, ends: dict) -> bool:  # noqa: ANN001
    """A partition whose position is unknown (nothing read yet) but whose committed offset is its end
    (one past the end is out of range: the consumer resets to the earliest and reads)."""
    if tp.offset >= 0:
        return False
    committed = consumer.committed([tp], timeout=5)[0]
    return committed.offset == ends[tp.partition]
