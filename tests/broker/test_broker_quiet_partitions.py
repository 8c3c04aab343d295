"""Idle partitions in followers' fetch sessions (KIP-227) on real in-process brokers
(harness.py): a partition with nothing new is quiet, left out of the session's reads,
yet its follower stays in the ISR while it fetches, leaves it when it stops, and a
record appended to a quiet partition reaches the followers at once."""
from __future__ import annotations

import asyncio

from harness import Cluster, run_cluster

TOPIC = "idle"
PARTITIONS = 12


def _follower_sessions(c: Cluster, leader: int) -> list:
    """The followers' fetch sessions at broker ``leader``."""
    return [s for s in c.world.brokers[leader].replica_manager.fetch_sessions.sessions.values() if s.privileged]


def _quiet(c: Cluster, broker: int) -> int:
    """How many session partitions are quiet at ``broker`` (held, but not read by the next fetch)."""
    return sum(len(s.partitions) - len(s.active) for s in _follower_sessions(c, broker))


def _all_quiet(c: Cluster) -> bool:
    """Whether every partition is quiet in both of its followers' sessions."""
    return all(_quiet(c, b) >= 2 * sum(1 for p in range(PARTITIONS) if c.leader(TOPIC, p) == b) for b in (1, 2, 3))


async def _idle_topic(c: Cluster) -> None:
    await c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    producer = await c.started(c.producer("p1", acks="all"))
    for p in range(PARTITIONS):
        await producer.send_and_wait(TOPIC, b"x", partition=p)
    await c.wait_until(lambda: all(c.in_sync(TOPIC, p, 3) for p in range(PARTITIONS)), 30, "every ISR full")


def test_idle_partitions_go_quiet_and_their_followers_stay_in_the_isr():
    """An in-sync follower at the leader's log end, with nothing to be told, is left out of
    its session's reads (quiet); it still counts as caught up at each of its session's
    fetches, so after several times replica.lag.time.max.ms of silence every ISR is full."""

    async def body(c: Cluster) -> None:
        await _idle_topic(c)
        await c.wait_until(lambda: _all_quiet(c), 30, "every led partition quiet in both followers' sessions")
        lag_s = c.world.brokers[1].config.get("replica.lag.time.max.ms") / 1000
        await asyncio.sleep(3 * lag_s)
        assert all(c.in_sync(TOPIC, p, 3) for p in range(PARTITIONS)), [c.isr(TOPIC, p) for p in range(PARTITIONS)]

    run_cluster(body, seed=41)


def test_a_paused_follower_leaves_and_rejoins_the_isr_of_its_quiet_partitions():
    """A follower paused while its partitions are quiet leaves every ISR (its ZooKeeper
    session expires and the controller removes it; its session's fetches stop, so its
    catch-up time on the quiet partitions stops too); resumed, it fetches again (a new
    session reads every partition) and rejoins every ISR."""

    async def body(c: Cluster) -> None:
        await _idle_topic(c)
        await c.wait_until(lambda: _quiet(c, 1) > 0 and _quiet(c, 2) > 0, 30, "quiet partitions")
        c.pause(3)
        lag_s = c.world.brokers[1].config.get("replica.lag.time.max.ms") / 1000
        await c.wait_until(lambda: all(c.leader(TOPIC, p) in (1, 2) and 3 not in c.isr(TOPIC, p)
                                       for p in range(PARTITIONS)), 4 * lag_s, "broker 3 out of every ISR")
        c.resume(3)
        await c.wait_until(lambda: all(c.in_sync(TOPIC, p, 3) for p in range(PARTITIONS)), 60,
                           "broker 3 back in every ISR")

    run_cluster(body, seed=42)


def test_a_record_appended_to_a_quiet_partition_reaches_its_followers_at_once():
    """A follower's fetch waiting for news is woken when a quiet partition of its session
    gets a record, so acks=all is answered within a few network trips, not after the
    fetch's max wait (replica.fetch.wait.max.ms)."""

    async def body(c: Cluster) -> None:
        await _idle_topic(c)
        await c.wait_until(lambda: all(_quiet(c, b) > 0 for b in (1, 2, 3)), 30, "quiet partitions")
        await asyncio.sleep(2)  # the followers' fetches are parked, waiting for news
        producer = await c.started(c.producer("p2", acks="all"))
        wait_max_s = c.world.brokers[1].config.get("replica.fetch.wait.max.ms") / 1000
        for p in range(PARTITIONS):
            start = c.now()
            await producer.send_and_wait(TOPIC, b"y", partition=p)
            assert c.now() - start < wait_max_s / 2, (p, c.now() - start, wait_max_s)
            lead = c.leader_replica(TOPIC, p)
            assert lead.high_watermark == 2

    run_cluster(body, seed=43)


def test_a_session_whose_partitions_are_all_quiet_waits_for_news():
    """A follower's fetch in a session whose partitions are all quiet reads nothing, and is
    parked like any fetch with less than min_bytes to give: for replica.fetch.wait.max.ms,
    or until a partition of the session changes.  Answered at once, it would send the
    follower straight back: a busy loop between idle brokers."""

    async def body(c: Cluster) -> None:
        await _idle_topic(c)
        await c.wait_until(lambda: all(_quiet(c, b) > 0 for b in (1, 2, 3)), 30, "quiet partitions")
        caches = {b: c.world.brokers[b].replica_manager.fetch_sessions for b in (1, 2, 3)}
        before = {b: cache.incremental_fetches for b, cache in caches.items()}
        idle_s = 10.0
        await asyncio.sleep(idle_s)
        wait_max_s = c.world.brokers[1].config.get("replica.fetch.wait.max.ms") / 1000
        bound = 2 * (idle_s / wait_max_s + 5)  # two followers' sessions at each leader
        fetches = {b: caches[b].incremental_fetches - before[b] for b in caches}
        assert all(n <= bound for n in fetches.values()), (fetches, bound)

    run_cluster(body, seed=44)


def test_topics_created_one_after_another_leave_no_fetch_sessions_behind():
    """Each new partition a follower is given calls off its fetch parked at the leader, so
    that it is asked for at once; a full fetch is not called off (the leader opens a
    session when it answers one, and an answer nobody reads would leave that session
    behind, holding its partitions, until evicted).  After many topics created one by one,
    each leader keeps about one session per follower's fetcher."""

    async def body(c: Cluster) -> None:
        admin = await c.started(c.admin("a1"))
        for i in range(15):
            await admin.create_topic(f"one-by-one-{i}", partitions=2, replication_factor=3)
        await c.wait_until(lambda: all(c.in_sync(f"one-by-one-{i}", p, 3) for i in range(15) for p in range(2)),
                           60, "every ISR full")
        await asyncio.sleep(2)
        fetchers = c.world.brokers[1].config.get("num.replica.fetchers")
        sessions = {b: len(_follower_sessions(c, b)) for b in (1, 2, 3)}
        assert all(n <= 2 * fetchers for n in sessions.values()), (sessions, fetchers)

    run_cluster(body, seed=45)


def test_an_idle_follower_reads_none_of_its_partitions_again_between_fetches():
    """A follower's fetcher keeps each partition's fetch entry between rounds and reads a
    partition again only when one of its effects was carried out (an append, a truncation,
    a new leader epoch): while every partition is idle its rounds go on, and read none."""

    async def body(c: Cluster) -> None:
        await _idle_topic(c)
        await c.wait_until(lambda: _all_quiet(c), 30, "every partition quiet in both followers' sessions")
        fetchers = [f for b in (1, 2, 3) for f in c.world.brokers[b].fetchers.fetchers.values()]
        rounds = sum(f.rounds for f in fetchers)
        read = sum(f.entries_read for f in fetchers)
        await asyncio.sleep(10)
        assert sum(f.rounds for f in fetchers) - rounds >= 10, "the fetchers went on fetching"
        assert sum(f.entries_read for f in fetchers) == read
        producer = await c.started(c.producer("p3", acks="all"))
        await producer.send_and_wait(TOPIC, b"z", partition=0)
        assert sum(f.entries_read for f in fetchers) - read >= 2  # both followers of partition 0 read it

    run_cluster(body, seed=46)


def test_topics_created_one_after_another_cost_no_full_fetches_and_are_fetched_at_once():
    """A follower given a new partition does not call off its fetch parked at the leader
    (that made the next fetch a full one, reading every partition of the session: a full
    fetch per follower per topic created); the leader, given the partition, answers its
    followers' parked fetches and parks theirs only briefly until their sessions hold it.
    After 15 topics created one by one the leaders have seen only the followers' first full
    fetches, and each topic's first acks=all record is acknowledged well within
    replica.fetch.wait.max.ms."""

    async def body(c: Cluster) -> None:
        await _idle_topic(c)  # every follower's session is open and its fetches park
        await c.wait_until(lambda: _all_quiet(c), 30, "every partition quiet in both followers' sessions")
        caches = {b: c.world.brokers[b].replica_manager.fetch_sessions for b in (1, 2, 3)}
        full_before = {b: cache.full_fetches for b, cache in caches.items()}
        admin = await c.started(c.admin("a2"))
        producer = await c.started(c.producer("p4", acks="all"))
        wait_max_s = c.world.brokers[1].config.get("replica.fetch.wait.max.ms") / 1000
        for i in range(15):
            topic = f"one-more-{i}"
            await admin.create_topic(topic, partitions=2, replication_factor=3)
            await c.wait_until(lambda: all(c.leader(topic, p) is not None for p in range(2)), 30, f"{topic} led")
            await asyncio.sleep(1)  # the followers' fetches park again
            start = c.now()
            await producer.send_and_wait(topic, b"first", partition=0)
            assert c.now() - start < wait_max_s / 2, (topic, c.now() - start, wait_max_s)
        full = {b: caches[b].full_fetches - full_before[b] for b in caches}
        assert all(n == 0 for n in full.values()), full

    run_cluster(body, seed=47)


def test_an_idle_broker_writes_no_hw_checkpoint_until_a_high_watermark_moves():
    """replication-offset-checkpoint is written every replica.high.watermark.checkpoint
    .interval.ms only when some high watermark moved (or a partition came or went)."""

    async def body(c: Cluster) -> None:
        await _idle_topic(c)
        written: list[dict] = []
        for b in (1, 2, 3):
            storage = c.world.brokers[b].replica_manager.storage
            real = storage.write_hw_checkpoint
            storage.write_hw_checkpoint = lambda hws, real=real: (written.append(dict(hws)), real(hws))[1]
        await asyncio.sleep(12)  # past the interval (5 s): the last writes after the topic's records
        written.clear()
        await asyncio.sleep(20)
        assert written == []
        producer = await c.started(c.producer("p2", acks="all"))
        await producer.send_and_wait(TOPIC, b"y", partition=0)
        await c.wait_until(lambda: len(written) >= 3, 15, "every broker's checkpoint written again")
        assert all(hws[(TOPIC, 0)] == 2 for hws in written[-3:])

    run_cluster(body, seed=5)
