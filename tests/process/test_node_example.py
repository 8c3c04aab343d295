"""examples/node: a test for Node's own runner (`node --test`) that starts a cluster with
`minikafka fault serve`, kills the leader of its partition through the HTTP endpoint
while an idempotent kafkajs producer writes, and checks with a kafkajs consumer that every
acknowledged record is in the log once, at its offset.  Run here as a user runs it, with
the pinned kafkajs of package.json on NODE_PATH (installed outside the work tree)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from node_clients import KAFKAJS_VERSION, kafkajs_path
from process_helpers import stop_cluster

pytestmark = pytest.mark.process

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node"


def test_the_package_pins_the_kafkajs_the_tests_use():
    assert json.loads((EXAMPLE / "package.json").read_text())["dependencies"] == {"kafkajs": KAFKAJS_VERSION}


def test_the_node_example_passes_through_a_leader_kill(tmp_path):
    node = shutil.which("node")
    assert node, "Node.js is needed to run examples/node; scripts/test-setup.sh installs it"
    minikafka = str(Path(sys.executable).parent / "minikafka")
    assert os.access(minikafka, os.X_OK), f"{minikafka} is not installed"
    cluster = tmp_path / "cluster"
    env = {**os.environ, "NODE_PATH": str(kafkajs_path()), "MINIKAFKA": minikafka, "KAFKAJS_NO_PARTITIONER_WARNING": "1",
           "MINIKAFKA_CLUSTER_DIR": str(cluster)}
    try:
        out = subprocess.run([node, "--test", "leader-kill.test.js"], cwd=EXAMPLE, capture_output=True, text=True,
                             timeout=300, stdin=subprocess.DEVNULL, env=env)
    finally:
        stop_cluster(cluster)  # by its recorded pids, also when node was killed before its own cleanup
        _stop_fault_servers(cluster)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "# pass 1" in out.stdout and "# fail 0" in out.stdout


def _stop_fault_servers(cluster: Path) -> None:
    """SIGKILL a `minikafka fault serve --dir CLUSTER` that outlived node (killed by the timeout):
    found by its command line, which names this test's own folder."""
    import signal

    mark = str(cluster).encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"fault\x00serve" in cmdline and mark in cmdline:
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass
