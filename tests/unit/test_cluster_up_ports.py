"""A broker that cannot start is reported cause first (`cluster up`, `cluster start`); the
ports `cluster up` chooses are tested in test_free_ports.py."""
from __future__ import annotations

import pytest



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
