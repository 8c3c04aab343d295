"""The dashboard's summary counts the partitions its table shows: internal topics
(__consumer_offsets) are hidden behind a toggle, so their partitions are counted apart."""
from __future__ import annotations

import json
import urllib.request

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from process_helpers import wait_for

pytestmark = pytest.mark.process


def api_state(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=10) as resp:
        return json.load(resp)


def test_the_summary_counts_internal_partitions_apart(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("summary-counted", partitions=2, replication_factor=3)
    with Producer(cluster.bootstrap, acks="all") as producer:
        producer.send("summary-counted", b"x", partition=0).result(30)
    with Consumer(cluster.bootstrap, group_id="summary-group") as consumer:  # __consumer_offsets comes to be
        consumer.commit({TopicPartition("summary-counted", 0): 1})
    port = next(iter(cluster.brokers.values()))
    state = wait_for(lambda: (s := api_state(port))["summary"]["internal"]["partitions"] > 0 and s, 30, 0.2,
                     "__consumer_offsets on the dashboard")
    own = [p for p in state["partitions"] if not p["internal"]]
    internal = [p for p in state["partitions"] if p["internal"]]
    assert state["summary"]["partitions"] == len(own) and any(p["topic"] == "summary-counted" for p in own)
    assert state["summary"]["internal"]["partitions"] == len(internal)
    assert state["summary"]["topics"] == len({p["topic"] for p in own})
    assert state["summary"]["under_replicated"] == sum(1 for p in own if p["under_replicated"])
