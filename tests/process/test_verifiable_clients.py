"""Kafka's own system-test workload: VerifiableProducer and VerifiableConsumer
(org.apache.kafka.tools, the programs Kafka's replication and consumer system tests drive),
unchanged, against 3 brokers through their Kafka listener while the test kills the leader of
a partition, the controller, or the group's coordinator.

Checked as Kafka's system tests check them (ProduceConsumeValidateTest.validate and the
VerifiableConsumer service's offset checks):

* every acknowledged record is consumed (none lost), at the offset its acknowledgement named;
* the log keeps each partition's records in the order they were sent, and none twice
  (the producer is idempotent, configured as Kafka's VerifiableProducer service does it;
  with its retries it gets every record acknowledged);
* a consumer never reads below the group's committed offset, never commits past what it
  read, and at the end the committed offset of every partition is its position.
"""
from __future__ import annotations

import uuid
from collections import defaultdict

import pytest

from json_lines import JsonLinesProcess
from minikafka import Admin
from process_helpers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.process

RECORDS = 3000
THROUGHPUT = 500  # records/s: the producer runs ~6 s, most of it after the kill
CONSUMERS = 2


@pytest.fixture(scope="module")
def vcluster(tmp_path_factory, request):
    """3 brokers for this module; each test brings the broker it killed back before it ends."""
    dir = tmp_path_factory.mktemp("verifiable") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3, broker_configs={"group.initial.rebalance.delay.ms": "200"})


def _java(jars, cls: str, *args: str) -> list[str]:
    return ["java", "-cp", f"{jars}/*", f"org.apache.kafka.tools.{cls}", *args]


def _leader(c, topic: str, partition: int = 0) -> int:
    with Admin(c.bootstrap) as admin:
        (desc,) = admin.describe_topics([topic])
    return desc.partitions[partition].leader


def _victim(c, kind: str, topic: str, group: str) -> int:
    """The broker that is the partition 0 leader, the controller or the group's coordinator; -1 if none answers."""
    try:
        with Admin(c.bootstrap) as admin:
            if kind == "controller":
                return admin.cluster().controller_id
            if kind == "coordinator":
                return admin.describe_group(group).coordinator
        return _leader(c, topic)
    except Exception:
        return -1


@pytest.mark.parametrize("kill,generation", [("leader", "4"), ("controller", "4"), ("coordinator", "4"),
                                             ("leader", "3.9")])
def test_verifiable_producer_and_consumers_through_a_kill(vcluster, kafka_jars, kill, generation, tmp_path):
    kafka_tools_jars = kafka_jars(generation)
    c = vcluster
    topic, group = f"verifiable-{kill}-{uuid.uuid4().hex[:6]}", f"verifiable-group-{kill}"
    with Admin(c.bootstrap) as admin:
        admin.create_topic(topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"})
    wait_for(lambda: all(_leader(c, topic, p) >= 0 for p in range(3)), 30, message="leaders for the new topic")
    consumers = [JsonLinesProcess(_java(kafka_tools_jars, "VerifiableConsumer", "--bootstrap-server", c.kafka_bootstrap,
                                        "--topic", topic, "--group-id", group, "--session-timeout", "10000",
                                        "--reset-policy", "earliest", "--verbose"),
                                  tmp_path / f"consumer-{i}.log") for i in range(CONSUMERS)]
    producer = None
    victim = None
    try:
        for con in consumers:
            con.wait_event(lambda e: e["name"] == "partitions_assigned" and e["partitions"], 120,
                           "the consumer's first partitions")
        # VerifiableProducer sets retries=0; Kafka's service turns it idempotent with these settings.
        (tmp_path / "producer.properties").write_text(
            "enable.idempotence=true\nmax.in.flight.requests.per.connection=5\nretries=1000000\n")
        producer = JsonLinesProcess(_java(kafka_tools_jars, "VerifiableProducer", "--bootstrap-server",
                                          c.kafka_bootstrap, "--topic", topic, "--max-messages", str(RECORDS),
                                          "--throughput", str(THROUGHPUT), "--acks", "-1",
                                          "--producer.config", str(tmp_path / "producer.properties")),
                                    tmp_path / "producer.log")
        acked_so_far = 0

        def a_fifth_acked(e: dict) -> bool:
            nonlocal acked_so_far
            acked_so_far += e["name"] == "producer_send_success"
            return acked_so_far >= RECORDS // 5
        producer.wait_event(a_fifth_acked, 120, "a fifth of the records acknowledged")
        victim = _victim(c, kill, topic, group)
        assert victim in (1, 2, 3), victim
        c.kill(victim, "KILL")
        wait_for(lambda: _victim(c, kill, topic, group) not in (victim, -1), 60, 0.2,
                 f"the {kill} to move off the killed broker {victim}")
        producer.wait_event(lambda e: e["name"] == "tool_data", 240, "the producer's summary")
        assert producer.wait_exit(60) == 0, producer.tail()
        acked = {(e["partition"], e["offset"]): int(e["value"])
                 for e in producer.select(lambda e: e["name"] == "producer_send_success")}

        def consumed_all() -> bool:
            got = {(e["partition"], e["offset"]) for con in consumers
                   for e in con.select(lambda e: e["name"] == "record_data")}
            return set(acked) <= got
        wait_for(consumed_all, 180, 0.5, "the consumers to read every acknowledged record")
    finally:
        codes = [con.stop() for con in consumers]
        if producer is not None:
            producer.stop()
        if victim is not None:
            c.start(victim)
    # SIGTERM: the tool's shutdown hook closes the consumer (a last commit), then the JVM exits 143.
    assert all(code in (0, 143) and con.select(lambda e: e["name"] == "shutdown_complete")
               for code, con in zip(codes, consumers)), [con.tail() for con in consumers]

    (summary,) = producer.select(lambda e: e["name"] == "tool_data")
    errors = producer.select(lambda e: e["name"] == "producer_send_error")
    assert summary["acked"] == summary["sent"] == RECORDS, (summary, errors[:3])
    assert len(acked) == RECORDS, "each acknowledgement names its own offset"
    check_consumers(consumers, acked)


def check_consumers(consumers: list[JsonLinesProcess], acked: dict[tuple[int, int], int]) -> None:
    # The log: every acknowledged record where its acknowledgement said, in send order, none twice.
    stored: dict[tuple[int, int], int] = {}
    for con in consumers:
        for e in con.select(lambda e: e["name"] == "record_data"):
            value = stored.setdefault((e["partition"], e["offset"]), int(e["value"]))
            assert value == int(e["value"]), f"two values read at {e['partition']}:{e['offset']}"
    lost = {tp: v for tp, v in acked.items() if stored.get(tp) != v}
    assert not lost, f"{len(lost)} acknowledged records not read where acknowledged, e.g. {sorted(lost.items())[:5]}"
    by_partition: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (p, o), v in stored.items():
        by_partition[p].append((o, v))
    for p, rows in by_partition.items():
        values = [v for _, v in sorted(rows)]
        assert values == sorted(values), f"partition {p} out of send order"
    all_values = [v for v in stored.values()]
    assert len(all_values) == len(set(all_values)), "a record stored twice"

    # The VerifiableConsumer service's offset checks, over all consumers' events in time order.
    events = sorted(((e["timestamp"], i, n, e) for i, con in enumerate(consumers) for n, e in enumerate(con.events)),
                    key=lambda t: t[:3])
    committed: dict[int, int] = {}
    position: dict[tuple[int, int], int] = {}  # (consumer, partition) -> next offset
    for _, i, _, e in events:
        if e["name"] == "records_consumed":
            for part in e["partitions"]:
                p = part["partition"]
                assert part["minOffset"] >= committed.get(p, 0), \
                    f"consumer {i} read partition {p} from {part['minOffset']}, below the committed {committed.get(p)}"
                position[i, p] = part["maxOffset"] + 1
        elif e["name"] == "offsets_committed" and e["success"]:
            for off in e["offsets"]:
                p = off["partition"]
                assert off["offset"] <= position.get((i, p), 0), f"consumer {i} committed {p}:{off['offset']} past its position"
                committed[p] = off["offset"]
    ends = {p: max(o for o, _ in rows) + 1 for p, rows in by_partition.items()}
    assert committed == ends, "at the end every partition's committed offset is its position"
