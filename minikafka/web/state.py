"""What the dashboard shows: the cluster state and the cluster-wide event timeline,
assembled by the broker that serves the page.

* :meth:`WebState.cluster_state` combines this broker's metadata cache (brokers,
  controller, every partition's leader, epoch, replicas and ISR as the controller
  published them) with what every live broker reports about its own replicas
  through the ``replica_state`` API (LEO, HW, role, the leader's view of its
  followers), asked concurrently with a short timeout so that a paused or dying
  broker cannot hold the answer.  A replica's ``behind`` says whether its ``lag`` means
  something: a live follower out of the ISR, or one the leader finds out of sync
  (``out_of_sync``: not caught up within replica.lag.time.max.ms); an in-sync follower
  one fetch behind is not behind.
* Partitions and topics are in name order, internal topics (names starting with
  ``__``: ``__consumer_offsets``, ``__transaction_state``) after the others and marked
  ``internal``; the page hides them behind a toggle.
* A client asks for one page of partition rows (:class:`StateQuery`: a topic filter,
  internal topics or not, problem partitions first or only, offset and limit) and one
  page of topics.  The counts (the summary, each topic's, each broker's) cover every
  partition: they come from a :class:`PartitionIndex` of the metadata cache, built again
  only when the metadata changes (its ``version``) or the live brokers do; the brokers
  are asked ``replica_state`` for the rows of the page only (and the partitions of the
  consumer groups, for their lag), and only those rows get rates.  So a poll costs what
  it shows, and the page stays quick with 10,000 partitions.
* :meth:`WebState.cluster_state` also carries the shown topics' configs (overrides and
  effective values, from ``describe_configs`` asked again every few seconds; a few other
  topics' per poll, so every topic's min.insync.replicas is known after a while), flags the
  partitions under their topic's min.insync.replicas, and gives per-partition produce
  and fetch rates: the difference of the leader's counters (log end offset and log
  bytes for produce, what consumers fetched for fetch) over the last few seconds of
  this dashboard's own samples.
* :meth:`WebState.cluster_state` gives each partition's last stable offset (LSO) and
  open transactions as its leader reports them, and lists the open transactions of every
  broker's transaction coordinator (``list_transactions`` and ``describe_transactions``).
* :meth:`WebState.cluster_state` gives each broker's ZooKeeper session state (connected,
  suspended, lost: from its ``replica_state`` answer) and each ZooKeeper server's mode
  (leader, follower, standalone, looking or down: the server's own ``srvr`` answer) for
  every server of the serving broker's ``zookeeper.connect``.
* :meth:`WebState.events` is the cluster's timeline as the serving broker holds it
  (``minikafka.broker.timeline.ClusterTimeline``, which the ``events`` API with
  ``cluster`` answers from too): its own events and every other broker's, pulled every
  second by a task the dashboard's web app owns (from its start to its cleanup), whether
  or not a page is open, and kept: when a broker dies, the others still hold its events
  up to its last second, so the timeline of a failover survives the death of the
  controller that recorded it.  ``cluster_state()["timeline"]`` says, per broker, the
  newest event held of it.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import fnmatch
import itertools
import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..errors import KafkaError
from ..protocol.rpc.types import (
    DescribeConfigsRequest,
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeTransactionsRequest,
    ListGroupsRequest,
    ListTransactionsRequest,
    OffsetFetchPartition,
    OffsetFetchRequest,
    ReplicaState,
    ReplicaStatePartition,
    ReplicaStateRequest,
    ReplicaStateResponse,
)
from ..rpc import request
from ..zk.launcher import server_mode, split_connect
from ..zk.layout import is_internal_topic

if TYPE_CHECKING:
    from .view import BrokerView

log = logging.getLogger(__name__)

# A broker that does not answer replica_state / events within this is shown as
# "not responding" (a SIGSTOPped broker stays registered until its ZooKeeper
# session expires); the page polls every 500 ms, so keep this under a second.
PEER_TIMEOUT_S = 0.8
# Topic configs are asked again when older than this (a describe_configs per topic reads
# ZooKeeper; the page polls every 500 ms).
CONFIG_TTL_S = 3.0
CONFIG_TIMEOUT_S = 2.0
# How long a ZooKeeper server may take to answer ``srvr`` before it is shown as down.
ZK_MODE_TIMEOUT_S = 0.4
# Rates are the counters' difference over the samples of the last RATE_WINDOW_S seconds
# (at least RATE_MIN_SPAN_S apart), so they fall back to 0 this long after traffic stops.
RATE_WINDOW_S = 3.0
RATE_MIN_SPAN_S = 0.25
# the counters behind the rates: (name in the leader's replica_state entry, rate name)
RATE_COUNTERS = (("log_end_offset", "produce_records_per_s"), ("size_bytes", "produce_bytes_per_s"),
                 ("fetched_records", "fetch_records_per_s"), ("fetched_bytes", "fetch_bytes_per_s"))

# The transaction states in which a transaction is open (its partitions' LSO waits for it).
OPEN_TXN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
# a group as its coordinator describes it: (coordinator id, the description, its committed offsets)
GroupAnswer = tuple[int, DescribedGroup, list[OffsetFetchPartition]]
# The transaction coordinator's events: they name a transactional id, not a partition.
TXN_COORDINATOR_KINDS = ("txn_begin", "txn_commit", "txn_abort", "txn_fenced", "txn_timed_out")
TXN_ID_IN_TEXT = re.compile(r"^transactional id (.+?): ")
TP_IN_TEXT = re.compile(r"([A-Za-z0-9._-]+)-(\d+)")
TOPIC_IN_TEXT = re.compile(r"topic ([A-Za-z0-9._-]+)")


# Rows of /api/state: the page asks for one page of them (its own size); a program that
# names no limit gets the first DEFAULT_LIMIT, and none gets more than MAX_LIMIT.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 5000
DEFAULT_TOPIC_LIMIT = 100
# Topic configs read per poll beyond those the page shows (oldest first): every topic's
# min.insync.replicas is known after a while, and a poll never asks for hundreds.
CONFIG_BACKGROUND_PER_POLL = 10
# The full list of settings is sent for at most this many topics (the topics table's page).
FULL_CONFIGS_MAX = 100


@dataclass(frozen=True)
class StateQuery:
    """What a client asks of ``/api/state``: which partition rows (topics matching ``topic``,
    internal topics or not, only the problem ones or all, problems first) and which page of
    them and of the topics table."""

    # a topic's name (that topic), a part of names, or a glob when it has * ? or [
    topic: str = ""
    internal: bool = True      # rows of internal topics (__consumer_offsets...) too
    problems_only: bool = False
    offset: int = 0
    limit: int = DEFAULT_LIMIT
    topic_offset: int = 0
    topic_limit: int = DEFAULT_TOPIC_LIMIT
    # the topics whose every setting is sent (None: every topic of the page's)
    configs: frozenset[str] | None = None

    def matches(self, topic: str) -> bool:
        if not self.internal and is_internal_topic(topic):
            return False
        if not self.topic:
            return True
        if any(c in self.topic for c in "*?["):
            return fnmatch.fnmatchcase(topic, self.topic)
        return self.topic in topic


def parse_state_query(query: Mapping[str, str]) -> StateQuery:
    """A :class:`StateQuery` from ``/api/state``'s parameters; ValueError with a message
    for the client on a bad one."""
    def number(name: str, default: int, top: int) -> int:
        raw = query.get(name, "")
        if raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"{name} must be a whole number, not {raw!r}") from None
        if not 0 <= value <= top:
            raise ValueError(f"{name} must be between 0 and {top}, not {value}")
        return value

    def flag(name: str, default: bool) -> bool:
        raw = query.get(name, "").lower()
        if raw == "":
            return default
        if raw in ("1", "true", "yes"):
            return True
        if raw in ("0", "false", "no"):
            return False
        raise ValueError(f"{name} must be 1 or 0 (true or false), not {raw!r}")

    problems = query.get("problems", "")
    if problems not in ("", "first", "only"):
        raise ValueError(f"problems must be first or only, not {problems!r}")
    topic = query.get("topic", "")
    if len(topic) > 249:
        raise ValueError("topic is a name or a pattern of at most 249 characters")
    configs = query.get("configs")
    return StateQuery(topic=topic, internal=flag("internal", True), problems_only=problems == "only",
                      configs=None if configs is None else frozenset(t for t in configs.split(",") if t),
                      offset=number("offset", 0, 10**9), limit=number("limit", DEFAULT_LIMIT, MAX_LIMIT),
                      topic_offset=number("topic_offset", 0, 10**9),
                      topic_limit=number("topic_limit", DEFAULT_TOPIC_LIMIT, MAX_LIMIT))


def _topic_order(topic: str) -> tuple[bool, str]:
    """Topics by name, internal topics (__consumer_offsets) after the others."""
    return is_internal_topic(topic), topic


@dataclass
class TopicCounts:
    """One topic's numbers as the metadata cache has them."""

    topic: str
    partitions: int = 0
    replication_factor: int = 0
    offline: int = 0
    under_replicated: int = 0
    # ISR size -> partitions with a live leader and that many in-sync replicas (under min
    # ISR is counted from it once the topic's min.insync.replicas is known)
    isr_sizes: dict[int, int] | None = None
    leaders: dict[int, int] | None = None  # broker id -> partitions it leads
    problems: list[int] | None = None      # offline or under-replicated partitions, in order
    healthy: list[int] | None = None       # the others, in order

    def under_min_isr(self, min_isr: int | None) -> int | None:
        if min_isr is None:
            return None
        return sum(n for size, n in (self.isr_sizes or {}).items() if size < min_isr)


class PartitionIndex:
    """The partitions of the metadata cache by topic, with each topic's counts and its
    problem partitions (no live leader, or an ISR smaller than the replicas) apart: built
    when the metadata changed (its ``version``) or the live brokers did, not on every poll,
    so that a poll costs what it shows, not the number of partitions."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.topics: dict[str, TopicCounts] = {}
        self.order: list[str] = []               # topic names, internal ones last
        self.leaders: dict[int, int] = {}        # broker id -> partitions it leads (live leaders)
        self.replicas: dict[int, int] = {}       # broker id -> replicas assigned to it
        self.builds = 0

    def refresh(self, metadata: Any, live: set[int]) -> None:
        version = getattr(metadata, "version", None)
        key = (id(metadata), version, frozenset(live))
        if version is not None and key == self.key:
            return
        by_topic = getattr(metadata, "by_topic", None)
        if by_topic is None:  # a metadata without the by-topic map: group its partitions
            by_topic = {}
            for (t, p), st in metadata.partitions.items():
                by_topic.setdefault(t, {})[p] = st
        topics: dict[str, TopicCounts] = {}
        leaders: collections.Counter[int] = collections.Counter()
        replicas: collections.Counter[int] = collections.Counter()
        for topic, parts in by_topic.items():
            c = TopicCounts(topic, isr_sizes={}, leaders={}, problems=[], healthy=[])
            assert c.isr_sizes is not None and c.leaders is not None and c.problems is not None and c.healthy is not None
            for part in sorted(parts):
                st = parts[part]
                reps, isr, leader = st["replicas"], st["isr"], int(st["leader"])
                c.partitions += 1
                c.replication_factor = max(c.replication_factor, len(reps))
                for r in reps:
                    replicas[int(r)] += 1
                offline = leader < 0 or leader not in live
                urp = len(isr) < len(reps)
                if offline:
                    c.offline += 1
                else:
                    c.leaders[leader] = c.leaders.get(leader, 0) + 1
                    leaders[leader] += 1
                    c.isr_sizes[len(isr)] = c.isr_sizes.get(len(isr), 0) + 1
                if urp:
                    c.under_replicated += 1
                (c.problems if offline or urp else c.healthy).append(part)
            topics[topic] = c
        self.topics = topics
        self.order = sorted(topics, key=_topic_order)
        self.leaders, self.replicas = dict(leaders), dict(replicas)
        self.key = key
        self.builds += 1

    def matching(self, q: StateQuery) -> list[str]:
        """The topics ``q`` matches, internal ones last; a filter that is a topic's whole
        name matches that topic only."""
        if q.topic in self.topics and q.matches(q.topic):
            return [q.topic]
        return [t for t in self.order if q.matches(t)]

    def rows(self, topics: list[str], q: StateQuery) -> tuple[list[tuple[str, int]], int, int]:
        """The page of partitions ``q`` asks for among ``topics`` (problem partitions first,
        then the others, each by topic and number), how many match and how many of those are
        problems."""
        problems = sum(len(self.topics[t].problems or ()) for t in topics)
        total = problems if q.problems_only else sum(self.topics[t].partitions for t in topics)

        def all_rows() -> Iterator[tuple[str, int]]:
            for t in topics:
                for p in self.topics[t].problems or ():
                    yield t, p
            if not q.problems_only:
                for t in topics:
                    for p in self.topics[t].healthy or ():
                        yield t, p

        return list(itertools.islice(all_rows(), q.offset, q.offset + q.limit)), total, problems


def _counts(topics: list[TopicCounts], min_isr: Any) -> dict[str, int]:
    """The dashboard's summary numbers of some topics' partitions."""
    return {"topics": len(topics), "partitions": sum(c.partitions for c in topics),
            "under_replicated": sum(c.under_replicated for c in topics),
            "under_min_isr": sum(c.under_min_isr(min_isr(c.topic)) or 0 for c in topics),
            "offline": sum(c.offline for c in topics)}


class RateTracker:
    """Per-partition rates from successive readings of the leader's counters.

    A reading is ``(time, leader, counters)``; the rate of a counter is its increase
    from the oldest reading of the last :data:`RATE_WINDOW_S` seconds to the newest,
    divided by the time between them.  A new leader (its counters are its own), or a
    counter that went down (truncation, retention, a restarted broker), starts over.
    """

    def __init__(self) -> None:
        self.samples: dict[tuple[str, int], collections.deque[tuple[float, int, dict[str, int]]]] = {}

    def observe(self, tp: tuple[str, int], now: float, leader: int, counters: dict[str, int]) -> dict[str, float | None]:
        """Add a reading and return every rate (None until two readings span enough time)."""
        hist = self.samples.setdefault(tp, collections.deque())
        if hist and (hist[-1][1] != leader or any(counters[k] < hist[-1][2].get(k, 0) for k in counters)):
            hist.clear()
        hist.append((now, leader, counters))
        while len(hist) > 1 and now - hist[0][0] > 2 * RATE_WINDOW_S:  # nobody asked for a while
            hist.popleft()
        while len(hist) > 2 and now - hist[1][0] >= RATE_WINDOW_S:
            hist.popleft()
        first = hist[0]
        span = now - first[0]
        rates: dict[str, float | None] = {}
        for counter, name in RATE_COUNTERS:
            ok = span >= RATE_MIN_SPAN_S and counter in counters and counter in first[2]
            rates[name] = round((counters[counter] - first[2][counter]) / span, 2) if ok else None
        return rates

    def forget(self, now: float, known: Any) -> None:
        """Drop the readings of partitions that are gone (deleted topics) or that nobody
        looked at for a while (rows of another page): the tracker holds the rows shown."""
        for tp in [tp for tp, hist in self.samples.items()
                   if tp not in known or not hist or now - hist[-1][0] > 2 * RATE_WINDOW_S]:
            del self.samples[tp]


class WebState:
    """Per-broker helper behind ``/api/state`` and ``/api/events``."""

    def __init__(self, view: "BrokerView") -> None:
        self.view = view
        # every broker this one has known, so a dead one can still be named with its endpoint
        self.known: dict[int, tuple[str, int]] = {}
        # topic -> (monotonic time asked, describe_configs entries)
        self.configs: dict[str, tuple[float, list[dict]]] = {}
        self.config_errors: dict[str, str] = {}
        self.min_isrs: dict[str, int | None] = {}  # topic -> min.insync.replicas of its configs
        self.rates = RateTracker()
        self.zk_sessions: dict[int, str] = {}  # broker id -> its ZooKeeper session state as it last said
        self.index = PartitionIndex()

    # -- helpers ----------------------------------------------------------------------
    def _live(self) -> dict[int, tuple[str, int]]:
        b = self.view
        live = dict(b.metadata().brokers)
        if b.broker_id not in live:  # before the first UpdateMetadata, or while partitioned away
            live[b.broker_id] = b.advertised
        return live

    def endpoint(self, broker_id: int) -> tuple[str, int] | None:
        """The inter-broker endpoint of a live broker (this one included), else None."""
        return self._live().get(broker_id)

    def _controller(self) -> tuple[int, int]:
        b = self.view
        md = b.metadata()
        epoch = b.controller_epoch()
        if epoch is not None:
            return b.broker_id, max(epoch, md.controller_epoch)
        return md.controller_id, md.controller_epoch

    async def _replica_states(self, live: dict[int, tuple[str, int]],
                              wanted: dict[int, list[tuple[str, int]]]
                              ) -> tuple[dict[int, dict[tuple[str, int], ReplicaState]], dict[int, str]]:
        """broker id -> {(topic, partition): replica description} of the partitions ``wanted``
        of each (none for a broker not named: it is still asked, for its ZooKeeper session
        and whether it answers); and broker id -> error text."""
        b = self.view

        async def ask(bid: int, host: str, port: int) -> ReplicaStateResponse:
            tps = wanted.get(bid, [])
            if bid == b.broker_id:
                return ReplicaStateResponse(broker_id=bid, zookeeper_session=b.zookeeper_session(),
                                            replicas=b.local_replicas([(t, p, None) for t, p in tps]))
            return await request(self.view.call, host, port, ReplicaStateRequest(
                partitions=[ReplicaStatePartition(topic=t, partition=p) for t, p in tps]), PEER_TIMEOUT_S)

        ids = sorted(live)
        answers = await asyncio.gather(*(ask(i, *live[i]) for i in ids), return_exceptions=True)
        states: dict[int, dict[tuple[str, int], ReplicaState]] = {}
        errors: dict[int, str] = {}
        for bid, ans in zip(ids, answers):
            if isinstance(ans, BaseException):
                if not isinstance(ans, Exception):
                    raise ans
                errors[bid] = f"{ans.__class__.__name__}: {ans}" if not isinstance(ans, KafkaError) else str(ans)
                continue
            states[bid] = {(r.topic, r.partition): r for r in ans.replicas}
            self.zk_sessions[bid] = ans.zookeeper_session or ""
        return states, errors

    async def _zookeeper(self) -> dict:
        """The serving broker's zookeeper.connect and each of its servers' mode."""
        hosts, chroot = split_connect(self.view.zookeeper_connect)
        servers = []
        for item in [h.strip() for h in hosts.split(",") if h.strip()]:
            host, _, port = item.rpartition(":")
            try:
                servers.append((host.strip("[]") or item, int(port)))
            except ValueError:
                continue
        modes = await asyncio.gather(*(asyncio.to_thread(server_mode, h, p, ZK_MODE_TIMEOUT_S) for h, p in servers))
        return {"connect": self.view.zookeeper_connect, "chroot": chroot,
                "servers": [{"host": h, "port": p, "mode": m} for (h, p), m in zip(servers, modes)]}

    async def _refresh_configs(self, shown: set[str], every: list[str]) -> None:
        """Ask describe_configs (of the serving broker) again for the ``shown`` topics whose
        configs are missing or older than :data:`CONFIG_TTL_S`, and for at most
        :data:`CONFIG_BACKGROUND_PER_POLL` others of ``every`` topic, the oldest first (so
        every topic's min.insync.replicas is known after a while); a failure keeps the last
        answer."""
        now = time.monotonic()
        known = set(every)
        for gone in set(self.configs) - known:
            del self.configs[gone]
            self.min_isrs.pop(gone, None)
        for gone in set(self.config_errors) - known:
            del self.config_errors[gone]
        stale = sorted(t for t in shown if t not in self.configs or now - self.configs[t][0] >= CONFIG_TTL_S)
        others = [t for t in every if t not in shown and (t not in self.configs or now - self.configs[t][0] >= CONFIG_TTL_S)]
        others.sort(key=lambda t: self.configs[t][0] if t in self.configs else 0.0)
        stale += others[:CONFIG_BACKGROUND_PER_POLL]
        if not stale:
            return
        host, port = self._live()[self.view.broker_id]

        async def ask(topic: str) -> None:
            try:
                got = await request(self.view.call, host, port, DescribeConfigsRequest(topic=topic),
                                    CONFIG_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - shown on the page, the last answer stays
                self.config_errors[topic] = str(exc) if isinstance(exc, KafkaError) else f"{exc.__class__.__name__}: {exc}"
                return
            self.config_errors.pop(topic, None)
            self.configs[topic] = (time.monotonic(), [
                {"name": c.name, "value": c.value, "source": c.source} for c in got.configs])
            self.min_isrs[topic] = self._min_isr_of(self.configs[topic][1])

        await asyncio.gather(*(ask(t) for t in stale))

    def _topics(self, names: list[str], q: StateQuery) -> list[dict]:
        """The topics table's page: each topic with its id (KIP-516), partition count,
        replication factor, counts (offline, under-replicated, under min ISR, leaders per
        broker), overrides and the effective value (and its source) of every setting."""
        out = []
        metadata = self.view.metadata()
        for topic in names:
            c = self.index.topics[topic]
            entries = self.configs.get(topic, (0.0, None))[1]
            out.append({
                "topic": topic, "topic_id": metadata.topic_id(topic), "internal": is_internal_topic(topic),
                "partitions": c.partitions, "replication_factor": c.replication_factor,
                "offline": c.offline, "under_replicated": c.under_replicated,
                "under_min_isr": c.under_min_isr(self._min_isr(topic)) or 0,
                "leaders": {str(k): v for k, v in sorted((c.leaders or {}).items())},
                "min_insync_replicas": self._min_isr(topic),
                "settings": len(entries) if entries is not None else None,
                "configs": entries if q.configs is None or topic in q.configs else None,
                "overrides": {c["name"]: c["value"] for c in entries if c["source"] == "topic"} if entries is not None else None,
                "config_error": self.config_errors.get(topic, ""),
            })
        return out

    def _min_isr(self, topic: str) -> int | None:
        """The topic's effective min.insync.replicas, from its last describe_configs answer."""
        return self.min_isrs.get(topic)

    @staticmethod
    def _min_isr_of(entries: list[dict]) -> int | None:
        for c in entries:
            if c["name"] == "min.insync.replicas" and c["value"] is not None:
                try:
                    return int(c["value"])
                except ValueError:
                    return None
        return None

    async def _group_answers(self, live: dict[int, tuple[str, int]]) -> list[GroupAnswer]:
        """Every consumer group as the broker that coordinates it describes it, with its
        committed offsets."""

        async def ask(bid: int, host: str, port: int) -> list[GroupAnswer]:
            listed = await request(self.view.call, host, port, ListGroupsRequest(), PEER_TIMEOUT_S)
            names = [g.group_id for g in listed.groups]
            if not names:
                return []
            described = await request(self.view.call, host, port, DescribeGroupsRequest(groups=names), PEER_TIMEOUT_S)
            out = []
            for g in described.groups:
                if g.error is None:
                    offsets = await request(self.view.call, host, port, OffsetFetchRequest(group_id=g.group_id),
                                            PEER_TIMEOUT_S)
                    out.append((bid, g, offsets.partitions))
            return out

        ids = sorted(live)
        answers = await asyncio.gather(*(ask(i, *live[i]) for i in ids), return_exceptions=True)
        got: list[GroupAnswer] = []
        for ans in answers:
            if isinstance(ans, BaseException):
                if not isinstance(ans, Exception):
                    raise ans
                continue
            got += ans
        return got

    @staticmethod
    def _group_partitions(answers: list[GroupAnswer]) -> set[tuple[str, int]]:
        """The partitions the groups commit offsets for or are assigned (their lag needs the HW)."""
        from ..groups.consumer_protocol import decode_assignment

        tps = {(o.topic, o.partition) for _, _, offsets in answers for o in offsets if o.offset >= 0}
        for _, g, _ in answers:
            for m in g.members:
                try:
                    tps.update(decode_assignment(m.assignment).partitions)
                except KafkaError:
                    pass
        return tps

    def _groups(self, answers: list[GroupAnswer], hws: dict[tuple[str, int], int]) -> list[dict]:
        """Every consumer group, from the broker that coordinates it: state, generation,
        group leader, members with their partitions, and per partition the committed
        offset, the high watermark and the lag."""
        from ..groups.consumer_protocol import decode_assignment

        groups = []
        for bid, g, offsets in answers:
            owner: dict[tuple[str, int], str] = {}
            members = []
            for m in g.members:
                try:
                    tps = decode_assignment(m.assignment).partitions
                except KafkaError:
                    tps = []
                owner.update((tp, m.member_id) for tp in tps)
                members.append({"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                                "leader": m.member_id == g.leader,
                                "partitions": [f"{t}-{p}" for t, p in sorted(tps)]})
            committed = {(o.topic, o.partition): o.offset for o in offsets if o.offset >= 0}
            rows = []
            for tp in sorted(set(committed) | set(owner)):
                hw, cur = hws.get(tp, -1), committed.get(tp)
                rows.append({"topic": tp[0], "partition": tp[1], "committed": cur, "high_watermark": hw,
                             "lag": max(0, hw - cur) if cur is not None and hw >= 0 else None,
                             "member_id": owner.get(tp)})
            groups.append({"group": g.group_id, "state": g.state, "generation": g.generation,
                           "protocol": g.protocol, "leader": g.leader, "coordinator": bid,
                           "members": members, "partitions": rows})
        return sorted(groups, key=lambda x: x["group"])

    async def _transactions(self, live: dict[int, tuple[str, int]]) -> dict:
        """The open transactions of every live broker's transaction coordinator (the
        ``list_transactions`` and ``describe_transactions`` APIs, as ``minikafka
        transactions`` asks them): transactional id, state, producer id and epoch, start
        time, timeout and partitions, oldest first; and how many transactional ids have
        none open."""

        async def ask(bid: int, host: str, port: int) -> tuple[list[dict], int]:
            listed = await request(self.view.call, host, port, ListTransactionsRequest(), PEER_TIMEOUT_S)
            ids = [t.transactional_id for t in listed.transactions if t.state in OPEN_TXN_STATES]
            idle = len(listed.transactions) - len(ids)
            if not ids:
                return [], idle
            described = await request(self.view.call, host, port, DescribeTransactionsRequest(transactional_ids=ids),
                                      PEER_TIMEOUT_S)
            out = []
            for d in described.transactions:
                if d.error is not None or d.state not in OPEN_TXN_STATES:  # moved or finished meanwhile
                    continue
                out.append({"transactional_id": d.transactional_id, "state": d.state, "coordinator": bid,
                            "producer_id": d.producer_id, "producer_epoch": d.producer_epoch,
                            "timeout_ms": d.transaction_timeout_ms, "start_ms": d.transaction_start_time_ms,
                            "partitions": [f"{x.topic}-{x.partition}" for x in d.partitions]})
            return out, idle

        ids = sorted(live)
        answers = await asyncio.gather(*(ask(i, *live[i]) for i in ids), return_exceptions=True)
        open_: list[dict] = []
        idle = 0
        for ans in answers:
            if isinstance(ans, BaseException):
                if not isinstance(ans, Exception):
                    raise ans
                continue
            open_ += ans[0]
            idle += ans[1]
        now_ms = int(time.time() * 1000)
        for t in open_:
            t["open_ms"] = max(0, now_ms - t["start_ms"]) if t["start_ms"] >= 0 else None
        open_.sort(key=lambda t: (t["start_ms"] if t["start_ms"] >= 0 else now_ms, t["transactional_id"]))
        return {"open": open_, "idle_ids": idle}

    # -- /api/state -------------------------------------------------------------------
    def _wanted(self, tps: Any) -> dict[int, list[tuple[str, int]]]:
        """broker id -> which of ``tps`` it holds a replica of (as the metadata says)."""
        known = self.view.metadata().partitions
        wanted: dict[int, list[tuple[str, int]]] = {}
        for tp in tps:
            st = known.get(tp)
            for r in (st or {}).get("replicas") or ():
                wanted.setdefault(int(r), []).append(tp)
        return wanted

    async def cluster_state(self, q: StateQuery | None = None) -> dict:
        """The state ``q`` asks for: the summary, every broker, the page of topics and the page
        of partition rows (problem partitions first); the replicas are asked for the rows shown
        (and the partitions of consumer groups) only."""
        q = q or StateQuery()
        b = self.view
        live = self._live()
        self.known.update(live)
        self.index.refresh(b.metadata(), set(live))
        matched = self.index.matching(q)
        page, _, _ = self.index.rows(matched, q)
        shown_topics = set(matched[q.topic_offset:q.topic_offset + q.topic_limit]) | {t for t, _ in page}
        (states, errors), _, group_answers = await asyncio.gather(
            self._replica_states(live, self._wanted(page)),
            self._refresh_configs(shown_topics, self.index.order), self._group_answers(live))
        sampled = time.monotonic()
        # (re-read after the await: an UpdateMetadata may have arrived meanwhile)
        live = self._live()
        controller_id, controller_epoch = self._controller()
        metadata = b.metadata()
        self.index.refresh(metadata, set(live))
        matched = self.index.matching(q)
        page, matching, problems = self.index.rows(matched, q)
        topic_page = matched[q.topic_offset:q.topic_offset + q.topic_limit]

        partitions = []
        for topic, part in page:
            st = metadata.partitions.get((topic, part))
            if st is not None:
                partitions.append(self._partition_row(topic, part, st, states, live, sampled))
        self.rates.forget(sampled, metadata.partitions)
        hws = {(p["topic"], p["partition"]): p["high_watermark"] for p in partitions}
        missing = self._group_partitions(group_answers) - set(hws)
        transactions, zookeeper, more = await asyncio.gather(
            self._transactions(live), self._zookeeper(),
            self._leaders_hws(live, missing) if missing else asyncio.sleep(0, {}))
        hws.update(more)
        groups = self._groups(group_answers, hws)
        ids = sorted(set(live) | set(self.index.replicas) | set(self.known))
        brokers = self._brokers(ids, live, set(states), errors, controller_id)
        topics = self.index.topics
        return {
            "ts": time.time(),
            "serving_broker": b.broker_id,
            "cluster_id": b.cluster_id(),
            "controller": {"id": controller_id, "epoch": controller_epoch,
                           "alive": controller_id in live},
            "live_brokers": sorted(live),
            "dead_brokers": [i for i in ids if i not in live],
            "brokers": brokers,
            "zookeeper": zookeeper,
            "partitions": partitions,
            # which rows these are: the filter, the page, and how many match
            "page": {"topic": q.topic, "internal": q.internal, "problems": "only" if q.problems_only else "first",
                     "offset": q.offset, "limit": q.limit, "matching": matching, "matching_problems": problems,
                     "topic_offset": q.topic_offset, "topic_limit": q.topic_limit, "topics_matching": len(matched)},
            "topics": self._topics(topic_page, q),
            # every topic and its partition count (the record browser's choices)
            "topic_names": [[t, topics[t].partitions] for t in self.index.order],
            "groups": groups,
            "transactions": transactions,
            "timeline": {"held": {str(bid): ts for bid, ts in sorted(self.view.timeline_held().items())}},
            # the counts of every partition (the metadata cache's), of the topics shown by
            # default; those of the internal topics (behind a toggle) apart
            "summary": {
                **_counts([topics[t] for t in self.index.order if not is_internal_topic(t)], self._min_isr),
                "open_transactions": len(transactions["open"]),
                "internal": _counts([topics[t] for t in self.index.order if is_internal_topic(t)], self._min_isr),
            },
        }

    def _brokers(self, ids: list[int], live: dict[int, tuple[str, int]], responding: set[int],
                 errors: dict[int, str], controller_id: int) -> list[dict]:
        """Every broker ``ids`` names (live, assigned replicas, or known before): its addresses,
        whether it is alive and answered, its ZooKeeper session, its roles and its counts."""
        b = self.view
        # A page served on the external listener names the addresses its reader can reach
        # (Docker's host: localhost:9092-9094, not broker-N:19092).
        kafka = b.kafka_endpoints()
        shown = {x["id"]: (x["host"], x["port"]) for x in b.broker_endpoints(live)}
        brokers = []
        for i in ids:
            host, port = shown.get(i) or live.get(i) or self.known.get(i) or ("", 0)
            alive = i in live
            k_host, k_port = kafka.get(i) or (None, None)
            brokers.append({
                "id": i, "host": host, "port": port, "alive": alive,
                "kafka": f"{k_host}:{k_port}" if k_host else None,
                "responding": i in responding, "error": errors.get(i, ""),
                "zookeeper_session": self.zk_sessions.get(i, "") if i in responding else "",
                "controller": i == controller_id and alive,
                "serving": i == b.broker_id,
                "leader_of": self.index.leaders.get(i, 0),
                "replicas": self.index.replicas.get(i, 0),
            })
        return brokers

    def _partition_row(self, topic: str, part: int, st: dict, states: dict[int, dict[tuple[str, int], ReplicaState]],
                       live: dict[int, tuple[str, int]], sampled: float) -> dict:
        """One partition's row: the metadata's leader, replicas and ISR (the leader's own ISR
        when it reports one at the metadata's epoch), the leader's offsets, log size and
        transactions, every replica as it reports itself, and the produce and fetch rates."""
        replicas = [int(r) for r in st["replicas"]]
        leader, epoch = int(st["leader"]), int(st["leader_epoch"])
        isr = [int(r) for r in st["isr"]]
        lead = states.get(leader, {}).get((topic, part)) if leader >= 0 else None
        isr_source = "metadata"
        if lead is not None and lead.role == "leader" and lead.leader_epoch == epoch:
            # The leader's own ISR is the one it last wrote to ZooKeeper: the same as or
            # newer than the controller's copy (the leader shrinks and expands without
            # bumping the epoch).
            isr = [int(r) for r in lead.isr]
            isr_source = "leader"
        hw = lead.high_watermark if lead is not None else -1
        # the last stable offset: below it no transaction is open (read_committed stops there)
        lso = lead.last_stable_offset if lead is not None else -1
        leader_leo = lead.log_end_offset if lead is not None else -1
        reps = [self._replica_row(r, topic, part, replicas, leader, isr, lead, states, live) for r in replicas]
        offline = leader < 0 or leader not in live
        min_isr = self._min_isr(topic)
        if lead is not None and lead.role == "leader":
            rates = self.rates.observe((topic, part), sampled, leader, {
                c: int(getattr(lead, c)) for c, _ in RATE_COUNTERS})
        else:
            rates = {name: None for _, name in RATE_COUNTERS}
        return {
            "topic": topic, "partition": part, "internal": is_internal_topic(topic),
            "leader": leader, "leader_epoch": epoch,
            "replicas": replicas, "isr": isr, "isr_source": isr_source,
            "high_watermark": hw, "last_stable_offset": lso, "log_end_offset": leader_leo,
            # open transactions on the leader (producer id, first offset) and how many
            # aborted ones its index holds
            "ongoing_transactions": [{"producer_id": t.producer_id, "first_offset": t.first_offset}
                                     for t in lead.ongoing_transactions] if lead is not None else [],
            "aborted_transactions": lead.aborted_transactions if lead is not None else 0,
            # retention and DeleteRecords: the leader's log start, bytes and segments
            "log_start_offset": lead.log_start_offset if lead is not None else -1,
            "size_bytes": lead.size_bytes if lead is not None else -1,
            "segments": lead.segments if lead is not None else -1,
            "under_replicated": len(isr) < len(replicas), "offline": offline,
            # Kafka's UnderMinIsr: the leader refuses acks=all writes (NOT_ENOUGH_REPLICAS)
            "min_insync_replicas": min_isr,
            "under_min_isr": (not offline and len(isr) < min_isr) if min_isr is not None else None,
            "rates": rates,
            "replica_states": reps,
            # idempotent producers the leader knows: id, epoch, last sequence and offset
            "producers": [dataclasses.asdict(x) for x in lead.producers] if lead is not None else [],
        }

    @staticmethod
    def _replica_row(r: int, topic: str, part: int, replicas: list[int], leader: int, isr: list[int],
                     lead: ReplicaState | None, states: dict[int, dict[tuple[str, int], ReplicaState]],
                     live: dict[int, tuple[str, int]]) -> dict:
        """Replica ``r`` of a partition as it reports itself and as its leader (``lead``'s
        report) sees it: its offsets, its lag behind the leader and whether it is behind."""
        remote_leos = {int(k): int(v) for k, v in lead.remote_leos.items()} if lead is not None else {}
        leader_leo = lead.log_end_offset if lead is not None else -1
        # the ISR followers the leader finds out of sync by Kafka's rule (not caught up
        # to its LEO within replica.lag.time.max.ms)
        out_of_sync = set(lead.out_of_sync) if lead is not None else set()
        rep = states.get(r, {}).get((topic, part))
        entry: dict[str, Any] = {
            "broker": r, "alive": r in live, "responding": r in states,
            "in_isr": r in isr, "is_leader": r == leader and leader in live,
            "preferred": r == replicas[0], "reported": rep is not None,
            "role": rep.role if rep is not None else ("dead" if r not in live else "unknown"),
            "leo": rep.log_end_offset if rep is not None else -1,
            "hw": rep.high_watermark if rep is not None else -1,
            "leader_epoch": rep.leader_epoch if rep is not None else -1,
            "log_start_offset": rep.log_start_offset if rep is not None else -1,
            "leo_seen_by_leader": remote_leos.get(r, -1) if r != leader else leader_leo,
        }
        # lag: what the follower misses of the leader's log, from its own report or,
        # when it cannot answer (dead, paused), from the leader's last view of it
        leo = entry["leo"] if entry["reported"] else entry["leo_seen_by_leader"]
        entry["lag"] = max(0, leader_leo - leo) if leader_leo >= 0 and leo >= 0 else None
        # behind: a live follower that lags by Kafka's rule (out of the ISR, or in it
        # but not caught up within replica.lag.time.max.ms); an in-sync follower one
        # fetch behind (the records an acks=all producer has in flight) is not
        entry["behind"] = (entry["alive"] and r != leader and bool(entry["lag"])
                           and (r not in isr or r in out_of_sync))
        return entry

    async def _leaders_hws(self, live: dict[int, tuple[str, int]], tps: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The high watermarks of ``tps`` as their leaders report them (-1 when unknown)."""
        known = self.view.metadata().partitions
        wanted: dict[int, list[tuple[str, int]]] = {}
        for tp in sorted(tps):
            leader = int((known.get(tp) or {}).get("leader", -1))
            if leader in live:
                wanted.setdefault(leader, []).append(tp)
        states, _ = await self._replica_states({i: live[i] for i in wanted}, wanted)
        return {tp: r.high_watermark for bid, got in states.items() for tp, r in got.items() if r.role == "leader"}

    # -- /api/events ------------------------------------------------------------------
    def _annotate(self, e: dict) -> dict:
        out = {"ts": e["ts"], "broker": e["broker"], "kind": e["kind"], "text": e["text"]}
        if e["kind"] in ("topic_created", "topic_deleted"):  # "topic T created ...": T, no partition
            m = TOPIC_IN_TEXT.search(e["text"])
            if m:
                out["topic"] = m.group(1)
        if e["kind"] in TXN_COORDINATOR_KINDS:  # an id such as "copier-1" is no partition
            m = TXN_ID_IN_TEXT.search(e["text"])
            if m:
                out["transactional_id"] = m.group(1)
            return out
        known = self.view.metadata().partitions
        for m in TP_IN_TEXT.finditer(e["text"]):
            tp = (m.group(1), int(m.group(2)))
            if tp in known or e["kind"] in ("leader_elected", "unclean_election", "isr_shrink", "isr_expand",
                                            "truncate", "partition_offline"):
                out["topic"], out["partition"] = tp
                break
        return out

    async def events(self, since: float, limit: int) -> dict:
        """Every known event with ts > since, oldest first, at most ``limit`` (the newest)."""
        events = await self.view.cluster_events(since, limit)
        return {"ts": time.time(), "serving_broker": self.view.broker_id,
                "events": [self._annotate(e) for e in events]}
