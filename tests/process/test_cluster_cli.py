"""`minikafka cluster up/status/kill/start/down` end to end with real processes."""
from __future__ import annotations

import json

import pytest

from minikafka.cluster.state import load, pid_alive
from process_helpers import free_port, free_port_block, run_cli, stop_cluster, wait_for

pytestmark = pytest.mark.process


def status(dir: str) -> dict:
    result = run_cli("cluster", "status", "--json", "--dir", dir)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def registered(dir: str) -> dict[int, bool | None]:
    return {b["id"]: b["registered"] for b in status(dir)["brokers"]}


def up_args(dir: str, brokers: int) -> tuple[int, int, tuple[str, ...]]:
    """Free ports for a cluster of ``brokers`` in ``dir``: (ZooKeeper port, first broker
    port, the `cluster up` arguments naming them)."""
    zk_port = free_port()
    base = free_port_block(brokers, avoid=(zk_port,))
    kafka = free_port_block(brokers, avoid=(zk_port, *range(base, base + brokers)))
    return zk_port, base, ("--dir", dir, "--brokers", str(brokers), "--zookeeper-port", str(zk_port),
                           "--base-port", str(base), "--kafka-base-port", str(kafka))


def test_cluster_up_status_kill_start_down(tmp_path):
    dir = str(tmp_path / "cluster")
    zk_port, base, args = up_args(dir, 3)
    try:
        up = run_cli("cluster", "up", *args, "--config", "zookeeper.session.timeout.ms=3000")
        assert up.returncode == 0, up.stdout + up.stderr
        for port in (base, base + 1, base + 2):
            assert f"http://127.0.0.1:{port}/" in up.stdout
        assert "minikafka cluster down" in up.stdout
        started = load(dir).pids()
        assert len(started) == 4

        st = status(dir)
        assert st["zookeeper"]["serving"] is True
        assert [b["registered"] for b in st["brokers"]] == [True, True, True]
        assert sum(1 for b in st["brokers"] if b["controller"]) == 1
        assert st["controller"] in (1, 2, 3)
        assert isinstance(st["controller_epoch"], int)

        table = run_cli("cluster", "status", "--dir", dir)
        assert table.returncode == 0, table.stderr
        assert "BROKER" in table.stdout and "CONTROLLER" in table.stdout

        running = run_cli("cluster", "start", "1", "--dir", dir)
        assert running.returncode == 2 and running.stdout == "", "only the error, no 'starting broker 1 ...'"
        assert running.stderr.strip() == f"minikafka: error: broker 1 is already running (pid {load(dir).broker(1).pid})"
        unknown = run_cli("cluster", "start", "9", "--dir", dir)
        assert unknown.returncode == 2 and unknown.stdout == "" and "no broker 9" in unknown.stderr

        not_paused = run_cli("cluster", "resume", "2", "--dir", dir)
        assert not_paused.returncode == 2 and not_paused.stdout == "", not_paused.stdout
        assert not_paused.stderr.strip() == (f"minikafka: error: broker 2 is not paused (pid {load(dir).broker(2).pid} "
                                             f"is running): nothing to resume")

        stopped = run_cli("cluster", "stop", "3", "--dir", dir)
        assert stopped.stdout.strip() == "broker 3: stopped", stopped.stdout + stopped.stderr
        paused = run_cli("cluster", "kill", "1", "--signal", "STOP", "--dir", dir)
        assert paused.returncode == 0, paused.stderr
        try:
            processes = {b["id"]: b["process"] for b in status(dir)["brokers"]}
        finally:
            resumed = run_cli("cluster", "resume", "1", "--dir", dir)
            assert resumed.returncode == 0 and resumed.stdout.startswith("sent SIGCONT to broker 1"), resumed
        assert processes == {1: "paused", 2: "running", 3: "stopped"}, "a clean stop is not reported as dead"
        assert run_cli("cluster", "start", "3", "--dir", dir).returncode == 0
        started.append(load(dir).broker(3).pid)

        killed = run_cli("cluster", "kill", "2", "--dir", dir)
        assert killed.returncode == 0, killed.stderr
        assert status(dir)["brokers"][1]["process"] == "dead"
        wait_for(lambda: registered(dir)[2] is False, 10, 0.2, "broker 2 to leave /brokers/ids")
        wait_for(lambda: sum(1 for b in status(dir)["brokers"] if b["controller"]) == 1, 10, 0.2,
                 "exactly one controller")

        restarted = run_cli("cluster", "start", "2", "--dir", dir)
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        wait_for(lambda: registered(dir) == {1: True, 2: True, 3: True}, 20, 0.2, "all brokers registered")
        started.append(load(dir).broker(2).pid)

        # SIGTERM is a clean stop, whoever sends it: stopped, not dead
        termed = run_cli("cluster", "kill", "3", "--signal", "TERM", "--dir", dir)
        assert termed.returncode == 0, termed.stderr
        wait_for(lambda: status(dir)["brokers"][2]["process"] == "stopped", 30, 0.2, "broker 3 to exit on SIGTERM")

        down = run_cli("cluster", "down", "--dir", dir)
        assert down.returncode == 0, down.stderr
        assert load(dir).pids() == []
        assert not [pid for pid in started if pid_alive(pid)]
        after = run_cli("cluster", "status", "--json", "--dir", dir)
        assert after.returncode == 1, "nothing runs: exit status 1"
        st = json.loads(after.stdout)
        assert st["running"] is False and st["zookeeper"]["process"] == "stopped"
        assert [b["process"] for b in st["brokers"]] == ["stopped", "stopped", "stopped"], "down stops cleanly"
        table = run_cli("cluster", "status", "--dir", dir)
        assert table.returncode == 1 and f"the cluster in {dir} is down" in table.stdout, table.stdout
    finally:
        stop_cluster(dir)


def test_a_disk_cluster_up_says_what_it_reuses_and_fresh_starts_anew(tmp_path):
    dir = str(tmp_path / "disk")
    zk_port, base, args = up_args(dir, 1)
    args += ("--storage", "disk")
    try:
        first = run_cli("cluster", "up", *args)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "reusing" not in first.stdout
        made = run_cli("topics", "create", "kept", "--partitions", "1", "--replication-factor", "1", "--dir", dir)
        assert made.returncode == 0, made.stderr
        assert run_cli("cluster", "down", "--dir", dir).returncode == 0

        again = run_cli("cluster", "up", *args)
        assert again.returncode == 0, again.stdout + again.stderr
        assert again.stdout.splitlines()[0] == (
            f"reusing ZooKeeper's data, broker-1's logs of an earlier cluster in {dir}: its topics, offsets and "
            "records come back (start anew with --fresh)")
        assert run_cli("topics", "list", "--dir", dir).stdout.split() == ["kept"]
        refused = run_cli("cluster", "up", *args, "--fresh")
        assert refused.returncode == 2 and "still running" in refused.stderr, "never wipes a running cluster"
        assert run_cli("cluster", "down", "--dir", dir).returncode == 0

        fresh = run_cli("cluster", "up", *args, "--fresh")
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr
        assert fresh.stdout.splitlines()[0].startswith("--fresh: deleted ZooKeeper's data, broker-1's logs")
        assert run_cli("topics", "list", "--dir", dir).stdout.split() == []
    finally:
        stop_cluster(dir)


def test_cluster_start_says_first_why_a_broker_cannot_start(tmp_path):
    """A restarted broker whose port is taken: the error line starts with the cause, not
    with a row of old log lines."""
    import socket

    dir = str(tmp_path / "cluster")
    zk_port, base, args = up_args(dir, 1)
    try:
        up = run_cli("cluster", "up", *args)
        assert up.returncode == 0, up.stdout + up.stderr
        pid = load(dir).brokers[1].pid
        assert run_cli("cluster", "kill", "1", "--dir", dir).returncode == 0
        wait_for(lambda: not pid_alive(pid), timeout_s=10, message="the killed broker gone")
        with socket.socket() as taken:  # something else listens on the broker's port now
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            taken.bind(("127.0.0.1", base))
            taken.listen()
            start = run_cli("cluster", "start", "1", "--dir", dir)
        assert start.returncode == 2, start.stdout + start.stderr
        (line,) = start.stderr.strip().splitlines()
        assert line.startswith(f"minikafka: error: broker 1 cannot start: cannot listen on 127.0.0.1:{base}: "
                               "address already in use"), line
        assert "(exit status 2; log: " in line and " | " not in line
        # the port is free again: the broker starts, and an old error in its log is not quoted
        again = run_cli("cluster", "start", "1", "--dir", dir)
        assert again.returncode == 0, again.stdout + again.stderr
    finally:
        stop_cluster(dir)


def test_cluster_up_no_zookeeper_acl_leaves_the_znodes_open(tmp_path):
    """`cluster up` protects the cluster's znodes by default; --no-zookeeper-acl keeps
    ZooKeeper open as before: an anonymous client may create admin znodes and delete
    /controller (a new controller is elected)."""
    from kazoo.client import KazooClient
    from kazoo.security import OPEN_ACL_UNSAFE

    from minikafka.zk import layout

    dir = str(tmp_path / "open")
    zk_port, base, args = up_args(dir, 1)
    try:
        up = run_cli("cluster", "up", *args, "--no-zookeeper-acl")
        assert up.returncode == 0, up.stdout + up.stderr
        assert not any("zookeeper.set.acl" in arg for arg in load(dir).broker(1).argv)
        zk = KazooClient(hosts=f"127.0.0.1:{zk_port}", timeout=10)
        zk.start(10)
        try:
            assert zk.get_acls(layout.BROKER_IDS)[0] == OPEN_ACL_UNSAFE
            zk.create(f"{layout.DELETE_TOPICS}/nothing-here")
            zk.delete(layout.CONTROLLER)
            wait_for(lambda: zk.exists(layout.CONTROLLER), 30, message="a controller again")
        finally:
            zk.stop()
            zk.close()
    finally:
        stop_cluster(dir)
