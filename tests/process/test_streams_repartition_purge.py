"""A Kafka Streams exactly_once_v2 application stays caught up across repartition-topic
purges and a broker kill, without one fencing or rebalance (docs/retention.md, "Producers
below the log start").

Kafka Streams deletes the records of its repartition topics up to the committed offsets
every repartition.purge.interval.ms (30 s by default, 2 s here, so that purges come often):
DeleteRecords moves the log start past every batch of the stream threads' transactional
producers. Kafka keeps their state; before minikafka did, each purge made their next
transactions fail (UNKNOWN_PRODUCER_ID), the threads were fenced and the group rebalanced.

The application (examples/java, step ``eos-soak``, two stream threads) counts the words of
its input for 60 s, which comes in bursts (1 s of input, 4 s without) so that the
application catches up in between and a purge then deletes every record of its repartition
partitions; a third of the way in, the leader of a repartition partition is SIGKILLed and
started again. The test then asserts that the final counts are exact, that
the application never left RUNNING, that its log holds no fencing or sequence error, and
that the repartition topic was purged."""
from __future__ import annotations

import re
import uuid

import pytest

from json_lines import JsonLinesProcess
from minikafka import Admin
from process_helpers import wait_for
from test_java_example import build_example

pytestmark = pytest.mark.process

SECONDS, RATE, PAUSE_S = 60, 100, 4  # input in bursts: 1 s of RATE lines a second, then PAUSE_S without
BURSTS = SECONDS // (1 + PAUSE_S)
# What a fenced or rebalancing Streams application logs (WARN and above)
TROUBLE = re.compile(r"ProducerFenced|UNKNOWN_PRODUCER_ID|UnknownProducerId|INVALID_PRODUCER_EPOCH|"
                     r"InvalidProducerEpoch|OUT_OF_ORDER_SEQUENCE|OutOfOrderSequence|TaskMigrated|rebalanc",
                     re.IGNORECASE)


@pytest.fixture(scope="module")
def disk_cluster(tmp_path_factory, request):
    from process_helpers import cluster_fixture
    return cluster_fixture(request, tmp_path_factory.mktemp("streams-purge") / "minikafka", brokers=3,
                            storage="disk", broker_configs={"transaction.state.log.num.partitions": "5"})


def _partitions(cluster, topic: str):
    with Admin(cluster.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc.partitions


def test_exactly_once_v2_stays_caught_up_across_repartition_purges_and_a_broker_kill(disk_cluster, tmp_path):
    cluster = disk_cluster
    argv = build_example()
    suffix = uuid.uuid4().hex[:6]
    app_id, source, sink = f"soak-{suffix}", f"soak-in-{suffix}", f"soak-out-{suffix}"
    repartition = f"{app_id}-soak-counts-store-repartition"
    with Admin(cluster.bootstrap) as admin:
        for topic in (source, sink):
            admin.create_topic(topic, partitions=2, replication_factor=3)
    # transaction.timeout.ms 30 s: a transaction in flight when its partition's leader dies
    # outlives the ~7 s until a new leader is elected (ZooKeeper session 6 s), as a Streams
    # user facing broker failures would set it
    app = JsonLinesProcess([*argv, "eos-soak", "--bootstrap", cluster.kafka_bootstrap, "--app-id", app_id,
                            "--input", source, "--output", sink, "--seconds", str(SECONDS), "--rate", str(RATE),
                            "--pause-ms", str(PAUSE_S * 1000), "--purge-ms", "2000", "--transaction-timeout-ms", "30000"], tmp_path / "soak.log")
    try:
        running = app.wait_event(lambda e: e["event"] == "running", 180, "the Streams application running")
        assert running["state"] == "RUNNING", app.tail()
        # a third of the way in, the leader of a repartition partition dies and comes back
        app.wait_event(lambda e: e["event"] == "progress" and e["lines"] >= RATE * BURSTS // 3, 60, "20 s of input")
        victim = _partitions(cluster, repartition)[0].leader
        cluster.kill(victim)
        wait_for(lambda: _partitions(cluster, repartition)[0].leader not in (victim, -1), timeout_s=60,
                 message="another broker leads the repartition partition")
        cluster.start(victim)
        (soak,) = [app.wait_event(lambda e: e["event"] == "soak", SECONDS + 120, "the application's result")]
        assert app.wait_exit(60) == 0, app.tail()
    finally:
        app.stop()
    assert soak["lines"] >= RATE * BURSTS
    assert soak["match"], f"counts {soak['counts']} != expected {soak['expected']}"
    assert soak["left_running"] == 0, soak["transitions"]
    trouble = [line for line in (tmp_path / "soak.log").read_text(errors="replace").splitlines()
               if TROUBLE.search(line)]
    assert trouble == [], "\n".join(trouble[:20])
    # Streams purged its repartition topic: the log start moved on every partition
    assert all(p.log_start_offset > 0 for p in _partitions(cluster, repartition))
