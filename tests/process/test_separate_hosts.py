"""Brokers on separate hosts: ZooKeeper, three brokers and a client, each in its own
network namespace on one bridge (tests/netns_hosts.py), each broker binding and
advertising its own IP through ``listeners``.

The client host produces with acks=all through the Kafka listener (kcat) and over
msgpack (minikafka's own client), sees every broker's own IP in the metadata, then one
broker host's link goes down: its partitions move and the ISRs shrink as on one
machine, more records are produced, the link comes back, the broker rejoins every ISR,
and the client reads back every acknowledged record.

The hosts' addresses and ports live only in their namespaces (not on the machine's own
network), so fixed ports cannot collide with anything else running here.  Needs root
and iproute2 (CI runs the process tests as root).
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from minikafka.zk.launcher import zookeeper_command
from netns_hosts import Hosts
from process_helpers import wait_for

pytestmark = pytest.mark.process

SUBNET = "10.254.213"  # inside the namespaces only
ZK_PORT, INTERNAL_PORT, KAFKA_PORT = 2181, 19092, 29092
BROKERS = (1, 2, 3)
VICTIM = 3
TOPIC = "orders"
BROKER_SETTINGS = ("replica.lag.time.max.ms=2000", "zookeeper.session.timeout.ms=3000",
                   "group.initial.rebalance.delay.ms=200")
RUOK = ("import socket,sys\n"
        "s=socket.create_connection((sys.argv[1],int(sys.argv[2])),1);s.sendall(b'ruok');"
        "print(s.recv(8).decode())")
METADATA = ("import json,sys\nfrom minikafka.rpc import call_sync\n"
            "print(json.dumps(call_sync(sys.argv[1],int(sys.argv[2]),'metadata',{'topics':[]},5)['brokers']))")


@dataclass
class Site:
    hosts: Hosts
    brokers: dict[int, subprocess.Popen]
    logs: Path

    def alive(self) -> None:
        for b, p in self.brokers.items():
            assert p.poll() is None, f"broker {b} exited: " + (self.logs / f"broker-{b}.log").read_text()[-2000:]


@pytest.fixture
def site(tmp_path, request) -> Site:
    """ZooKeeper and brokers 1-3 on hosts of their own, and a client host."""
    h = Hosts(SUBNET)
    request.addfinalizer(h.close)  # also when starting fails half-way
    h.open()
    zk_ip = h.add("zk", 10)
    for b in BROKERS:
        h.add(f"b{b}", 10 + b)
    h.add("client", 20)
    zk = h.spawn("zk", zookeeper_command(ZK_PORT, tmp_path / "zk", bind=zk_ip), tmp_path / "zk.log")

    def zk_serves() -> bool:
        assert zk.poll() is None, (tmp_path / "zk.log").read_text()[-2000:]
        return h.run("client", [sys.executable, "-c", RUOK, zk_ip, str(ZK_PORT)]).stdout.strip() == "imok"

    wait_for(zk_serves, timeout_s=60, interval_s=0.3, message="ZooKeeper on its own host")
    procs = {}
    for b in BROKERS:
        ip = h.ips[f"b{b}"]
        argv = [sys.executable, "-m", "minikafka", "broker", "--id", str(b), "--zookeeper", f"{zk_ip}:{ZK_PORT}",
                "--data-dir", str(tmp_path / f"broker-{b}"),
                "--config", f"listeners=INTERNAL://{ip}:{INTERNAL_PORT},KAFKA://{ip}:{KAFKA_PORT}",
                "--config", "inter.broker.listener.name=INTERNAL"]
        for setting in BROKER_SETTINGS:
            argv += ["--config", setting]
        procs[b] = h.spawn(f"b{b}", argv, tmp_path / f"broker-{b}.log")
    return Site(h, procs, tmp_path)


def kafka_metadata(h: Hosts) -> dict:
    """kcat's metadata (JSON) from the client host, asked of broker 1's Kafka listener."""
    r = h.run("client", ["kcat", "-L", "-J", "-m", "2", "-b", f"{h.ips['b1']}:{KAFKA_PORT}"], timeout_s=30)
    return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else {}


def partitions(meta: dict) -> list[dict]:
    return [p for t in meta.get("topics", []) if t["topic"] == TOPIC for p in t["partitions"]]


def produce(h: Hosts, phase: str) -> list[str]:
    """20 records by kcat (Kafka listener) and 20 by minikafka (msgpack), acks=all; returns their values."""
    kcat = [f"{phase}-kcat-{i}" for i in range(20)]
    r = h.run("client", ["kcat", "-P", "-b", f"{h.ips['b1']}:{KAFKA_PORT}", "-t", TOPIC, "-X", "acks=all",
                         "-X", "enable.idempotence=true", "-X", "message.timeout.ms=20000"],
              input="\n".join(kcat) + "\n")
    assert r.returncode == 0 and "failed" not in r.stderr.lower(), r.stderr
    ours = [f"{phase}-ours-{i}" for i in range(20)]
    r = h.run("client", [sys.executable, "-m", "minikafka", "produce", "--topic", TOPIC, "--acks", "all",
                         "--bootstrap-server", f"{h.ips['b1']}:{INTERNAL_PORT},{h.ips['b2']}:{INTERNAL_PORT}"],
              input="\n".join(ours) + "\n")
    assert r.returncode == 0, r.stderr
    return kcat + ours


def test_brokers_on_separate_hosts_survive_a_host_s_link_going_down(site):
    h, alive = site.hosts, site.alive
    broker_ips = {b: h.ips[f"b{b}"] for b in BROKERS}

    def all_registered():
        alive()
        meta = kafka_metadata(h)
        return len(meta.get("brokers", [])) == 3 and meta

    meta = wait_for(all_registered, timeout_s=60, interval_s=0.3, message="three brokers on three hosts")
    # every broker is reached at its own host's IP, on the Kafka listener and over msgpack
    assert {b["id"]: b["name"] for b in meta["brokers"]} == {b: f"{ip}:{KAFKA_PORT}" for b, ip in broker_ips.items()}
    r = h.run("client", [sys.executable, "-c", METADATA, broker_ips[2], str(INTERNAL_PORT)])
    assert r.returncode == 0, r.stderr
    assert {b["id"]: (b["host"], b["port"]) for b in json.loads(r.stdout)} == \
        {b: (ip, INTERNAL_PORT) for b, ip in broker_ips.items()}

    r = h.run("client", [sys.executable, "-m", "minikafka", "topics", "create", TOPIC, "--partitions", "3",
                         "--replication-factor", "3", "--config", "min.insync.replicas=2",
                         "--bootstrap-server", f"{broker_ips[1]}:{INTERNAL_PORT}"])
    assert r.returncode == 0, r.stderr
    def replicated():
        parts = partitions(kafka_metadata(h))
        return len(parts) == 3 and all(len(p["isrs"]) == 3 for p in parts)

    wait_for(replicated, timeout_s=30, interval_s=0.2, message="the topic with three in-sync replicas")
    sent = produce(h, "before")

    h.link_down(f"b{VICTIM}")

    def moved_away():
        alive()
        meta = kafka_metadata(h)
        parts = partitions(meta)
        return (len(parts) == 3 and VICTIM not in {b["id"] for b in meta["brokers"]}
                and all(p["leader"] != VICTIM and VICTIM not in {r["id"] for r in p["isrs"]} for p in parts)
                and meta)

    meta = wait_for(moved_away, timeout_s=30, interval_s=0.3,
                    message=f"broker {VICTIM}'s partitions to move and the ISRs to shrink")
    assert all(len(p["isrs"]) == 2 for p in partitions(meta))
    sent += produce(h, "during")

    h.link_up(f"b{VICTIM}")

    def rejoined():
        alive()
        meta = kafka_metadata(h)
        parts = partitions(meta)
        return (len(meta.get("brokers", [])) == 3 and len(parts) == 3
                and all({r["id"] for r in p["isrs"]} == set(BROKERS) for p in parts))

    wait_for(rejoined, timeout_s=40, interval_s=0.3, message=f"broker {VICTIM} back in every ISR")

    # every acknowledged record is there, read through both listeners
    r = h.run("client", ["kcat", "-C", "-b", f"{broker_ips[1]}:{KAFKA_PORT}", "-t", TOPIC, "-o", "beginning",
                         "-e", "-q", "-f", "%s\\n"])
    assert r.returncode == 0, r.stderr
    assert set(sent) <= set(r.stdout.split()), sorted(set(sent) - set(r.stdout.split()))
    r = h.run("client", [sys.executable, "-m", "minikafka", "consume", "--topic", TOPIC, "--from-beginning",
                         "--max-messages", str(len(sent)), "--timeout-ms", "20000",
                         "--bootstrap-server", f"{broker_ips[VICTIM]}:{INTERNAL_PORT}"])
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == sorted(sent)
