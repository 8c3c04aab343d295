"""`cluster up --config sasl.jaas.config=...`, as docs/security.md says: the users of Kafka's
PLAIN login module entry may log in on a SASL listener, and the entry, a password, goes to
the cluster's broker-secrets.properties (mode 600), never on a broker's command line."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from minikafka import Admin
from minikafka.cluster.state import load
from process_helpers import free_port, free_port_block, run_cli, stop_cluster

pytestmark = pytest.mark.process

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_alice="alice-secret";')


def test_cluster_up_takes_sasl_jaas_config_into_the_secrets_file(tmp_path):
    dir = str(tmp_path / "c")
    zk = free_port()
    base = free_port_block(1, avoid=(zk,))
    kafka = free_port_block(1, avoid=(zk, base))
    try:
        up = run_cli("cluster", "up", "--dir", dir, "--brokers", "1", "--zookeeper-port", str(zk), "--base-port",
                     str(base), "--kafka-base-port", str(kafka),
                     "--config", "listener.security.protocol.map=KAFKA:SASL_PLAINTEXT", "--config", f"sasl.jaas.config={JAAS}")
        assert up.returncode == 0, up.stdout + up.stderr
        secrets = Path(dir) / "broker-secrets.properties"
        assert secrets.read_text() == f"sasl.jaas.config={JAAS}\n"
        assert stat.S_IMODE(os.stat(secrets).st_mode) == 0o600
        (broker,) = load(dir).brokers.values()
        assert b"alice-secret" not in Path(f"/proc/{broker.pid}/cmdline").read_bytes()
        conf = {"bootstrap.servers": f"127.0.0.1:{kafka}", "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN", "sasl.username": "alice"}
        topics = AdminClient({**conf, "sasl.password": "alice-secret"}).list_topics(timeout=30).topics
        assert isinstance(topics, dict)
        logs: list[str] = []

        class _Logs:  # librdkafka's log lines, as a logging.Logger would receive them
            def log(self, level, fmt, *args):
                logs.append(fmt % args if args else fmt)

        refused = AdminClient({**conf, "sasl.password": "wrong", "logger": _Logs()})
        with pytest.raises(KafkaException):
            refused.list_topics(timeout=5)
        refused.poll(1)  # serves the queued log lines
        del refused
        assert any("Authentication failed: Invalid username or password" in line for line in logs), logs[:5]
        with Admin(f"127.0.0.1:{base}") as admin:  # a password: described without its value
            value, source, _ = admin.describe_broker_configs(1)["sasl.jaas.config"]
        assert value is None and source == "broker"
    finally:
        stop_cluster(dir)
