"""The client's cache of cluster metadata and how it is refreshed.

Refreshes are coalesced (concurrent callers share one ``metadata`` request) and
try the brokers in turn: the last one that answered, the live brokers named by
the last answer, then the bootstrap servers.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

from .. import errors
from .connection import TRANSPORT_ERRORS, parse_bootstrap
from .ports import SYSTEM_CLOCK, Clock, Transport
from ..protocol.rpc.types import MetadataRequest, MetadataResponse, Request, TopicMetadata
from ..protocol.topic_ids import ZERO_TOPIC_ID
from ..rpc import request
from .types import BrokerInfo, ClusterDescription

R = TypeVar("R")

# Errors after which a client asks for fresh metadata before retrying.
REFRESH_ERRORS: tuple[type[errors.KafkaError], ...] = (
    errors.NotLeaderOrFollowerError,
    errors.UnknownTopicOrPartitionError,
    errors.LeaderNotAvailableError,
    errors.FencedLeaderEpochError,
    errors.UnknownLeaderEpochError,
    errors.BrokerNotAvailableError,
    errors.ReplicaNotAvailableError,
    errors.KafkaStorageError,
    errors.NetworkExceptionError,
    errors.RequestTimedOutError,
)

REFRESH_CODES = frozenset(cls.code.code for cls in REFRESH_ERRORS)

# Timeout of one metadata attempt on one broker, so that a stopped broker
# (SIGSTOP) does not hold a refresh for the whole request timeout.
METADATA_ATTEMPT_TIMEOUT_MS = 5000


def metadata_ready(answer: MetadataResponse) -> bool:
    """False for the answer of a broker that has not yet heard from the controller (a
    broker just restarted: no controller, no topics), which Kafka's clients also skip
    (an empty metadata answer is ignored); a refresh then asks the next broker."""
    return answer.controller_id >= 0


def _taken(task: "asyncio.Future[None]") -> None:
    if not task.cancelled():
        task.exception()


def needs_refresh(exc: BaseException) -> bool:
    return isinstance(exc, REFRESH_ERRORS)


def _code(error: errors.KafkaError | None) -> int:
    """The error code of an answer's entry (0: none)."""
    return 0 if error is None else error.code.code


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    error_code: int = 0


@dataclass
class TopicInfo:
    name: str
    error_code: int
    topic_id: str = ZERO_TOPIC_ID  # KIP-516
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    partition_ids: list[int] = field(default_factory=list)
    available: list[int] = field(default_factory=list)


class Metadata:
    """Brokers, controller and partition leaders as last answered by a broker."""

    def __init__(self, conn: Transport, bootstrap_servers: Any, request_timeout_ms: int = 30000,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.conn = conn
        self.clock = clock  # the client's (ports.Clock): its group member and transactions read it too
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.request_timeout_ms = request_timeout_ms
        self.brokers: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.cluster_id = ""
        self.topics: dict[str, TopicInfo] = {}
        self.version = 0
        self.last_refresh_ms = -(10**12)
        self._last_good: tuple[str, int] | None = None
        self._refresh: asyncio.Future | None = None

    # ----- queries ------------------------------------------------------
    def topic(self, name: str) -> TopicInfo | None:
        t = self.topics.get(name)
        if t is None or t.error_code or not t.partition_ids:
            return None
        return t

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def leader_address(self, topic: str, partition: int) -> tuple[int, str, int] | None:
        """``(leader_id, host, port)`` or None when the leader is unknown or offline."""
        p = self.partition(topic, partition)
        if p is None or p.leader < 0:
            return None
        addr = self.brokers.get(p.leader)
        if addr is None:
            return None
        return p.leader, addr[0], addr[1]

    def describe_cluster(self) -> ClusterDescription:
        brokers = [BrokerInfo(i, h, p) for i, (h, p) in sorted(self.brokers.items())]
        return ClusterDescription(self.cluster_id, self.controller_id, brokers)

    def candidates(self) -> list[tuple[str, int]]:
        """Addresses to try, in order, without duplicates."""
        out: list[tuple[str, int]] = []
        for addr in ([self._last_good] if self._last_good else []) + list(self.brokers.values()) + self.bootstrap:
            if addr not in out:
                out.append(addr)
        return out

    # ----- requests -----------------------------------------------------
    async def request_any(self, req: Request[R], timeout_s: float, attempt_timeout_s: float | None = None,
                          ready: Callable[[R], bool] | None = None) -> R:
        """Send a typed request to the first broker that answers and return its typed
        answer; only transport failures move on.

        With ``ready``, an answer it rejects also moves on to the next broker; when no
        broker gives an accepted answer, the first rejected one is returned."""
        last: Exception | None = None
        fallback: tuple[tuple[str, int], R] | None = None
        tried = []
        for host, port in self.candidates():
            tried.append(f"{host}:{port}")
            try:
                answer = await request(self.conn.call, host, port, req, attempt_timeout_s or timeout_s)
            except TRANSPORT_ERRORS as exc:
                last = exc
                continue
            if ready is not None and not ready(answer):
                fallback = fallback or ((host, port), answer)
                continue
            self._last_good = (host, port)
            return answer
        if fallback is not None:
            self._last_good = fallback[0]
            return fallback[1]
        raise errors.NetworkExceptionError(
            f"no broker answered the {req.API} request (tried {', '.join(tried)}): "
            f"{last.message if isinstance(last, errors.KafkaError) else last}"
        )

    async def refresh(self) -> None:
        """Fetch metadata for every topic; concurrent callers share one request."""
        if self._refresh is not None and not self._refresh.done():
            await asyncio.shield(self._refresh)
            return
        loop = asyncio.get_running_loop()
        self._refresh = loop.create_task(self._do_refresh())
        # Its callers may be cancelled (a client closing) while it runs on: its outcome is
        # theirs, taken here too so that a failure nobody waits for any more is not
        # reported as "Task exception was never retrieved" on the way out.
        self._refresh.add_done_callback(_taken)
        await asyncio.shield(self._refresh)

    async def ask_for_topics(self, names: list[str], auto_create: bool = True,
                             unknown_is_fatal: bool = False) -> dict[str, errors.KafkaError]:
        """A metadata request naming ``names`` with auto-creation allowed, as a Kafka
        producer sends for a topic it has no metadata for: a broker with
        auto.create.topics.enable creates the missing ones (unless not ``auto_create``). The answer is not cached
        (the next :meth:`refresh` sees the new topics once they have leaders).  Returns
        the topics answered with an error that waiting cannot cure (TOPIC_AUTHORIZATION_FAILED,
        INVALID_TOPIC_EXCEPTION...), with that error; with ``unknown_is_fatal``,
        UNKNOWN_TOPIC_OR_PARTITION too (a broker that may create a missing topic answers
        LEADER_NOT_AVAILABLE instead, so this one will not create it)."""
        timeout_s = min(self.request_timeout_ms, METADATA_ATTEMPT_TIMEOUT_MS) / 1000
        answer = await self.request_any(MetadataRequest(topics=list(names), allow_auto_topic_creation=auto_create),
                                        timeout_s)
        fatal = {}
        for t in answer.topics:
            code = _code(t.error)
            if code and (not errors.error_for(code).retriable
                         or (unknown_is_fatal and code == errors.UnknownTopicOrPartitionError.code.code)):
                why = t.error.message if t.error is not None else ""
                fatal[t.name] = errors.error_for(code, f"topic {t.name!r}: {why or errors.error_name(code)}")
        return fatal

    async def _do_refresh(self) -> None:
        timeout_s = min(self.request_timeout_ms, METADATA_ATTEMPT_TIMEOUT_MS) / 1000
        answer = await self.request_any(MetadataRequest(topics=None), timeout_s, ready=metadata_ready)
        self.update(answer)

    async def refresh_topics(self, names: list[str]) -> None:
        """Fetch metadata for ``names`` only (no auto-creation) and put them in the cache
        beside the others, as after creating a topic: a cluster of thousands of partitions
        is not described again for one topic."""
        timeout_s = min(self.request_timeout_ms, METADATA_ATTEMPT_TIMEOUT_MS) / 1000
        answer = await self.request_any(MetadataRequest(topics=list(names), allow_auto_topic_creation=False),
                                        timeout_s, ready=metadata_ready)
        self._take_brokers(answer)
        topics = dict(self.topics)
        for t in answer.topics:
            topics[t.name] = self._topic_info(t)
        self.topics = topics
        self.version += 1

    def update(self, answer: MetadataResponse) -> None:
        """Replace the cache with a ``metadata`` answer."""
        self._take_brokers(answer)
        self.topics = {t.name: self._topic_info(t) for t in answer.topics}
        self.version += 1
        self.last_refresh_ms = self.clock.monotonic_ms()

    def _take_brokers(self, answer: MetadataResponse) -> None:
        self.brokers = {b.id: (b.host, b.port) for b in answer.brokers}
        self.controller_id = answer.controller_id
        self.cluster_id = answer.cluster_id or ""

    def _topic_info(self, t: TopicMetadata) -> TopicInfo:
        info = TopicInfo(t.name, _code(t.error), t.topic_id or ZERO_TOPIC_ID)
        for p in t.partitions:
            info.partitions[p.partition] = PartitionInfo(
                topic=t.name,
                partition=p.partition,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                replicas=list(p.replicas),
                isr=list(p.isr),
                offline_replicas=list(p.offline_replicas),
                error_code=_code(p.error),
            )
        info.partition_ids = sorted(info.partitions)
        info.available = [i for i in info.partition_ids if info.partitions[i].leader >= 0 and info.partitions[i].leader in self.brokers]
        return info


def group_by_leader(meta: Metadata, tps: Sequence[tuple[str, int]]) -> tuple[dict[int, list], list]:
    """Split ``(topic, partition)`` pairs by leader id; the second list has those without leader."""
    groups: dict[int, list] = {}
    missing: list = []
    for tp in tps:
        la = meta.leader_address(tp[0], tp[1])
        if la is None:
            missing.append(tp)
        else:
            groups.setdefault(la[0], []).append(tp)
    return groups, missing
