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
