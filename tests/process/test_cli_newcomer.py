"""What a newcomer who knows Kafka types at the CLI: the Kafka port given where the HTTP
one is expected is named as such, in one line; Kafka's tool spellings (the action as a
flag, kafka-configs' entities, kafka-console-producer's properties) work."""
from __future__ import annotations

import subprocess

import pytest

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
