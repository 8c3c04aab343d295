"""DNS rebinding on live brokers: a request whose Host is not one of the broker's names
gets 421 and changes nothing, on the lean msgpack path and on aiohttp's (the dashboard,
its JSON, /metrics, and /v1 on a connection handed over), whatever its Origin says."""
from __future__ import annotations

import http.client
import uuid

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from minikafka.protocol.rpc import codec
from minikafka.protocol.rpc import http as rpc_http

pytestmark = pytest.mark.process


def ask(conn: http.client.HTTPConnection, method: str, path: str, host: str, body: bytes | None = None,
        headers: dict | None = None) -> tuple[int, bytes]:
    conn.request(method, path, body=body, headers={"Host": host, **(headers or {})})
    resp = conn.getresponse()
    return resp.status, resp.read()


def test_a_rebound_name_gets_421_on_every_path_and_changes_nothing(cluster):
    topic = f"rebind-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    with Producer(cluster.bootstrap, acks="all") as p:
        p.send(topic, b"kept").result(30)
    port = next(iter(cluster.brokers.values()))
    evil = f"attacker.example:{port}"
    # the page's origin and Host agree: the Origin check alone would let this through
    delete = codec.pack({"topics": [topic], "timeout_ms": 0})
    page = {**rpc_http.HEADERS, "Origin": f"http://{evil}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    status, text = ask(conn, "POST", "/v1/delete_topics", evil, delete, page)  # the lean path
    assert status == 421, (status, text)
    assert text.startswith(b"INVALID_REQUEST: refused POST /v1/delete_topics for host 'attacker.example:") and \
        b"minikafka.http.allowed.hosts" in text, text
    conn.close()
    # a connection handed to aiohttp by its first request (a page), then the same requests
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    assert ask(conn, "GET", "/api/state", f"127.0.0.1:{port}")[0] == 200
    status, text = ask(conn, "POST", "/v1/delete_topics", evil, delete, page)
    assert status == 421 and b"refused POST /v1/delete_topics" in text, (status, text)
    for path in ("/", "/api/state", f"/api/records?topic={topic}&partition=0", "/metrics"):
        status, text = ask(conn, "GET", path, evil, headers={"Origin": f"http://{evil}"})
        assert status == 421 and topic.encode() not in text, (path, status, text[:200])
    # the broker's own names pass, whatever the port
    for host in (f"localhost:{port}", "127.0.0.1", f"[::1]:{port}"):
        assert ask(conn, "GET", "/api/state", host)[0] == 200, host
    conn.close()
    # nothing changed
    with Admin(cluster.bootstrap) as admin:
        assert topic in admin.list_topics()
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        assert [r.value for r in c.poll(timeout_ms=5000)] == [b"kept"]


def test_minikafka_http_allowed_hosts_adds_names(make_cluster):
    c = make_cluster(brokers=1, broker_configs={"minikafka.http.allowed.hosts": "dashboard.example"})
    port = c.brokers[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    status, text = ask(conn, "POST", "/v1/metadata", f"dashboard.example:{port}", codec.pack({"topics": []}),
                       rpc_http.HEADERS)
    assert status == 200 and codec.unpack(text)["error_code"] == 0
    assert ask(conn, "GET", "/api/state", "dashboard.example")[0] == 200
    assert ask(conn, "GET", "/api/state", "other.example")[0] == 421
    conn.close()
