"""The named live scenarios (``minikafka scenario --live``) on real ZooKeeper and broker
processes, under both follower truncation rules: with leader_epoch the invariant holds
(KIP-320's zombie is fenced), with high_watermark the anomalies of KIP-101, KIP-279 and
KIP-320 show (that mode's fetches carry no leader epoch, so the zombie is served).
Root only (iptables, cgroups); every rule and cgroup is removed afterwards."""
from __future__ import annotations

import os
import re

import pytest

from minikafka.chaos import live
from minikafka.chaos.links import leftovers
from process_helpers import run_cli
from unprivileged import run_cli_unprivileged

pytestmark = pytest.mark.process


def _ours() -> set[str]:
    """Rules, chains and cgroups of this test process present now (a session fixture of
    the same process, such as the pytest plugin's cluster with link faults, may hold its own)."""
    return {item for item in leftovers() if f"-{os.getpid()}-" in item}


def _of_gone_processes() -> list[str]:
    """Rules, chains and cgroups whose run's process has ended (a command line run's)."""
    return [item for item in leftovers()
            if (m := re.search(r"-(\d+)-[0-9a-f]+", item)) and not os.path.exists(f"/proc/{m.group(1)}")]


def _run(name: str, truncation: str) -> live.LiveResult:
    before = _ours()
    result = live.run(name, truncation)
    print("\n".join(result.lines) + f"\n=> {result.verdict} ({result.elapsed_s:.1f}s)")
    assert result.completed, result.verdict
    assert _ours() - before == set(), "the scenario removed every rule, chain and cgroup it made"
    return result


def test_kip101_loss_leader_epoch_keeps_the_acknowledged_record():
    r = _run("kip101-loss", "leader_epoch")
    assert r.passed and r.verdict.startswith("PASS"), r.verdict
    assert "must ask broker" in "\n".join(r.lines)  # the follower kept m4 while its question was cut off


def test_kip101_loss_high_watermark_loses_it_on_the_command_line():
    out = run_cli("scenario", "--live", "kip101-loss", "--truncation", "high_watermark", timeout_s=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "truncates to its HW" in out.stdout
    verdict = out.stdout.strip().splitlines()[-1]
    assert verdict.startswith("=> ANOMALY: acknowledged m4 (offset 3) LOST"), out.stdout
    assert _of_gone_processes() == []


def test_kip279_flipflop_leader_epoch_steps_back_and_converges():
    r = _run("kip279-flipflop", "leader_epoch")
    assert r.passed, r.verdict
    text = "\n".join(r.lines)
    assert "unknown locally" in text  # KIP-279: the leader answered for an older epoch, the follower stepped back


def test_kip279_flipflop_high_watermark_diverges():
    r = _run("kip279-flipflop", "high_watermark")
    assert r.anomaly, r.verdict
    assert "replicas DIVERGED at offset 3" in r.verdict and "LOST" in r.verdict


def test_kip320_zombie_leader_epoch_is_fenced_and_logs_stay_consistent():
    r = _run("kip320-zombie", "leader_epoch")
    assert r.passed and r.verdict.startswith("PASS"), r.verdict
    assert r.facts["fenced_fetches"] > 0 and not r.facts["zombie_served"]
    assert r.facts["zombie_leo"] == 3  # it kept its own x and appended nothing while fenced
    assert r.facts["leader_log"][2] == "y"
    assert "refuses every such fetch with FENCED_LEADER_EPOCH" in "\n".join(r.lines)


def test_kip320_zombie_high_watermark_is_served_and_diverges():
    r = _run("kip320-zombie", "high_watermark")
    assert r.anomaly, r.verdict
    f = r.facts
    assert f["fenced_fetches"] == 0 and f["zombie_served"], f  # its fetches name no leader epoch
    # its own x, then the leader's records after it.  The leader has y or v at offset 2 (y,
    # truncated by the HW rule when the reassignment bumped the epoch, is back when the
    # follower fetched it again before the preferred election: a matter of timing), never x
    zlog, alog = f["zombie_log"], f["leader_log"]
    assert zlog[2] == "x" and alog[2] in ("v", "y"), f
    assert f["zombie_leo"] == max(alog) + 1 >= 4, f
    assert all(zlog[o] == alog[o] for o in range(3, f["zombie_leo"])), f  # the leader's records, after x
    assert f["zombie_hw"] == f["zombie_leo"], f  # x below the HW it took from the leader
    assert "after its own x (offset 2)" in r.verdict and f"it has '{alog[2]}' there" in r.verdict, r.verdict
    assert "replicas DIVERGED at offset 2" in r.verdict and "has x" in r.verdict, r.verdict
    assert "its files still hold x at offset 2" in "\n".join(r.lines)


def test_bad_input_is_one_line_and_exit_2():
    out = run_cli("scenario", "--live", "no-such-scenario")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "kip101-loss" in out.stderr
    out = run_cli("scenario", "--live", "kip101-loss", "--truncation", "sometimes")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    out = run_cli("scenario", "kip320-zombie")  # a live one without --live
    assert out.returncode == 2 and "--live" in out.stderr


def test_refused_in_one_line_without_root():
    """As nobody (uid 65534), the live command refuses in one line.  It runs in a forked
    copy of this process (tests/unprivileged.py), so it works wherever the checkout and
    the interpreter lie, a folder only root can read too."""
    code, stderr, uid = run_cli_unprivileged(["scenario", "--live", "kip101-loss"])
    assert uid == (65534 if os.geteuid() == 0 else os.geteuid()), stderr
    assert code == 2 and stderr.strip() == \
        "minikafka: error: link faults need root (they add iptables rules and cgroups): run as root", stderr
