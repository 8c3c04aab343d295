"""What a Kafka user types works: kafka-topics' ``--topic T`` and its broker defaults for
a topic created without a count or a factor, kafka-console-consumer's ``--property
print.*``, kafka-consumer-groups' ``--group G`` and ``--reset-offsets`` (a dry run
unless ``--execute``, refused for an active group), and internal topics after the
others (``--exclude-internal`` leaves them out)."""
from __future__ import annotations

import json
import re

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from process_helpers import run_cli, wait_for

pytestmark = pytest.mark.process


def one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minikafka: error:"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture(scope="module")
def defaults_cluster(tmp_path_factory, request):
    """Three brokers whose num.partitions (4) and default.replication.factor (2) differ from
    Kafka's and our defaults, so a topic created without them shows where its numbers came from."""
    from process_helpers import start_cluster, stop_cluster

    dir = tmp_path_factory.mktemp("habits") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, broker_configs={"num.partitions": "4", "default.replication.factor": "2",
                                              "group.initial.rebalance.delay.ms": "200"})


def test_kafka_topics_spellings_and_broker_defaults(defaults_cluster):
    boot = ("--bootstrap-server", defaults_cluster.bootstrap)
    created = run_cli("topics", "create", "--topic", "habits-defaults", *boot)
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "Created topic habits-defaults."
    described = run_cli("topics", "describe", "--topic", "habits-defaults", *boot)
    assert re.fullmatch(r"Topic: habits-defaults\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 4\tReplicationFactor: 2",
                        described.stdout.splitlines()[0])
    # one of the two given: the other is the broker's
    assert run_cli("topics", "create", "--topic", "habits-count", "--partitions", "2", *boot).returncode == 0
    assert run_cli("topics", "create", "habits-factor", "--replication-factor", "3", *boot).returncode == 0
    with Admin(defaults_cluster.bootstrap) as admin:
        count, factor = admin.describe_topics(["habits-count", "habits-factor"])
    assert (len(count.partitions), count.replication_factor) == (2, 2)
    assert (len(factor.partitions), factor.replication_factor) == (4, 3)
    altered = run_cli("topics", "alter", "--topic", "habits-count", "--partitions", "3", *boot)
    assert altered.returncode == 0, altered.stderr
    assert run_cli("topics", "delete", "--topic", "habits-factor", *boot).stdout.strip() == "Deleted topic habits-factor."
    # mistakes stay one line
    one_line_error(run_cli("topics", "create", *boot), "required: NAME (or --topic NAME)")
    one_line_error(run_cli("topics", "create", "a-topic", "--topic", "another", *boot), "'a-topic'", "'another'", "differ")
    one_line_error(run_cli("topics", "create", "--topic", "bad name", *boot), "topic name 'bad name' is illegal")
    one_line_error(run_cli("topics", "create", "--topic", "habits-big", "--replication-factor", "4", *boot),
                   "INVALID_REPLICATION_FACTOR")


def test_console_consumer_properties(defaults_cluster):
    boot = ("--bootstrap-server", defaults_cluster.bootstrap)
    assert run_cli("topics", "create", "--topic", "habits-print", "--partitions", "1", *boot).returncode == 0
    with Producer(defaults_cluster.bootstrap, acks="all") as producer:
        producer.send("habits-print", b"v0", key=b"k0", headers=[("h1", b"a"), ("h2", None)])
        producer.send("habits-print", b"v1", key=None)
        producer.flush()
    consume = ("consume", "--topic", "habits-print", "--from-beginning", "--max-messages", "2", *boot)

    keyed = run_cli(*consume, "--property", "print.key=true")
    assert keyed.returncode == 0, keyed.stderr
    assert keyed.stdout == "k0\tv0\nnull\tv1\n"
    assert "Processed a total of 2 messages" in keyed.stderr

    every = run_cli(*consume, "--property", "print.timestamp=true", "--property", "print.partition=true",
                    "--property", "print.offset=true", "--property", "print.headers=true",
                    "--property", "print.key=true", "--property", "key.separator= | ",
                    "--property", "null.literal=<null>")
    assert every.returncode == 0, every.stderr
    first, second = every.stdout.splitlines()
    ts, rest = first.split(" | ", 1)
    assert ts.startswith("CreateTime:") and int(ts.removeprefix("CreateTime:")) > 0
    assert rest == "Partition:0 | Offset:0 | h1:a,h2:<null> | k0 | v0"
    assert second.split(" | ", 1)[1] == "Partition:0 | Offset:1 | NO_HEADERS | <null> | v1"

    no_value = run_cli(*consume, "--property", "print.offset=true", "--property", "print.value=false")
    assert no_value.stdout == "Offset:0\nOffset:1\n"

    one_line_error(run_cli(*consume, "--property", "print.key=yes"), "print.key expects true or false")
    one_line_error(run_cli(*consume, "--property", "print.color=true"), "print.color", "print.key")
    one_line_error(run_cli(*consume, "--property", "print.key=true", "--print-offset"), "cannot be combined")


def _offsets(boot, group):
    d = json.loads(run_cli("groups", "describe", "--group", group, "--json", *boot).stdout)
    return d["state"], {o["partition"]: o["current_offset"] for o in d["offsets"]}


def test_reset_offsets_is_a_dry_run_unless_execute_and_refuses_an_active_group(defaults_cluster):
    boot = ("--bootstrap-server", defaults_cluster.bootstrap)
    topic, group = "habits-reset", "habits-group"
    assert run_cli("topics", "create", topic, "--partitions", "2", *boot).returncode == 0
    with Producer(defaults_cluster.bootstrap, acks="all") as producer:
        for i in range(10):
            producer.send(topic, b"r%d" % i, partition=i % 2)
        producer.flush()
    read = run_cli("consume", topic, "--group", group, "--from-beginning", "--max-messages", "10", *boot)
    assert read.returncode == 0, read.stderr
    assert _offsets(boot, group) == ("Empty", {0: 5, 1: 5})

    # no --execute: the plan only
    dry = run_cli("groups", "reset-offsets", "--group", group, "--topic", topic, "--to-offset", "2", *boot)
    assert dry.returncode == 0, dry.stderr
    assert [line.split() for line in dry.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "0", "2"], [group, topic, "1", "2"]]
    assert "Dry run: nothing changed (add --execute" in dry.stderr
    assert _offsets(boot, group) == ("Empty", {0: 5, 1: 5})
    explicit = run_cli("groups", "reset-offsets", group, "--topic", topic, "--to-earliest", "--dry-run", *boot)
    assert explicit.returncode == 0 and "Dry run" in explicit.stderr
    assert _offsets(boot, group) == ("Empty", {0: 5, 1: 5})
    # --execute commits them
    done = run_cli("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "2", "--execute", *boot)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert _offsets(boot, group) == ("Empty", {0: 2, 1: 2})
    one_line_error(run_cli("groups", "reset-offsets", group, "--topic", topic, "--to-earliest", "--dry-run",
                           "--execute", *boot), "not allowed with argument")

    # an active group is refused, dry run or not, and keeps its offsets
    with Consumer(defaults_cluster.bootstrap, group_id=group, enable_auto_commit=False) as member:
        member.subscribe([topic])
        wait_for(lambda: member.poll(timeout_ms=200) is not None and len(member.assignment()) == 2, timeout_s=60,
                 message="the member owning both partitions")
        for mode in ((), ("--execute",)):
            refused = run_cli("groups", "reset-offsets", group, "--topic", topic, "--to-latest", *mode, *boot)
            one_line_error(refused, f"Assignments can only be reset if the group '{group}' is inactive, "
                                    "but the current state is Stable")
        assert _offsets(boot, group) == ("Stable", {0: 2, 1: 2})

    # a group that does not exist: the dry run says so and creates nothing; --execute
    # creates it with the offsets, as kafka-consumer-groups does
    new = "habits-new-group"
    plan = run_cli("groups", "reset-offsets", new, "--topic", topic, "--to-latest", *boot)
    assert plan.returncode == 0, plan.stderr
    assert f"consumer group '{new}' does not exist: --execute would create it" in plan.stderr
    assert new not in run_cli("groups", "list", *boot).stdout.split()
    assert _offsets(boot, new) == ("Dead", {})
    made = run_cli("groups", "reset-offsets", new, "--topic", topic, "--to-latest", "--execute", *boot)
    assert made.returncode == 0 and f"Consumer group '{new}' did not exist" in made.stderr
    assert _offsets(boot, new) == ("Empty", {0: 5, 1: 5})


def test_internal_topics_come_last_or_not_at_all(defaults_cluster):
    boot = ("--bootstrap-server", defaults_cluster.bootstrap)
    assert run_cli("topics", "create", "habits-zzz", "--partitions", "1", *boot).returncode == 0
    with Consumer(defaults_cluster.bootstrap, group_id="habits-internal") as c:
        c.commit({TopicPartition("habits-zzz", 0): 0})  # __consumer_offsets exists from here on
    names = run_cli("topics", "list", *boot).stdout.split()
    assert names[-1] == "__consumer_offsets" and "habits-zzz" in names
    assert names[:-1] == sorted(names[:-1])
    assert "__consumer_offsets" not in run_cli("topics", "list", "--exclude-internal", *boot).stdout.split()
    described = [line.split("\t")[0] for line in run_cli("topics", "describe", *boot).stdout.splitlines()]
    first_internal = described.index("Topic: __consumer_offsets")
    assert all(t == "Topic: __consumer_offsets" for t in described[first_internal:])
    assert "Topic: habits-zzz" in described[:first_internal]
    assert "__consumer_offsets" not in run_cli("topics", "describe", "--exclude-internal", *boot).stdout
    doc = json.loads(run_cli("topics", "describe", "--json", *boot).stdout)
    assert doc["topics"][-1]["name"] == "__consumer_offsets"
