"""`topics alter` and `configs describe|alter`: Kafka's CreatePartitions and
IncrementalAlterConfigs on the msgpack API, through the CLI."""
from __future__ import annotations

import uuid

import pytest

from minikafka import Admin
from process_helpers import run_cli

pytestmark = pytest.mark.process


def cli(cluster, *args: str):
    return run_cli(*args, "--bootstrap-server", cluster.bootstrap)


def test_topics_alter_adds_led_partitions(cluster):
    topic = f"alter-{uuid.uuid4().hex[:8]}"
    assert cli(cluster, "topics", "create", topic, "--partitions", "1", "--replication-factor", "2").returncode == 0
    r = cli(cluster, "topics", "alter", topic, "--partitions", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"Topic {topic} now has 3 partitions (added 1, 2)."
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    assert [p.partition for p in d.partitions] == [0, 1, 2] and all(p.leader >= 1 for p in d.partitions)
    r = cli(cluster, "topics", "alter", topic, "--partitions", "2")  # fewer: refused, nothing changes
    assert r.returncode == 2 and "INVALID_PARTITIONS" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli(cluster, "topics", "alter", "no-such-topic-x", "--partitions", "2")
    assert r.returncode == 2 and "UNKNOWN_TOPIC_OR_PARTITION" in r.stderr


def test_configs_alter_and_describe(cluster):
    topic = f"cfgcli-{uuid.uuid4().hex[:8]}"
    assert cli(cluster, "topics", "create", topic, "--partitions", "1", "--replication-factor", "2").returncode == 0
    r = cli(cluster, "configs", "alter", "--topic", topic, "--add-config", "min.insync.replicas=2,max.message.bytes=5000")
    assert r.returncode == 0, r.stderr
    r = cli(cluster, "configs", "describe", "--topic", topic)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"Topic: {topic}\tOverrides: max.message.bytes=5000,min.insync.replicas=2"
    # the overrides only, as kafka-configs --describe; --all adds every other setting with its source
    assert r.stdout.splitlines()[1:] == ["  max.message.bytes=5000\t(topic)", "  min.insync.replicas=2\t(topic)"]
    r = cli(cluster, "configs", "describe", "--topic", topic, "--all")
    assert "  min.insync.replicas=2\t(topic)" in r.stdout.splitlines()
    assert any(line.startswith("  unclean.leader.election.enable=false\t(default)") for line in r.stdout.splitlines())
    assert cli(cluster, "configs", "alter", "--topic", topic, "--delete-config", "min.insync.replicas").returncode == 0
    r = cli(cluster, "configs", "alter", "--topic", topic, "--add-config", "compression.type=zstd,preallocate=true")
    assert r.returncode == 0, r.stderr  # Kafka's topic settings, also those without an effect here
    with Admin(cluster.bootstrap) as admin:
        assert admin.describe_configs(topic)["compression.type"] == ("zstd", "topic")
    with Admin(cluster.bootstrap) as admin:
        assert admin.describe_configs(topic)["min.insync.replicas"] == ("1", "default")
    # mistakes: one line, exit 2, nothing changed
    for args, words in ((("--add-config", "no.such.setting=1"), "INVALID_CONFIG"),
                        (("--add-config", "min.insync.replicas=0"), "INVALID_CONFIG"),
                        (("--add-config", "compression.type=brotli"), "INVALID_CONFIG"),
                        (("--add-config", "broken"), "KEY=VALUE"),
                        ((), "--add-config")):
        r = cli(cluster, "configs", "alter", "--topic", topic, *args)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    with Admin(cluster.bootstrap) as admin:
        assert admin.describe_configs(topic)["max.message.bytes"] == ("5000", "topic")


def test_topics_create_with_a_replica_assignment(cluster):
    topic = f"pinned-{uuid.uuid4().hex[:8]}"
    r = cli(cluster, "topics", "create", topic, "--replica-assignment", "2:3,3:1")
    assert r.returncode == 0, r.stderr
    with Admin(cluster.bootstrap) as admin:
        (d,) = admin.describe_topics([topic])
    assert [p.replicas for p in d.partitions] == [[2, 3], [3, 1]]
    for args, words in ((("--replica-assignment", "1:x"), "broker ids"),
                        (("--replica-assignment", "1:1"), "twice"),
                        (("--replica-assignment", "1:2,3"), "same number of replicas"),
                        (("--replica-assignment", "1:2", "--partitions", "1"), "one or the other")):
        r = cli(cluster, "topics", "create", f"bad-{uuid.uuid4().hex[:6]}", *args)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.strip().startswith("minikafka ")


def test_consume_follows_the_topic_until_ctrl_c_then_prints_its_summary(cluster):
    import signal
    import subprocess

    from process_helpers import PYTHON, keeps_running

    topic = f"follow-{uuid.uuid4().hex[:8]}"
    assert cli(cluster, "topics", "create", topic, "--partitions", "1", "--replication-factor", "1").returncode == 0
    proc = subprocess.Popen([PYTHON, "-m", "minikafka", "consume", topic, "--from-beginning", "--timeout-ms", "0",
                             "--bootstrap-server", cluster.bootstrap],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    printed: list[bytes] = []
    try:
        assert proc.stdout is not None
        for batch in (b"a\nb\n", b"c\n"):  # records keep coming while it follows
            produced = subprocess.run([PYTHON, "-m", "minikafka", "produce", topic, "--bootstrap-server",
                                       cluster.bootstrap], input=batch, capture_output=True, timeout=60)
            assert produced.returncode == 0, produced.stderr
            printed += [proc.stdout.readline().strip() for _ in batch.splitlines()]
            keeps_running(proc, 1.5, "consume --timeout-ms 0, idle between batches,")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert printed == [b"a", b"b", b"c"] and out == b""
    assert err.decode().strip() == "Processed a total of 3 messages", err
    assert proc.returncode == 0
