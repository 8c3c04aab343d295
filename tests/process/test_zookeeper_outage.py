"""A ZooKeeper outage: the brokers keep serving, and the cluster converges afterwards with
no manual step and nothing acknowledged lost."""
from __future__ import annotations

import os
import signal
import time

import pytest

from minikafka import Admin, Producer
from minikafka.cluster.state import load
from process_helpers import read_all, wait_for
from replica_checks import post, wait_identical

pytestmark = pytest.mark.process

OUTAGE_S = 30  # of produces; with the checks after them ZooKeeper stays stopped for over a minute


def test_brokers_serve_through_a_zookeeper_outage_and_converge_after_it(make_cluster):
    c = make_cluster(brokers=3)
    topic = "outage"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})

    def led() -> bool:
        with Admin(c.bootstrap) as admin:
            (d,) = admin.describe_topics([topic])
        return all(p.leader > 0 and len(p.isr) == 3 for p in d.partitions)

    wait_for(led, 30, message="every partition led with a full ISR")
    acked: list[bytes] = []
    with Producer(c.bootstrap, acks="all") as p:
        for i in range(30):
            p.send(topic, f"before-{i}".encode()).result(30)
            acked.append(f"before-{i}".encode())
    zk_pid = load(c.dir).zookeeper.pid
    os.kill(zk_pid, signal.SIGSTOP)
    try:
        # leaders keep taking writes (acks=all while the ISR holds) and serving reads
        started = time.monotonic()
        with Producer(c.bootstrap, acks="all", delivery_timeout_ms=20000) as p:
            i = 0
            while time.monotonic() - started < OUTAGE_S:
                p.send(topic, f"during-{i}".encode()).result(20)
                acked.append(f"during-{i}".encode())
                i += 1
                time.sleep(0.2)
        assert i > 10, f"only {i} acks=all produces during the outage"
        # what needs ZooKeeper answers with a retriable error, never UNKNOWN_SERVER_ERROR
        for port in c.brokers.values():
            answer = post(port, "init_producer_id", {}, timeout_s=30)
            assert answer["error"] in ("NONE", "COORDINATOR_LOAD_IN_PROGRESS"), answer
        answer = post(next(iter(c.brokers.values())), "create_topics",
                      {"topics": [{"name": "during-outage", "num_partitions": 1, "replication_factor": 1}],
                       "timeout_ms": 0}, timeout_s=30)
        assert answer["error"] == "REQUEST_TIMED_OUT" and "ZooKeeper" in answer["message"], answer
        assert set(acked) <= set(read_all(c.bootstrap, topic, 3))
    finally:
        os.kill(zk_pid, signal.SIGCONT)
    # afterwards: a controller, every broker registered, leaders, full ISRs, identical replicas
    wait_for(lambda: c.status()["controller"] is not None, 60, message="a controller after the outage")
    wait_for(lambda: all(b["registered"] for b in c.status()["brokers"]), 60,
             message="every broker registered again")
    wait_for(led, 60, message="every partition led with a full ISR after the outage")
    with Producer(c.bootstrap, acks="all") as p:
        p.send(topic, b"after").result(30)
        acked.append(b"after")
    wait_identical(c, topic, 3, lambda part: [1, 2, 3], timeout_s=60)
    got = read_all(c.bootstrap, topic, 3)
    assert [v for v in acked if v not in set(got)] == []
