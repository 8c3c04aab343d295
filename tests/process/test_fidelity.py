"""Apache Kafka 3.9 (ZooKeeper mode) as the oracle: `minikafka reference` runs a real Kafka
cluster beside a fresh minikafka cluster, the differential scenarios ask both the same
questions, and docs/fidelity.md must list exactly the differences they find."""
from __future__ import annotations

import difflib
import json
import subprocess
import sys

import pytest
from kazoo.client import KazooClient

from minikafka.reference import cluster as reference
from minikafka.reference import failover, fidelity
from process_helpers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.process

# both clusters: a paused follower leaves the ISR within seconds, long before its session expires (the failover
# scenario)
LAG = failover.BROKER_CONFIGS


@pytest.fixture(scope="module")
def kafka(tmp_path_factory, request):
    """A 3-broker Apache Kafka 3.9 cluster with its own ZooKeeper, stopped by pid after."""
    dir = tmp_path_factory.mktemp("reference") / "kafka"
    request.addfinalizer(lambda: reference.down(dir) if (dir / reference.STATE_FILE).exists() else None)
    return reference.up(dir, brokers=3, configs=LAG)


@pytest.fixture(scope="module")
def ours(tmp_path_factory, request):
    """A 3-broker minikafka cluster for this module's scenarios, stopped by pid after."""
    dir = tmp_path_factory.mktemp("fidelity") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3, broker_configs=LAG)


@pytest.fixture(scope="module")
def sides(kafka, ours):
    return (fidelity.Side("Kafka", kafka.zookeeper_connect, kafka.bootstrap),
            fidelity.Side("minikafka", ours.zk_connect, ours.kafka_bootstrap))


@pytest.fixture(scope="module")
def admin_steps(sides):
    """The admin steps' ZooKeeper differences, then the refused requests' answers (in this order)."""
    return fidelity.run(*sides), fidelity.compare_refusals(*sides)


@pytest.fixture(scope="module")
def failed_over(kafka, ours, admin_steps):
    """The failover scenario on both clusters (after the admin steps, as the page runs them)."""
    k, o = failover.observe(kafka.dir, ours.dir)
    return {"tree": failover.tree_diffs(k, o), "rows": failover.rows(k, o)}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minikafka", "reference", *args], capture_output=True, text=True,
                          timeout=180)


def _unexplained_rows(rows: list[dict]) -> list[str]:
    return [f"{r['step']}: {r['what']}: Kafka {r['kafka']} minikafka {r['ours']}"
            for r in fidelity.unexplained_failover(rows)]


def test_zookeeper_layouts_after_admin_steps_differ_only_as_docs_fidelity_says(admin_steps):
    diffs, _ = admin_steps
    missing = [f"{d['kind']} {d['path']} after {d['step']}: Kafka {d['kafka']} minikafka {d['ours']}"
               for d in fidelity.unexplained(diffs)]
    assert not missing, "differences from Kafka without a reason in minikafka.reference.fidelity.KNOWN:\n" + \
                        "\n".join(missing)


def test_refused_admin_requests_are_answered_as_kafka_answers(admin_steps):
    _, refused = admin_steps
    odd = [f"{r['case']}: Kafka {r['kafka']}, minikafka {r['ours']}" for r in fidelity.unexplained_refusals(refused)]
    assert not odd, "refused admin requests answered otherwise than Kafka, without a reason in " \
                    "minikafka.reference.fidelity.KNOWN_REFUSALS:\n" + "\n".join(odd)


def test_failover_partition_states_and_znodes_differ_only_as_known(failed_over):
    rows = [r for r in failed_over["rows"] if r["what"].startswith("partition ")]
    assert {r["step"] for r in rows} == {step for step, _ in failover.STEPS}
    missing = _unexplained_rows(rows)
    tree = [f"{d['kind']} {d['path']} after {d['step']}: Kafka {d['kafka']} minikafka {d['ours']}"
            for d in failed_over["tree"] if fidelity.explain(d) is None]
    assert not missing + tree, "failover differences without a reason in minikafka.reference.fidelity:\n" + \
                               "\n".join(missing + tree)


def test_kafka_tools_describe_alike_through_the_failover(failed_over):
    rows = [r for r in failed_over["rows"] if r["what"].endswith("--describe")]
    assert [r["step"] for r in rows if r["what"].startswith("kafka-consumer-groups")] == ["leader kill", "reassignment"]
    missing = _unexplained_rows(rows)
    assert not missing, "tool outputs differing in columns without a reason in " \
                        "minikafka.reference.fidelity.KNOWN_FAILOVER:\n" + "\n".join(missing)


def test_producer_and_consumer_see_the_same_across_a_leader_kill(failed_over):
    rows = {r["what"]: r for r in failed_over["rows"] if r["what"].startswith("clients: ")}
    assert rows["clients: acknowledged"]["ours"] == f"{failover.RECORDS} of {failover.RECORDS}"
    assert rows["clients: consumer read"]["ours"] == "every record once, in order"
    missing = _unexplained_rows(list(rows.values()))
    assert not missing, "clients saw otherwise than on Kafka:\n" + "\n".join(missing)


def test_an_old_controller_epoch_is_refused_as_kafka_refuses_it(failed_over):
    rows = [r for r in failed_over["rows"] if r["step"] == "old controller epoch"]
    assert [(r["kafka"], r["ours"]) for r in rows] == [("STALE_CONTROLLER_EPOCH",) * 2] * 3


def test_docs_fidelity_is_the_page_the_scenarios_produce(kafka, admin_steps, failed_over):
    diffs, refused = admin_steps
    page = fidelity.render(fidelity.merge_tree_diffs(diffs, failed_over["tree"]), kafka.version, refused,
                           failed_over["rows"])
    stale = list(difflib.unified_diff(fidelity.PAGE.read_text().splitlines(), page.splitlines(), "docs/fidelity.md",
                                      "this run", lineterm="", n=0))
    assert not stale, "docs/fidelity.md is stale: run `python -m minikafka.reference.fidelity --write`\n" + \
                      "\n".join(line[:400] for line in stale[:40])


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
