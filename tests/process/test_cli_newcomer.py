"""What a newcomer who knows Kafka types at the CLI: the Kafka port given where the HTTP
one is expected is named as such, in one line; Kafka's tool spellings (the action as a
flag, kafka-configs' entities, kafka-console-producer's properties) work, and so do
kafka-consumer-groups' reset options and kafka-leader-election's election types."""
from __future__ import annotations

import subprocess
import time
from datetime import datetime, timezone

import pytest

from minikafka import Admin, Producer, TopicPartition
from process_helpers import PYTHON, run_cli

pytestmark = pytest.mark.process
CLI = (PYTHON, "-m", "minikafka")


def one_line_error(result, *fragments: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minikafka: error:"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def one_broker(tmp_path_factory, request):
    from process_helpers import start_cluster, stop_cluster

    dir = tmp_path_factory.mktemp("newcomer") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=1, broker_configs={"group.initial.rebalance.delay.ms": "0"})


def test_the_kafka_port_is_named_and_the_http_one_given(one_broker):
    kafka = one_broker.kafka_bootstrap
    line = one_line_error(run_cli("topics", "describe", "x", "--bootstrap-server", kafka, "--dir", one_broker.dir),
                          f"{kafka} is a Kafka-protocol listener", f"use --bootstrap-server {one_broker.bootstrap}")
    assert "NETWORK_EXCEPTION" not in line
    # without the cluster's folder the address is still named, with where to find the other one
    elsewhere = run_cli("topics", "list", "--bootstrap-server", kafka, "--dir", "/nonexistent")
    one_line_error(elsewhere, f"{kafka} is a Kafka-protocol listener", "bootstrap servers")
    # an address where nothing listens keeps the network error
    refused = run_cli("topics", "list", "--bootstrap-server", "127.0.0.1:1")
    one_line_error(refused, "NETWORK_EXCEPTION", "connection refused")


def test_kafka_tool_spellings(one_broker):
    boot = ("--bootstrap-server", one_broker.bootstrap)
    created = run_cli("topics", "--create", "--topic", "spelled", "--partitions", "1", *boot)
    assert created.returncode == 0 and created.stdout.strip() == "Created topic spelled.", created.stderr
    listed = run_cli("topics", "--list", *boot)
    assert "spelled" in listed.stdout.split(), listed.stderr
    produced = subprocess.run([*CLI, "produce", "--topic", "spelled", "--property", "parse.key=true",
                               "--property", "key.separator=:", *boot], input="k1:v1\nk2:v:2\n",
                              capture_output=True, text=True, timeout=120)
    assert produced.returncode == 0, produced.stderr
    consumed = run_cli("consume", "--topic", "spelled", "--from-beginning", "--max-messages", "2",
                       "--property", "print.key=true", *boot)
    assert consumed.stdout == "k1\tv1\nk2\tv:2\n", consumed.stderr
    configs = run_cli("configs", "--describe", "--entity-type", "topics", "--entity-name", "spelled", *boot)
    assert configs.returncode == 0 and configs.stdout.startswith("Topic: spelled"), configs.stderr
    group = run_cli("groups", "--describe", "--group", "nobody-here", *boot)
    one_line_error(group, "Consumer group 'nobody-here' does not exist.")


def _reset(boot, *args: str) -> dict[tuple[str, int], int]:
    result = run_cli("groups", "reset-offsets", "--group", "resets", *args, "--execute", *boot)
    assert result.returncode == 0, result.stderr
    return {(row[1], int(row[2])): int(row[3]) for row in (line.split() for line in result.stdout.splitlines()[1:])}


def test_reset_offsets_shift_time_and_scope_as_kafka(one_broker):
    boot = ("--bootstrap-server", one_broker.bootstrap)
    for topic in ("resets-a", "resets-b"):
        assert run_cli("topics", "create", topic, "--partitions", "2", *boot).returncode == 0
    now = int(time.time() * 1000)
    hour = 3_600_000
    with Producer(one_broker.bootstrap, acks="all") as producer:
        for p in (0, 1):
            for i in range(5):  # offset i was written 5 - i hours ago
                producer.send("resets-a", b"r", partition=p, timestamp_ms=now - (5 - i) * hour)
        producer.send("resets-b", b"r", partition=0)
        producer.flush()
    with Admin(one_broker.bootstrap) as admin:
        admin.alter_group_offsets("resets", {TopicPartition("resets-a", 0): 2, TopicPartition("resets-a", 1): 2})

    a0, a1 = ("resets-a", 0), ("resets-a", 1)
    assert _reset(boot, "--topic", "resets-a", "--shift-by", "1") == {a0: 3, a1: 3}
    assert _reset(boot, "--topic", "resets-a:1", "--shift-by", "-10") == {a1: 0}  # clamped to the log start
    assert _reset(boot, "--all-topics", "--shift-by", "100") == {a0: 5, a1: 5}  # clamped to the end; only a's
    assert _reset(boot, "--topic", "resets-a", "--by-duration", "PT2H30M") == {a0: 3, a1: 3}
    moment = datetime.fromtimestamp((now - 4 * hour - 60_000) / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert _reset(boot, "--topic", "resets-a:0", "--to-datetime", moment) == {a0: 1}
    assert _reset(boot, "--topic", "resets-a:0", "--by-duration", "PT1M") == {a0: 5}  # nothing that recent: the end
    one_line_error(run_cli("groups", "reset-offsets", "resets", "--topic", "resets-b", "--shift-by", "1", *boot),
                   "Cannot shift offset for partition resets-b-0 since there is no current committed offset")
    one_line_error(run_cli("groups", "reset-offsets", "resets", "--topic", "resets-a:7", "--to-earliest", *boot),
                   "topic 'resets-a' has no partition 7")


def test_elect_leaders_election_types(one_broker):
    boot = ("--bootstrap-server", one_broker.bootstrap)
    assert run_cli("topics", "create", "elected", "--partitions", "1", *boot).returncode == 0
    unclean = run_cli("topics", "elect-leaders", "--election-type", "UNCLEAN", "--topic", "elected", *boot)
    assert unclean.returncode == 0 and unclean.stdout == "elected-0: already has a leader\n", unclean
    preferred = run_cli("topics", "elect-leaders", "--election-type", "preferred", "--topic", "elected", *boot)
    assert preferred.returncode == 0 and preferred.stdout == "elected-0: already led by its preferred replica\n"
    one_line_error(run_cli("topics", "elect-leaders", "--election-type", "DIRTY", *boot), "PREFERRED or UNCLEAN")


def test_configs_overrides_and_one_broker_words(one_broker):
    boot = ("--bootstrap-server", one_broker.bootstrap)
    assert run_cli("topics", "create", "tuned", "--partitions", "1", "--config", "retention.ms=60000", *boot).returncode == 0
    overrides = run_cli("configs", "describe", "--topic", "tuned", *boot)
    assert overrides.stdout.splitlines() == ["Topic: tuned\tOverrides: retention.ms=60000", "  retention.ms=60000\t(topic)"]
    every = run_cli("configs", "describe", "--topic", "tuned", "--all", *boot)
    assert len(every.stdout.splitlines()) > 10 and "  min.insync.replicas=1\t(default)" in every.stdout.splitlines()
    one_line_error(run_cli("topics", "create", "too-wide", "--replication-factor", "2", *boot),
                   "INVALID_REPLICATION_FACTOR", "larger than the 1 live broker [1]")
    one_line_error(run_cli("groups", "delete", "nobody-here", *boot),
                   "GROUP_ID_NOT_FOUND: Consumer group 'nobody-here' does not exist.")
