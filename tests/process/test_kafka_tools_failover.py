"""Kafka's TopicCommand and LeaderElectionCommand while a broker is killed, for both
client generations, through the Kafka listener.  Its own cluster (auto leader rebalance
off, so only the tools move leaders back); every test restarts what it killed."""
from __future__ import annotations

import re

import pytest

from kafka_tools import GENERATIONS, run_tool, tool_class
from process_helpers import start_cluster, stop_cluster, wait_for

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def kill_cluster(tmp_path_factory, request):
    dir = tmp_path_factory.mktemp("kafka-tools-failover") / "minikafka"
    request.addfinalizer(lambda: stop_cluster(dir))
    return start_cluster(dir, brokers=3, broker_configs={"auto.leader.rebalance.enable": "false"})


def _tool(kafka_jars, cluster, generation, script, *args, ok=True):
    proc = run_tool(kafka_jars(generation), tool_class(generation, script), "--bootstrap-server",
                    cluster.kafka_bootstrap, *args)
    if ok:
        assert proc.returncode == 0, f"{script} {args}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _partitions(out: str) -> dict[tuple[str, int], tuple[str, str, str]]:
    """``(topic, partition) -> (leader, replicas, isr)`` from TopicCommand --describe."""
    return {(t, int(p)): (ld, r, i) for t, p, ld, r, i in re.findall(
        r"Topic: (\S+)\s+Partition: (\d+)\s+Leader: (\S+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]*)", out)}


@pytest.mark.parametrize("generation", GENERATIONS)
def test_topic_command_and_leader_elections_through_broker_kills(kafka_jars, kill_cluster, generation):
    g = generation.replace(".", "")
    rf3, solo = f"rf3-{g}", f"solo-{g}"
    tool = lambda *a, **k: _tool(kafka_jars, kill_cluster, generation, *a, **k)  # noqa: E731
    tool("kafka-topics", "--create", "--topic", rf3, "--replica-assignment", "3:1:2")
    tool("kafka-topics", "--create", "--topic", solo, "--replica-assignment", "3")

    def describe(*args: str) -> dict:
        return _partitions(tool("kafka-topics", "--describe", *args).stdout)

    wait_for(lambda: describe("--topic", rf3).get((rf3, 0), ("",))[0] == "3", 60, 0.5, "broker 3 leading")
    # Broker 3 dies: the RF=3 partition is under-replicated, the RF=1 one unavailable.
    kill_cluster.kill(3)
    try:
        def under() -> dict | None:
            got = describe("--under-replicated-partitions")
            return got if (rf3, 0) in got and got[(rf3, 0)][0] in ("1", "2") else None
        got = wait_for(under, 90, 0.5, "--under-replicated-partitions to list the RF=3 partition")
        assert "3" not in got[(rf3, 0)][2].split(","), got
        unavailable = describe("--unavailable-partitions")
        assert (solo, 0) in unavailable and unavailable[(solo, 0)][0] == "none", unavailable
        assert (rf3, 0) not in unavailable
        # Broker 3 comes back with an empty log (in-memory storage): out of every ISR, so
        # 'solo' stays offline until an unclean election, which the tool asks for.
        kill_cluster.start(3)
        wait_for(lambda: describe("--topic", rf3)[(rf3, 0)][2].count(",") == 2, 90, 0.5, "broker 3 back in rf3's ISR")
        assert describe("--unavailable-partitions").get((solo, 0), ("",))[0] == "none"
        out = tool("kafka-leader-election", "--election-type", "unclean", "--topic", solo, "--partition", "0").stdout
        assert f"Successfully completed leader election (UNCLEAN) for partitions {solo}-0" in out, out
        wait_for(lambda: describe("--topic", solo)[(solo, 0)][0] == "3", 30, 0.5, "solo led by broker 3")
        assert not describe("--unavailable-partitions")
    finally:
        if not _alive(kill_cluster, 3):
            kill_cluster.start(3)
    wait_for(lambda: not describe("--under-replicated-partitions"), 120, 0.5, "no under-replicated partition")
    # Broker 3 is the preferred leader of rf3 but lost it: a preferred election moves it back.
    assert describe("--topic", rf3)[(rf3, 0)][0] != "3"
    out = tool("kafka-leader-election", "--election-type", "preferred", "--topic", rf3, "--partition", "0").stdout
    assert f"Successfully completed leader election (PREFERRED) for partitions {rf3}-0" in out, out
    assert describe("--topic", rf3)[(rf3, 0)][0] == "3"
    for t in (rf3, solo):
        tool("kafka-topics", "--delete", "--topic", t)


def _alive(cluster, broker_id: int) -> bool:
    from minikafka.cluster.state import pid_alive
    pid = cluster.pid(broker_id)
    return pid is not None and pid_alive(pid)
