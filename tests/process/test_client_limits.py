"""The broker's client limits on a live broker: max.connections, max.connections.per.ip,
connections.max.idle.ms, a stalled half frame, a gzip bomb under message.max.bytes (refused once it
expands past the topic's max.message.bytes), the
record browser's cap, and queued.max.request.bytes: an upload waits while another holds
the budget, and an aborted one gives its bytes back (minikafka_request_bytes_in_flight)."""
from __future__ import annotations

import asyncio
import socket
import time

import msgpack
import pytest

from minikafka import Admin
from minikafka.client.connection import Connection
from minikafka.protocol.records.batch import encode_batch
from minikafka.rpc import call_sync
from process_helpers import wait_for
from test_dashboard_records import get
from test_metrics import scrape

pytestmark = pytest.mark.process

CONFIGS = {"max.connections": "24", "max.connections.per.ip": "4", "connections.max.idle.ms": "3000",
           "request.timeout.ms": "4000", "socket.request.max.bytes": "4194304"}


def connect(port: int, source: str) -> socket.socket:
    s = socket.socket()
    s.settimeout(15)
    s.bind((source, 0))  # every 127.x address is loopback: one "client IP" each
    s.connect(("127.0.0.1", port))
    return s


def closed_by_broker(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def metric(port: int, name: str, **labels) -> float:
    got = scrape(port)
    return got.get_value(name, **labels) if got is not None else -1


def test_connection_limits_idle_and_half_frames_on_both_listeners(make_cluster):
    c = make_cluster(brokers=1, broker_configs=CONFIGS)
    http, kafka = c.brokers[1], c.kafka_ports[1]
    for port, listener, ip in ((kafka, "KAFKA", "127.0.0.2"), (http, "HTTP", "127.0.0.7")):
        held = [connect(port, ip) for _ in range(4)]
        fifth = connect(port, ip)
        assert closed_by_broker(fifth)  # max.connections.per.ip=4: closed at once
        for s in held + [fifth]:
            s.close()
        wait_for(lambda: metric(http, "minikafka_connections_refused_total", listener=listener,
                                reason="max.connections.per.ip") >= 1, 15, message="refusal counted")
    # max.connections=24 over both listeners: one connection from each of many addresses
    flood = []
    for i in range(40):
        s = connect(kafka if i % 2 else http, f"127.0.1.{i + 1}")
        flood.append(s)
    closed = [s for s in flood if closed_by_broker_soon(s)]
    assert closed, "connections beyond max.connections are closed"
    for s in flood:
        s.close()
    wait_for(lambda: metric(http, "minikafka_connections_refused_total", listener="KAFKA",
                            reason="max.connections") + metric(http, "minikafka_connections_refused_total",
                                                               listener="HTTP", reason="max.connections") >= 1,
             15, message="max.connections refusals counted")
    # connections.max.idle.ms: a silent connection is closed; a half frame too (request.timeout.ms)
    for port in (kafka, http):
        idle = connect(port, "127.0.0.3")
        assert closed_by_broker(idle)
    half = connect(kafka, "127.0.0.4")
    half.sendall((1000).to_bytes(4, "big") + b"\x00" * 10)
    assert closed_by_broker(half)
    half_http = connect(http, "127.0.0.5")
    half_http.sendall(b"POST /v1/metadata HTTP/1.1\r\nHost: x\r\nContent-Type: application/msgpack\r\n"
                      b"Content-Length: 1000\r\n\r\n" + b"\x00" * 10)
    got = b""
    while chunk := half_http.recv(4096):  # ends when the broker closes it
        got += chunk
    assert metric(http, "minikafka_connections_idle_closed_total", listener="KAFKA") >= 2
    assert metric(http, "minikafka_connections_idle_closed_total", listener="HTTP") >= 1
    # the broker still serves
    with Admin(c.bootstrap) as admin:
        assert len(admin.cluster().brokers) == 1
    # our client's pooled connection, closed by the broker while idle, is replaced: no error
    assert "api_versions" in asyncio.run(call_after_idle_close(http))["apis"]


async def call_after_idle_close(port: int) -> dict:
    conn = Connection(client_id="idle-pool")
    try:
        await conn.call("127.0.0.1", port, "api_versions", {}, 10)
        [pooled] = conn._get_pool()._idle[("127.0.0.1", port, "http")]
        deadline = time.monotonic() + 30
        while not pooled.stale():  # connections.max.idle.ms=3000
            assert time.monotonic() < deadline, "the broker did not close the idle connection"
            await asyncio.sleep(0.1)
        return await conn.call("127.0.0.1", port, "api_versions", {}, 10)
    finally:
        await conn.close()


def closed_by_broker_soon(s: socket.socket) -> bool:
    s.settimeout(2)
    try:
        return closed_by_broker(s)
    except TimeoutError:
        return False  # admitted: the idle timeout has not passed yet


def produce(port: int, topic: str, batch: bytes) -> dict:
    answer = call_sync("127.0.0.1", port, "produce", {"acks": 1, "timeout_ms": 10000, "partitions": [
        {"topic": topic, "partition": 0, "records": batch}]}, timeout_s=30)
    return answer["partitions"][0]


def test_a_gzip_bomb_is_refused_and_an_aborted_upload_is_given_back(make_cluster):
    c = make_cluster(brokers=1, broker_configs={**CONFIGS, "socket.request.max.bytes": "16777216",
                                                "queued.max.request.bytes": "4000000"})
    http = c.brokers[1]
    with Admin(c.bootstrap) as admin:  # a batch expands to at most the topic's max.message.bytes
        admin.create_topic("bombs", partitions=1, replication_factor=1, config={"max.message.bytes": "16777216"})
        admin.create_topic("small", partitions=1, replication_factor=1)
    bomb = encode_batch([(None, b"\0" * (64 << 20), None, 0)], compression="gzip")
    assert len(bomb) < 1048588  # under message.max.bytes
    entry = produce(http, "bombs", bomb)
    assert entry["error"] == "MESSAGE_TOO_LARGE" and "16777216" in entry["message"], entry
    entry = produce(http, "small", encode_batch([(None, b"\0" * (2 << 20), None, 0)], compression="gzip"))
    assert entry["error"] == "MESSAGE_TOO_LARGE" and "1048588" in entry["message"], entry
    # under the cap it is stored, but the record browser does not expand it past its own cap
    assert produce(http, "bombs", encode_batch([(None, b"\0" * (12 << 20), None, 0)], compression="gzip"))[
        "error_code"] == 0
    status, body, _ = get(http, "/api/records", topic="bombs", partition="0")
    assert status == 200 and body["records"] == [], body
    assert [(b["base_offset"], b["error"]) for b in body["skipped_batches"]] == [(0, "MESSAGE_TOO_LARGE")]
    # an upload that stops half way and whose client goes away: its bytes are given back;
    # meanwhile a second one does not fit in queued.max.request.bytes and waits
    upload = (b"POST /v1/produce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/msgpack\r\n"
              b"Content-Length: 3000000\r\n\r\n" + b"\x00" * 100000)
    first = connect(http, "127.0.0.6")
    first.sendall(upload)
    wait_for(lambda: metric(http, "minikafka_request_bytes_in_flight") == 3000000, 15, message="upload held")
    second = connect(http, "127.0.0.6")
    second.sendall(upload)
    wait_for(lambda: metric(http, "minikafka_request_memory_waits_total") >= 1, 15, message="second upload waits")
    assert metric(http, "minikafka_request_bytes_in_flight") == 3000000
    first.close()
    # read once the first gave its bytes back: then its own half body times out (request.timeout.ms)
    assert closed_by_broker(second)
    assert metric(http, "minikafka_connections_idle_closed_total", listener="HTTP") >= 1
    second.close()
    wait_for(lambda: metric(http, "minikafka_request_bytes_in_flight") == 0, 15, message="uploads given back")


def read_until_closed(s: socket.socket) -> bytes:
    """What the broker sends until it closes the connection (a reset counts as closed)."""
    got = b""
    try:
        while chunk := s.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    return got


def test_slow_heads_and_a_huge_content_length_on_both_listeners(make_cluster):
    # connections.max.idle.ms far away: only the deadline of a head, request.timeout.ms, closes these
    c = make_cluster(brokers=1, broker_configs={"request.timeout.ms": "2000", "connections.max.idle.ms": "600000"})
    http, kafka = c.brokers[1], c.kafka_ports[1]
    # half a request head on the msgpack/HTTP listener: 408 and closed
    half = connect(http, "127.0.0.1")
    half.settimeout(20)
    half.sendall(b"POST /v1/metadata HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
    began = time.monotonic()
    got = read_until_closed(half)
    assert got.startswith(b"HTTP/1.1 408 ") and b"REQUEST_TIMED_OUT" in got, got
    assert time.monotonic() - began < 15
    # half a size prefix on the Kafka listener: closed
    prefix = connect(kafka, "127.0.0.1")
    prefix.settimeout(20)
    prefix.sendall(b"\x00\x00")
    assert read_until_closed(prefix) == b""
    # a dashboard connection (aiohttp's, after its first page) with half of its next head: closed
    page = connect(http, "127.0.0.1")
    page.settimeout(20)
    page.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = page.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first[:100]
    page.sendall(b"GET /metrics HTTP/1.1\r\nHo")
    read_until_closed(page)
    assert time.monotonic() - began < 60
    assert metric(http, "minikafka_connections_idle_closed_total", listener="HTTP") >= 1
    assert metric(http, "minikafka_connections_idle_closed_total", listener="KAFKA") >= 1
    # a Content-Length of 1 GB: 413 at once, INVALID_REQUEST, and closed, nothing of the body held
    big = connect(http, "127.0.0.1")
    big.settimeout(20)
    big.sendall(b"POST /v1/produce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/msgpack\r\n"
                b"Content-Length: 1073741824\r\n\r\n" + b"\x00" * 100_000)
    began = time.monotonic()
    got = read_until_closed(big)
    assert time.monotonic() - began < 5, "answered at once, not after request.timeout.ms"
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), got[:200]
    answer = msgpack.unpackb(body)
    assert answer["error"] == "INVALID_REQUEST" and "socket.request.max.bytes" in answer["message"], answer
    assert metric(http, "minikafka_request_bytes_in_flight") == 0
    with Admin(c.bootstrap) as admin:  # the broker still serves
        assert len(admin.cluster().brokers) == 1
