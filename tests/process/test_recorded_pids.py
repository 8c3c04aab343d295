"""A recorded pid is a cluster's only while the process holding it names the cluster's
folder: pids wrap around on a busy machine, and the last-resort cleanups (the tests',
the harness's, the reference cluster's) must never signal a process another cluster (or
anything else) started under a recycled pid."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikafka.cluster import launcher
from minikafka.reference import cluster as reference

pytestmark = pytest.mark.process


def _exec_done(proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """Wait until ``proc``'s command line is in /proc: Popen returns once the exec has
    begun, and the kernel sets the new command line a moment later."""
    deadline = time.monotonic() + timeout_s
    while b"time.sleep" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the child's exec did not finish"
        time.sleep(0.01)


def test_a_process_counts_as_the_clusters_only_when_it_names_its_folder(tmp_path):
    mine_dir, other_dir = tmp_path / "mine", tmp_path / "other"
    code = "import time; time.sleep(60)"
    # both look like minikafka processes; only one runs in (names) the cluster's folder
    other = subprocess.Popen([sys.executable, "-c", code, "minikafka", f"--data-dir={other_dir}/broker-1"])
    mine = subprocess.Popen([sys.executable, "-c", code, "minikafka", f"--data-dir={mine_dir}/broker-1"])
    try:
        _exec_done(other)
        _exec_done(mine)
        ours = launcher.folder_markers(mine_dir)
        assert launcher.proc_state(mine.pid, ours) == "running"
        assert launcher.proc_state(other.pid, ours) == "dead"  # a recycled pid: not this cluster's
        assert launcher.proc_state(other.pid) == "running"  # the weaker check takes any minikafka process
        assert reference.proc_state(other.pid, mine_dir) == "dead"
        assert reference.stop_pid(other.pid, mine_dir) == "not running" and other.poll() is None
        assert reference.stop_pid(mine.pid, mine_dir, grace_s=5) == "stopped"
        assert mine.wait(10) is not None
    finally:
        for p in (mine, other):
            if p.poll() is None:
                p.kill()
            p.wait(10)
