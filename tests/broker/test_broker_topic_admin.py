"""CreateTopics on real in-process brokers (harness.py): the topic admin's validation."""
from __future__ import annotations

import asyncio

import pytest

from harness import Cluster, run_cluster
from minikafka import errors


def _nothing_created(c: Cluster, name: str) -> None:
    assert not any(path == f"/brokers/topics/{name}" or path.startswith(f"/brokers/topics/{name}/")
                   or path == f"/config/topics/{name}" for path in c.world.zk.nodes), \
        sorted(p for p in c.world.zk.nodes if name in p)
    for b in c.world.live_brokers():
        assert not any(t == name for t, _ in c.world.brokers[b].replica_manager.partitions), b


@pytest.mark.parametrize("config,partitions,replication_factor,error", [
    ({"cleanup.policy": "bogus"}, 1, 3, "INVALID_CONFIG"),
    ({"min.insync.replicas": "0"}, 1, 3, "INVALID_CONFIG"),
    ({"no.such.setting": "1"}, 1, 3, "INVALID_CONFIG"),
    ({}, 1, 4, "INVALID_REPLICATION_FACTOR"),
    ({}, 0, 3, "INVALID_PARTITIONS"),
])
def test_a_topic_with_an_invalid_setting_is_refused_with_kafkas_error_and_nothing_is_created(
        config, partitions, replication_factor, error):
    """CreateTopics validates before it writes: an unknown or invalid topic config
    (INVALID_CONFIG), a replication factor above the live brokers
    (INVALID_REPLICATION_FACTOR), fewer than one partition (INVALID_PARTITIONS) refuse the
    topic with Kafka's error and leave no trace: no znode, no replica, not in Metadata;
    the same name is then free for a valid topic."""

    async def body(c: Cluster) -> None:
        admin = await c.started(c.admin("a1"))
        with pytest.raises(errors.KafkaError) as refused:
            await admin.create_topic("payments", partitions, replication_factor, config=config)
        assert refused.value.code.name == error, refused.value
        await asyncio.sleep(2.0)  # nor later: nothing was left to finish the creation
        assert "payments" not in await admin.list_topics()
        _nothing_created(c, "payments")

        await c.create_topic("payments", partitions=2, replication_factor=3)
        assert "payments" in await admin.list_topics()
        assert "/brokers/topics/payments" in c.world.zk.nodes  # where the check above looked

    run_cluster(body, seed=21)
