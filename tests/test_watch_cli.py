"""``--watch`` on ``cluster status`` and ``topics describe``: clear and redraw every
interval, errors shown in the frame, Ctrl-C (SIGINT) exits 0."""
from __future__ import annotations

import io
import signal
import subprocess
import sys
import threading

import pytest

from minikafka import Admin
from minikafka.cli.watch import CLEAR, run_watch
from minikafka.errors import ClientError
from process_helpers import wait_for


def test_run_watch_clears_and_redraws_and_shows_errors():
    out = io.StringIO()
    calls = []

    def render() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise ClientError("no cluster in .minikafka")
        print(f"frame {len(calls)}")

    assert run_watch(render, 0.1, "minikafka test", out=out, rounds=3) == 0
    frames = out.getvalue().split(CLEAR)[1:]
    assert len(frames) == 3
    assert frames[0].startswith("minikafka test") and "frame 1" in frames[0]
    assert "error: no cluster in .minikafka (retrying)" in frames[1]
    assert "frame 3" in frames[2]


def test_run_watch_returns_0_on_ctrl_c():
    def render() -> None:
        raise KeyboardInterrupt

    assert run_watch(render, 0.1, "t", out=io.StringIO()) == 0


def test_watch_rejects_a_tiny_interval():
    from minikafka.cli.main import main

    assert main(["cluster", "status", "--watch", "--interval", "0"]) == 2


def _watch(args: list[str], frames: int = 2) -> tuple[str, int]:
    """Run ``minikafka ARGS``, wait for ``frames`` redraws, send SIGINT; (output, exit code)."""
    proc = subprocess.Popen([sys.executable, "-m", "minikafka", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    chunks: list[bytes] = []

    def pump() -> None:
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            chunks.append(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        wait_for(lambda: b"".join(chunks).count(CLEAR.encode()) >= frames + 1 or proc.poll() is not None,
                 timeout_s=60, message=f"{frames + 1} frames")
        assert proc.poll() is None, b"".join(chunks).decode()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    reader.join(10)
    return b"".join(chunks).decode(), code


@pytest.mark.process
def test_cluster_status_watch_redraws_until_ctrl_c(cluster):
    out, code = _watch(["cluster", "status", "--dir", cluster.dir, "--watch", "--interval", "0.2"])
    assert code == 0
    frames = out.split(CLEAR)[1:]
    assert all(f.startswith("minikafka cluster status") for f in frames[:-1])
    assert "controller: broker" in frames[1]
    assert "REGISTERED" in frames[1]


@pytest.mark.process
def test_topics_describe_watch_redraws_until_ctrl_c(cluster):
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("watched", partitions=2, replication_factor=3)
    out, code = _watch(["topics", "describe", "watched", "--bootstrap-server", cluster.bootstrap,
                        "--watch", "--interval", "0.2"])
    assert code == 0
    frame = out.split(CLEAR)[2]
    assert frame.startswith("minikafka topics describe")
    assert "Topic: watched\tPartitionCount: 2\tReplicationFactor: 3" in frame
    assert "Partition: 1" in frame
