"""Transactions with unchanged third-party clients: the transaction coordinator,
markers, read_committed consumers, zombie fencing, a coordinator kill and the
transaction timeout (confluent-kafka, i.e. librdkafka)."""
from __future__ import annotations

import time
import uuid

import pytest

from minikafka import Admin, TopicPartition
from process_helpers import wait_for

pytestmark = pytest.mark.process

ck = pytest.importorskip("confluent_kafka")

CONFIGS = {"transaction.state.log.num.partitions": "5",
           "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    from process_helpers import start_cluster
    handle = start_cluster(tmp_path_factory.mktemp("txn") / "minikafka", brokers=3, broker_configs=CONFIGS)
    try:
        yield handle
    finally:
        handle.down()


def new_topic(cluster, partitions=2) -> str:
    name = f"tx-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(name, partitions=partitions, replication_factor=3)
    return name


def producer(cluster, tid: str, **extra) -> "ck.Producer":
    conf = {"bootstrap.servers": cluster.kafka_bootstrap, "transactional.id": tid, "linger.ms": 5}
    conf.update(extra)
    return ck.Producer(conf)


def consume(cluster, topic: str, isolation: str, expect: int, partitions: int = 2, timeout_s: float = 30) -> list:
    c = ck.Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                     "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        got: list = []
        deadline = time.monotonic() + timeout_s
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        # a little longer: nothing more may come
        end = time.monotonic() + 2
        while time.monotonic() < end:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
        return got
    finally:
        c.close()


def describe(cluster, tid: str):
    with Admin(cluster.bootstrap) as admin:
        return admin.describe_transactions([tid])[0]


def test_commit_is_visible_to_read_committed_and_abort_is_not(txn_cluster):
    topic = new_topic(txn_cluster)
    p = producer(txn_cluster, f"t-{uuid.uuid4().hex[:6]}")
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"c{i}".encode(), partition=i % 2)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"a{i}".encode(), partition=i % 2)
    p.flush(30)
    p.abort_transaction(60)
    committed = consume(txn_cluster, topic, "read_committed", 10)
    assert sorted(committed) == sorted(f"c{i}".encode() for i in range(10))
    everything = consume(txn_cluster, topic, "read_uncommitted", 15)
    assert sorted(everything) == sorted([f"c{i}".encode() for i in range(10)] + [f"a{i}".encode() for i in range(5)])
    with Admin(txn_cluster.bootstrap) as admin:
        configs = admin.describe_configs("__transaction_state")
    # as Kafka's TransactionStateManager creates it: compacted, never unclean, stored uncompressed
    assert configs["cleanup.policy"][0] == "compact" and configs["unclean.leader.election.enable"][0] == "false"
    assert configs["compression.type"] == ("uncompressed", "topic")


def test_open_transaction_is_invisible_until_committed(txn_cluster):
    topic = new_topic(txn_cluster)
    tid = f"t-{uuid.uuid4().hex[:6]}"
    p = producer(txn_cluster, tid)
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, value=f"o{i}".encode(), partition=0)
    p.flush(30)
    d = wait_for(lambda: (lambda d: d if d.state == "Ongoing" else None)(describe(txn_cluster, tid)), 20)
    assert d.partitions == [TopicPartition(topic, 0)] and d.transaction_start_time_ms > 0
    assert consume(txn_cluster, topic, "read_committed", 1, timeout_s=3) == []
    p.commit_transaction(60)
    assert len(consume(txn_cluster, topic, "read_committed", 4)) == 4
    wait_for(lambda: describe(txn_cluster, tid).state == "CompleteCommit", 20)


def test_a_second_producer_with_the_same_id_fences_the_first(txn_cluster):
    topic = new_topic(txn_cluster)
    tid = f"t-{uuid.uuid4().hex[:6]}"
    first = producer(txn_cluster, tid)
    first.init_transactions(60)
    first.begin_transaction()
    first.produce(topic, value=b"zombie", partition=0)
    first.flush(30)
    second = producer(txn_cluster, tid)
    second.init_transactions(60)  # aborts the first one's transaction and bumps the epoch
    second.begin_transaction()
    second.produce(topic, value=b"winner", partition=0)
    second.commit_transaction(60)
    with pytest.raises(ck.KafkaException) as info:
        first.produce(topic, value=b"late", partition=0)
        first.commit_transaction(30)
    assert info.value.args[0].fatal() or "fenced" in str(info.value).lower()
    assert consume(txn_cluster, topic, "read_committed", 1) == [b"winner"]


def test_a_transaction_past_its_timeout_is_aborted(txn_cluster):
    topic = new_topic(txn_cluster)
    tid = f"t-{uuid.uuid4().hex[:6]}"
    p = producer(txn_cluster, tid, **{"transaction.timeout.ms": 2000})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(topic, value=b"slow", partition=1)
    p.flush(30)
    d = wait_for(lambda: (lambda d: d if d.state == "CompleteAbort" else None)(describe(txn_cluster, tid)), 30,
                 message="the coordinator to abort the timed-out transaction")
    assert d.producer_epoch == 1
    with pytest.raises(ck.KafkaException):
        p.commit_transaction(30)
    assert consume(txn_cluster, topic, "read_committed", 1, timeout_s=3) == []
    assert consume(txn_cluster, topic, "read_uncommitted", 1) == [b"slow"]


def test_a_larger_timeout_than_the_brokers_maximum_is_refused(txn_cluster):
    p = producer(txn_cluster, f"t-{uuid.uuid4().hex[:6]}", **{"transaction.timeout.ms": 2_000_000})
    with pytest.raises(ck.KafkaException) as info:
        p.init_transactions(30)
    assert "INVALID_TRANSACTION_TIMEOUT" in str(info.value) or "timeout" in str(info.value).lower()


def test_the_new_coordinator_finishes_a_prepared_commit(make_cluster):
    cluster = make_cluster(brokers=3, broker_configs=CONFIGS)
    topic = new_topic(cluster)
    tid = f"t-{uuid.uuid4().hex[:6]}"
    p = producer(cluster, tid)
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=f"k{i}".encode(), partition=i % 2)
    p.flush(30)
    with Admin(cluster.bootstrap) as admin:
        coordinator = admin.find_transaction_coordinator(tid)
    p.commit_transaction(60)  # answered once PrepareCommit is written; markers may still be on their way
    cluster.kill(coordinator, "KILL")
    try:
        def moved():
            with Admin(",".join(cluster.endpoint(b) for b in cluster.brokers if b != coordinator)) as admin:
                try:
                    return admin.find_transaction_coordinator(tid) != coordinator
                except Exception:
                    return False
        wait_for(moved, 60, 0.5, "another broker to coordinate the transactional id")
        assert len(consume(cluster, topic, "read_committed", 6)) == 6
        # the same transactional id goes on with the new coordinator
        p2 = producer(cluster, tid)
        p2.init_transactions(60)
        p2.begin_transaction()
        p2.produce(topic, value=b"after", partition=0)
        p2.commit_transaction(60)
        assert len(consume(cluster, topic, "read_committed", 7)) == 7
    finally:
        cluster.start(coordinator)


# -- views: our CLI and Kafka's kafka-transactions.sh ---------------------------------------

def _open_transaction(cluster, topic: str, tid: str):
    p = producer(cluster, tid)
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=1)
    p.flush(30)
    wait_for(lambda: describe(cluster, tid).state == "Ongoing", 20)
    return p


def test_cli_lists_and_describes_transactions(txn_cluster):
    from process_helpers import run_cli
    topic = new_topic(txn_cluster)
    tid = f"t-{uuid.uuid4().hex[:6]}"
    p = _open_transaction(txn_cluster, topic, tid)
    try:
        r = run_cli("transactions", "list", "--bootstrap", txn_cluster.bootstrap)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        assert any(line.split()[0] == tid and line.split()[3] == "Ongoing" for line in lines[1:])
        r = run_cli("transactions", "describe", "--transactional-id", tid, "--bootstrap", txn_cluster.bootstrap)
        assert r.returncode == 0, r.stderr
        header, row = r.stdout.splitlines()
        assert header.split()[:5] == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                                      "TransactionState"]
        assert row.split()[1] == tid and row.split()[4] == "Ongoing" and row.split()[-1] == f"{topic}-1"
        r = run_cli("transactions", "describe", "--transactional-id", "", "--bootstrap", txn_cluster.bootstrap)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    finally:
        p.abort_transaction(30)


@pytest.mark.parametrize("generation", ["4", "3.9"])
def test_kafka_transactions_tool_lists_and_describes(txn_cluster, kafka_jars, generation):
    from kafka_tools import run_tool, tool_class
    topic = new_topic(txn_cluster)
    tid = f"t-{uuid.uuid4().hex[:6]}"
    p = _open_transaction(txn_cluster, topic, tid)
    try:
        cls = tool_class(generation, "kafka-transactions")
        r = run_tool(kafka_jars(generation), cls, "--bootstrap-server", txn_cluster.kafka_bootstrap, "list")
        assert r.returncode == 0, r.stdout + r.stderr
        rows = [line.split() for line in r.stdout.splitlines()]
        assert rows[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        assert [tid, "Ongoing"] in [[row[0], row[-1]] for row in rows[1:]]
        r = run_tool(kafka_jars(generation), cls, "--bootstrap-server", txn_cluster.kafka_bootstrap, "describe",
                     "--transactional-id", tid)
        assert r.returncode == 0, r.stdout + r.stderr
        header, row = r.stdout.splitlines()[:2]
        assert "TransactionState" in header and tid in row and "Ongoing" in row and f"{topic}-1" in row
    finally:
        p.abort_transaction(30)
