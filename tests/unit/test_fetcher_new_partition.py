"""A follower that learns of a new partition before its leader does (the controller sends
both their LeaderAndIsr at once) is answered UNKNOWN_TOPIC_OR_PARTITION by the leader's
first fetches: it asks again after milliseconds, not after replica.fetch.backoff.ms, so
the first acks=all records to a new topic are not held back a second; a partition that
was answered before backs off as for any error."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from minikafka.broker import fetcher as fetcher_mod
from minikafka.broker.fetcher import NEW_PARTITION_RETRIES, NEW_PARTITION_RETRY_S, Fetcher
from minikafka.errors import UnknownTopicOrPartitionError
from minikafka.protocol.rpc.types import FetchPartitionResponse, FetchResponse
from minikafka.replication.partition import LeaderState, PartitionReplica, TruncationMode

TP = ("orders", 0)
BACKOFF_MS = 1000


def _fetcher(answers: list) -> tuple[Fetcher, list[float]]:
    replica = PartitionReplica(*TP, broker_id=2)
    replica.become_follower(LeaderState(1, 0, (1, 2), (1, 2), 0, 1), 0)
    rm = SimpleNamespace(partitions={TP: replica}, truncation=TruncationMode.LEADER_EPOCH, apply=lambda p, eff: None)
    settings = SimpleNamespace(replica_fetch_backoff_ms=BACKOFF_MS, replica_fetch_wait_max_ms=500, replica_fetch_min_bytes=1,
                               request_timeout_ms=30000, replica_fetch_max_bytes=1 << 20)
    manager = SimpleNamespace(settings=settings, replica_manager=rm, config=SimpleNamespace(broker_id=2),
                              broker_epoch=lambda: 7, metrics=SimpleNamespace(count=lambda *a, **k: None))
    f = Fetcher(manager, 1, ("127.0.0.1", 1), 0)

    async def call(req, timeout_s):
        error = answers.pop(0)
        return FetchResponse(session_id=0, partitions=[FetchPartitionResponse(
            topic=TP[0], partition=TP[1], error=error, high_watermark=0 if error is None else -1,
            log_start_offset=0 if error is None else -1, log_end_offset=-1, leader_epoch=-1, records=b"")])
    f._call = call  # type: ignore[method-assign]
    return f, []


def _rounds(f: Fetcher, n: int, monkeypatch) -> list[float]:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)
    monkeypatch.setattr(fetcher_mod.asyncio, "sleep", sleep)

    async def main() -> None:
        f.add(TP)
        for _ in range(n):
            await f.do_work()
    asyncio.run(main())
    return slept


def test_a_partition_the_leader_has_not_taken_up_yet_is_asked_again_at_once(monkeypatch):
    f, _ = _fetcher([UnknownTopicOrPartitionError("not yet")] * 3 + [None])
    assert _rounds(f, 4, monkeypatch) == [NEW_PARTITION_RETRY_S] * 3


def test_it_backs_off_as_usual_once_it_was_answered_or_asked_too_often(monkeypatch):
    f, _ = _fetcher([None, UnknownTopicOrPartitionError("deleted")])
    assert _rounds(f, 2, monkeypatch) == [BACKOFF_MS / 1000]
    f, _ = _fetcher([UnknownTopicOrPartitionError("never")] * (NEW_PARTITION_RETRIES + 1))
    assert _rounds(f, NEW_PARTITION_RETRIES + 1, monkeypatch) == [NEW_PARTITION_RETRY_S] * NEW_PARTITION_RETRIES + [BACKOFF_MS / 1000]
