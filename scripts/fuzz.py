#!/usr/bin/env python3
"""Throw generated hostile requests at a live broker and check that it survives them.

    python scripts/fuzz.py --bootstrap-server 127.0.0.1:9092 [--kafka 127.0.0.1:29092]
                           [--inputs 2000] [--seed 1] [--pid PID]

Inputs, from a seeded generator (the same seed gives the same inputs):

* for every msgpack API (and unknown ones): bytes that are not msgpack, msgpack that is
  not a map, valid requests built from the API's schema, and those requests mutated
  (a required field dropped, a wrong type, nil, negative or huge integers, long strings,
  arrays of thousands of entries, deep nesting);
* produce requests whose record batches lie: a flipped CRC, a cut batch, a wrong record
  count, a wrong length, garbage compression;
* on the Kafka listener (``--kafka``): frames with random API keys, versions and bodies,
  negative and huge sizes, cut frames.

With ``--floods``, also the floods of a hostile client: a gzip bomb (a batch under
message.max.bytes whose records expand to 256 MB; it must be refused with
MESSAGE_TOO_LARGE), HTTP Basic password guesses on one keep-alive connection (the broker
must close it after the first wrong password), and half-sent frames and bodies on both
listeners (left hanging; the broker must keep answering others).

Topic names in generated requests never name the seed topic, except in reads and
produces, so the legitimate admin APIs cannot delete what the check reads back.

Findings: an HTTP status other than 200, an answer that is not a msgpack map with an
``error_code``, a broker that stops answering, records of the seed topic that read back
differently, and (with ``--pid``) a resident memory that grew by more than
``--max-rss-growth-mb``.  Prints one summary line; exits 1 if anything was found.
"""
from __future__ import annotations

import argparse
import random
import socket
import struct
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikafka import Admin, Consumer, Producer, TopicPartition  # noqa: E402
from minikafka.protocol.rpc import codec, http  # noqa: E402
from minikafka.protocol.rpc.messages import APIS  # noqa: E402
from minikafka.protocol.records.batch import encode_batch  # noqa: E402
from minikafka.protocol.rpc.schema import Struct  # noqa: E402

READ_APIS = {"fetch", "list_offsets", "offsets_for_leader_epoch", "metadata", "produce", "replica_state"}
UNKNOWN_APIS = ["nope", "../../etc/passwd", "a" * 300, "metadata%00", ""]


class Generator:
    """Seeded hostile inputs for the msgpack listener."""

    def __init__(self, seed: int, seed_topic: str) -> None:
        self.r = random.Random(seed)
        self.seed_topic = seed_topic

    # -- values ------------------------------------------------------------------------------
    def topic(self, api: str) -> str:
        if api in READ_APIS and self.r.random() < 0.5:
            return self.seed_topic
        return self.r.choice(["fz-" + self.r.choice("abcxyz") * self.r.randint(1, 5), "", "a" * 300, "bad name!",
                              "__consumer_offsets", "fz-" + str(self.r.randint(0, 9))])

    def int_(self) -> int:
        return self.r.choice([0, 1, -1, -2, -3, 2**31 - 1, -2**31, 2**63 - 1, -2**63, self.r.randint(-10, 10**6)])

    def batch(self) -> bytes:
        records = [(None, bytes(self.r.getrandbits(8) for _ in range(self.r.randint(0, 40))), None, 0)
                   for _ in range(self.r.randint(1, 5))]
        data = bytearray(encode_batch(records, compression=self.r.choice(["none", "gzip", "lz4", "zstd", "snappy"])))
        lie = self.r.choice(["none", "crc", "cut", "count", "length", "magic", "garbage", "attributes"])
        if lie == "crc":
            data[-1] ^= 0xFF
        elif lie == "cut":
            data = data[: self.r.randint(0, len(data) - 1)]
        elif lie == "count":
            struct.pack_into(">i", data, 57, self.r.choice([0, -1, 10**6, 2**31 - 1]))
        elif lie == "length":
            struct.pack_into(">i", data, 8, self.r.choice([-1, 0, 10**9, len(data)]))
        elif lie == "magic":
            data[16] = self.r.choice([0, 1, 3, 255])
        elif lie == "garbage":
            data = bytearray(self.r.getrandbits(8) for _ in range(self.r.randint(0, 200)))
        elif lie == "attributes":
            struct.pack_into(">h", data, 21, self.r.randint(-2**15, 2**15 - 1))
        return bytes(data)

    def value(self, typ, name: str, api: str, depth: int = 0):
        if isinstance(typ, Struct):
            return self.struct(typ, api, depth + 1)
        if isinstance(typ, list):
            n = self.r.choice([0, 1, 1, 2, 3])
            return [self.value(typ[0], name, api, depth + 1) for _ in range(n)]
        if isinstance(typ, dict):
            return {f"k{i}": "v" for i in range(self.r.randint(0, 3))}
        if typ == "int":
            if name in ("partition", "partition_index"):
                return self.r.choice([0, 0, 1, -1, 99999])
            if name in ("num_partitions", "count", "replication_factor"):
                # small legitimate values (topics the cluster really creates) or ones to refuse
                return self.r.choice([-1, 0, 1, 2, 3, 4, 10001, 2**31 - 1, 2**63 - 1])
            return self.int_()
        if typ == "str":
            if name in ("topic", "name"):
                return self.topic(api)
            return self.r.choice(["", "x", "g-" + str(self.r.randint(0, 3)), "é" * 10])
        if typ == "bytes":
            return self.batch() if name in ("records", "data") else bytes(self.r.randint(0, 20))
        if typ == "bool":
            return self.r.random() < 0.5
        return None

    def struct(self, s: Struct, api: str, depth: int = 0) -> dict:
        out = {}
        for f in s.fields:
            if not f.required and self.r.random() < 0.3:
                continue
            out[f.name] = self.value(f.type, f.name, api, depth) if depth < 6 else None
        return out

    def mutate(self, msg):
        how = self.r.choice(["drop", "type", "nil", "int", "long_str", "long_array", "nest", "extra"])
        if not isinstance(msg, dict) or not msg:
            return msg
        key = self.r.choice(sorted(msg))
        if how == "drop":
            msg.pop(key)
        elif how == "type":
            msg[key] = self.r.choice([[1, 2], {"a": 1}, "s", 1.5, b"\x00", True, 7])
        elif how == "nil":
            msg[key] = None
        elif how == "int":
            msg[key] = self.r.choice([2**64, -2**63, 2**63 - 1, -1])
        elif how == "long_str":
            msg[key] = "x" * self.r.choice([10**4, 10**5])
        elif how == "long_array":  # of small entries (the request stays a few hundred KB)
            entry = self.r.choice([0, "x", {"topic": self.seed_topic, "partition": 0}, [1]])
            msg[key] = [entry] * self.r.choice([1000, 20000])
        elif how == "nest":
            v: object = 1
            for _ in range(self.r.choice([50, 500, 5000])):
                v = [v]
            msg[key] = v
        elif how == "extra":
            msg["unexpected-" + str(self.r.randint(0, 9))] = {"x": [1, 2, 3]}
        return msg

    def request(self) -> tuple[str, bytes, str]:
        """(api, body, kind)"""
        api = self.r.choice(sorted(APIS) + UNKNOWN_APIS[:2])
        kind = self.r.choices(["garbage", "not_map", "valid", "mutated", "mutated2"], [1, 1, 3, 4, 2])[0]
        if kind == "garbage":
            return api, bytes(self.r.getrandbits(8) for _ in range(self.r.randint(0, 300))), kind
        if kind == "not_map":
            return api, codec.pack(self.r.choice([[1, 2], 5, "s", None, b"b", [{}]])), kind
        spec = APIS.get(api)
        msg = self.struct(spec.request, api) if spec is not None else {"x": 1}
        if kind.startswith("mutated"):
            for _ in range(1 if kind == "mutated" else 3):
                msg = self.mutate(msg)
        if self.r.random() < 0.02:
            api = self.r.choice(UNKNOWN_APIS)
        try:
            return api, codec.pack(msg), kind
        except (ValueError, OverflowError, TypeError):  # e.g. an int msgpack cannot hold: send it raw
            return api, bytes(self.r.getrandbits(8) for _ in range(64)), "garbage"

    def kafka_frame(self) -> bytes:
        """A Kafka-protocol frame: size, api key, version, correlation id, client id, body."""
        body = bytes(self.r.getrandbits(8) for _ in range(self.r.randint(0, 200)))
        header = struct.pack(">hhi", self.r.choice([0, 1, 2, 3, 8, 9, 10, 11, 18, 19, 20, 32, 44, 60, 999, -1]),
                             self.r.randint(-1, 15), self.r.randint(0, 2**31 - 1))
        client = self.r.choice([b"\x00\x03fuz", b"\xff\xff", b"\x7f\xff", b""])
        payload = header + client + body
        size = self.r.choices([len(payload), -1, 0, 2**31 - 1, len(payload) + 10, 3], [6, 1, 1, 1, 1, 1])[0]
        frame = struct.pack(">i", size) + payload
        if self.r.random() < 0.1:
            frame = frame[: self.r.randint(0, len(frame))]
        return frame


def post(host: str, port: int, api: str, body: bytes, timeout_s: float) -> tuple[int, bytes]:
    url = f"http://{host}:{port}/v1/{urllib.request.quote(api, safe='')}"
    req = urllib.request.Request(url, data=body, method="POST", headers=http.HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def alive(host: str, port: int) -> bool:
    try:
        status, raw = post(host, port, "api_versions", codec.pack({}), 10)
        return status == 200 and codec.unpack(raw).get("error_code") == 0
    except Exception:
        return False


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def floods(host: str, port: int, kafka: tuple[str, int] | None, seed_topic: str, findings: list[str]) -> dict:
    """The hostile client's floods (``--floods``); what was refused, by kind."""
    import base64

    seen: Counter[str] = Counter()
    bomb = encode_batch([(None, b"\0" * (256 << 20), None, 0)], compression="gzip")
    status, raw = post(host, port, "produce", codec.pack({"acks": 1, "timeout_ms": 10000, "partitions": [
        {"topic": seed_topic, "partition": 0, "records": bomb}]}), 60)
    entry = codec.unpack(raw).get("partitions", [{}])[0] if status == 200 else {}
    if entry.get("error") != "MESSAGE_TOO_LARGE":
        findings.append(f"a gzip bomb of {len(bomb)} bytes was not refused with MESSAGE_TOO_LARGE: {entry!r}")
    else:
        seen["gzip_bomb_refused"] += 1
    guess = (f"POST /v1/metadata HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\nAuthorization: Basic "
             f"{base64.b64encode(b'nobody:guess').decode()}\r\nContent-Type: {http.CONTENT_TYPE}\r\n"
             "Content-Length: 1\r\n\r\n").encode() + b"\x80"
    with socket.create_connection((host, port), timeout=10) as s:
        answered = 0
        try:
            for _ in range(50):
                s.sendall(guess)
                got = s.recv(65536)
                if not got:
                    break
                answered += 1
        except OSError:
            pass
        if answered > 1:
            findings.append(f"{answered} password guesses were answered on one connection")
        else:
            seen["password_guess_closed"] += 1
    hanging = []
    for _ in range(20):
        h = socket.create_connection((host, port), timeout=10)
        h.sendall(b"POST /v1/metadata HTTP/1.1\r\nHost: x\r\nContent-Type: application/msgpack\r\n"
                  b"Content-Length: 1000000\r\n\r\n" + b"\0" * 1000)
        hanging.append(h)
        if kafka is not None:
            k = socket.create_connection(kafka, timeout=10)
            k.sendall((1_000_000).to_bytes(4, "big") + b"\0" * 1000)
            hanging.append(k)
    seen["half_frames"] = len(hanging)
    if not alive(host, port):
        findings.append("the broker stopped answering while half-sent requests hung")
    for h in hanging:
        h.close()
    return dict(seen)


def seed_records(bootstrap: str, topic: str, n: int) -> list[bytes]:
    with Admin(bootstrap) as admin:
        if topic not in admin.list_topics():
            admin.create_topic(topic, partitions=1, replication_factor=min(3, len(admin.cluster().brokers)))
    values = [f"seed-{i}".encode() for i in range(n)]
    with Producer(bootstrap, acks="all") as p:
        for v in values:
            p.send(topic, v, partition=0)
        p.flush(60)
    return values


def read_back(bootstrap: str, topic: str, n: int) -> list[bytes]:
    with Consumer(bootstrap) as c:
        c.assign([TopicPartition(topic, 0)])
        c.seek_to_beginning()
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            got += [r.value for r in c.poll(timeout_ms=500)]
    return got[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="a broker's msgpack listener")
    ap.add_argument("--kafka", default=None, metavar="HOST:PORT", help="the same broker's Kafka listener")
    ap.add_argument("--inputs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pid", type=int, default=None, help="the broker's pid, to watch its memory")
    ap.add_argument("--max-rss-growth-mb", type=float, default=200.0)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    ap.add_argument("--floods", action="store_true", help="also a gzip bomb, password guesses and half frames")
    args = ap.parse_args(argv)
    host, _, port_text = args.bootstrap_server.rpartition(":")
    port = int(port_text)
    seed_topic = f"fuzz-seed-{args.seed}"
    values = seed_records(args.bootstrap_server, seed_topic, 50)
    # the broker's own topic leader must be the one under fire: any broker answers, so fire at the given one
    gen = Generator(args.seed, seed_topic)
    rss_before = rss_mb(args.pid) if args.pid else None
    findings: list[str] = []
    codes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    started = time.monotonic()
    kafka = None
    if args.kafka:
        k_host, _, k_port = args.kafka.rpartition(":")
        kafka = (k_host, int(k_port))
    jumps: list[tuple[float, int, str]] = []  # (MB, input, what): the largest RSS steps, to name a culprit
    last_rss, last_what = rss_before, ""
    for i in range(args.inputs):
        if args.pid and i % 10 == 0:
            now_rss = rss_mb(args.pid)
            jumps = sorted(jumps + [(now_rss - last_rss, i, last_what)], reverse=True)[:3]
            last_rss, last_what = now_rss, ""
        if kafka is not None and i % 5 == 4:
            kinds["kafka_frame"] += 1
            frame = gen.kafka_frame()
            try:
                with socket.create_connection(kafka, timeout=args.timeout) as s:
                    s.sendall(frame)
                    s.shutdown(socket.SHUT_WR)
                    s.settimeout(2.0)
                    try:
                        while s.recv(65536):
                            pass
                    except (socket.timeout, ConnectionResetError):
                        pass
            except OSError as exc:
                findings.append(f"input {i}: Kafka listener refused a connection: {exc}")
            continue
        api, body, kind = gen.request()
        kinds[kind] += 1
        last_what += f" {i}:{kind}:{api}({len(body)} B)"
        try:
            status, raw = post(host, port, api, body, args.timeout)
        except Exception as exc:
            if not alive(host, port):
                findings.append(f"input {i} ({kind} {api!r}): the broker stopped answering: {exc}")
                break
            findings.append(f"input {i} ({kind} {api!r}): transport error {exc.__class__.__name__}: {exc}")
            continue
        if status != 200:
            findings.append(f"input {i} ({kind} {api!r}): HTTP {status}")
            continue
        try:
            answer = codec.unpack(raw)
            codes[answer["error"]] += 1
        except Exception:
            findings.append(f"input {i} ({kind} {api!r}): an answer that is not a map with an error: {raw[:80]!r}")
    if args.floods:
        kinds.update(floods(host, port, kafka, seed_topic, findings))
    elapsed = time.monotonic() - started
    if not alive(host, port):
        findings.append("the broker does not answer api_versions after the run")
    got = read_back(args.bootstrap_server, seed_topic, len(values))
    if got != values:
        findings.append(f"the seed topic reads back differently: {len(got)} of {len(values)} records, "
                        f"first difference at {next((j for j, (a, b) in enumerate(zip(got, values)) if a != b), len(got))}")
    rss = ""
    if args.pid:
        rss_after = rss_mb(args.pid)
        rss = f" rss_mb={rss_before:.0f}->{rss_after:.0f}"
        if rss_after - rss_before > args.max_rss_growth_mb:
            steps = "; ".join(f"+{mb:.0f} MB before input {i} after{what}" for mb, i, what in jumps if mb > 0)
            findings.append(f"resident memory grew by {rss_after - rss_before:.0f} MB (largest steps: {steps})")
    for f in findings[:20]:
        print("finding:", f)
    top = ",".join(f"{k}={v}" for k, v in codes.most_common(6))
    print(f"inputs={args.inputs} seed={args.seed} seconds={elapsed:.1f} kinds={dict(sorted(kinds.items()))} "
          f"answers[{top}]{rss} findings={len(findings)}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
