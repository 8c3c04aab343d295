"""The CLI's topics, produce and consume commands against the fake broker, with one-line errors."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


from minikafka.protocol.records.batch import split_batches

from client_fake_broker import values_of

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- CLI against the fake broker

def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "minikafka", *args], input=stdin, capture_output=True,
                          text=True, timeout=60, env=env, stdin=None if stdin is not None else subprocess.DEVNULL)


def test_cli_topics_produce_consume(broker):
    bs = ["--bootstrap-server", broker.bootstrap]
    r = cli("topics", "create", "t", "--partitions", "2", "--replication-factor", "1", *bs)
    assert r.returncode == 0 and r.stdout == "Created topic t.\n", r.stderr
    r = cli("topics", "create", "t", "--partitions", "2", "--replication-factor", "1", *bs)
    assert r.returncode == 2 and r.stderr.startswith("minikafka: error: TOPIC_ALREADY_EXISTS")
    r = cli("topics", "list", *bs)
    assert r.stdout == "t\n"
    r = cli("produce", "t", "--key-separator", ":", *bs, stdin="a:1\nb:2\nc:3\n")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stderr
    r = cli("produce", "t", "--partition", "1", *bs, stdin="x\ny\n")
    assert r.returncode == 0, r.stderr
    r = cli("consume", "t", "--from-beginning", "--partition", "1", "--max-messages", "2", *bs)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [v.decode() for v in values_of(broker, "t", 1)[:2]]
    assert values_of(broker, "t", 1)[-2:] == [b"x", b"y"]
    r = cli("consume", "t", "--from-beginning", "--timeout-ms", "1500", "--print-offset", *bs)
    lines = sorted(r.stdout.splitlines())
    assert len(lines) == 5
    assert all(line.count(":") == 3 for line in lines)
    keyed = {line.split(":")[2]: line.split(":")[3] for line in lines if line.split(":")[2] != "null"}
    assert keyed == {"a": "1", "b": "2", "c": "3"}
    r = cli("topics", "describe", "t", *bs)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert re.fullmatch(r"Topic: t\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: 1", out[0])
    assert out[2].startswith("Topic: t\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tLeaderEpoch: 0\tHighWatermark: ")
    assert out[2].endswith("\tLEO: 1=" + out[2].split("HighWatermark: ")[1].split("\t")[0])
    r = cli("topics", "describe", "--json", *bs)
    import json

    doc = json.loads(r.stdout)
    assert doc["topics"][0]["partitions"][0]["replica_leos"].keys() == {"1"}


def test_cli_produce_compression_type(broker):
    bs = ["--bootstrap-server", broker.bootstrap]
    broker.create("z", 1)
    r = cli("produce", "z", "--compression-type", "zstd", *bs, stdin="a\nb\nc\n")
    assert r.returncode == 0, r.stderr
    assert {split_batches(raw)[0][0].compression for _, raw in broker.logs[("z", 0)]} == {"zstd"}
    assert values_of(broker, "z", 0) == [b"a", b"b", b"c"]
    r = cli("produce", "z", "--compression-type", "brotli", *bs, stdin="a\n")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_cli_errors_are_one_line(broker):
    bs = ["--bootstrap-server", broker.bootstrap]
    for args, stdin in [
        (("produce", "missing", *bs), "x\n"),
        (("consume", "missing", *bs), None),
        (("topics", "describe", "missing", *bs), None),
        (("produce", "t2", "--key-separator", ":", *bs), "nokey\n"),
        (("topics", "create", "x", "--partitions", "1", "--replication-factor", "1", "--config", "bad", *bs), None),
        (("topics", "list", "--bootstrap-server", "127.0.0.1:1"), None),
    ]:
        broker.create("t2", 1)
        r = cli(*args, stdin=stdin)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("minikafka: error:"), r.stderr
        assert "ssl:default" not in r.stderr and "call failed" not in r.stderr, r.stderr
