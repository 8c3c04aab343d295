"""Apache Kafka 3.9 (ZooKeeper mode) as the oracle: `minikafka reference` runs a real Kafka
cluster beside a fresh minikafka cluster, the differential scenarios ask both the same
questions, and docs/fidelity.md must list exactly the differences they find."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

from minikafka.reference import cluster as reference
from minikafka.reference import fidelity
from process_helpers import wait_for

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def kafka(tmp_path_factory, request):
    """A 3-broker Apache Kafka 3.9 cluster with its own ZooKeeper, stopped by pid after."""
    dir = tmp_path_factory.mktemp("reference") / "kafka"
    request.addfinalizer(lambda: reference.down(dir) if (dir / reference.STATE_FILE).exists() else None)
    return reference.up(dir, brokers=3)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minikafka", "reference", *args], capture_output=True, text=True,
                          timeout=180)


def test_zookeeper_layouts_and_refusals_differ_only_as_docs_fidelity_says(kafka, make_cluster):
    ours = make_cluster(brokers=3)
    sides = (fidelity.Side("Kafka", kafka.zookeeper_connect, kafka.bootstrap),
             fidelity.Side("minikafka", ours.zk_connect, ours.kafka_bootstrap))
    diffs = fidelity.run(*sides)
    missing = [f"{d['kind']} {d['path']} after {d['step']}: Kafka {d['kafka']} minikafka {d['ours']}"
               for d in fidelity.unexplained(diffs)]
    assert not missing, "differences from Kafka without a reason in minikafka.reference.fidelity.KNOWN:\n" + \
                        "\n".join(missing)
    refused = fidelity.compare_refusals(*sides)
    odd = [f"{r['case']}: Kafka {r['kafka']}, minikafka {r['ours']}" for r in fidelity.unexplained_refusals(refused)]
    assert not odd, "refused admin requests answered otherwise than Kafka, without a reason in " \
                    "minikafka.reference.fidelity.KNOWN_REFUSALS:\n" + "\n".join(odd)
    assert fidelity.PAGE.read_text() == fidelity.render(diffs, kafka.version, refused), \
        "docs/fidelity.md is stale: run `python -m minikafka.reference.fidelity --write`"


def test_reference_status_kill_and_start_by_pid(kafka):
    st = json.loads(_cli("status", "--dir", kafka.dir, "--json").stdout)
    assert st["version"].startswith("3.9.") and [b["state"] for b in st["brokers"]] == ["running"] * 3
    killed = st["brokers"][2]["pid"]
    assert _cli("kill", "3", "--dir", kafka.dir).returncode == 0
    st = json.loads(_cli("status", "--dir", kafka.dir, "--json").stdout)
    assert st["brokers"][2]["pid"] is None and st["brokers"][2]["state"] == "dead"
    zk = KazooClient(hosts=kafka.zookeeper_connect)
    zk.start(timeout=15)
    try:
        wait_for(lambda: "3" not in zk.get_children("/brokers/ids"), 60, message="broker 3's registration gone")
        assert _cli("start", "3", "--dir", kafka.dir).returncode == 0
        wait_for(lambda: "3" in zk.get_children("/brokers/ids"), 90, message="broker 3 registered again")
    finally:
        zk.stop()
        zk.close()
    st = json.loads(_cli("status", "--dir", kafka.dir, "--json").stdout)
    assert st["brokers"][2]["pid"] not in (None, killed) and st["brokers"][2]["state"] == "running"
    wrong = _cli("kill", "9", "--dir", kafka.dir)
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1 and "no reference broker 9" in wrong.stderr
