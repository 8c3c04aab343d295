"""Helpers for tests that run real ZooKeeper and broker processes.

Every process is started on free loopback ports and stopped by the pid it was
started with, also when a test fails.  The ports come from
:mod:`minikafka.cluster.free_ports`: outside the kernel's ephemeral range, each one
bound on 127.0.0.1 before it is handed out, never the same twice in one run.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from minikafka import Consumer, TopicPartition
from minikafka.cluster import launcher
from minikafka.cluster.free_ports import free_port, free_port_block
from minikafka.cluster.state import exists, load, pid_alive
from minikafka.polling import poll
from minikafka.zk.launcher import wait_until_serving, zookeeper_command

PYTHON = sys.executable


def wait_for(condition: Callable[[], Any], timeout_s: float = 10.0, interval_s: float = 0.1,
             message: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy; return it, or fail after ``timeout_s``."""
    got = poll(condition, timeout_s, interval_s)
    if not got:
        raise AssertionError(f"timed out after {timeout_s:g} s waiting for {message} (last value: {got.last!r})")
    return got.value


def holds(condition: Callable[[], Any], duration_s: float, interval_s: float = 0.1,
          message: str = "condition") -> None:
    """A bounded watch for "nothing happens": poll ``condition`` for ``duration_s`` and fail
    as soon as it is false (a fixed sleep followed by one look would miss a short-lived change)."""
    deadline = time.monotonic() + duration_s
    while True:
        last = condition()
        if not last:
            raise AssertionError(f"{message} stopped holding (last value: {last!r})")
        if time.monotonic() >= deadline:
            return
        time.sleep(interval_s)


def keeps_running(proc: subprocess.Popen, duration_s: float, message: str = "the process") -> None:
    """A bounded watch: fail as soon as ``proc`` exits within ``duration_s``."""
    try:
        code = proc.wait(timeout=duration_s)
    except subprocess.TimeoutExpired:
        return
    raise AssertionError(f"{message} exited with status {code} within {duration_s:g} s")


def run_cli(*args: str, timeout_s: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m minikafka ARGS`` and capture its output as text."""
    return subprocess.run([PYTHON, "-m", "minikafka", *args], capture_output=True, text=True,
                          timeout=timeout_s, env=env, stdin=subprocess.DEVNULL)


def kill_recorded_pids(dir: str | os.PathLike) -> None:
    """SIGKILL every pid recorded in ``dir``/cluster.json that still runs a process of that
    cluster (last-resort cleanup).  A recorded pid that another process took over since
    (pids wrap around on a busy machine) is left alone: its command line does not name
    ``dir``."""
    if not exists(dir):
        return
    try:
        state = load(dir)
    except Exception:
        return
    ours = launcher.folder_markers(dir)
    mine = [pid for pid in state.pids() if launcher.proc_state(pid, ours) != "dead"]
    for pid in mine:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in mine:
        deadline = time.monotonic() + 5
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)


def stop_cluster(dir: str | os.PathLike) -> None:
    """``down`` the cluster in ``dir``, then SIGKILL whatever it left alive."""
    try:
        if exists(dir):
            launcher.down(dir)
    finally:
        kill_recorded_pids(dir)


@dataclass
class ClusterHandle:
    """A running local cluster started by a fixture."""

    dir: str
    bootstrap: str
    zk_connect: str
    brokers: dict[int, int]  # broker id -> port
    configs: dict[str, str] = field(default_factory=dict)
    kafka_ports: dict[int, int] = field(default_factory=dict)  # broker id -> Kafka-protocol port

    @property
    def kafka_bootstrap(self) -> str:
        """bootstrap.servers for real Kafka clients (the brokers' Kafka listeners)."""
        return ",".join(f"127.0.0.1:{p}" for _, p in sorted(self.kafka_ports.items()))

    def kill(self, broker_id: int, sig: str = "KILL") -> int:
        """Send KILL, TERM or STOP to a broker; return its pid."""
        return launcher.kill(self.dir, broker_id, sig)

    def start(self, broker_id: int, wait: bool = True, timeout_s: float = 60) -> None:
        """Restart a killed or stopped broker (waits until it registers again)."""
        launcher.start(self.dir, broker_id, wait=wait, timeout_s=timeout_s)

    def stop(self, broker_id: int) -> str:
        """SIGTERM a broker (controlled shutdown) and wait for it to exit."""
        return launcher.stop(self.dir, broker_id)

    def resume(self, broker_id: int) -> None:
        """SIGCONT a broker paused with ``kill(id, "STOP")``."""
        launcher.resume(self.dir, broker_id)

    def status(self) -> dict:
        """``minikafka.cluster.launcher.status`` of this cluster."""
        return launcher.status(self.dir)

    def pid(self, broker_id: int) -> int | None:
        """The recorded pid of a broker."""
        return load(self.dir).broker(broker_id).pid

    def endpoint(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.brokers[broker_id]}"

    def down(self) -> None:
        stop_cluster(self.dir)


def secret_path(cluster: "ClusterHandle") -> Path:
    """Where ``cluster up`` keeps the cluster credential of a test cluster."""
    path = Path(cluster.dir) / "minikafka" / "cluster-secret"
    return path if path.exists() else Path(cluster.dir) / "cluster-secret"


def cluster_secret(cluster: "ClusterHandle") -> str:
    """The cluster credential brokers present to each other (controller, replica and
    transaction-marker requests need it)."""
    return secret_path(cluster).read_text().strip()


def zk_client(cluster: "ClusterHandle", authenticated: bool = True):
    """A started kazoo client of the cluster's ZooKeeper.  ``cluster up`` brokers protect
    their znodes (zookeeper.set.acl=true): a client that writes them authenticates with
    the digest user and the cluster credential, as Kafka's tools do; ``authenticated=False``
    is an anonymous client, which may only read."""
    from kazoo.client import KazooClient

    from minikafka.broker.server import ZK_ACL_USER

    auth = [("digest", f"{ZK_ACL_USER}:{cluster_secret(cluster)}")] if authenticated else None
    client = KazooClient(hosts=cluster.zk_connect, timeout=10, auth_data=auth)
    client.start(10)
    return client


def start_cluster(dir: str | os.PathLike, brokers: int = 3, broker_configs: dict[str, str] | None = None,
                  storage: str = "memory", timeout_s: float = 90, attempts: int = 3,
                  client_options: dict[str, Any] | None = None, **up_options: Any) -> ClusterHandle:
    """``launcher.up`` on free ports (retrying if a port was taken meanwhile) and a handle to it.
    ``client_options`` (user and password, TLS) let the readiness check reach secured brokers;
    ``up_options`` go to ``launcher.up`` (``zookeeper_nodes=3``, ``zookeeper_chroot="/kafka"``)."""
    last: Exception | None = None
    for _ in range(attempts):
        zk_port = free_port()
        base = free_port_block(brokers, avoid=(zk_port,))
        kafka_base = free_port_block(brokers, avoid=(zk_port, *range(base, base + brokers)))
        try:
            state = launcher.up(str(dir), brokers=brokers, zookeeper_port=zk_port, base_port=base,
                                storage=storage, broker_configs=broker_configs, timeout_s=timeout_s,
                                kafka_base_port=kafka_base, **up_options)
        except Exception as exc:
            stop_cluster(dir)
            if "in use" not in str(exc):
                raise
            last = exc
            continue
        _wait_metadata_complete(state, brokers, client_options or {})
        return ClusterHandle(
            dir=str(dir),
            bootstrap=",".join(b.endpoint for _, b in sorted(state.brokers.items())),
            zk_connect=state.zookeeper.connect,
            brokers={bid: b.port for bid, b in sorted(state.brokers.items())},
            configs=dict(broker_configs or {}),
            kafka_ports={bid: b.kafka_port for bid, b in sorted(state.brokers.items()) if b.kafka_port},
        )
    raise RuntimeError(f"could not start a cluster on free ports: {last}")


def _wait_metadata_complete(state, brokers: int, client_options: dict[str, Any], timeout_s: float = 30) -> None:
    """Every broker's metadata names the controller and all brokers (``up`` only waits for
    ZooKeeper: a broker may not have had its first UpdateMetadata yet)."""
    from minikafka import Admin

    for b in state.brokers.values():
        with Admin(b.endpoint, **client_options) as admin:
            def complete() -> bool:
                c = admin.cluster()
                return c.controller_id >= 0 and len(c.brokers) == brokers
            wait_for(complete, timeout_s, 0.1, f"broker {b.id}'s metadata to know the controller and every broker")


@dataclass
class ZooKeeperHandle:
    """A standalone ZooKeeper started by a fixture."""

    port: int
    data_dir: str
    process: subprocess.Popen

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_zookeeper(data_dir: str | os.PathLike, timeout_s: float = 60) -> ZooKeeperHandle:
    """A real ZooKeeper on a free port, its output in ``data_dir``/zookeeper.log."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = zookeeper_command(port, data_dir)
    with open(data_dir / "zookeeper.log", "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    handle = ZooKeeperHandle(port, str(data_dir), proc)
    try:
        wait_until_serving(handle.connect, timeout_s, alive=lambda: proc.poll() is None)
    except BaseException:
        handle.stop()
        raise
    return handle


def read_all(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every record value of ``topic`` from offset 0 to the end offsets it has now (at most 60 s)."""
    out: list[bytes] = []
    with Consumer(bootstrap) as c:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning()
        ends = c.end_offsets(tps)
        positions = {tp: 0 for tp in tps}
        deadline = time.monotonic() + 60
        while any(positions[tp] < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for r in c.poll(timeout_ms=500):
                out.append(r.value)
                positions[TopicPartition(r.topic, r.partition)] = r.offset + 1
    return out


# Test clusters start a new group's first rebalance after 200 ms, not Kafka's 3 s, and create
# __consumer_offsets with 10 partitions, not Kafka's 50 (tests/process/test_groups.py: 120 s
# instead of 172 s; tests/process/test_kafka_defaults.py checks the default).
TEST_BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": "200", "offsets.topic.num.partitions": "10"}


def cluster_fixture(request, dir: Path, broker_configs: dict[str, str] | None = None, **kwargs) -> ClusterHandle:
    """A cluster started for a fixture (``request``) in ``dir`` with the test clusters'
    broker settings (``TEST_BROKER_CONFIGS`` under ``broker_configs``), stopped by the
    fixture's finalizer, also when it only half started."""
    # Register the cleanup before starting, so a half-started cluster is stopped too.
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, broker_configs={**TEST_BROKER_CONFIGS, **(broker_configs or {})}, **kwargs)
