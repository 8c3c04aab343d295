"""The dashboard's /api/state at scale: the query it takes, and the index of partitions that
gives each topic's counts and a page of rows (problem partitions first) without building
every row."""
from __future__ import annotations

import pytest

from minikafka.web.state import (DEFAULT_LIMIT, MAX_LIMIT, PartitionIndex, RateTracker, StateQuery, _counts,
                                 parse_state_query)


class FakeMetadata:
    def __init__(self, parts: dict[tuple[str, int], dict]) -> None:
        self.partitions = parts
        self.version = 1
        self.by_topic: dict[str, dict[int, dict]] = {}
        for (t, p), st in parts.items():
            self.by_topic.setdefault(t, {})[p] = st


def st(leader: int, replicas: list[int], isr: list[int]) -> dict:
    return {"leader": leader, "leader_epoch": 0, "replicas": replicas, "isr": isr}


def cluster(topics: int = 3, per_topic: int = 4) -> FakeMetadata:
    parts = {(f"t{i}", p): st(1 + p % 3, [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3], [1, 2, 3])
             for i in range(topics) for p in range(per_topic)}
    parts.update({("__consumer_offsets", p): st(1, [1, 2, 3], [1, 2, 3]) for p in range(2)})
    return FakeMetadata(parts)


def test_parse_state_query_defaults_and_values():
    assert parse_state_query({}) == StateQuery()
    q = parse_state_query({"topic": "orders*", "internal": "0", "problems": "only", "offset": "100",
                           "limit": "50", "topic_offset": "10", "topic_limit": "20"})
    assert q == StateQuery(topic="orders*", internal=False, problems_only=True, offset=100, limit=50,
                           topic_offset=10, topic_limit=20)
    assert StateQuery().limit == DEFAULT_LIMIT
    assert parse_state_query({"configs": "a,b"}).configs == {"a", "b"}
    assert parse_state_query({"configs": ""}).configs == frozenset()  # the page with no list open


@pytest.mark.parametrize("query, message", [
    ({"limit": "x"}, "limit must be a whole number"),
    ({"limit": str(MAX_LIMIT + 1)}, "limit must be between 0 and"),
    ({"offset": "-1"}, "offset must be between"),
    ({"internal": "maybe"}, "internal must be 1 or 0"),
    ({"problems": "last"}, "problems must be first or only"),
])
def test_parse_state_query_refuses_bad_values(query, message):
    with pytest.raises(ValueError, match=message):
        parse_state_query(query)


def test_query_matches_substring_glob_and_internal():
    assert StateQuery(topic="rde").matches("orders")
    assert not StateQuery(topic="rde").matches("audit")
    assert StateQuery(topic="ord*-1?").matches("orders-12") and not StateQuery(topic="ord*-1?").matches("orders-2")
    assert StateQuery().matches("__consumer_offsets")
    assert not StateQuery(internal=False).matches("__consumer_offsets")


def test_index_pages_problem_partitions_first():
    md = cluster()
    md.partitions[("t1", 2)]["isr"] = [3]          # under-replicated
    md.partitions[("t2", 0)]["leader"] = -1        # offline
    idx = PartitionIndex()
    idx.refresh(md, {1, 2, 3})
    topics = idx.matching(StateQuery())
    assert topics == ["t0", "t1", "t2", "__consumer_offsets"]
    rows, total, problems = idx.rows(topics, StateQuery(limit=4))
    assert rows == [("t1", 2), ("t2", 0), ("t0", 0), ("t0", 1)]
    assert (total, problems) == (14, 2)
    rows, total, _ = idx.rows(topics, StateQuery(offset=12, limit=5))
    assert rows == [("__consumer_offsets", 0), ("__consumer_offsets", 1)] and total == 14
    rows, total, _ = idx.rows(idx.matching(StateQuery(problems_only=True)), StateQuery(problems_only=True))
    assert rows == [("t1", 2), ("t2", 0)] and total == 2
    rows, total, _ = idx.rows(idx.matching(StateQuery(topic="t1")), StateQuery(topic="t1"))
    assert rows == [("t1", 2), ("t1", 0), ("t1", 1), ("t1", 3)] and total == 4
    assert idx.matching(StateQuery(topic="t")) == ["t0", "t1", "t2", "__consumer_offsets"]  # a part of names
    assert idx.matching(StateQuery(topic="t[12]")) == ["t1", "t2"]
    assert idx.matching(StateQuery(topic="consumer")) == ["__consumer_offsets"]
    assert idx.matching(StateQuery(topic="consumer", internal=False)) == []


def test_index_counts_per_topic_and_broker_and_rebuilds_only_on_change():
    md = cluster(topics=2, per_topic=3)
    md.partitions[("t0", 1)]["isr"] = [2]
    idx = PartitionIndex()
    idx.refresh(md, {1, 2, 3})
    t0 = idx.topics["t0"]
    assert (t0.partitions, t0.replication_factor, t0.offline, t0.under_replicated) == (3, 3, 0, 1)
    assert t0.leaders == {1: 1, 2: 1, 3: 1}
    assert t0.under_min_isr(2) == 1 and t0.under_min_isr(1) == 0 and t0.under_min_isr(None) is None
    assert idx.leaders == {1: 4, 2: 2, 3: 2} and idx.replicas == {1: 8, 2: 8, 3: 8}
    idx.refresh(md, {1, 2, 3})
    assert idx.builds == 1  # same metadata version, same live brokers: nothing walked
    idx.refresh(md, {1, 3})  # broker 2 gone: its partitions are offline
    assert idx.builds == 2 and idx.topics["t0"].offline == 1 and 2 not in idx.leaders
    md.version += 1
    idx.refresh(md, {1, 3})
    assert idx.builds == 3
    summary = _counts([idx.topics["t0"], idx.topics["t1"]], lambda topic: 2)
    assert summary == {"topics": 2, "partitions": 6, "under_replicated": 1, "under_min_isr": 0, "offline": 2}


def test_rate_tracker_forgets_rows_nobody_looks_at():
    rates = RateTracker()
    rates.observe(("a", 0), 0.0, 1, {"log_end_offset": 0})
    rates.observe(("b", 0), 0.0, 1, {"log_end_offset": 0})
    rates.observe(("a", 0), 10.0, 1, {"log_end_offset": 10})
    rates.forget(10.0, {("a", 0): {}, ("b", 0): {}})
    assert set(rates.samples) == {("a", 0)}
    rates.forget(10.0, {})
    assert not rates.samples
