"""``topics describe`` on a cluster with many partitions: the reports as kafka-topics.sh
spells them (--under-replicated-partitions, --unavailable-partitions,
--under-min-isr-partitions, --at-min-isr-partitions), a pattern of topic names, and
--summary; the plain output without them is unchanged, and bad flags are one line, exit 2."""
from __future__ import annotations

import json

import pytest

import minikafka.client.sync as sync
from minikafka.cli.main import main
from minikafka.client.types import BrokerInfo, ClusterDescription, PartitionDescription, TopicDescription

LIVE = (1, 2)  # broker 3 is dead


def part(topic: str, p: int, leader: int, isr: list[int]) -> PartitionDescription:
    return PartitionDescription(topic=topic, partition=p, leader=leader, leader_epoch=1, replicas=[1, 2, 3], isr=isr,
                                offline_replicas=[], high_watermark=5, log_start_offset=0,
                                replica_leos={1: 5, 2: 5, 3: 5})


TOPICS = {
    "orders": [part("orders", 0, 1, [1, 2, 3]), part("orders", 1, 2, [1, 2]), part("orders", 2, 3, [3])],
    "orders-archive": [part("orders-archive", 0, 1, [1, 2, 3])],
    "audit": [part("audit", 0, 2, [2])],
    "__consumer_offsets": [part("__consumer_offsets", 0, 1, [1, 2, 3])],
}
MIN_ISR = {"orders": "2", "orders-archive": "3", "audit": "1", "__consumer_offsets": "1"}


class FakeAdmin:
    described: list = []

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def list_topics(self):
        return list(TOPICS)

    def describe_topics(self, names=None, checksums=False):
        FakeAdmin.described.append(names)
        return [TopicDescription(n, TOPICS[n]) for n in sorted(names if names is not None else TOPICS)]

    def cluster(self):
        return ClusterDescription("c", 1, [BrokerInfo(i, "127.0.0.1", 9091 + i) for i in LIVE])

    def describe_configs(self, topic):
        return {"min.insync.replicas": (MIN_ISR[topic], "topic")}


@pytest.fixture(autouse=True)
def fake_admin(monkeypatch):
    FakeAdmin.described = []
    monkeypatch.setattr(sync, "Admin", FakeAdmin)


def run(capsys, *argv) -> tuple[int, list[str], str]:
    code = main(["topics", "describe", "--bootstrap-server", "127.0.0.1:1", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def partitions(lines: list[str]) -> list[str]:
    """topic-partition of each partition line."""
    out = []
    for line in lines:
        fields = dict(f.split(": ", 1) for f in line.split("\t"))
        if "Partition" in fields:
            out.append(f"{fields['Topic']}-{fields['Partition']}")
    return out


def test_plain_output_is_unchanged(capsys):
    code, lines, _ = run(capsys)
    assert code == 0
    assert [line.split("\t")[0] for line in lines if "PartitionCount" in line] == [
        "Topic: audit", "Topic: orders", "Topic: orders-archive", "Topic: __consumer_offsets"]
    assert len(lines) == 4 + 6


def test_under_replicated_partitions_only_and_no_topic_headers(capsys):
    code, lines, _ = run(capsys, "--under-replicated-partitions")
    assert code == 0
    assert not any("PartitionCount" in line for line in lines)  # as kafka-topics.sh prints a report
    assert partitions(lines) == ["audit-0", "orders-1", "orders-2"]


def test_unavailable_partitions_are_those_without_a_live_leader(capsys):
    assert partitions(run(capsys, "--unavailable-partitions")[1]) == ["orders-2"]


def test_under_and_at_min_isr_partitions_use_each_topics_setting(capsys):
    # orders: min ISR 2, ISR 3/2/1 -> partition 2 under, 1 at; orders-archive: min 3, ISR 3 -> at;
    # audit: min 1, ISR 1 -> at
    assert partitions(run(capsys, "--under-min-isr-partitions")[1]) == ["orders-2"]
    assert partitions(run(capsys, "--at-min-isr-partitions")[1]) == ["audit-0", "orders-1", "orders-archive-0"]


def test_reports_combine_as_a_union(capsys):
    assert partitions(run(capsys, "--unavailable-partitions", "--under-replicated-partitions")[1]) == [
        "audit-0", "orders-1", "orders-2"]


def test_a_pattern_describes_the_matching_topics_only(capsys):
    code, lines, _ = run(capsys, "orders*")
    assert code == 0
    assert partitions(lines) == ["orders-0", "orders-1", "orders-2", "orders-archive-0"]
    assert FakeAdmin.described == [["orders", "orders-archive"]]  # only they were asked for
    assert partitions(run(capsys, "--topic", "*-archive")[1]) == ["orders-archive-0"]
    code, lines, _ = run(capsys, "nothing-*")
    assert (code, lines) == (0, [])


def test_json_report_keeps_only_the_reported_partitions(capsys):
    code, lines, _ = run(capsys, "--json", "--unavailable-partitions")
    doc = json.loads("\n".join(lines))
    assert [(t["name"], [p["partition"] for p in t["partitions"]]) for t in doc["topics"]] == [("orders", [2])]


def test_summary_counts_per_topic(capsys):
    code, lines, _ = run(capsys, "--summary", "--exclude-internal")
    assert code == 0
    assert lines == [
        "Topic: audit\tPartitionCount: 1\tReplicationFactor: 3\tOffline: 0\tUnderReplicated: 1\tUnderMinIsr: 0"
        "\tLeaders: 2=1",
        "Topic: orders\tPartitionCount: 3\tReplicationFactor: 3\tOffline: 1\tUnderReplicated: 2\tUnderMinIsr: 1"
        "\tLeaders: 1=1,2=1",
        "Topic: orders-archive\tPartitionCount: 1\tReplicationFactor: 3\tOffline: 0\tUnderReplicated: 0"
        "\tUnderMinIsr: 0\tLeaders: 1=1",
        "Total: 3 topics\tPartitionCount: 5\tOffline: 1\tUnderReplicated: 3\tUnderMinIsr: 1",
    ]


@pytest.mark.parametrize("argv, message", [
    (["--summary", "--under-replicated-partitions"], "--summary cannot be combined with --under-replicated-partitions"),
    (["--summary", "--json"], "--summary and --json cannot be combined"),
    (["orders/*"], "topic pattern 'orders/*' is illegal"),
    (["--under-replicated-partitons"], "did you mean --under-replicated-partitions"),
])
def test_bad_flags_are_one_line_and_exit_2(capsys, argv, message):
    code, lines, err = run(capsys, *argv)
    assert code == 2 and not lines
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err


def test_kafka_topics_spelling_of_a_report(capsys):
    """kafka-topics.sh --describe --under-replicated-partitions, as Kafka's users type it."""
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--describe", "--under-replicated-partitions"])
    assert code == 0
    assert partitions(capsys.readouterr().out.splitlines()) == ["audit-0", "orders-1", "orders-2"]


def test_watch_views_of_a_report_and_of_the_summary():
    """``--watch`` shows what the plain form prints: a report's partitions, or a row per topic."""
    import argparse

    from minikafka.cli import client_commands

    args = argparse.Namespace(name=None, json=False, exclude_internal=True, bootstrap_server="127.0.0.1:1",
                              dir=".minikafka", command_config=None, under_replicated=False, unavailable=True,
                              under_min_isr=False, at_min_isr=False, summary=False)
    view, doc = client_commands._topics_describe_view(args)
    assert [row_id for row_id, _ in view.grids[0].rows] == [("orders", 2)]
    args.unavailable, args.summary = False, True
    view, doc = client_commands._topics_describe_view(args)
    grid = view.grids[0]
    assert [row_id for row_id, _ in grid.rows] == [("audit",), ("orders",), ("orders-archive",)]
    cells = dict(zip([c.header for c in grid.columns], grid.rows[1][1]))
    assert (cells["OFFLINE"], cells["UNDER-REPLICATED"], cells["UNDER-MIN-ISR"], cells["LEADERS"]) == \
        ("1", "2", "1", "1=1 2=1")
    assert grid.title == "3 topics, 5 partitions, 1 offline, 3 under-replicated"
    assert doc["topics"][1]["leaders"] == {1: 1, 2: 1}
