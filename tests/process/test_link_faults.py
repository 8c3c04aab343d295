"""Faults on one link while the rest of the cluster stays up: iptables rules on loopback
(minikafka.chaos.links; root only; every rule and cgroup is removed after the test,
also when it fails)."""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from minikafka import Admin, Producer
from minikafka.chaos.links import Links, leftovers
from minikafka.cluster.state import load
from minikafka.zk import layout
from process_helpers import wait_for
from test_controller_moves import controller_id

pytestmark = pytest.mark.process

@pytest.fixture
def links():
    """A :class:`Links` of its own; every rule and cgroup is removed after the test."""
    with Links() as x:
        yield x
    assert [item for item in leftovers() if x.chain in item or x.group in item] == []


ECHO_SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        c.sendall(c.recv(100).upper())
    except OSError:
        pass
    c.close()
"""

ECHO_CLIENT = """
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1.5)
    s.settimeout(1.5)
    s.sendall(b"ping")
    print(s.recv(100).decode())
except OSError as exc:
    print(type(exc).__name__)
"""


def test_a_cut_drops_the_traffic_of_one_cgroup_and_heal_restores_it(links):
    """A client process in a cgroup of its own: cutting its requests (or the server's
    answers to it) stops its exchanges, a process outside the cgroup is not affected,
    and heal restores the link; the chain and the cgroups are gone afterwards."""
    server = subprocess.Popen([sys.executable, "-c", ECHO_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        prefix = links.wrap("client")

        def exchange(placed: bool = True) -> str:
            argv = (prefix if placed else []) + [sys.executable, "-c", ECHO_CLIENT, str(port)]
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()

        client = links.endpoint("client", [], cgroup=links.cgroup("client"))
        echo = links.endpoint("echo server", [port])
        assert exchange() == "PING"
        cut = links.cut(client, echo, only="requests")
        assert exchange() in ("TimeoutError", "timeout")
        assert exchange(placed=False) == "PING"  # the cut is the cgroup's only
        links.heal(cut)
        assert exchange() == "PING"
        links.cut(echo, client, only="answers")  # the SYN gets there, the SYN-ACK does not
        assert exchange() in ("TimeoutError", "timeout")
        assert exchange(placed=False) == "PING"
        links.heal()
        assert exchange() == "PING"
        links.cut(client, echo, reject=True)
        assert exchange() == "ConnectionRefusedError"
        assert any("REJECT" in r for r in links.rules())
        links.heal()
        assert not any("REJECT" in r or "DROP" in r for r in links.rules())
    finally:
        server.kill()
        server.wait()


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"no {name}")


def test_a_follower_that_misses_the_controller_s_leader_and_isr_is_fenced_and_counts_it(make_cluster, links):
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
        links.block_port(c.brokers[follower])  # the controller's requests no longer reach the follower
        c.kill(other)  # the controller takes it out of the ISR: leader epoch + 1
        wait_for(lambda: json.loads(zk.get(state)[0])["leader_epoch"] > epoch, 60, message="a new leader epoch")
        # The follower keeps fetching at the old epoch, and the leader refuses: its log says so
        # (its /metrics is behind the blocked port until the heal).
        log = Path(load(c.dir).broker(follower).log)
        refused = f"fenced-0: fetch from broker {controller} at leader epoch {epoch} refused: FENCED_LEADER_EPOCH"
        wait_for(lambda: refused in log.read_text(errors="replace"), 60,
                 message=f"broker {follower}'s fetch at leader epoch {epoch} refused")
        links.heal()
        wait_for(lambda: metric(c.brokers[follower], "minikafka_fenced_fetches_total") > 0, 30,
                 message="the fenced fetch counted")
        # once LeaderAndIsr arrives the follower fetches again and stays in sync
        with Producer(c.bootstrap, acks="all") as p:
            p.send("fenced", b"after").result(30)
        wait_for(lambda: follower in json.loads(zk.get(state)[0])["isr"], 60, message="the follower in the ISR")
    finally:
        zk.stop()
        zk.close()
