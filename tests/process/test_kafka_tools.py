"""Apache Kafka's own command-line tools, unchanged, against a 3-broker cluster through
the Kafka listener, for both client generations (tests/kafka_tools.py; the jars come
from scripts/kafka-jars.sh).  One cluster for the module: no test here kills a broker
(tests/process/test_kafka_tools_failover.py does).  Each test asserts what the tool prints."""
from __future__ import annotations

import json
import re
import signal
import subprocess

import pytest

from kafka_tools import GENERATIONS, run_tool, tool_class
from minikafka.protocol.kafka import apis
from process_helpers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.process

GEN = pytest.mark.parametrize("generation", GENERATIONS)


@pytest.fixture(scope="module")
def tools_cluster(tmp_path_factory, request):
    dir = tmp_path_factory.mktemp("kafka-tools") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3, broker_configs={"group.initial.rebalance.delay.ms": "200"})


class Tools:
    """Kafka's bin/*.sh of one generation, pointed at the cluster's Kafka listeners."""

    def __init__(self, jars, generation: str, bootstrap: str) -> None:
        self.jars, self.generation, self.bootstrap = jars, generation, bootstrap

    def run(self, script: str, *args: str, ok: bool = True, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        proc = run_tool(self.jars, tool_class(self.generation, script), "--bootstrap-server", self.bootstrap,
                        *args, input=input, timeout=timeout)
        if ok:
            assert proc.returncode == 0, f"{script} {args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return proc

    def popen(self, script: str, *args: str) -> subprocess.Popen:
        from kafka_tools import JAVA_LOGGING
        return subprocess.Popen(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *JAVA_LOGGING,
                                 "-cp", f"{self.jars}/*", tool_class(self.generation, script),
                                 "--bootstrap-server", self.bootstrap, *args],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def reader(self, *props: str) -> list[str]:
        """ConsoleProducer's ``--property k=v`` (``--reader-property`` from 4.x on)."""
        flag = "--property" if self.generation == "3.9" else "--reader-property"
        return [x for p in props for x in (flag, p)]

    def formatter(self, *props: str) -> list[str]:
        """ConsoleConsumer's ``--property k=v`` (``--formatter-property`` from 4.x on)."""
        flag = "--property" if self.generation == "3.9" else "--formatter-property"
        return [x for p in props for x in (flag, p)]

    def topic(self, name: str, *args: str) -> None:
        out = self.run("kafka-topics", "--create", "--topic", name, *args).stdout
        assert f"Created topic {name}." in out

    def produce(self, topic: str, lines: list[str], *props: str) -> None:
        self.run("kafka-console-producer", "--topic", topic, *props, input="".join(f"{x}\n" for x in lines))

    def consume(self, topic: str, count: int, *args: str) -> list[str]:
        out = self.run("kafka-console-consumer", "--topic", topic, "--from-beginning", "--max-messages", str(count),
                       "--timeout-ms", "60000", *args).stdout
        return [line for line in out.splitlines() if line]


@pytest.fixture
def tools(kafka_jars, tools_cluster, generation):
    return Tools(kafka_jars(generation), generation, tools_cluster.kafka_bootstrap)


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


def _topic_name(prefix: str, generation: str) -> str:
    return f"{prefix}-{generation.replace('.', '')}"


@GEN
def test_topic_command_create_describe_alter_delete(tools, generation):
    t = _topic_name("topics", generation)
    tools.topic(t, "--partitions", "2", "--replication-factor", "3",
                "--config", "retention.ms=3600000", "--config", "min.insync.replicas=2")
    out = tools.run("kafka-topics", "--describe", "--topic", t).stdout
    head = out.splitlines()[0]
    assert f"Topic: {t}" in head and "PartitionCount: 2" in head and "ReplicationFactor: 3" in head
    assert "min.insync.replicas=2" in head and "retention.ms=3600000" in head
    parts = re.findall(r"Partition: (\d+)\s+Leader: (\d+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]+)", out)
    assert [p[0] for p in parts] == ["0", "1"]
    assert all(len(p[2].split(",")) == 3 and p[1] in p[2].split(",") for p in parts)
    # Creating it again is refused with Kafka's error.
    again = tools.run("kafka-topics", "--create", "--topic", t, "--partitions", "1", ok=False)
    assert again.returncode != 0 and "already exists" in (again.stdout + again.stderr)

    tools.run("kafka-topics", "--alter", "--topic", t, "--partitions", "4")
    def four() -> bool:
        d = tools.run("kafka-topics", "--describe", "--topic", t).stdout
        return "PartitionCount: 4" in d and len(re.findall(r"Leader: [1-3]\b", d)) == 4
    wait_for(four, 60, 0.5, "4 partitions with leaders")
    # Fewer partitions than now: INVALID_PARTITIONS.
    fewer = tools.run("kafka-topics", "--alter", "--topic", t, "--partitions", "2", ok=False)
    assert fewer.returncode != 0 and "InvalidPartitionsException" in (fewer.stdout + fewer.stderr)
    assert t in tools.run("kafka-topics", "--list").stdout.split()

    tools.run("kafka-topics", "--delete", "--topic", t)
    wait_for(lambda: t not in tools.run("kafka-topics", "--list").stdout.split(), 60, 0.5, f"{t} deleted")


@GEN
def test_console_producer_and_consumer_keys_headers_group(tools, generation):
    t = _topic_name("console", generation)
    group = _topic_name("console-group", generation)
    tools.topic(t, "--partitions", "1", "--replication-factor", "3")
    tools.produce(t, ["k1:v1", "k2:v2"], *tools.reader("parse.key=true", "key.separator=:"))
    tools.produce(t, ["h1:a,h2:b\tk3\tv3"], *tools.reader("parse.key=true", "parse.headers=true"))
    lines = tools.consume(t, 3, "--group", group,
                          *tools.formatter("print.key=true", "print.headers=true", "key.separator=|"))
    assert lines == ["NO_HEADERS|k1|v1", "NO_HEADERS|k2|v2", "h1:a,h2:b|k3|v3"], lines
    # The group committed its position: another run of the group reads only what comes next.
    tools.produce(t, ["k4:v4"], *tools.reader("parse.key=true", "key.separator=:"))
    lines = tools.consume(t, 1, "--group", group, *tools.formatter("print.key=true"))
    assert lines == ["k4\tv4"], lines
    # Without a group, --from-beginning reads everything again, values only.
    assert tools.consume(t, 4) == ["v1", "v2", "v3", "v4"]


@pytest.mark.parametrize("generation", ["3.9"])  # its --consumer-property is current
def test_console_consumer_reads_through_incremental_fetch_sessions(tools, tools_cluster, generation):
    """Kafka's Java consumer opens a fetch session (KIP-227) with its first fetch; with
    max.partition.fetch.bytes=1 each answer holds one batch, so it reads the three batches through
    incremental fetches, in order and complete."""
    from test_metrics import scrape

    def incremental() -> float:
        return sum(scrape(p).get_value("minikafka_incremental_fetches_total", fetcher="consumer")
                   for p in tools_cluster.brokers.values())

    t = _topic_name("sessions", generation)
    tools.topic(t, "--partitions", "1", "--replication-factor", "3")
    for batch in (["a", "b"], ["c"], ["d", "e"]):
        tools.produce(t, batch)
    before = incremental()
    lines = tools.consume(t, 5, "--consumer-property", "max.partition.fetch.bytes=1")
    assert lines == ["a", "b", "c", "d", "e"], lines
    assert incremental() >= before + 2


@GEN
def test_consumer_group_command(tools, generation):
    t = _topic_name("groups", generation)
    group = _topic_name("cgc", generation)
    tools.topic(t, "--partitions", "2", "--replication-factor", "3")
    tools.produce(t, [f"v{i}" for i in range(6)], "--producer-property", "partitioner.class="
                  "org.apache.kafka.clients.producer.RoundRobinPartitioner")
    # A member: a console consumer that stays in the group.
    # (a short session: should the member not leave on SIGTERM, the group empties soon anyway)
    member = tools.popen("kafka-console-consumer", "--topic", t, "--group", group, "--from-beginning",
                         "--consumer-property", "session.timeout.ms=6000")
    try:
        def described() -> list[list[str]] | None:
            out = tools.run("kafka-consumer-groups", "--describe", "--group", group, "--members").stdout
            rows = [r for r in _rows(out) if r[0] == group]
            return rows if rows and rows[0][-1] == "2" else None
        rows = wait_for(described, 60, 0.5, "the console consumer in the group with 2 partitions")
        assert "console-consumer" in rows[0][3] or rows[0][3].startswith("console")
        assert group in tools.run("kafka-consumer-groups", "--list").stdout.split()

        def caught_up() -> list[list[str]] | None:
            out = tools.run("kafka-consumer-groups", "--describe", "--group", group).stdout
            rows = [r for r in _rows(out) if r[0] == group and r[1] == t]
            return rows if len(rows) == 2 and all(r[5] == "0" and r[3] == r[4] for r in rows) else None
        rows = wait_for(caught_up, 60, 0.5, "the member's committed offsets at the log end")
        assert sorted(int(r[3]) for r in rows) == [3, 3] and all(r[6] != "-" for r in rows)
        # An active member subscribes to the topic: its offsets cannot be deleted.
        busy = tools.run("kafka-consumer-groups", "--delete-offsets", "--group", group, "--topic", t, ok=False)
        assert "GroupSubscribedToTopicException" in busy.stdout + busy.stderr
        # Nor can the group itself.
        busy = tools.run("kafka-consumer-groups", "--delete", "--group", group, ok=False)
        assert "NON_EMPTY_GROUP" in busy.stdout + busy.stderr or "not empty" in busy.stdout + busy.stderr
    finally:
        member.send_signal(signal.SIGTERM)  # the shutdown hook closes the consumer: it leaves the group
        try:
            member.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # stopped by its pid, whatever happens
            member.kill()
            member.communicate()
    def empty() -> bool | str:
        out = tools.run("kafka-consumer-groups", "--describe", "--group", group, "--state").stdout
        return "Empty" in out.split() or out
    wait_for(lambda: empty() is True, 60, 0.5, f"the group empty: {empty()}")
    # Lag: three more records the group has not read.
    tools.produce(t, ["a", "b", "c"], "--producer-property", "partitioner.class="
                  "org.apache.kafka.clients.producer.RoundRobinPartitioner")
    out = tools.run("kafka-consumer-groups", "--describe", "--group", group).stdout
    rows = [r for r in _rows(out) if r[0] == group and r[1] == t]
    assert sum(int(r[5]) for r in rows) == 3 and all(r[6] == "-" for r in rows), out

    reset = ("--reset-offsets", "--group", group, "--topic", t, "--to-earliest")
    out = tools.run("kafka-consumer-groups", *reset, "--dry-run").stdout
    # (3.9 prints the table's rows without line breaks)
    planned = re.findall(rf"{re.escape(group)}\s+{re.escape(t)}\s+(\d+)\s+(\d+)", out)
    assert sorted(planned) == [("0", "0"), ("1", "0")], out
    out = tools.run("kafka-consumer-groups", "--describe", "--group", group).stdout
    assert all(r[3] != "0" for r in _rows(out) if r[0] == group and r[1] == t), "a dry run changed offsets"
    tools.run("kafka-consumer-groups", *reset, "--execute")
    out = tools.run("kafka-consumer-groups", "--describe", "--group", group).stdout
    rows = [r for r in _rows(out) if r[0] == group and r[1] == t]
    assert [r[3] for r in rows] == ["0", "0"] and sum(int(r[5]) for r in rows) == 9, out

    out = tools.run("kafka-consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{t}:1").stdout
    assert re.search(rf"{re.escape(t)}\s+1\s+Successful", out), out
    out = tools.run("kafka-consumer-groups", "--describe", "--group", group).stdout
    assert [r[2] for r in _rows(out) if r[0] == group and r[1] == t] == ["0"], out

    out = tools.run("kafka-consumer-groups", "--delete", "--group", group).stdout
    assert f"Deletion of requested consumer groups ('{group}') was successful." in out
    assert group not in tools.run("kafka-consumer-groups", "--list").stdout.split()


@GEN
def test_config_command_topics_and_brokers(tools, generation):
    t = _topic_name("configs", generation)
    tools.topic(t, "--partitions", "1", "--replication-factor", "3")
    base = ("--entity-type", "topics", "--entity-name", t)
    out = tools.run("kafka-configs", *base, "--alter", "--add-config", "retention.ms=7200000,cleanup.policy=compact").stdout
    assert f"Completed updating config for topic {t}." in out
    out = tools.run("kafka-configs", *base, "--describe").stdout
    assert "retention.ms=7200000 sensitive=false" in out and "cleanup.policy=compact sensitive=false" in out
    tools.run("kafka-configs", *base, "--alter", "--delete-config", "cleanup.policy")
    out = tools.run("kafka-configs", *base, "--describe").stdout
    assert "retention.ms=7200000" in out and "cleanup.policy" not in out
    bad = tools.run("kafka-configs", *base, "--alter", "--add-config", "retention.ms=soon", ok=False)
    assert bad.returncode != 0 and "InvalidConfigurationException" in bad.stdout + bad.stderr

    # Brokers: one broker's dynamic config, then the cluster-wide default.
    broker = ("--entity-type", "brokers", "--entity-name", "2")
    tools.run("kafka-configs", *broker, "--alter", "--add-config", "log.retention.ms=86400000")
    out = tools.run("kafka-configs", *broker, "--describe").stdout
    assert "log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=86400000" in out
    tools.run("kafka-configs", *broker, "--alter", "--delete-config", "log.retention.ms")
    assert "log.retention.ms" not in tools.run("kafka-configs", *broker, "--describe").stdout
    default = ("--entity-type", "brokers", "--entity-default")
    out = tools.run("kafka-configs", *default, "--alter", "--add-config", "log.retention.ms=90000000").stdout
    assert "Completed updating default config for brokers in the cluster." in out
    assert "log.retention.ms=90000000" in tools.run("kafka-configs", *default, "--describe").stdout
    tools.run("kafka-configs", *default, "--alter", "--delete-config", "log.retention.ms")
    assert "log.retention.ms" not in tools.run("kafka-configs", *default, "--describe").stdout


@GEN
def test_delete_records_and_get_offset_shell(tools, generation, tmp_path):
    t = _topic_name("records", generation)
    tools.topic(t, "--partitions", "2", "--replication-factor", "3")
    tools.produce(t, [f"v{i}" for i in range(4)], "--producer-property", "partitioner.class="
                  "org.apache.kafka.clients.producer.RoundRobinPartitioner")
    out = tools.run("kafka-get-offsets", "--topic", t).stdout
    assert sorted(out.split()) == [f"{t}:0:2", f"{t}:1:2"], out
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": t, "partition": 0, "offset": 1}]}))
    out = tools.run("kafka-delete-records", "--offset-json-file", str(plan)).stdout
    assert f"partition: {t}-0\tlow_watermark: 1" in out, out
    out = tools.run("kafka-get-offsets", "--topic", t, "--time", "-2").stdout
    assert sorted(out.split()) == [f"{t}:0:1", f"{t}:1:0"], out
    # Beyond the high watermark: OFFSET_OUT_OF_RANGE, by Kafka's name.
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": t, "partition": 1, "offset": 99}]}))
    out = tools.run("kafka-delete-records", "--offset-json-file", str(plan), ok=False)
    assert "OffsetOutOfRangeException" in out.stdout + out.stderr
    # --time -1 (latest) with a partition filter.
    out = tools.run("kafka-get-offsets", "--topic", t, "--partitions", "1", "--time", "-1").stdout
    assert out.split() == [f"{t}:1:2"]


@GEN
def test_reassign_partitions_generate_execute_verify(tools, generation, tmp_path):
    t = _topic_name("reassign", generation)
    tools.topic(t, "--replica-assignment", "1:2,2:3")
    moves = tmp_path / "topics.json"
    moves.write_text(json.dumps({"version": 1, "topics": [{"topic": t}]}))
    out = tools.run("kafka-reassign-partitions", "--topics-to-move-json-file", str(moves), "--broker-list", "1,2,3",
                    "--generate").stdout
    current, proposed = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert {(p["partition"], tuple(p["replicas"])) for p in current["partitions"]} == {(0, (1, 2)), (1, (2, 3))}
    assert {p["partition"] for p in proposed["partitions"]} == {0, 1}

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": t, "partition": 0, "replicas": [3, 1]}]}))
    out = tools.run("kafka-reassign-partitions", "--reassignment-json-file", str(plan), "--execute").stdout
    assert f"Successfully started partition reassignment for {t}-0" in out, out
    # --verify also clears the replication throttles (the brokers' throttled rates and the
    # topic's throttled replica lists), as after a reassignment run with --throttle
    verify = ("--reassignment-json-file", str(plan), "--verify")
    wait_for(lambda: f"Reassignment of partition {t}-0 is completed." in
             tools.run("kafka-reassign-partitions", *verify).stdout, 90, 0.5, "the reassignment to complete")
    out = tools.run("kafka-topics", "--describe", "--topic", t).stdout
    assert re.search(r"Partition: 0\s+Leader: [13]\s+Replicas: 3,1\s", out), out
    assert "No partition reassignments found." in tools.run("kafka-reassign-partitions", "--list").stdout


@GEN
def test_leader_election_command_with_nothing_to_elect(tools, generation):
    t = _topic_name("elect", generation)
    tools.topic(t, "--replica-assignment", "2:3")
    wait_for(lambda: "Leader: 2" in tools.run("kafka-topics", "--describe", "--topic", t).stdout, 60, 0.5)
    args = ("--topic", t, "--partition", "0")
    out = tools.run("kafka-leader-election", "--election-type", "preferred", *args).stdout
    assert f"Valid replica already elected for partitions {t}-0" in out, out
    out = tools.run("kafka-leader-election", "--election-type", "unclean", *args).stdout
    assert f"Valid replica already elected for partitions {t}-0" in out, out
    bad = tools.run("kafka-leader-election", "--election-type", "preferred", "--topic", "no-such-topic",
                    "--partition", "0", ok=False)
    assert "UnknownTopicOrPartitionException" in bad.stdout + bad.stderr


# The APIs Kafka's Java AdminClient, consumer and producer send for what the tools above
# do; each must be served in a range that includes the version the client picks.
USED_BY_TOOLS = ("Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
                 "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "ApiVersions",
                 "CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "DescribeConfigs",
                 "AlterConfigs", "IncrementalAlterConfigs", "CreatePartitions", "DeleteGroups", "ElectLeaders",
                 "AlterPartitionReassignments", "ListPartitionReassignments", "OffsetDelete", "DescribeLogDirs",
                 "DescribeCluster")


@GEN
def test_broker_api_versions_command_matches_what_is_served(tools, tools_cluster, generation):
    out = tools.run("kafka-broker-api-versions").stdout
    blocks = re.findall(r"^(\S+) \(id: (\d+) rack: \S+(?: isFenced: \S+)?\) -> \((.*?)^\)", out, re.M | re.S)
    assert sorted(int(b[1]) for b in blocks) == [1, 2, 3], out
    for _, _, body in blocks:
        seen = {}
        for name, key, rest in re.findall(r"^\s*(\w+)\((\d+)\): (.*?),?$", body, re.M):
            seen[name] = (int(key), rest)
        for api in apis.APIS.values():
            key, rest = seen[api.name]
            assert key == api.key
            m = re.match(r"(\d+)(?: to (\d+))? \[usable: (\d+)\]", rest)
            assert m, f"{api.name}: {rest} (the client cannot use the range served)"
            low, usable = int(m[1]), int(m[3])
            high = int(m[2]) if m[2] is not None else low
            assert (low, high) == (api.min_version, api.max_version), api.name
            assert api.min_version <= usable <= api.max_version
        for name in USED_BY_TOOLS:
            assert not seen[name][1].startswith("UNSUPPORTED"), name
        unserved = {n for n, (k, r) in seen.items() if k not in apis.APIS}
        assert all(seen[n][1] == "UNSUPPORTED" for n in unserved)
