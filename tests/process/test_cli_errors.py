"""Every user mistake gives one line `minikafka: error: ...` on stderr and exit status 2."""
from __future__ import annotations

import os
import socket

import pytest

from process_helpers import free_port, run_cli

BROKER = ["broker", "--id", "1", "--zookeeper", "127.0.0.1:2181", "--listen", "127.0.0.1:9092",
          "--data-dir", "/tmp/minikafka-check"]


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("minikafka: error:"), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.process
@pytest.mark.parametrize("args, fragments", [
    ([], ["required"]),
    (["no-such-command"], ["invalid choice", "no-such-command"]),
    (["broker", "--zookeeper", "127.0.0.1:2181", "--listen", "127.0.0.1:9092", "--data-dir", "d"], ["--id"]),
    (BROKER + ["--config", "foo"], ["key=value", "foo"]),
    (BROKER + ["--config", "nosuch.key=1", "--check-config"], ["nosuch.key"]),
    (BROKER + ["--config", "replica.lag.time.max.ms=soon", "--check-config"],
     ["invalid value 'soon' for replica.lag.time.max.ms: expected a whole number"]),
    (["produce", "t", "--bootstrap-server", "no-such-host.invalid:9092"], ["cannot resolve host 'no-such-host.invalid'"]),
    (["broker", "--id", "1", "--zookeeper", "z:1", "--listen", "nohostport", "--data-dir", "d"], ["HOST:PORT"]),
    (["cluster"], ["required"]),
    (["cluster", "kill", "2", "--signal", "HUP"], ["HUP"]),
    (["cluster", "up", "--brokers", "0"], ["--brokers"]),
    (BROKER + ["--config", "log.cleanup.policy=forever", "--check-config"],
     ["invalid value 'forever' for log.cleanup.policy: expected delete, compact or compact,delete"]),
    (BROKER + ["--config", "log.cleaner.min.cleanable.ratio=2", "--check-config"],
     ["log.cleaner.min.cleanable.ratio", "between 0 and 1"]),
    (["consume", "t", "--offset", "5", "--bootstrap-server", "127.0.0.1:1"], ["--offset needs --partition"]),
    (["consume", "t", "--partition", "0", "--offset", "soon", "--bootstrap-server", "127.0.0.1:1"],
     ["--offset expects a non-negative offset, earliest or latest, got 'soon'"]),
    (["topics", "delete-records", "--offset-json-file", "/no/such/file.json", "--bootstrap-server", "127.0.0.1:1"],
     ["cannot read /no/such/file.json"]),
    # names and ids are checked before any request, in words (not "must be a non-empty str")
    (["topics", "create", "", "--partitions", "1", "--replication-factor", "1", "--bootstrap-server", "127.0.0.1:1"],
     ["topic name must not be empty", "[a-zA-Z0-9._-]"]),
    (["topics", "delete", "..", "--bootstrap-server", "127.0.0.1:1"], ["topic name '..' is illegal"]),
    (["produce", "bad name", "--bootstrap-server", "127.0.0.1:1"], ["topic name 'bad name' is illegal"]),
    (["configs", "describe", "--topic", "", "--bootstrap-server", "127.0.0.1:1"], ["topic name must not be empty"]),
    (["groups", "describe", "", "--bootstrap-server", "127.0.0.1:1"], ["group id must not be empty"]),
    (["consume", "t", "--group", "", "--bootstrap-server", "127.0.0.1:1"], ["group id must not be empty"]),
    (["groups", "reset-offsets", "g", "--topic", "t", "--to-offset", "x", "--bootstrap-server", "127.0.0.1:1"],
     ["--to-offset: expected a whole number, got 'x'"]),
    (["cluster", "start", "x"], ["ID: expected a broker id", "'x'"]),
    (["configs", "describe", "--broker", "one", "--bootstrap-server", "127.0.0.1:1"], ["expected a broker id"]),
    (["topics", "describe", "--bootstrap-server", "127.0.0.1:1"], ["NETWORK_EXCEPTION", "connection refused"]),
])
def test_usage_errors_are_one_line(args, fragments):
    result = run_cli(*args)
    assert_one_line_error(result, *fragments)
    for python_text in ("invalid literal", "[Errno", "ssl:default", "Connect call failed", "non-empty str",
                        "invalid int value", "unexpected keyword argument"):
        assert python_text not in result.stderr, result.stderr


@pytest.mark.process
def test_cluster_commands_without_a_cluster(tmp_path):
    for args in (["status"], ["down"], ["kill", "1"], ["start", "1"], ["resume", "1"]):
        result = run_cli("cluster", *args, "--dir", str(tmp_path / "none"))
        assert_one_line_error(result, "no cluster in")
        if args == ["down"]:  # nothing to stop, rather than advice to start one
            assert "nothing to stop" in result.stderr and "cluster up" not in result.stderr


@pytest.mark.process
def test_check_config_accepts_a_valid_command():
    result = run_cli(*BROKER, "--config", "replica.lag.time.max.ms=2000", "--check-config")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("config ok: broker 1")
    assert result.stderr == ""


@pytest.mark.process
def test_help_exits_zero():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "cluster" in result.stdout


@pytest.mark.process
def test_a_port_in_use_is_one_short_line(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = dict(os.environ, MINIKAFKA_CLUSTER_SECRET="s3cret")  # no warning about a missing credential
        broker = run_cli("broker", "--id", "1", "--zookeeper", "127.0.0.1:1", "--listen", f"127.0.0.1:{port}",
                         "--data-dir", str(tmp_path / "b1"), env=env)
        assert_one_line_error(broker, f"cannot listen on 127.0.0.1:{port}: address already in use")
        assert "[Errno" not in broker.stderr and "('127.0.0.1'" not in broker.stderr
        up = run_cli("cluster", "up", "--dir", str(tmp_path / "c"), "--brokers", "1", "--base-port", str(port),
                     "--zookeeper-port", str(free_port()), "--kafka-base-port", str(free_port()))
        assert_one_line_error(up, f"port(s) {port} on 127.0.0.1 are in use")
        assert up.stdout == ""


@pytest.mark.process
def test_version_prints_the_version():
    from minikafka import __version__

    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"minikafka {__version__}"
