"""A cluster started with Kafka's defaults (none of the test suite's lighter settings)
behaves as Apache Kafka 3.9 does with its defaults: __consumer_offsets has 50 partitions."""
from __future__ import annotations

import uuid

import pytest

from minikafka import Admin, Consumer, TopicPartition
from process_helpers import start_cluster, stop_cluster

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def plain(tmp_path_factory, request):
    """3 brokers with Kafka's defaults (the ``cluster`` fixture lowers some), stopped by pid after."""
    dir = tmp_path_factory.mktemp("defaults") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3)


def test_consumer_offsets_gets_kafkas_50_partitions_on_the_first_commit(plain):
    topic = f"defaults-{uuid.uuid4().hex[:8]}"
    with Admin(plain.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3)
    with Consumer(plain.bootstrap, group_id="defaults", enable_auto_commit=False) as c:
        c.commit({TopicPartition(topic, 0): 0})
    with Admin(plain.bootstrap) as admin:
        [offsets] = admin.describe_topics(["__consumer_offsets"])
    assert len(offsets.partitions) == 50
    assert {len(p.replicas) for p in offsets.partitions} == {3}
