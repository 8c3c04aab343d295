"""``minikafka bench ab`` end to end, this tree against itself: a kcat row on one fresh
cluster a side and a client row on one cluster, every figure measured, the JSON agreeing
with the table, and every cluster it started stopped.  Speed is not asserted."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from minikafka.cluster import launcher
from minikafka.cluster.state import exists
from process_helpers import kill_recorded_pids, run_cli

REPO = str(Path(__file__).resolve().parents[2])


def _running_in(folder: Path) -> list[int]:
    """The pids of processes whose command line names ``folder`` (a cluster's brokers and
    ZooKeeper do: their data dirs and configuration are in it)."""
    markers = launcher.folder_markers(folder)
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline and any(m in cmdline for m in markers):
                out.append(int(name))
    return out


@pytest.mark.process
def test_ab_compares_a_kcat_row_and_a_client_row_and_stops_its_clusters(tmp_path):
    parent, out = tmp_path / "clusters", tmp_path / "ab.json"
    try:
        done = run_cli("bench", "ab", REPO, REPO, "--rows", "kcat-acks1-rf1,send", "--clusters", "1",
                       "--rounds", "1", "--records", "20000", "--productions", "2", "--dir", str(parent),
                       "--json", str(out), timeout_s=300)
        assert done.returncode == 0, done.stderr[-2000:]
        folders = sorted(parent.iterdir())
        assert len(folders) == 3, folders  # a cluster a side for the kcat row, one for the client row
        for folder in folders:
            assert exists(folder) and _running_in(folder) == [], folder
    finally:
        for folder in parent.iterdir() if parent.exists() else []:
            kill_recorded_pids(folder)
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 4, done.stdout
    assert lines[2].startswith("| kcat, acks=1, RF 1 | 1 |") and "brokers" in lines[2]
    assert lines[3].startswith("| our Producer, send, acks=all, RF 3 | 2 |") and "client" in lines[3]
    kcat, send = json.loads(out.read_text())["rows"]
    assert kcat["row"] == "kcat-acks1-rf1" and kcat["samples"] == [1, 1]
    assert send["row"] == "send" and send["samples"] == [2, 2]
    for row in (kcat, send):
        assert all(r > 0 for r in row["records_per_s"]) and all(c > 0 for c in row["cpu_us_per_record"])
    assert f"{kcat['change'] * 100:+.1f}%" in lines[2]
