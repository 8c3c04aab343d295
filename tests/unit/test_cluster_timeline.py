"""broker/timeline.py's ClusterTimeline: every broker's events as one broker holds them,
pulled from the live ones and kept when they die."""
from __future__ import annotations

import asyncio

from minikafka.broker.timeline import ClusterTimeline, Timeline, event_key


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


def ev(ts: float, broker: int, text: str = "x") -> dict:
    return {"ts": ts, "broker": broker, "kind": "k", "text": text}


def make(peer_events: dict[int, list[dict]], live: set[int]):
    clock = Clock()
    own = Timeline(1, clock)
    asked: list[tuple[int, float]] = []

    async def call(host: str, port: int, api: str, body: dict, timeout_s: float) -> dict:
        assert api == "events" and body["cluster"] is False
        asked.append((port, body["since"]))
        if port not in live:
            raise ConnectionError("down")
        return {"events": [e for e in peer_events[port] if e["ts"] > body["since"]]}

    peers = lambda: {b: ("127.0.0.1", b) for b in live | {1}}  # noqa: E731 (the broker itself is left out)
    return clock, own, ClusterTimeline(own, peers, call), asked


def test_a_dead_brokers_events_stay_and_merge_in_time_order_without_repeats():
    peer_events = {2: [ev(101, 2, "a"), ev(103, 2, "b")], 3: [ev(102, 3, "c")]}
    clock, own, tl, asked = make(peer_events, live={2, 3})
    clock.now = 100.5
    own.record("started", "broker 1 up")
    asyncio.run(tl.pull())
    assert sorted(p for p, _ in asked) == [2, 3], "the broker never asks itself"
    assert tl.held() == {1: 100.5, 2: 103, 3: 102}
    peer_events[2].append(ev(104, 2, "d"))
    asked.clear()
    asyncio.run(tl.pull())  # broker 2 is asked from a little before its newest held event
    assert dict(asked)[2] == 103 - 2.0
    merged = tl.merged(0, 100)
    assert [e["text"] for e in merged] == ["broker 1 up", "a", "c", "b", "d"]
    assert len({event_key(e) for e in merged}) == len(merged)
    # broker 3 dies: it is no longer asked, and its events stay
    tl.peers = lambda: {2: ("127.0.0.1", 2)}
    asyncio.run(tl.pull())
    assert [e["text"] for e in tl.merged(0, 100) if e["broker"] == 3] == ["c"]
    assert [e["text"] for e in tl.merged(102.5, 2)] == ["b", "d"], "newer than since, the newest limit"


def test_a_peer_that_does_not_answer_is_asked_again_the_next_time():
    clock, own, tl, asked = make({2: [ev(101, 2)]}, live=set())
    tl.peers = lambda: {2: ("127.0.0.1", 2)}
    asyncio.run(tl.pull())
    assert tl.held() == {} and asked == [(2, 0.0)]
    asyncio.run(tl.pull())
    assert asked == [(2, 0.0), (2, 0.0)]
