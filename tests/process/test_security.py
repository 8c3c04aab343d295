"""The cluster credential on live processes: controller and replica requests without it
are refused with CLUSTER_AUTHORIZATION_FAILED and change nothing; a forged controller
epoch cannot fence the real controller."""
from __future__ import annotations

import os
import stat
import uuid

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from minikafka.protocol.rpc.http import CLUSTER_CREDENTIAL_HEADER
from process_helpers import cluster_secret, secret_path, wait_for, zk_client

pytestmark = pytest.mark.process


def secret_of(cluster) -> str:
    secret = cluster_secret(cluster)
    assert stat.S_IMODE(os.stat(secret_path(cluster)).st_mode) == 0o600  # readable by the owner only
    return secret


def post(port: int, api: str, body: dict, secret: str | None = None) -> dict:
    """A request with a blocking client; with ``secret``, as a broker sends it."""
    import urllib.request

    from minikafka.protocol.rpc import codec, http

    headers = dict(http.HEADERS)
    if secret is not None:
        headers[CLUSTER_CREDENTIAL_HEADER] = secret
    req = urllib.request.Request(http.url_for("127.0.0.1", port, api), data=codec.pack(body), headers=headers,
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return http.decode_answer(resp.read(), resp.status, api, raise_error=False)


def metric(port: int, name: str) -> float:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(name)


def leader_of(cluster, topic: str) -> int:
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    return d.partitions[0].leader


def test_forged_controller_and_replica_requests_are_refused_and_change_nothing(cluster):
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    leader = wait_for(lambda: (lambda b: b if b > 0 else None)(leader_of(cluster, topic)), 30, message="a leader")
    with Producer(cluster.bootstrap, acks="all") as p:
        for i in range(10):
            p.send(topic, f"r{i}".encode())
        p.flush(30)
    port = cluster.brokers[leader]
    before = metric(port, "minikafka_cluster_authorization_failures_total")
    tp = {"topic": topic, "partition": 0}
    forged = [
        ("stop_replica", {"controller_id": 1, "controller_epoch": 999, "delete_partitions": True, "partitions": [tp]}),
        ("leader_and_isr", {"controller_id": 1, "controller_epoch": 999, "partition_states": [], "live_leaders": []}),
        ("update_metadata", {"controller_id": 1, "controller_epoch": 999, "partition_states": [], "live_brokers": []}),
        ("controlled_shutdown", {"broker_id": leader, "broker_epoch": -1}),
        ("fetch", {"replica_id": 9, "max_wait_ms": 0, "partitions": [{**tp, "fetch_offset": 0}]}),
        ("offsets_for_leader_epoch", {"replica_id": 9, "partitions": [{**tp, "leader_epoch": 0}]}),
    ]
    for api, body in forged:
        for secret in (None, "not-the-secret"):
            answer = post(port, api, body, secret)
            assert answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", (api, answer)
    assert metric(port, "minikafka_cluster_authorization_failures_total") == before + 2 * len(forged)
    # the leader kept its log and its leadership; consumers read all ten records
    assert leader_of(cluster, topic) == leader
    with Consumer(cluster.bootstrap) as c:
        c.assign([TopicPartition(topic, 0)])
        c.seek_to_beginning()
        got = []
        deadline_rounds = 50
        while len(got) < 10 and deadline_rounds:
            got += [r.value for r in c.poll(timeout_ms=500)]
            deadline_rounds -= 1
    assert got == [f"r{i}".encode() for i in range(10)]
    # consumers' own requests need no credential
    answer = post(port, "fetch", {"replica_id": -1, "max_wait_ms": 0, "partitions": [{**tp, "fetch_offset": 0}]})
    assert answer["error_code"] == 0


def test_a_forged_controller_epoch_with_the_credential_cannot_fence_the_real_controller(cluster):
    secret = secret_of(cluster)
    port = next(iter(cluster.brokers.values()))
    body = {"controller_id": 1, "controller_epoch": 999, "partition_states": [], "live_brokers": [],
            "deleted_topics": []}
    answer = post(port, "update_metadata", body, secret)
    assert answer["error"] == "STALE_CONTROLLER_EPOCH" and "newer than /controller_epoch" in answer["message"]
    assert metric(port, "minikafka_forged_controller_epochs_total") >= 1
    # the real controller's requests are still accepted: a new topic gets a leader everywhere
    topic = f"after-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    wait_for(lambda: leader_of(cluster, topic) > 0, 30, message="a leader for a topic created after the forgery")
    with Producer(cluster.bootstrap, acks="all") as p:
        p.send(topic, b"ok").result(30)


def test_the_credential_is_a_broker_option():
    from minikafka.errors import InvalidConfigError
    from minikafka.cli.main import cluster_secret

    with pytest.raises(InvalidConfigError, match="cannot read --cluster-secret-file"):
        cluster_secret("/nonexistent/secret")


def state_epochs(zk) -> list[int]:
    """The controller epoch recorded in every partition state znode."""
    import json

    from minikafka.zk import layout

    out = []
    for topic in zk.get_children(layout.BROKER_TOPICS):
        for p in zk.get_children(layout.partitions_path(topic)):
            out.append(json.loads(zk.get(layout.partition_state_path(topic, int(p)))[0])["controller_epoch"])
    return out


def test_a_default_cluster_lets_only_holders_of_the_credential_change_its_znodes(make_cluster):
    """``cluster up`` brokers run with zookeeper.set.acl=true (Kafka's name): everyone may
    read the znodes, only the digest of the cluster credential may change them.  An
    anonymous client can neither delete a topic through /admin/delete_topics nor delete
    /controller or /controller_epoch (the root is protected too), and a controller elected
    after /controller_epoch was lost takes an epoch above every one recorded."""
    import json

    from kazoo.exceptions import NoAuthError

    from minikafka.zk import layout

    c = make_cluster(brokers=3)
    assert "zookeeper.set.acl" not in c.configs  # the default of `cluster up`
    topic = "acl"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    leader = wait_for(lambda: (lambda b: b if b > 0 else None)(leader_of(c, topic)), 30, message="a leader")
    with Producer(c.bootstrap, acks="all") as p:
        acked = [p.send(topic, f"r{i}".encode()).result(30).offset for i in range(5)]
    outsider = zk_client(c, authenticated=False)
    try:
        state = layout.partition_state_path(topic, 0)
        data, stat = outsider.get(state)  # reading is open
        assert json.loads(data)["leader"] == leader
        with pytest.raises(NoAuthError):
            outsider.set(state, data, stat.version)
        with pytest.raises(NoAuthError):
            outsider.create(f"{layout.DELETE_TOPICS}/{topic}")
        with pytest.raises(NoAuthError):
            outsider.create(layout.PREFERRED_REPLICA_ELECTION, b'{"version":1,"partitions":[]}')
        with pytest.raises(NoAuthError):
            outsider.delete(layout.broker_path(leader))
        with pytest.raises(NoAuthError):
            outsider.delete(layout.CONTROLLER)
        with pytest.raises(NoAuthError):
            outsider.delete(layout.CONTROLLER_EPOCH)
        with pytest.raises(NoAuthError):  # nor squat a name at the root, /controller while none is elected
            outsider.create("/elsewhere")
        assert outsider.exists(layout.CONTROLLER) and outsider.exists(layout.CONTROLLER_EPOCH)
    finally:
        outsider.stop()
        outsider.close()
    # the topic and its acknowledged records stay
    with Admin(c.bootstrap) as admin:
        assert topic in admin.list_topics()
    with Consumer(c.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        got = []
        wait_for(lambda: got.extend(r.offset for r in consumer.poll(1.0)) or len(got) >= len(acked), 30,
                 message="the acknowledged records")
        assert got[:len(acked)] == acked

    # the brokers' digest may, as Kafka's tools authenticate: lose /controller_epoch (and
    # the controller with it); the next controller must not take epoch 1 again
    operator = zk_client(c)
    try:
        assert set(operator.get_acls("/")[0]) == set(operator.get_acls(layout.CONTROLLER)[0])  # the secure ACL
        old = int(operator.get(layout.CONTROLLER_EPOCH)[0])
        recorded = state_epochs(operator)
        assert recorded and max(recorded) == old
        tx = operator.transaction()
        tx.delete(layout.CONTROLLER_EPOCH)
        tx.delete(layout.CONTROLLER)
        assert all(r is True for r in tx.commit())
        epoch = wait_for(lambda: operator.exists(layout.CONTROLLER) and operator.exists(layout.CONTROLLER_EPOCH)
                         and int(operator.get(layout.CONTROLLER_EPOCH)[0]), 30, message="a new controller")
        assert epoch > max(recorded), (epoch, recorded)
    finally:
        operator.stop()
        operator.close()
    # the controller still writes: a clean stop moves the leadership
    c.stop(leader)
    wait_for(lambda: leader_of(c, topic) not in (-1, leader), 60, message="a new leader after a clean stop")
    with Producer(c.bootstrap, acks="all") as p:
        p.send(topic, b"still writable").result(30)


def raw(port: int, path: str, body: bytes | None = None, headers: dict | None = None,
        method: str | None = None) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one HTTP request, errors included."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_requests_a_web_page_of_another_site_could_send_are_refused_and_change_nothing(cluster):
    """A browser lets any page POST text/plain to any site without asking first: the
    msgpack API takes only msgpack's Content-Type (415 otherwise) and refuses a request
    whose Origin is another site (403); the dashboard's JSON allows no other origin."""
    from minikafka.protocol.rpc import codec, http

    topic = f"web-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    port = next(iter(cluster.brokers.values()))
    with Producer(cluster.bootstrap, acks="all") as p:
        p.send(topic, b"kept").result(30)
    delete = codec.pack({"topics": [topic], "timeout_ms": 0})
    for ctype in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data",
                  None):
        status, _, text = raw(port, "/v1/delete_topics", delete, {"Content-Type": ctype} if ctype else {}, "POST")
        assert status == 415, (ctype, status, text)
        assert text.startswith(b"INVALID_REQUEST: POST /v1/delete_topics takes a msgpack map with Content-Type: "
                               b"application/msgpack"), text
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port + 1}", "http://evil.example", "null"):
        status, _, text = raw(port, "/v1/delete_topics", delete, {**http.HEADERS, "Origin": origin}, "POST")
        assert status == 403 and b"refused a cross-site request" in text and origin.encode() in text, (origin, text)
    # a page the broker served itself (same host and port) and programs (no Origin) pass
    status, _, answer = raw(port, "/v1/metadata", codec.pack({"topics": [topic]}),
                            {**http.HEADERS, "Origin": f"http://127.0.0.1:{port}"}, "POST")
    assert status == 200 and codec.unpack(answer)["error_code"] == 0
    status, _, answer = raw(port, "/v1/metadata", codec.pack({"topics": [topic]}),
                            {"Content-Type": "application/x-msgpack"}, "POST")
    assert status == 200 and codec.unpack(answer)["error_code"] == 0
    # nothing changed: the topic and its record are there
    with Admin(cluster.bootstrap) as admin:
        assert topic in admin.list_topics()
    # no route lets another origin read it, asked plainly or with a preflight
    for path in ("/api/state", f"/api/records?topic={topic}&partition=0", "/api/events", "/metrics", "/"):
        status, headers, _ = raw(port, path, headers={"Origin": "http://evil.example"})
        assert status == 200, path
        assert not any(h.lower().startswith("access-control-") for h in headers), (path, headers)
    status, headers, _ = raw(port, "/v1/delete_topics", method="OPTIONS", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert status >= 400 and not any(h.lower().startswith("access-control-") for h in headers), (status, headers)
