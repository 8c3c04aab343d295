"""`cluster up` warns when its ports fall into Linux's ephemeral port range (32768-60999
by default), where an outgoing connection can take a port while its broker restarts."""
from __future__ import annotations

import pytest

from minikafka.cli import main as cli
from minikafka.errors import ClientError

LINUX = (32768, 60999)


def test_default_ports_are_outside_the_ephemeral_range():
    assert cli.ephemeral_warning(9092, 3, None, True, LINUX) is None
    assert cli.ephemeral_warning(12765, 3, None, True, LINUX) is None  # Kafka ports 32765-32767


def test_a_base_port_of_12768_or_more_puts_the_kafka_ports_inside():
    warning = cli.ephemeral_warning(12766, 3, None, True, LINUX)  # Kafka ports 32766-32768
    assert warning.startswith("warning: the Kafka ports 32766-32768 (--base-port + 20000) are in this machine's "
                              "ephemeral port range 32768-60999")
    assert "a --base-port of 12765 or less, or a --kafka-base-port" in warning
    assert cli.ephemeral_warning(13000, 3, 23000, True, LINUX) is None   # its own Kafka ports: fine
    assert cli.ephemeral_warning(13000, 3, None, False, LINUX) is None   # --no-kafka
    both = cli.ephemeral_warning(40000, 3, None, True, LINUX)
    assert "the broker ports 40000-40002 (--base-port) and the Kafka ports 60000-60002" in both
    # ports given explicitly (tests pick free ones, anywhere) are not second-guessed
    assert cli.ephemeral_warning(40000, 3, 35000, True, LINUX) is None


def test_the_range_is_read_from_proc(tmp_path):
    f = tmp_path / "range"
    f.write_text("20000\t30000\n")
    assert cli.ephemeral_port_range(str(f)) == (20000, 30000)
    assert cli.ephemeral_port_range(str(tmp_path / "missing")) == LINUX


def test_cluster_up_prints_the_warning_before_it_starts(monkeypatch, capsys):
    from minikafka.cluster import launcher

    def up(*args, **kwargs):
        raise ClientError("stopped here")

    monkeypatch.setattr(launcher, "up", up)
    monkeypatch.setattr(cli, "ephemeral_port_range", lambda: LINUX)
    assert cli.main(["cluster", "up", "--dir", "/nonexistent/x", "--base-port", "13092"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("warning: the Kafka ports 33092-33094 (--base-port + 20000)")
    assert err[1] == "minikafka: error: stopped here"
    assert cli.main(["cluster", "up", "--dir", "/nonexistent/x"]) == 2
    assert capsys.readouterr().err.splitlines() == ["minikafka: error: stopped here"]


@pytest.mark.parametrize("text, want", [
    ("x\n--- restarted at 2026 ---\nINFO starting\nminikafka: error: broker 2 cannot start: cannot listen on "
     "127.0.0.1:9093: address already in use\n",
     "broker 2 cannot start: cannot listen on 127.0.0.1:9093: address already in use (exit status 2; log: "),
    ("minikafka: error: zookeeper.set.acl=true needs the cluster credential\n",
     "broker 2 cannot start: zookeeper.set.acl=true needs the cluster credential (exit status 2; log: "),
])
def test_startup_failure_puts_the_cause_first(tmp_path, text, want):
    log = tmp_path / "broker-2.log"
    log.write_text(text)
    assert launcher_failure(log).startswith(want)


def test_startup_failure_ignores_an_earlier_run_and_falls_back_to_the_log(tmp_path):
    log = tmp_path / "broker-2.log"
    log.write_text("minikafka: error: old trouble\n\n--- restarted at 2026 ---\nTraceback (most recent call last):\n"
                   "ValueError: boom\n")
    msg = launcher_failure(log)
    assert "old trouble" not in msg
    assert msg.startswith("broker 2 exited during start-up (status 2); last lines of ") and "ValueError: boom" in msg


def launcher_failure(log) -> str:
    from minikafka.cluster.launcher import startup_failure

    return startup_failure("broker 2", 2, str(log))
