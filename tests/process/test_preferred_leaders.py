"""Preferred leaders: auto.leader.rebalance.enable moves leadership back to the first
replica once it is alive and in sync again."""
from __future__ import annotations

import pytest

from minikafka import Admin, Producer
from process_helpers import wait_for


def _leaders(handle, topic: str) -> dict[int, int]:
    with Admin(handle.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return {p.partition: p.leader for p in desc.partitions}


def _isr_full(handle, topic: str) -> bool:
    with Admin(handle.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return all(sorted(p.isr) == sorted(p.replicas) for p in desc.partitions)


@pytest.mark.process
def test_auto_rebalance_returns_leadership_to_the_preferred_replica(make_cluster):
    handle = make_cluster(broker_configs={"leader.imbalance.check.interval.seconds": "2"})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("pref", partitions=3, replication_factor=3)
    assert _leaders(handle, "pref") == {0: 1, 1: 2, 2: 3}
    with Producer(handle.bootstrap, acks="all") as p:
        for i in range(30):
            p.send("pref", f"v{i}".encode(), partition=i % 3)
        p.flush()
    handle.kill(1, "KILL")
    wait_for(lambda: _leaders(handle, "pref")[0] not in (1, -1), timeout_s=30, message="partition 0 led by another broker")
    handle.start(1)
    wait_for(lambda: _isr_full(handle, "pref"), timeout_s=30, message="broker 1 back in every ISR")
    wait_for(lambda: _leaders(handle, "pref") == {0: 1, 1: 2, 2: 3}, timeout_s=30,
             message="the controller's imbalance check moving partition 0 back to broker 1")


@pytest.mark.process
def test_auto_rebalance_off_keeps_leaders_where_they_are(make_cluster):
    handle = make_cluster(broker_configs={"leader.imbalance.check.interval.seconds": "1",
                                          "auto.leader.rebalance.enable": "false"})
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("stay", partitions=1, replication_factor=2)
    handle.kill(1, "KILL")
    wait_for(lambda: _leaders(handle, "stay")[0] == 2, timeout_s=30, message="broker 2 leading")
    handle.start(1)
    wait_for(lambda: _isr_full(handle, "stay"), timeout_s=60, message="broker 1 back in the ISR")
    # Several imbalance intervals later nothing moved; then an explicit election does it.
    with Admin(handle.bootstrap) as admin:
        wait_for(lambda: admin.describe_topics(["stay"])[0].partitions[0].replica_leos.get(1) == 0, timeout_s=10,
                 message="broker 1 caught up")
        assert _leaders(handle, "stay")[0] == 2
        admin.elect_leaders()
    wait_for(lambda: _leaders(handle, "stay")[0] == 1, timeout_s=20, message="preferred election to broker 1")
