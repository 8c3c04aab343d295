"""Faults on one link while the rest of the cluster stays up: iptables rules on loopback
(root only; every rule is removed after the test, also when it fails)."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request

import pytest
from kazoo.client import KazooClient

from minikafka import Admin, Producer
from minikafka.zk import layout
from process_helpers import wait_for
from test_controller_moves import controller_id

pytestmark = pytest.mark.process

IPTABLES = shutil.which("iptables") or "/usr/sbin/iptables"


class Cut:
    """Refuse TCP connections to chosen local ports (iptables REJECT with a reset)."""

    def __init__(self) -> None:
        self.rules: list[list[str]] = []

    def port(self, port: int) -> None:
        rule = ["INPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", str(port), "-j", "REJECT", "--reject-with", "tcp-reset"]
        subprocess.run([IPTABLES, "-I", *rule], check=True)
        self.rules.append(rule)

    def heal(self) -> None:
        while self.rules:
            subprocess.run([IPTABLES, "-D", *self.rules.pop()], check=False)


@pytest.fixture
def cut():
    c = Cut()
    try:
        yield c
    finally:
        c.heal()


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"no {name}")


def test_a_follower_that_misses_the_controller_s_leader_and_isr_is_fenced_and_counts_it(make_cluster, cut):
    """KIP-320 on live processes: the controller bumps the leader epoch, its LeaderAndIsr
    cannot reach one follower, which keeps fetching at the old epoch: the leader refuses
    with FENCED_LEADER_EPOCH, and the follower counts it in /metrics."""
    c = make_cluster(brokers=3)
    zk = KazooClient(hosts=c.zk_connect, timeout=10)
    zk.start(10)
    try:
        controller = wait_for(lambda: controller_id(zk), 30, message="a controller")
        follower, other = [b for b in (1, 2, 3) if b != controller]
        with Admin(c.bootstrap) as admin:
            admin.create_topic("fenced", partitions=1, replication_factor=3, assignment={0: [controller, follower, other]})
        state = layout.partition_state_path("fenced", 0)
        wait_for(lambda: zk.exists(state) and len(json.loads(zk.get(state)[0])["isr"]) == 3, 30, message="ISR of 3")
        with Producer(c.bootstrap, acks="all") as p:
            p.send("fenced", b"before").result(30)
        epoch = json.loads(zk.get(state)[0])["leader_epoch"]
        assert metric(c.brokers[follower], "minikafka_fenced_fetches_total") == 0
        cut.port(c.brokers[follower])  # the controller's requests no longer reach the follower
        c.kill(other)  # the controller takes it out of the ISR: leader epoch + 1
        wait_for(lambda: json.loads(zk.get(state)[0])["leader_epoch"] > epoch, 60, message="a new leader epoch")
        time.sleep(2)  # the follower keeps fetching at the old epoch meanwhile
        cut.heal()
        wait_for(lambda: metric(c.brokers[follower], "minikafka_fenced_fetches_total") > 0, 30,
                 message="the fenced fetch counted")
        # once LeaderAndIsr arrives the follower fetches again and stays in sync
        with Producer(c.bootstrap, acks="all") as p:
            p.send("fenced", b"after").result(30)
        wait_for(lambda: follower in json.loads(zk.get(state)[0])["isr"], 60, message="the follower in the ISR")
    finally:
        zk.stop()
        zk.close()
