"""The admin client and the metadata cache against the fake broker, and the async clients."""
from __future__ import annotations

import asyncio

import pytest

from minikafka import errors

from client_fake_broker import FakeBroker


def test_admin(broker):
    from minikafka import Admin, Producer

    with Admin(broker.bootstrap) as admin:
        admin.create_topic("a", 2, 1)
        with pytest.raises(errors.TopicAlreadyExistsError):
            admin.create_topic("a", 2, 1)
        with pytest.raises(errors.InvalidReplicationFactorError):
            admin.create_topic("b", 1, 3)
        assert admin.list_topics() == ["a"]
        with Producer(broker.bootstrap) as p:
            p.send("a", b"x", partition=1)
        (desc,) = admin.describe_topics(["a"])
        assert desc.name == "a" and len(desc.partitions) == 2
        p1 = desc.partitions[1]
        assert (p1.leader, p1.replicas, p1.isr, p1.high_watermark, p1.log_end_offset) == (1, [1], [1], 1, 1)
        assert p1.replica_leos == {1: 1} and p1.replica_hws == {1: 1}
        with pytest.raises(errors.UnknownTopicOrPartitionError):
            admin.describe_topics(["nope"])
        cl = admin.cluster()
        assert cl.controller_id == 1 and [b.id for b in cl.brokers] == [1]
        from minikafka import TopicPartition

        outcome = admin.elect_leaders([TopicPartition("a", 0)])
        assert isinstance(outcome[TopicPartition("a", 0)], errors.ElectionNotNeededError)
        admin.delete_topic("a")
        assert admin.list_topics() == []
        with pytest.raises(errors.UnknownTopicOrPartitionError):
            admin.delete_topic("a")


def test_describe_leaves_unanswered_brokers_at_minus_one(broker):
    from minikafka.client.admin import AIOAdmin

    broker.create("t", 1)

    async def go():
        async with AIOAdmin(broker.bootstrap) as admin:
            await admin.metadata.refresh()
            # A second, unreachable broker that hosts a replica.
            admin.metadata.brokers[2] = ("127.0.0.1", 1)
            orig = admin.metadata.refresh

            async def keep_extra():
                await orig()
                admin.metadata.brokers[2] = ("127.0.0.1", 1)
                pi = admin.metadata.topics["t"].partitions[0]
                admin.metadata.topics["t"].partitions[0] = type(pi)(**{**pi.__dict__, "replicas": [1, 2]})

            admin.metadata.refresh = keep_extra
            return await admin.describe_topics()

    (desc,) = asyncio.run(go())
    assert desc.partitions[0].replica_leos == {1: 0, 2: -1}


def test_metadata_skips_a_broker_that_has_not_heard_from_the_controller(broker):
    """A broker just restarted answers metadata with no controller and no topics until the
    controller's UpdateMetadata reaches it; the client asks the next broker instead of
    taking its topics for deleted (as Kafka's clients ignore an empty metadata answer)."""
    from minikafka import Admin

    broker.create("t", 1)
    fresh = FakeBroker().start()
    try:
        fresh.heard_from_controller = False
        with Admin(f"{fresh.bootstrap},{broker.bootstrap}") as admin:
            (desc,) = admin.describe_topics(["t"])
            assert desc.name == "t"
        with Admin(fresh.bootstrap) as admin:  # no other broker: its answer is the one there is
            with pytest.raises(errors.UnknownTopicOrPartitionError):
                admin.describe_topics(["t"])
    finally:
        fresh.stop()


def test_no_broker_reachable_is_one_error():
    from minikafka import Producer

    with pytest.raises(errors.NetworkExceptionError, match="127.0.0.1:1"):
        Producer("127.0.0.1:1")


async def test_aio_clients(broker):
    from minikafka.aio import AIOAdmin, AIOConsumer, AIOProducer, TopicPartition

    async with AIOAdmin(broker.bootstrap) as admin:
        await admin.create_topic("t", 1, 1)
    async with AIOProducer(broker.bootstrap, linger_ms=0) as p:
        md = await p.send_and_wait("t", b"one")
        fut = await p.send("t", b"two")
        await p.flush()
        assert fut.done() and (await fut).offset == md.offset + 1
    async with AIOConsumer(broker.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("t", 0)])
        recs = await c.poll(timeout_ms=5000)
        assert [r.value for r in recs] == [b"one", b"two"]
        assert c.group_id is None
        with pytest.raises(errors.ClientError, match="needs a group_id"):
            c.subscribe(["t"])


def test_creating_a_topic_asks_metadata_for_that_topic_alone_and_keeps_the_others(broker):
    """After CreateTopics the admin client's cache learns the new topic from a Metadata request
    naming it (not one describing every topic of the cluster), beside the topics it knew."""
    from minikafka import Admin

    broker.create("old", 3)
    with Admin(broker.bootstrap) as admin:
        assert admin.list_topics() == ["old"]
        broker.requests.clear()
        admin.create_topic("new", 2, 1)
        asked = [body["topics"] for api, body in broker.requests if api == "metadata"]
        assert asked == [["new"]]
        meta = admin._core.metadata
        assert sorted(meta.topics) == ["new", "old"] and meta.topics["new"].partition_ids == [0, 1]
        assert meta.topics["new"].available == [0, 1]
