"""Two listeners per broker, like Kafka's INTERNAL/EXTERNAL (what docker-compose.yml uses).

Three broker processes each listen on 127.0.0.1:<internal> (``--listen``, used by the
controller and by followers) and 127.0.0.1:<external> (``--listen-external``). A
client that bootstraps on the external ports must be sent to external endpoints
only, while replication between the brokers must use the internal ones: the test
checks the metadata answers, the ZooKeeper registrations and the TCP connections
each process actually holds (Linux ``/proc``).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from minikafka.cluster.launcher import api_versions
from minikafka.config import BrokerConfig
from minikafka.errors import InvalidConfigError
from minikafka.rpc import call_sync
from minikafka.zk import layout
from process_helpers import free_port_block, run_cli, wait_for

BROKERS = (1, 2, 3)


# ---------------------------------------------------------------- pure parts, no processes

def test_registration_lists_the_external_listener_and_reads_back():
    info = layout.BrokerInfo(2, "broker-2", 19092, epoch=7, storage="disk", external=("localhost", 9093))
    d = json.loads(info.encode(1700000000000))
    assert (d["host"], d["port"]) == ("broker-2", 19092)  # inter-broker endpoint, as in Kafka
    assert d["endpoints"] == ["PLAINTEXT://broker-2:19092", "EXTERNAL://localhost:9093"]
    assert d["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"}
    assert d["timestamp"] == "1700000000000"  # the writer's clock, passed in
    assert layout.BrokerInfo.decode(2, info.encode(1700000000000), 7) == info


def test_registration_without_external_listener_is_unchanged():
    info = layout.BrokerInfo(1, "127.0.0.1", 9092, storage="memory")
    d = json.loads(info.encode(1700000000000))
    assert d["endpoints"] == ["PLAINTEXT://127.0.0.1:9092"]
    assert d["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert layout.BrokerInfo.decode(1, info.encode(1700000000000)).external is None
    # A registration written before external listeners existed still reads.
    old = b'{"version":4,"host":"h","port":1,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"],"rack":null}'
    assert layout.BrokerInfo.decode(1, old) == layout.BrokerInfo(1, "h", 1)


def test_a_memory_registration_says_whether_its_log_is_new():
    first = layout.BrokerInfo(1, "h", 1, epoch=40, storage="memory")
    assert "log_since" not in json.loads(first.encode(1700000000000))
    assert layout.BrokerInfo.decode(1, first.encode(1700000000000), 40).memory_log_is_new
    # the same process registering again after its session expired: its log is kept
    again = layout.BrokerInfo(1, "h", 1, storage="memory", log_since=40)
    read = layout.BrokerInfo.decode(1, again.encode(1700000000000), 77)
    assert (read.log_since, read.log_born, read.memory_log_is_new) == (40, 40, False)
    assert not layout.BrokerInfo(1, "h", 1, epoch=40, storage="disk").memory_log_is_new


def test_registration_with_a_kafka_listener_names_it_plaintext():
    info = layout.BrokerInfo(3, "broker-3", 19092, storage="disk", external=("localhost", 9094),
                             kafka=("broker-3", 39092), kafka_external=("localhost", 29094))
    d = json.loads(info.encode(1700000000000))
    # Kafka's tools read host/port and PLAINTEXT as the Kafka-protocol endpoint
    assert (d["host"], d["port"]) == ("broker-3", 39092)
    assert d["endpoints"] == ["PLAINTEXT://broker-3:39092", "KAFKA_EXTERNAL://localhost:29094",
                              "MINIKAFKA://broker-3:19092", "MINIKAFKA_EXTERNAL://localhost:9094"]
    assert set(d["listener_security_protocol_map"].values()) == {"PLAINTEXT"}
    assert layout.BrokerInfo.decode(3, info.encode(1700000000000)) == info


def test_kafka_listener_flags_are_checked():
    def cfg(**kw):
        return BrokerConfig(broker_id=1, zookeeper_connect="z:2181", listen_port=19092, **kw)

    assert cfg().advertised_kafka is None
    # a wildcard bind advertises the broker's own advertised host
    assert BrokerConfig(broker_id=1, zookeeper_connect="z", listen_host="0.0.0.0", listen_port=19092,
                        advertised_host="broker-1", kafka_listen_host="0.0.0.0",
                        kafka_listen_port=39092).advertised_kafka == ("broker-1", 39092)
    with pytest.raises(InvalidConfigError, match="--kafka-listen needs a port of its own"):
        cfg(kafka_listen_port=19092)
    with pytest.raises(InvalidConfigError, match="needs a Kafka listener"):
        cfg(kafka_advertised_host="h")
    with pytest.raises(InvalidConfigError, match="needs the Kafka listener too"):
        cfg(kafka_external_listen_port=29092)


BASE = ["broker", "--id", "1", "--zookeeper", "zookeeper:2181", "--data-dir", "/tmp/never-created"]


@pytest.mark.process
def test_check_config_shows_both_listeners():
    r = run_cli(*BASE, "--listen", "0.0.0.0:19092", "--advertise", "broker-1:19092",
                "--listen-external", "0.0.0.0:9092", "--advertise-external", "localhost:9092", "--check-config")
    assert r.returncode == 0, r.stderr
    assert "0.0.0.0:19092 (advertised broker-1:19092)" in r.stdout
    assert "0.0.0.0:9092 (external, advertised localhost:9092)" in r.stdout


@pytest.mark.process
@pytest.mark.parametrize("extra, words", [
    (["--listen-external", "0.0.0.0:19092"], ["port of its own"]),
    (["--advertise-external", "localhost:9092"], ["--listen-external"]),
    (["--listen-external", "nope"], ["HOST:PORT"]),
])
def test_check_config_refuses_bad_listeners(extra, words):
    r = run_cli(*BASE, "--listen", "0.0.0.0:19092", *extra, "--check-config")
    assert r.returncode == 2
    assert r.stdout == ""
    assert all(w in r.stderr for w in words), r.stderr


# ---------------------------------------------------------------- three broker processes

def _post(port: int, api: str, body: dict) -> dict:
    return call_sync("127.0.0.1", port, api, body, 10, raise_error=False)


def _brokers_seen_on(port: int) -> dict[int, int]:
    answer = _post(port, "metadata", {"topics": []})
    assert answer["error_code"] == 0, answer
    assert {b["host"] for b in answer["brokers"]} == {"127.0.0.1"}
    return {b["id"]: b["port"] for b in answer["brokers"]}


def _tcp_connections(pid: int) -> list[tuple[int, int]]:
    """(local port, remote port) of the established TCP sockets process ``pid`` holds."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            local, remote, state, inode = cols[1], cols[2], cols[3], cols[9]
            if state == "01" and inode in inodes:  # 01 = ESTABLISHED
                out.append((int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)))
    return out


@pytest.fixture
def two_listener_cluster(zookeeper, tmp_path):
    """ZooKeeper (a fresh chroot of the session's) and brokers 1-3 with two listeners each."""
    from kazoo.client import KazooClient

    chroot = f"/listeners-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper.connect, timeout=10)
    zk.start(10)
    try:
        zk.ensure_path(chroot)
    finally:
        zk.stop()
        zk.close()
    base = free_port_block(6, avoid=(zookeeper.port,))
    internal = {b: base + i for i, b in enumerate(BROKERS)}
    external = {b: base + 3 + i for i, b in enumerate(BROKERS)}
    procs: dict[int, subprocess.Popen] = {}
    try:
        for b in BROKERS:
            argv = [sys.executable, "-m", "minikafka", "broker", "--id", str(b),
                    "--zookeeper", zookeeper.connect + chroot,
                    "--listen", f"127.0.0.1:{internal[b]}",
                    "--listen-external", f"127.0.0.1:{external[b]}",
                    "--data-dir", str(tmp_path / f"broker-{b}"), "--storage", "memory",
                    "--config", "replica.lag.time.max.ms=3000"]
            with open(tmp_path / f"broker-{b}.log", "wb") as log:
                procs[b] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

        def ready() -> bool:
            for b, p in procs.items():
                if p.poll() is not None:
                    raise AssertionError(f"broker {b} exited with {p.returncode}: "
                                         f"{(tmp_path / f'broker-{b}.log').read_text()[-2000:]}")
            if not all(api_versions("127.0.0.1", internal[b]) and api_versions("127.0.0.1", external[b])
                       for b in BROKERS):
                return False
            # every broker's metadata cache knows all three (UpdateMetadata arrived)
            return all(len(_brokers_seen_on(internal[b])) == 3 for b in BROKERS)

        wait_for(ready, timeout_s=60, interval_s=0.2, message="three brokers with two listeners")
        yield {"internal": internal, "external": external, "procs": procs,
               "zk": zookeeper.connect + chroot}
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
        for p in procs.values():
            p.wait(10)


@pytest.mark.process
def test_external_clients_get_external_endpoints_and_replication_stays_internal(two_listener_cluster):
    c = two_listener_cluster
    internal, external, procs = c["internal"], c["external"], c["procs"]

    # Metadata answers the endpoints of the listener the request arrived on.
    for b in BROKERS:
        assert _brokers_seen_on(external[b]) == external
        assert _brokers_seen_on(internal[b]) == internal

    # So does the dashboard: a page served on the external port names reachable addresses.
    def dashboard_ports(port: int) -> dict[int, int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=10) as r:
            return {b["id"]: b["port"] for b in json.loads(r.read())["brokers"]}

    wait_for(lambda: dashboard_ports(external[1]) == external, 30, message="external endpoints on the dashboard")
    assert dashboard_ports(internal[1]) == internal

    # ZooKeeper: host/port is the inter-broker endpoint, EXTERNAL is listed among the endpoints.
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=c["zk"], timeout=10)
    zk.start(10)
    try:
        for b in BROKERS:
            d = json.loads(zk.get(layout.broker_path(b))[0])
            assert (d["host"], d["port"]) == ("127.0.0.1", internal[b])
            assert d["endpoints"] == [f"PLAINTEXT://127.0.0.1:{internal[b]}", f"EXTERNAL://127.0.0.1:{external[b]}"]
    finally:
        zk.stop()
        zk.close()

    # A client bootstrapped on the external ports creates, produces with acks=all and consumes.
    bootstrap = ",".join(f"127.0.0.1:{external[b]}" for b in BROKERS)
    admin = Admin(bootstrap)
    producer = Producer(bootstrap, acks="all")
    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    try:
        assert {(b.id, b.port) for b in admin.cluster().brokers} == set(external.items())
        admin.create_topic("outside", partitions=3, replication_factor=3, config={"min.insync.replicas": "3"})
        sent = [producer.send("outside", f"m{i}".encode(), key=f"k{i}".encode()) for i in range(300)]
        producer.flush(30)
        parts = {f.result(30).partition for f in sent}
        assert parts == {0, 1, 2}

        # acks=all with min.insync.replicas=3 succeeded, so every follower fetched every batch;
        # all replicas report the same LEO.
        def caught_up() -> bool:
            ds = admin.describe_topics("outside")[0].partitions
            return all(set(p.replica_leos.values()) == {p.high_watermark} and sorted(p.isr) == [1, 2, 3]
                       for p in ds) and sum(p.high_watermark for p in ds) == 300
        wait_for(caught_up, timeout_s=20, message="all replicas at the high watermark")

        consumer.assign([TopicPartition("outside", p) for p in (0, 1, 2)])
        got: list = []
        deadline = time.monotonic() + 20
        while len(got) < 300 and time.monotonic() < deadline:
            got.extend(consumer.poll(timeout_ms=500))
        assert sorted(r.value for r in got) == sorted(f"m{i}".encode() for i in range(300))

        assert Path(f"/proc/{os.getpid()}/net/tcp").exists(), "this check reads Linux /proc"
        broker_ports = set(internal.values()) | set(external.values())
        # This process (the clients) talks to external ports only ...
        mine = {remote for _, remote in _tcp_connections(os.getpid()) if remote in broker_ports}
        assert mine and mine <= set(external.values()), (mine, internal, external)
    finally:
        consumer.close()
        producer.close()
        admin.close()

    # ... and the brokers talk to each other (followers fetching, the controller's requests)
    # on internal ports only, never on external ones.
    zk_port = int(c["zk"].split(":")[1].split("/")[0])
    peers_used = set()
    for b in BROKERS:
        own = {internal[b], external[b]}
        outgoing = {remote for local, remote in _tcp_connections(procs[b].pid) if local not in own}
        assert outgoing <= set(internal.values()) | {zk_port}, (b, outgoing, internal, external)
        peers_used |= outgoing & (set(internal.values()) - {internal[b]})
    # every broker leads one partition with RF 3, so every internal port is fetched from
    assert peers_used == set(internal.values()), (peers_used, internal)


# ---------------------------------------------------------------- listeners as Kafka's settings

@pytest.mark.process
def test_a_broker_configured_only_by_kafka_s_listener_settings(zookeeper, tmp_path):
    """No --listen flags: listeners, advertised.listeners and inter.broker.listener.name in
    the config file give every endpoint, and the broker binds, registers and answers them."""
    from kazoo.client import KazooClient

    chroot = f"/listener-settings-{uuid.uuid4().hex[:8]}"
    base = free_port_block(3, avoid=(zookeeper.port,))
    internal, external, kafka = base, base + 1, base + 2
    (tmp_path / "server.properties").write_text(
        "# the listeners in Kafka's words\n"
        f"listeners=INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external},KAFKA://127.0.0.1:{kafka}\n"
        f"advertised.listeners=INTERNAL://localhost:{internal},KAFKA://localhost:{kafka}\n"
        "inter.broker.listener.name=INTERNAL\n")
    argv = [sys.executable, "-m", "minikafka", "broker", "--id", "7", "--zookeeper", zookeeper.connect + chroot,
            "--data-dir", str(tmp_path / "broker"), "--config-file", str(tmp_path / "server.properties")]
    check = run_cli(*argv[3:], "--check-config")
    assert check.returncode == 0, check.stderr
    assert (f"advertised.listeners=INTERNAL://localhost:{internal},EXTERNAL://127.0.0.1:{external},"
            f"KAFKA://localhost:{kafka}") in check.stdout.splitlines()
    with open(tmp_path / "broker.log", "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    zk = KazooClient(hosts=zookeeper.connect + chroot, timeout=10)
    try:
        def registered():
            assert proc.poll() is None, (tmp_path / "broker.log").read_text()[-2000:]
            if not zk.connected:
                zk.start(10)
            return zk.exists("/brokers/ids/7") and json.loads(zk.get("/brokers/ids/7")[0])

        reg = wait_for(registered, timeout_s=30, message="broker 7's registration")
        assert set(reg["endpoints"]) == {f"PLAINTEXT://localhost:{kafka}", f"MINIKAFKA://localhost:{internal}",
                                         f"MINIKAFKA_EXTERNAL://127.0.0.1:{external}"}

        def metadata_hosts(port: int):
            answer = _post(port, "metadata", {"topics": []})
            return answer.get("error_code") == 0 and [(b["host"], b["port"]) for b in answer["brokers"]]

        # each listener answers the advertised endpoints of its own kind
        assert wait_for(lambda: metadata_hosts(internal), timeout_s=20) == [("localhost", internal)]
        assert wait_for(lambda: metadata_hosts(external), timeout_s=20) == [("127.0.0.1", external)]
        kcat = subprocess.run(["kcat", "-L", "-J", "-b", f"127.0.0.1:{kafka}", "-m", "10"],
                              capture_output=True, text=True, timeout=30)
        assert kcat.returncode == 0, kcat.stderr
        assert [b["name"] for b in json.loads(kcat.stdout)["brokers"]] == [f"localhost:{kafka}"]
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        zk.stop()
        zk.close()


@pytest.mark.process
def test_check_config_refuses_flags_that_disagree_with_listeners():
    r = run_cli(*BASE, "--listen", "127.0.0.1:19092", "--config", "listeners=INTERNAL://0.0.0.0:19092",
                "--check-config")
    assert r.returncode == 2 and r.stdout == ""
    assert "--listen 127.0.0.1:19092 disagrees with listeners' INTERNAL://0.0.0.0:19092" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
