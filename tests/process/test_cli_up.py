"""`cluster up` in a folder an earlier cluster left: it says what it reuses (disk
storage) or deletes (memory storage over an earlier disk cluster)."""
from __future__ import annotations

import pytest

from process_helpers import free_port, free_port_block, run_cli, stop_cluster

pytestmark = pytest.mark.process


def test_memory_storage_over_an_earlier_disk_cluster_says_what_it_deletes(tmp_path):
    dir = str(tmp_path / "c")
    zk = free_port()
    base = free_port_block(1, avoid=(zk,))
    kafka = free_port_block(1, avoid=(zk, base))
    args = ("--dir", dir, "--brokers", "1", "--zookeeper-port", str(zk), "--base-port", str(base),
            "--kafka-base-port", str(kafka))
    try:
        first = run_cli("cluster", "up", *args, "--storage", "disk")
        assert first.returncode == 0, first.stdout + first.stderr
        assert run_cli("cluster", "down", "--dir", dir).returncode == 0
        memory = run_cli("cluster", "up", *args)
        assert memory.returncode == 0, memory.stdout + memory.stderr
        assert memory.stdout.splitlines()[0] == (
            f"starting anew: --storage memory deletes ZooKeeper's data, broker-1's logs of the earlier disk "
            f"cluster in {dir} (keep them with --storage disk)")
        assert run_cli("cluster", "down", "--dir", dir).returncode == 0
        again = run_cli("cluster", "up", *args)  # an earlier memory cluster: nothing worth a word
        assert again.returncode == 0, again.stdout + again.stderr
        assert again.stdout.startswith("starting ZooKeeper"), again.stdout
        assert f"starting 1 broker on port {base} ...\n" in again.stdout, "one broker, one port (not 'ports P-P')"
    finally:
        stop_cluster(dir)
