"""Dynamic broker configs on real in-process brokers (harness.py): a change of the
cluster-wide default reaches every broker's services and the controller, and the config
the brokers started with is left as it was."""
from __future__ import annotations

import asyncio

from harness import Cluster, run_cluster

TOPIC = "events"
UNCLEAN = "unclean.leader.election.enable"


def test_allowing_unclean_election_in_the_brokers_default_elects_an_out_of_sync_replica():
    """A partition whose only ISR replica is down stays offline while unclean election is
    off; ``alter_broker_configs(None, unclean.leader.election.enable=true)`` (kafka-configs
    --entity-type brokers --entity-default) makes a new config on every broker: the replica
    manager and DescribeConfigs read it, and the controller elects the live out-of-sync
    replica with it.  Each broker's start-up config still says false."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=1, replication_factor=2)
        producer = await c.started(c.producer("p1", acks=1))
        await producer.send_and_wait(TOPIC, b"a", partition=0)
        leader = c.leader(TOPIC)
        assert leader is not None
        follower = next(b for b in c.leader_replica(TOPIC).isr if b != leader)
        c.crash(follower)
        for i in range(5):
            await producer.send_and_wait(TOPIC, b"b%d" % i, partition=0)
        await c.wait_until(lambda: c.isr(TOPIC) == (leader,), 60, f"broker {follower} out of the ISR")
        c.crash(leader)
        c.restart(follower)
        await c.wait_until(lambda: c.world.brokers[follower].broker_epoch > 0 and c.world.controller_id() is not None,
                           60, f"broker {follower} registered again")
        await asyncio.sleep(10)  # virtual seconds: time enough for an election that may not happen
        assert c.leader(TOPIC) is None  # offline: the ISR's only replica is down

        admin = await c.started(c.admin("a1"))
        await admin.alter_broker_configs(None, set={UNCLEAN: "true"})
        await c.wait_until(lambda: c.leader(TOPIC) == follower, 30, f"broker {follower} elected uncleanly")
        for b in c.world.live_brokers():
            services = c.world.brokers[b].services
            assert services.live.current.get(UNCLEAN) is True and services.replica_manager.setting(TOPIC, UNCLEAN)
            assert services.config.get(UNCLEAN) is False  # the start-up value, left as it was
        described = await admin.describe_broker_configs(follower)
        assert described[UNCLEAN] == ("true", "dynamic_default", False)

    run_cluster(body, seed=7, brokers=3)
