"""The narrated scenarios: the anomaly appears with high_watermark truncation only."""
import pytest

from minikafka.replication.partition import TruncationMode
from minikafka.sim.scenarios import SCENARIOS
from process_helpers import run_cli


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_anomaly_only_with_high_watermark_truncation(name):
    assert SCENARIOS[name](TruncationMode.HIGH_WATERMARK).anomaly
    assert not SCENARIOS[name](TruncationMode.LEADER_EPOCH).anomaly


@pytest.mark.process
def test_scenario_command_prints_the_steps_and_the_verdict():
    out = run_cli("scenario", "kip101-loss", "--truncation", "high_watermark")
    assert out.returncode == 0, out.stderr
    assert "LOST acknowledged record(s) m2" in out.stdout
    assert "broker 2: follower LEO 1  HW 1" in out.stdout
    out = run_cli("scenario", "kip101-loss", "--truncation", "leader_epoch")
    assert "no acknowledged record lost" in out.stdout
    bad = run_cli("scenario", "no-such-scenario")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
