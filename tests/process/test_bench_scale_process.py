"""``minikafka bench scale`` end to end on a small fresh cluster on disk storage, with the
controller's failover and the restarts: every figure of the row is measured and sane, the
JSON agrees, and the cluster it started is stopped.  Speed is not asserted."""
from __future__ import annotations

import json

import pytest

from minikafka.cluster import launcher
from minikafka.cluster.state import load
from process_helpers import kill_recorded_pids, run_cli


@pytest.mark.process
def test_scale_measures_a_row_on_a_fresh_cluster_and_stops_it(tmp_path):
    parent = tmp_path / "scale"
    out = tmp_path / "scale.json"
    folder = parent / "minikafka-30"
    try:
        done = run_cli("bench", "scale", "--partitions", "30", "--per-topic", "10", "--idle-seconds", "2",
                       "--rate", "100", "--produce-seconds", "1", "--dir", str(parent), "--json", str(out),
                       "--failover", "--restart", "--storage", "disk", timeout_s=240)
        assert done.returncode == 0, done.stderr[-2000:]
        state = load(folder)
        assert all(launcher.proc_state(pid, launcher.folder_markers(folder)) == "dead" for pid in state.pids()), \
            "the cluster it started is stopped"
    finally:
        kill_recorded_pids(folder)
    lines = [line for line in done.stdout.splitlines() if line.startswith("| 33 |")]
    assert len(lines) == 1, done.stdout
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[1] == "minikafka" and cells[2].endswith(" s") and cells[4].endswith(" MB"), cells
    (row,) = json.loads(out.read_text())["rows"]
    assert row["partitions"] == 33 and row["cluster"] == "minikafka"
    assert row["creation_s"] > 0
    assert row["idle_cores"] >= 0 and row["empty_idle_cores"] >= 0
    assert row["rss_bytes"] > 0 and row["empty_rss_bytes"] > 0
    assert row["records"] == 100
    assert 0 < row["ack_p50_ms"] <= row["ack_p99_ms"]
    assert row["failover_s"] > 0 and row["catch_up_s"] > 0 and row["cluster_restart_s"] > 0
    assert "broker restart" in lines[0] and "cluster restart" in lines[0]
    assert "load average" in done.stdout
