"""A short bounded run of the fault-injection suite (minikafka/chaos.py): kill -9,
SIGSTOP/SIGCONT and controlled shutdowns under acks=all load, with leader-epoch
truncation, must lose no acknowledged record and leave identical replicas."""
from __future__ import annotations

import pytest

from minikafka import chaos

pytestmark = pytest.mark.process  # starts ZooKeeper and brokers


def test_short_chaos_run_loses_no_acknowledged_record(tmp_path):
    lines: list[str] = []
    summary = chaos.run(dir=str(tmp_path / "cluster"), storage="disk", truncation="leader_epoch", seed=4,
                        faults=10, interval_s=(2.0, 4.0), rate=100.0, log=lines.append)
    report = summary.line() + "\n" + summary.details()
    print(report)
    assert summary.faults == 10, report
    assert summary.acked > 0, report
    assert summary.lost == 0, report
    assert summary.vanished_reads == 0 and not summary.divergent, report
    assert summary.healed, report
    assert summary.ok, report
    assert summary.line().endswith("ok=true")


def test_short_transactional_chaos_run_copies_exactly_once(tmp_path):
    """The transactional copiers through kills and pauses: every input copied once, with
    its offsets, all or nothing, and no aborted output visible."""
    lines: list[str] = []
    summary = chaos.run(dir=str(tmp_path / "cluster"), storage="memory", truncation="leader_epoch", seed=5,
                        faults=6, interval_s=(2.0, 4.0), rate=25.0, transactions=60, log=lines.append)
    report = summary.line() + "\n" + summary.details()
    print(report)
    assert summary.faults == 6, report
    assert summary.acked == 3 * 60, report  # every input committed
    assert summary.txn_commits > 0 and summary.txn_aborts > 0, report
    assert summary.txn_violations == 0 and summary.lost == 0 and summary.duplicated == 0, report
    assert summary.ok and " violations=0 " in summary.line(), report


def test_short_chaos_run_on_a_zookeeper_ensemble_loses_nothing_through_server_kills(tmp_path):
    """ZooKeeper server kills on a 3-server ensemble (one server, the leader half the
    time, or the quorum) under acks=all load: nothing acknowledged lost, every server and
    broker back, and the summary gives the unavailability of each kind."""
    lines: list[str] = []
    # seed 2 draws one server kill, then a quorum loss
    summary = chaos.run(dir=str(tmp_path / "cluster"), storage="memory", truncation="leader_epoch", seed=2,
                        faults=2, interval_s=(1.0, 2.0), rate=100.0, scenario="zookeeper", zookeeper_nodes=3,
                        link_faults=False, log=lines.append)
    report = summary.line() + "\n" + summary.details()
    print(report)
    assert summary.faults == 2, report
    assert summary.zk_server_faults == 1 and summary.zk_quorum_faults == 1, report
    assert summary.acked > 0 and summary.lost == 0 and summary.duplicated == 0, report
    assert summary.healed and summary.ok, report
    assert " zk_quorum_unavailable_ms=" in summary.line(), report
