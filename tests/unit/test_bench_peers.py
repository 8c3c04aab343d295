"""The pure-Python peer rows of ``minikafka bench suite`` (kafka-python and aiokafka beside
our Producer): the "vs peers" ratio, and a missing library is a skipped row, not a crash."""
from __future__ import annotations

import dataclasses

from minikafka.bench import scenarios as sc
from minikafka.bench.figures import Figure
from minikafka.bench.suite import QUICK, Row, Suite, table
from minikafka.bench.workload import Workload


def _suite(monkeypatch, figures: dict[str, float | None]) -> tuple[Suite, list[str]]:
    topics: list[str] = []
    suite = Suite(dataclasses.replace(QUICK, runs=1), say=lambda line: None)
    monkeypatch.setattr(suite, "_topic", lambda name, target, *a: topics.append(name) or f"t-{len(topics)}")

    def produce_peer(target, work, topic, client):
        rps = figures[client]
        return None if rps is None else {"records_per_s": rps}

    monkeypatch.setattr(sc, "produce_peer", produce_peer)
    return suite, topics


def test_our_row_gets_its_ratio_to_the_faster_peer(monkeypatch):
    suite, topics = _suite(monkeypatch, {"kafka-python": 10_000.0, "aiokafka": 40_000.0})
    ours = Row("produce RF3 acks=all min.isr=2", "python", Figure("records_per_s", "records/s", (200_000.0,)))
    suite._peer_rows(sc.Target("x"), None, ours.scenario, ours, Figure("records_per_s", "records/s", (1.0,)), None)
    assert [r.client for r in suite.rows] == ["kafka-python", "aiokafka"]
    assert [r.figure.median for r in suite.rows] == [10_000.0, 40_000.0]
    assert ours.extra["vs_peers"].median == 5.0
    assert topics == ["produce", "produce"], "each peer writes a fresh topic"
    assert "vs_peers 5" in table([ours, *suite.rows], 1)


def test_a_missing_peer_is_a_skipped_row_and_the_ratio_uses_the_other(monkeypatch):
    suite, _ = _suite(monkeypatch, {"kafka-python": None, "aiokafka": 50_000.0})
    ours = Row("produce RF3 acks=all min.isr=2", "python", Figure("records_per_s", "records/s", (100_000.0,)))
    suite._peer_rows(sc.Target("x"), None, ours.scenario, ours, Figure("records_per_s", "records/s", (1.0,)), None)
    skipped = {r.client: r.skipped for r in suite.rows}
    assert skipped["kafka-python"] == sc.needs_peer("kafka-python") and skipped["aiokafka"] is None
    assert ours.extra["vs_peers"].median == 2.0


def test_without_the_library_the_peer_scenario_runs_nothing(monkeypatch):
    monkeypatch.setitem(sc.PEER_MODULES, "kafka-python", "no_such_module_for_the_bench")
    work = Workload(10, 100)
    try:
        assert sc.produce_peer(sc.Target("127.0.0.1:1", "127.0.0.1:1"), work, "t", "kafka-python") is None
    finally:
        work.close()
