"""scripts/fuzz.py, briefly, against a live broker: every hostile input is answered with
an error map (no HTTP error, no crash), and the seed records read back unchanged."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.cluster.state import load

pytestmark = pytest.mark.process

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz.py"


def test_a_brief_fuzz_run_finds_nothing(make_cluster):
    c = make_cluster(brokers=1)
    pid = load(c.dir).broker(1).pid
    r = subprocess.run([sys.executable, str(SCRIPT), "--bootstrap-server", f"127.0.0.1:{c.brokers[1]}",
                        "--kafka", f"127.0.0.1:{c.kafka_ports[1]}", "--inputs", "3000", "--seed", "11",
                        "--pid", str(pid), "--floods"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = r.stdout.strip().splitlines()[-1]
    assert summary.startswith("inputs=3000 seed=11") and summary.endswith("findings=0"), summary
    assert "INVALID_REQUEST=" in summary and "CLUSTER_AUTHORIZATION_FAILED=" in summary
    assert "'gzip_bomb_refused': 1" in summary and "'password_guess_closed': 1" in summary, summary
