"""Client authentication (SASL/PLAIN), ACLs and TLS on live brokers, with our client and
with real Kafka clients (kcat, confluent-kafka, kafka-python).

One cluster for the module: INTERNAL is SASL_PLAINTEXT (HTTP Basic authentication
for clients, the cluster credential for brokers), KAFKA is SASL_SSL, the authorizer is
on and User:admin is a super user.  Each test creates its own topics and ACLs.
"""
from __future__ import annotations

import json
import socket
import ssl
import subprocess
import uuid

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition, errors
from minikafka.auth import acls
from minikafka.auth.users import basic_header
from minikafka.protocol.kafka import apis, frames
from minikafka.rpc import call_sync
from process_helpers import wait_for, zk_client
from test_kafka_clients import _recv_exact
from tls_certs import make_certs

pytestmark = pytest.mark.process

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


def as_user(name: str, password: str | None = None) -> dict:
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_plain_username": name,
            "sasl_plain_password": USERS[name] if password is None else password}


ADMIN = as_user("admin")
KEY_PASSWORD = "key-password-1f3a"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory, request, certs):
    from process_helpers import cluster_fixture

    users = tmp_path_factory.mktemp("users") / "users.properties"
    users.write_text("# NAME=PASSWORD\n" + "".join(f"{u}={p}\n" for u, p in USERS.items()))
    dir = tmp_path_factory.mktemp("secured") / "minikafka"
    return cluster_fixture(request, dir, brokers=3, client_options=ADMIN, broker_configs={
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,KAFKA:SASL_SSL",
        "sasl.users.file": str(users),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "ssl.keystore.location": certs.broker_keystore,
        "ssl.key.password": KEY_PASSWORD,  # (the test key is not encrypted: OpenSSL ignores it)
    })


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def create(cluster, topic: str, *allow: tuple[str, str, str]) -> None:
    """As admin: create ``topic`` (RF 3) and add ACLs ``(principal, operation, resource)``."""
    with Admin(cluster.bootstrap, **ADMIN) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
        if allow:
            admin.create_acls([acls.AclBinding.make(*(r.split(":", 1)), p, op) for p, op, r in allow])


def produce(cluster, topic: str, values: list[bytes], **security) -> None:
    with Producer(cluster.bootstrap, acks="all", max_block_ms=10000, **security) as p:
        for v in values:
            p.send(topic, v).result(30)


def read_all(cluster, topic: str, n: int, **security) -> list[bytes]:
    with Consumer(cluster.bootstrap, auto_offset_reset="earliest", **security) as c:
        c.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        wait_for(lambda: got.extend(r.value for r in c.poll(500)) or len(got) >= n, 30, message=f"{n} records")
        return got


# ---------------------------------------------------------------- authentication (HTTP listener)

def test_clients_without_a_valid_password_are_refused_and_counted(secured):
    for bad in ({}, as_user("alice", "wrong"), as_user("mallory", "x")):
        with pytest.raises(errors.SaslAuthenticationFailedError):
            Admin(secured.bootstrap, **bad).close()
    # ApiVersions needs no authentication, as in Kafka (the launcher's readiness probe)
    assert call_sync("127.0.0.1", secured.brokers[1], "api_versions", {})["error_code"] == 0
    with Admin(secured.bootstrap, **as_user("alice")) as admin:
        assert len(admin.cluster().brokers) == 3
    from test_metrics import scrape
    assert scrape(secured.brokers[1]).value("minikafka_authentication_failures_total") >= 1


def test_replication_and_the_controller_still_work_with_sasl_on_the_inter_broker_listener(secured):
    topic = topic_name("replicated")
    create(secured, topic, ("User:alice", "Write", f"Topic:{topic}"))
    produce(secured, topic, [b"a", b"b"], **as_user("alice"))
    with Admin(secured.bootstrap, **ADMIN) as admin:
        wait_for(lambda: [p.high_watermark for p in admin.describe_topics(topic)[0].partitions] == [2], 30,
                 message="the HW moves: followers fetch with the cluster credential")
        assert sorted(admin.describe_topics(topic)[0].partitions[0].isr) == [1, 2, 3]


def test_the_dashboard_asks_for_the_listeners_user_and_password(secured):
    """The page and its JSON on a SASL listener want the same user and password as the
    msgpack API (HTTP Basic): 401 and a challenge without them or with a wrong one."""
    import base64
    import urllib.error
    import urllib.request

    topic = topic_name("browsed")
    create(secured, topic, ("User:alice", "Write", f"Topic:{topic}"))
    produce(secured, topic, [b"secret-record"], **as_user("alice"))
    port = secured.brokers[1]

    def get(path: str, user: str | None = None, password: str | None = None) -> tuple[int, dict, bytes]:
        headers = {}
        if user is not None:
            token = base64.b64encode(f"{user}:{USERS[user] if password is None else password}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    data_routes = ("/", "/api/state", "/api/events?since=0", f"/api/records?topic={topic}&partition=0")
    for path in data_routes:
        for who in ((None, None), ("alice", "wrong"), ("mallory", "x")):
            status, headers, body = get(path, *who)
            assert status == 401, (path, who, status)
            assert headers["WWW-Authenticate"].startswith('Basic realm="minikafka"'), headers
            answer = json.loads(body)
            assert answer["error"] == "SASL_AUTHENTICATION_FAILED" and b"secret-record" not in body, answer
    # a user of sasl.users.file gets the page and the state; the record browser stays off
    # with the authorizer on (it would read around the ACLs)
    status, _, body = get("/", "alice")
    assert status == 200 and b"<html" in body.lower()
    wait_for(lambda: (got := get("/api/state", "alice"))[0] == 200
             and topic in {t["topic"] for t in json.loads(got[2])["topics"]}, 30, message="the topic in /api/state")
    status, _, body = get(f"/api/records?topic={topic}&partition=0", "alice")
    assert status == 403 and json.loads(body)["error"] == "TOPIC_AUTHORIZATION_FAILED"
    # the static files carry no data: open; /metrics carries counts and names, never records: open
    assert get("/static/dashboard.js")[0] == 200
    status, _, body = get("/metrics")
    assert status == 200 and b"secret-record" not in body


# ---------------------------------------------------------------- ACLs (our client)

def test_acls_allow_exactly_what_they_name(secured):
    topic = topic_name("orders")
    create(secured, topic, ("User:alice", "Write", f"Topic:{topic}"), ("User:alice", "Read", f"Topic:{topic}"),
           ("User:alice", "Read", "Group:billing"))
    produce(secured, topic, [b"one", b"two"], **as_user("alice"))
    # bob has no ACL on the topic: refused, and nothing is written
    with pytest.raises(errors.TopicAuthorizationFailedError):
        produce(secured, topic, [b"forged"], **as_user("bob"))
    with Admin(secured.bootstrap, **as_user("bob")) as admin:
        assert topic not in admin.list_topics()  # a listing leaves out what bob may not Describe
    assert read_all(secured, topic, 2, **as_user("alice")) == [b"one", b"two"]
    with pytest.raises(errors.TopicAuthorizationFailedError):
        read_all(secured, topic, 1, **as_user("bob"))
    # a group needs Read on the group too
    with Consumer(secured.bootstrap, group_id="billing", auto_offset_reset="earliest", **as_user("alice")) as c:
        c.subscribe([topic])
        got: list[bytes] = []
        wait_for(lambda: got.extend(r.value for r in c.poll(500)) or len(got) >= 2, 60, message="alice in billing")
        c.commit()
    with pytest.raises(errors.GroupAuthorizationFailedError):
        with Consumer(secured.bootstrap, group_id="other", **as_user("alice")) as c:
            c.subscribe([topic])
            c.poll(5000)
            c.commit()
    # only an administrator may create topics or change ACLs
    with Admin(secured.bootstrap, **as_user("alice")) as admin:
        with pytest.raises(errors.TopicAuthorizationFailedError):
            admin.create_topic(topic_name("alices"), partitions=1, replication_factor=1)
        with pytest.raises(errors.ClusterAuthorizationFailedError):
            admin.create_acls([acls.AclBinding.make("Topic", "*", "User:alice", "All")])


def test_acls_written_to_zookeeper_by_kafka_tools_take_effect_on_every_broker(secured):
    """kafka-acls --authorizer-properties zookeeper.connect=... writes /kafka-acl/Topic/T and
    announces it under /kafka-acl-changes; every broker reloads."""
    topic = topic_name("zk-acl")
    create(secured, topic)
    produce(secured, topic, [b"x"], **ADMIN)
    with pytest.raises(errors.TopicAuthorizationFailedError):
        read_all(secured, topic, 1, **as_user("bob"))
    zk = zk_client(secured)
    try:
        zk.create(f"/kafka-acl/Topic/{topic}", json.dumps({"version": 1, "acls": [
            {"principal": "User:bob", "permissionType": "Allow", "operation": "Read", "host": "*"}]}).encode(),
            makepath=True)
        zk.create("/kafka-acl-changes/acl_changes_", f"Topic:{topic}".encode(), sequence=True)
    finally:
        zk.stop()
        zk.close()
    assert wait_for(lambda: _try_read(secured, topic), 30, message="bob may read") == [b"x"]
    with Admin(secured.bootstrap, **ADMIN) as admin:
        assert [b.principal for b in admin.describe_acls(resource_name=topic)] == ["User:bob"]


def _try_read(cluster, topic: str) -> list[bytes] | None:
    try:
        return read_all(cluster, topic, 1, **as_user("bob"))
    except errors.TopicAuthorizationFailedError:
        return None


def test_a_deny_wins_and_acls_can_be_deleted(secured):
    topic = topic_name("denied")
    create(secured, topic, ("User:*", "Write", f"Topic:{topic}"))
    produce(secured, topic, [b"ok"], **as_user("bob"))
    with Admin(secured.bootstrap, **ADMIN) as admin:
        admin.create_acls([acls.AclBinding.make("Topic", topic, "User:bob", "Write", "Deny")])
        with pytest.raises(errors.TopicAuthorizationFailedError):
            produce(secured, topic, [b"no"], **as_user("bob"))
        produce(secured, topic, [b"alice still may"], **as_user("alice"))
        removed = admin.delete_acls(resource_name=topic, permission="Deny")
        assert [(b.principal, b.permission) for b in removed] == [("User:bob", "Deny")]
    produce(secured, topic, [b"ok again"], **as_user("bob"))


# ---------------------------------------------------------------- the Kafka listener: SASL_SSL

def kcat(cluster, certs, *args: str, user: str = "alice", password: str | None = None,
         input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["kcat", "-b", f"127.0.0.1:{cluster.kafka_ports[1]}", "-X", "security.protocol=SASL_SSL",
         "-X", "sasl.mechanisms=PLAIN", "-X", f"sasl.username={user}",
         "-X", f"sasl.password={USERS.get(user, '') if password is None else password}",
         "-X", f"ssl.ca.location={certs.ca}", *args],
        input=input, capture_output=True, timeout=60)


def test_kcat_over_sasl_ssl_produces_and_reads_what_its_acls_allow(secured, certs):
    topic = topic_name("kcat")
    create(secured, topic, ("User:alice", "Write", f"Topic:{topic}"), ("User:alice", "Read", f"Topic:{topic}"))
    out = kcat(secured, certs, "-P", "-t", topic, "-X", "acks=all", input=b"k1\nk2\nk3\n")
    assert out.returncode == 0, out.stderr
    got = kcat(secured, certs, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%o:%s\n")
    assert got.returncode == 0, got.stderr
    assert got.stdout.decode().split() == ["0:k1", "1:k2", "2:k3"]
    wrong = kcat(secured, certs, "-L", password="nope")
    assert wrong.returncode != 0 and b"Authentication failed" in wrong.stderr
    refused = kcat(secured, certs, "-C", "-t", topic, "-o", "beginning", "-e", user="bob")
    assert refused.returncode != 0 and b"authorization failed" in refused.stderr.lower()


def test_passwords_are_never_told_nor_on_a_command_line_nor_in_readable_files(secured, certs):
    import os
    import stat
    from pathlib import Path

    from confluent_kafka.admin import AdminClient, ConfigResource

    from minikafka.cluster.state import load

    # DescribeConfigs, msgpack listener: null value, is_sensitive, synonyms without it either
    with Admin(secured.bootstrap, **ADMIN) as admin:
        assert admin.describe_broker_configs(1)["ssl.key.password"][0] is None
    answer = call_sync("127.0.0.1", secured.brokers[1], "describe_configs", {"broker": "1"},
                       headers={"Authorization": basic_header("admin", USERS["admin"])})
    entry = next(c for c in answer["configs"] if c["name"] == "ssl.key.password")
    assert entry["value"] is None and entry["is_sensitive"] is True and entry["source"] == "broker"
    assert KEY_PASSWORD not in json.dumps(answer, default=str)
    # ... and the Kafka listener (confluent-kafka's AdminClient)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{secured.kafka_ports[1]}", "security.protocol": "SASL_SSL",
                         "sasl.mechanisms": "PLAIN", "ssl.ca.location": certs.ca,
                         "sasl.username": "admin", "sasl.password": USERS["admin"]})
    res = ConfigResource(ConfigResource.Type.BROKER, "1")
    described = admin.describe_configs([res])[res].result(30)["ssl.key.password"]
    assert described.value is None and described.is_sensitive
    # not on any broker's command line (ps), nor in cluster.json; the cluster's files are mode 600
    state = load(secured.dir)
    for b in state.brokers.values():
        assert KEY_PASSWORD.encode() not in Path(f"/proc/{b.pid}/cmdline").read_bytes()
    assert KEY_PASSWORD not in (Path(secured.dir) / "cluster.json").read_text()
    for name in ("cluster.json", "cluster-secret", "broker-secrets.properties"):
        assert stat.S_IMODE(os.stat(Path(secured.dir) / name).st_mode) == 0o600, name


def test_confluent_kafka_manages_acls_through_the_kafka_api(secured, certs):
    from confluent_kafka import Producer as CProducer
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)

    conf = {"bootstrap.servers": f"127.0.0.1:{secured.kafka_ports[1]}", "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "PLAIN", "ssl.ca.location": certs.ca}
    prefix = topic_name("audit")
    admin = AdminClient({**conf, "sasl.username": "admin", "sasl.password": USERS["admin"]})
    binding = AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:alice", "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)
    for fut in admin.create_acls([binding]).values():
        assert fut.result(30) is None
    found = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice",
                                                 None, AclOperation.ANY, AclPermissionType.ANY)).result(30)
    assert binding in found
    # Kafka 2.x's layout for a PREFIXED rule
    zk = zk_client(secured)
    try:
        data = json.loads(zk.get(f"/kafka-acl-extended/prefixed/Topic/{prefix}")[0])
        assert data["acls"] == [{"principal": "User:alice", "permissionType": "Allow", "operation": "Write",
                                 "host": "*"}]
    finally:
        zk.stop()
        zk.close()
    create(secured, f"{prefix}-eu")
    delivered: list = []
    p = CProducer({**conf, "sasl.username": "alice", "sasl.password": USERS["alice"], "acks": "all"})
    p.produce(f"{prefix}-eu", b"v", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(30)
    assert delivered == [None]
    deleted = admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, None,
                                                  None, AclOperation.ANY, AclPermissionType.ANY)])
    assert [list(f.result(30)) for f in deleted.values()] == [[binding]]


def test_kafka_python_authenticates_with_sasl_plain_over_tls(secured, certs):
    from kafka import KafkaConsumer, KafkaProducer

    topic = topic_name("kp")
    create(secured, topic, ("User:alice", "Write", f"Topic:{topic}"), ("User:alice", "Read", f"Topic:{topic}"))
    conf = dict(bootstrap_servers=f"127.0.0.1:{secured.kafka_ports[2]}", security_protocol="SASL_SSL",
                sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password=USERS["alice"],
                ssl_cafile=certs.ca)
    p = KafkaProducer(acks="all", **conf)
    try:
        p.send(topic, b"from kafka-python").get(30)
    finally:
        p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=15000, **conf)
    try:
        assert [m.value for m in c] == [b"from kafka-python"]
    finally:
        c.close()


def test_sasl_handshake_v0_takes_the_bare_token_and_nothing_passes_before_it(secured, certs):
    """Kafka's oldest SASL flow, on raw frames: ApiVersions, SaslHandshake v0, then the
    PLAIN token in a bare frame; a Metadata request before authenticating closes the connection."""
    ctx = ssl.create_default_context(cafile=certs.ca)

    def connect() -> ssl.SSLSocket:
        return ctx.wrap_socket(socket.create_connection(("127.0.0.1", secured.kafka_ports[1]), timeout=10),
                               server_hostname="127.0.0.1")

    def frame(payload: bytes) -> bytes:
        return len(payload).to_bytes(4, "big") + payload

    def read_frame(s: ssl.SSLSocket) -> bytes:
        size = int.from_bytes(_recv_exact(s, 4), "big")
        return _recv_exact(s, size)

    def request(api, version: int, body: dict, cid: int) -> bytes:
        return frames.encode_request(api, version, cid, "raw-test", body)  # size-prefixed

    with connect() as s:
        s.sendall(request(apis.METADATA, 1, {"topics": None}, 1))
        assert s.recv(10) == b""  # closed without an answer
    with connect() as s:
        s.sendall(request(apis.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}, 2))
        _, answer = frames.decode_response(apis.SASL_HANDSHAKE, 0, read_frame(s))
        assert answer["error_code"] == 0 and answer["mechanisms"] == ["PLAIN"]
        s.sendall(frame(b"\x00alice\x00alice-secret"))
        assert read_frame(s) == b""  # the empty frame: authenticated
        s.sendall(request(apis.METADATA, 1, {"topics": None}, 3))
        assert len(frames.decode_response(apis.METADATA, 1, read_frame(s))[1]["brokers"]) == 3


def test_a_failed_login_is_delayed_and_closes_the_connection_on_both_listeners(secured, certs):
    """connection.failed.authentication.delay.ms (100) and a closed connection after a wrong
    password: one keep-alive connection cannot try a second password."""
    import base64
    import time

    def basic(user: str, password: str) -> str:
        return base64.b64encode(f"{user}:{password}".encode()).decode()

    with socket.create_connection(("127.0.0.1", secured.brokers[1]), timeout=10) as s:
        request = (f"POST /v1/metadata HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
                   f"Authorization: Basic {basic('alice', 'guess-1')}\r\nContent-Type: application/msgpack\r\n"
                   "Content-Length: 1\r\n\r\n").encode() + b"\x80"
        started = time.monotonic()
        s.sendall(request)
        got = b""
        while chunk := s.recv(65536):  # to the end: the broker closes the connection (else a timeout)
            got += chunk
        assert time.monotonic() - started >= 0.09  # the delay, at least
        assert got.startswith(b"HTTP/1.1 200") and b"SASL_AUTHENTICATION_FAILED" in got

    ctx = ssl.create_default_context(cafile=certs.ca)
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", secured.kafka_ports[1]), timeout=10),
                         server_hostname="127.0.0.1") as s:
        s.sendall(frames.encode_request(apis.SASL_HANDSHAKE, 1, 1, "raw-test", {"mechanism": "PLAIN"}))
        size = int.from_bytes(_recv_exact(s, 4), "big")
        assert frames.decode_response(apis.SASL_HANDSHAKE, 1, _recv_exact(s, size))[1]["error_code"] == 0
        started = time.monotonic()
        s.sendall(frames.encode_request(apis.SASL_AUTHENTICATE, 0, 2, "raw-test",
                                        {"auth_bytes": b"\x00alice\x00guess-2"}))
        size = int.from_bytes(_recv_exact(s, 4), "big")
        answer = frames.decode_response(apis.SASL_AUTHENTICATE, 0, _recv_exact(s, size))[1]
        assert time.monotonic() - started >= 0.09
        assert answer["error_code"] == errors.SaslAuthenticationFailedError.code.code
        assert s.recv(10) == b""  # closed after the answer


def test_a_failed_dashboard_login_is_delayed_and_closes_the_connection(secured):
    """The dashboard's HTTP Basic login keeps the msgpack API's rule: a wrong password (or
    none) is answered 401 after connection.failed.authentication.delay.ms (100) and the
    connection is closed, so a keep-alive connection cannot try guess after guess."""
    import base64
    import time

    wrong = base64.b64encode(b"alice:guess-1").decode()
    for path, auth in (("/api/state", f"Authorization: Basic {wrong}\r\n"), ("/", "")):
        with socket.create_connection(("127.0.0.1", secured.brokers[1]), timeout=10) as s:
            started = time.monotonic()
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n{auth}\r\n".encode())
            got = b""
            while chunk := s.recv(65536):  # to the end: the broker closes the connection (else a timeout)
                got += chunk
            assert time.monotonic() - started >= 0.09, path  # the delay, at least
            assert got.startswith(b"HTTP/1.1 401") and b"SASL_AUTHENTICATION_FAILED" in got, got[:200]
    # the right password still opens it
    right = base64.b64encode(f"alice:{USERS['alice']}".encode()).decode()
    with socket.create_connection(("127.0.0.1", secured.brokers[1]), timeout=10) as s:
        s.sendall(f"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                  f"Authorization: Basic {right}\r\n\r\n".encode())
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        assert got.startswith(b"HTTP/1.1 200"), got[:200]


# ---------------------------------------------------------------- mutual TLS

def test_a_client_certificate_is_the_principal_with_ssl_client_auth_required(make_cluster, certs):
    # INTERNAL stays PLAINTEXT, where everyone is User:ANONYMOUS: made a super user here, as
    # Kafka setups with a PLAINTEXT inter-broker listener do
    c = make_cluster(brokers=1, broker_configs={
        "listener.security.protocol.map": "KAFKA:SSL", "ssl.keystore.location": certs.broker_keystore,
        "ssl.truststore.location": certs.ca, "ssl.client.auth": "required",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"})
    cert, key = certs.client("carol")
    base = ["kcat", "-b", f"127.0.0.1:{c.kafka_ports[1]}", "-X", "security.protocol=SSL",
            "-X", f"ssl.ca.location={certs.ca}"]
    with_cert = [*base, "-X", f"ssl.certificate.location={cert}", "-X", f"ssl.key.location={key}"]
    no_cert = subprocess.run([*base, "-L"], capture_output=True, timeout=60)
    assert no_cert.returncode != 0  # the TLS handshake fails without a client certificate
    with Admin(c.bootstrap) as admin:
        admin.create_topic("signed", partitions=1, replication_factor=1)
        refused = subprocess.run([*with_cert, "-P", "-t", "signed"], input=b"x\n", capture_output=True, timeout=60)
        assert refused.returncode != 0 and b"authorization failed" in refused.stderr.lower(), refused.stderr
        admin.create_acls([acls.AclBinding.make("Topic", "signed", "User:CN=carol,O=minikafka-tests", op)
                           for op in ("Write", "Read")])
    out = subprocess.run([*with_cert, "-P", "-t", "signed"], input=b"hello\n", capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = subprocess.run([*with_cert, "-C", "-t", "signed", "-o", "beginning", "-e"], capture_output=True, timeout=60)
    assert got.stdout.split() == [b"hello"], got.stderr


# ---------------------------------------------------------------- the CLI

def test_the_cli_manages_acls_and_reaches_a_secured_listener_with_command_config(secured, tmp_path):
    from process_helpers import run_cli

    topic = topic_name("cli")
    create(secured, topic)
    produce(secured, topic, [b"for bob"], **ADMIN)
    admin_conf = tmp_path / "admin.properties"
    admin_conf.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                          "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                          'username="admin" password="admin-secret";\n')
    bob_conf = tmp_path / "bob.properties"
    bob_conf.write_text("# librdkafka's names work too\nsecurity.protocol=SASL_PLAINTEXT\n"
                        "sasl.username=bob\nsasl.password=bob-secret\nclient.id=ignored\n")
    where = ["--bootstrap-server", secured.bootstrap]

    denied = run_cli("topics", "list", *where)
    assert denied.returncode == 2 and len(denied.stderr.strip().splitlines()) == 1
    assert "SASL_AUTHENTICATION_FAILED" in denied.stderr and "Traceback" not in denied.stderr
    refused = run_cli("consume", topic, "--from-beginning", "--max-messages", "1", "--timeout-ms", "5000",
                      *where, "--command-config", str(bob_conf))
    assert refused.returncode == 2 and "TOPIC_AUTHORIZATION_FAILED" in refused.stderr, refused.stderr

    added = run_cli("acls", "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", topic,
                    *where, "--command-config", str(admin_conf))
    assert added.returncode == 0, added.stderr
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in added.stdout
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in added.stdout
    listed = run_cli("acls", "--list", "--principal", "User:bob", *where, "--command-config", str(admin_conf))
    assert topic in listed.stdout
    got = run_cli("consume", topic, "--from-beginning", "--max-messages", "1", "--timeout-ms", "20000",
                  *where, "--command-config", str(bob_conf))
    assert got.returncode == 0 and got.stdout.split() == ["for", "bob"], got.stderr
    assert "client.id is not a known config" in got.stderr
    removed = run_cli("acls", "--remove", "--topic", topic, *where, "--command-config", str(admin_conf))
    assert removed.returncode == 0 and "Removed 1 ACL" in removed.stdout, removed.stderr
    bad = run_cli("acls", "--add", "--allow-principal", "bob", "--operation", "Read", "--topic", topic,
                  *where, "--command-config", str(admin_conf))
    assert bad.returncode == 2 and "User:NAME" in bad.stderr and "Traceback" not in bad.stderr


# ---------------------------------------------------------------- Spark

def test_the_spark_source_and_sink_authenticate_and_follow_the_acls(secured, spark):
    topic = topic_name("spark")
    create(secured, topic, ("User:alice", "Write", f"Topic:{topic}"), ("User:alice", "Read", f"Topic:{topic}"))

    def security(user: str) -> dict[str, str]:
        return {"kafka.bootstrap.servers": secured.bootstrap, "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                          f'username="{user}" password="{USERS[user]}";'}

    df = spark.createDataFrame([(f"v{i}",) for i in range(20)], "value string")
    df.write.format("minikafka").options(**security("alice")).option("topic", topic).mode("append").save()
    back = spark.read.format("minikafka").options(**security("alice")).option("subscribe", topic).load()
    assert sorted(r.value.decode() for r in back.select("value").collect()) == sorted(f"v{i}" for i in range(20))
    with pytest.raises(Exception, match="TOPIC_AUTHORIZATION_FAILED"):
        spark.read.format("minikafka").options(**security("bob")).option("assign", json.dumps({topic: [0]})) \
            .load().count()


def test_replica_state_tells_only_topics_the_principal_may_describe(secured):
    topic = topic_name("state")
    create(secured, topic, ("User:alice", "Describe", f"Topic:{topic}"))
    produce(secured, topic, [b"x"], **ADMIN)
    port = secured.brokers[1]
    ask = {"partitions": [{"topic": topic, "partition": 0}], "checksum_upto": 1}

    def as_(name):
        return {"Authorization": basic_header(name, USERS[name])}

    wait_for(lambda: call_sync("127.0.0.1", port, "replica_state", ask, headers=as_("alice"))["replicas"], 30,
             message="alice sees the replica")
    refused = call_sync("127.0.0.1", port, "replica_state", ask, raise_error=False, headers=as_("bob"))
    assert refused["error"] == "TOPIC_AUTHORIZATION_FAILED" and "replicas" not in refused or not refused["replicas"]
    everything = call_sync("127.0.0.1", port, "replica_state", {}, headers=as_("bob"))
    assert topic not in {r["topic"] for r in everything["replicas"]}
    assert topic in {r["topic"] for r in call_sync("127.0.0.1", port, "replica_state", {}, headers=as_("alice"))["replicas"]}


def test_a_produce_without_write_is_topic_authorization_failed_on_every_road(secured, certs):
    """As Kafka's KafkaApis.handleProduceRequest: no Write on the topic is TOPIC_AUTHORIZATION_FAILED,
    whether or not the producer may Describe it, and whether or not it exists."""
    from kafka import KafkaProducer

    from minikafka.protocol.records.batch import encode_batch

    seen = topic_name("seen")
    create(secured, seen, ("User:alice", "Describe", f"Topic:{seen}"))
    hidden = topic_name("hidden")
    create(secured, hidden)
    port = secured.brokers[1]
    for topic in (seen, hidden, topic_name("absent")):
        for user in ("alice", "bob"):
            got = call_sync("127.0.0.1", port, "produce", {"acks": -1, "partitions": [
                {"topic": topic, "partition": 0, "records": encode_batch([(None, b"v", None, 0)])}]},
                raise_error=False, headers={"Authorization": basic_header(user, USERS[user])})
            assert [p["error"] for p in got["partitions"]] == ["TOPIC_AUTHORIZATION_FAILED"], (topic, user, got)
        for user in ("alice", "bob"):
            with pytest.raises(errors.TopicAuthorizationFailedError):
                produce(secured, topic, [b"forged"], **as_user(user))
            if user == "bob" or topic != seen:  # what `minikafka produce` asks first
                with Producer(secured.bootstrap, **as_user(user)) as p:
                    with pytest.raises(errors.TopicAuthorizationFailedError):
                        p.partitions_for(topic)
            p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{secured.kafka_ports[1]}", security_protocol="SASL_SSL",
                              sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=USERS[user],
                              ssl_cafile=certs.ca, max_block_ms=10000, acks="all")
            try:
                with pytest.raises(Exception) as caught:
                    p.send(topic, b"forged").get(20)
                assert "TopicAuthorizationFailed" in type(caught.value).__name__, (topic, user, caught.value)
            finally:
                p.close(5)
