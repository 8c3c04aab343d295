"""Incremental fetch sessions (Kafka's KIP-227): both ends, with no I/O, clock or randomness.

Without sessions every fetch names every partition the fetcher follows, idle ones
included.  With a session the leader remembers the partitions (their fetch offset, log
start offset, max bytes, leader epoch) and what it last answered for each (high
watermark, log start offset), so that:

* a request names only the partitions that were added or whose fetch offset, log start
  offset, max bytes or leader epoch changed, plus the ``forgotten`` ones it no longer
  wants;
* the leader answers only the partitions with records, an error, or a high watermark or
  log start offset other than last answered.

A consumer's session is read whole at every fetch.  A follower's is not: a partition
whose follower is in sync at the leader's log end, with nothing to answer, is *quiet*
(:meth:`FetchSession.settle`) and left out of the reads that follow until something of
it changes at the leader (:meth:`FetchSessionCache.disturb`: an append, a high watermark
or log start move, a leader or ISR change).  Meanwhile its follower counts as caught up
as of the session's last fetch (:class:`QuietMark`, which the partition's remote replica
points to), so an idle partition costs a follower's fetch nothing and still stays in
the ISR; a follower whose session stops fetching stops being caught up on them all.

Epochs, as Kafka's ``FetchMetadata``: a request with session id 0 and epoch 0 is a full
fetch asking for a new session; a session id with epoch 0 closes that session and opens
a new one; epoch -1 (FINAL_EPOCH) is sessionless (and closes the named session, if any);
any other epoch is an incremental fetch, which must carry the session's next epoch
(else INVALID_FETCH_SESSION_EPOCH) of a session the leader has (else
FETCH_SESSION_ID_NOT_FOUND).  Either error makes the fetcher start over with a full fetch.

The leader's side is :class:`FetchSessionCache` (``max.incremental.fetch.session.cache.slots``
sessions, 0 turning sessions off: answers carry session id 0), evicting as Kafka's
FetchSessionCache does: first a session unused for MIN_EVICTION_MS, else the least
valuable one (followers' sessions are privileged over consumers', then larger over
smaller) if the new one is worth more.  The fetcher's side is :class:`FetchSessionHandler`.
Callers pass in the time (ms) and candidate new session ids.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

INVALID_SESSION_ID = 0  # no session
INITIAL_EPOCH = 0  # a full fetch (opening a session)
FINAL_EPOCH = -1  # sessionless, or closing a session
MIN_EVICTION_MS = 120_000  # Kafka's min.incremental.fetch.session.eviction.ms (a constant there too)
INT32_MAX = 2 ** 31 - 1

FETCH_SESSION_ID_NOT_FOUND = "FETCH_SESSION_ID_NOT_FOUND"
INVALID_FETCH_SESSION_EPOCH = "INVALID_FETCH_SESSION_EPOCH"

TP = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: incremental epochs run 1..INT32_MAX and wrap to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass(slots=True)
class QuietMark:
    """When a follower's session last fetched: the catch-up time of its quiet partitions."""
    last_fetch_ms: int = 0


@dataclass(slots=True)
class PartitionFetch:
    """What a fetcher asks of one partition (the fields a session caches)."""
    fetch_offset: int
    log_start_offset: int = -1
    max_bytes: int = 1048576
    current_leader_epoch: int = -1
    high_watermark: int = -1  # what the fetcher knows (-1: nothing, answer always)


@dataclass(slots=True)
class CachedPartition:
    """A session partition at the leader: the request's fields, and what was last answered."""
    topic: str
    partition: int
    fetch_offset: int
    log_start_offset: int
    partition_max_bytes: int
    current_leader_epoch: int
    answered_high_watermark: int = -1
    answered_log_start_offset: int = -1
    answered_last_stable_offset: int = -1

    def update(self, f: PartitionFetch) -> None:
        self.fetch_offset = f.fetch_offset
        self.log_start_offset = f.log_start_offset
        self.partition_max_bytes = f.max_bytes
        self.current_leader_epoch = f.current_leader_epoch
        self.answered_high_watermark = f.high_watermark
        self.answered_log_start_offset = f.log_start_offset
        self.answered_last_stable_offset = -1

    def must_answer(self, has_records: bool, has_error: bool, high_watermark: int, log_start_offset: int,
                    last_stable_offset: int | None = None) -> bool:
        """Whether the answer names this partition, recording what it tells when it does.
        ``last_stable_offset`` counts for consumers (None: followers, who do not use it)."""
        lso = self.answered_last_stable_offset if last_stable_offset is None else last_stable_offset
        if not (has_records or has_error or high_watermark != self.answered_high_watermark
                or log_start_offset != self.answered_log_start_offset or lso != self.answered_last_stable_offset):
            return False
        if not has_error:
            self.answered_high_watermark = high_watermark
            self.answered_log_start_offset = log_start_offset
            self.answered_last_stable_offset = lso
        return True


def _cached(tp: TP, f: PartitionFetch) -> CachedPartition:
    return CachedPartition(tp[0], tp[1], f.fetch_offset, f.log_start_offset, f.max_bytes, f.current_leader_epoch,
                           f.high_watermark, f.log_start_offset)


@dataclass(slots=True)
class FetchSession:
    """One session at the leader; ``epoch`` is the epoch its next request must carry."""
    id: int
    privileged: bool  # a follower's (replica fetches): evicted only by other followers' larger sessions
    created_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[TP, CachedPartition] = field(default_factory=dict)
    # a follower's session: the partitions its next fetch reads (the others are quiet), in
    # a fixed order (a dict, not a set: the order answers are bounded in)
    active: dict[TP, None] = field(default_factory=dict)
    mark: QuietMark = field(default_factory=QuietMark)
    disturbed: int = 0  # counts the quiet partitions woken (a waiting fetch compares it)

    def settle(self, tp: TP) -> None:
        """``tp`` was found quiet: the next fetches skip it until it is disturbed."""
        self.active.pop(tp, None)

    def value(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: the least valuable session is evicted first."""
        return (self.privileged, len(self.partitions), self.id)


@dataclass(slots=True)
class FetchContext:
    """The leader's reading of one fetch request.

    ``error`` (FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH) means the whole
    request is refused.  Otherwise ``partitions`` are what to read (for an incremental
    fetch: every partition of the session, at its cached offsets), and after reading,
    :meth:`must_answer` per partition and :meth:`FetchSessionCache.complete` give the
    answer's partitions and session id."""
    kind: str  # "sessionless", "full", "incremental" or "error"
    partitions: list[CachedPartition]
    error: str | None = None
    message: str = ""
    session: FetchSession | None = None  # incremental: the session
    privileged: bool = False

    @property
    def incremental(self) -> bool:
        return self.kind == "incremental"


class FetchSessionCache:
    """The leader's sessions (Kafka's FetchSessionCache), at most ``max_slots`` of them."""

    def __init__(self, max_slots: int = 1000, eviction_ms: int = MIN_EVICTION_MS) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self._lru: OrderedDict[int, None] = OrderedDict()  # least recently used first
        self.evictions = 0
        self.incremental_fetches = 0
        self.full_fetches = 0  # followers' full fetches (a new session each)
        self._holders: dict[TP, set[int]] = {}  # partition -> the followers' sessions holding it

    def __len__(self) -> int:
        return len(self.sessions)

    def __contains__(self, session_id: int) -> bool:
        return session_id in self.sessions

    def partition_count(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())

    def remove(self, session_id: int) -> FetchSession | None:
        self._lru.pop(session_id, None)
        s = self.sessions.pop(session_id, None)
        if s is not None and s.privileged:
            for tp in s.partitions:
                self._unhold(tp, s.id)
        return s

    def clear(self) -> None:
        """Forget every session (the fetchers start over with full fetches)."""
        self.sessions.clear()
        self._lru.clear()
        self._holders.clear()

    def _unhold(self, tp: TP, sid: int) -> None:
        held = self._holders.get(tp)
        if held is not None:
            held.discard(sid)
            if not held:
                del self._holders[tp]

    def disturb(self, tp: TP) -> list[FetchSession]:
        """Something of ``tp`` changed at the leader: every follower's session where it was
        quiet reads it again at its next fetch.  Returns those sessions (a fetch of theirs
        waiting for news is to be woken)."""
        out = []
        for sid in self._holders.get(tp, ()):
            s = self.sessions[sid]
            if tp not in s.active:
                s.active[tp] = None
                s.disturbed += 1
                out.append(s)
        return out

    def holders(self, tp: TP) -> int:
        """How many followers' sessions hold ``tp``."""
        return len(self._holders.get(tp, ()))

    def nudge(self) -> list[FetchSession]:
        """Every follower's session: a fetch of theirs waiting for news is to be answered
        now (the leader was given partitions its followers are to take up)."""
        out = [s for s in self.sessions.values() if s.privileged]
        for s in out:
            s.disturbed += 1
        return out

    def _touch(self, s: FetchSession, now_ms: int) -> None:
        s.last_used_ms = now_ms
        self._lru.pop(s.id, None)
        self._lru[s.id] = None

    def begin(self, session_id: int, epoch: int, partitions: Mapping[TP, PartitionFetch], forgotten: Iterable[TP],
              privileged: bool, now_ms: int) -> FetchContext:
        """Read a request's session fields.  An incremental fetch updates its session now
        (the sent partitions replace their cached fields, the forgotten ones leave)."""
        if epoch == FINAL_EPOCH or epoch == INITIAL_EPOCH:
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)  # closed, or replaced by the new session of a full fetch
            kind = "sessionless" if epoch == FINAL_EPOCH else "full"
            if kind == "full" and privileged:
                self.full_fetches += 1
            return FetchContext(kind, [_cached(tp, f) for tp, f in partitions.items()], privileged=privileged)
        s = self.sessions.get(session_id)
        if s is None:
            return FetchContext("error", [], FETCH_SESSION_ID_NOT_FOUND, f"no fetch session {session_id}")
        if s.epoch != epoch:
            return FetchContext("error", [], INVALID_FETCH_SESSION_EPOCH,
                                f"fetch session {session_id} expects epoch {s.epoch}, not {epoch}")
        for tp in forgotten:
            if s.partitions.pop(tp, None) is not None and s.privileged:
                s.active.pop(tp, None)
                self._unhold(tp, s.id)
        for tp, f in partitions.items():
            c = s.partitions.get(tp)
            if c is None:
                s.partitions[tp] = _cached(tp, f)
                if s.privileged:
                    self._holders.setdefault(tp, set()).add(s.id)
            else:
                c.update(f)
            if s.privileged:
                s.active[tp] = None  # named: read now
        s.epoch = next_epoch(s.epoch)
        self._touch(s, now_ms)
        self.incremental_fetches += 1
        if s.privileged:  # a follower's: its quiet partitions are not read
            return FetchContext("incremental", [s.partitions[tp] for tp in s.active], session=s, privileged=privileged)
        return FetchContext("incremental", list(s.partitions.values()), session=s, privileged=privileged)

    def complete(self, ctx: FetchContext, now_ms: int, new_ids: Iterator[int]) -> int:
        """The answer's session id: the session's for an incremental fetch, a new
        session's for a full fetch if a slot is free (or made free), else 0."""
        if ctx.kind == "incremental":
            assert ctx.session is not None
            return ctx.session.id
        if ctx.kind != "full" or self.max_slots <= 0:
            return INVALID_SESSION_ID
        size = len(ctx.partitions)
        if len(self.sessions) >= self.max_slots and not self._evict_for((ctx.privileged, size, 0), now_ms):
            return INVALID_SESSION_ID
        sid = next(i for i in new_ids if i > 0 and i not in self.sessions)
        s = FetchSession(sid, ctx.privileged, now_ms, now_ms, next_epoch(INITIAL_EPOCH),
                         {(c.topic, c.partition): c for c in ctx.partitions})
        if s.privileged:
            s.active = dict.fromkeys(s.partitions)
            for tp in s.partitions:
                self._holders.setdefault(tp, set()).add(sid)
        self.sessions[sid] = s
        self._touch(s, now_ms)
        return sid

    def _evict_for(self, value: tuple[bool, int, int], now_ms: int) -> bool:
        oldest = next(iter(self._lru), None)
        if oldest is None:
            return False
        if now_ms - self.sessions[oldest].last_used_ms > self.eviction_ms:
            self.remove(oldest)
            self.evictions += 1
            return True
        privileged = value[0]
        candidates = [s for s in self.sessions.values() if not (privileged and s.privileged)]
        if not candidates:
            return False
        least = min(candidates, key=FetchSession.value)
        if value < least.value():
            return False
        self.remove(least.id)
        self.evictions += 1
        return True


@dataclass(slots=True)
class FetchRequestData:
    """What the fetcher sends: session id and epoch, the partitions to name, the forgotten ones."""
    session_id: int
    epoch: int
    to_send: dict[TP, PartitionFetch]
    forgotten: list[TP]
    full: bool


class FetchSessionHandler:
    """The fetcher's side of a session (Kafka's FetchSessionHandler).

    :meth:`build` turns the partitions the fetcher wants now into a request; the answer
    goes to :meth:`handle_response`, a failed request to :meth:`handle_error`."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH  # the epoch of the next request
        self.sent: dict[TP, PartitionFetch] = {}  # the session's partitions, as the leader caches them
        self._pending: dict[TP, PartitionFetch] | None = None

    def build(self, wanted: Mapping[TP, PartitionFetch], changed: Iterable[TP] | None = None) -> FetchRequestData:
        """The request for ``wanted`` now.  ``changed``: the partitions whose entry may differ
        from the last request built (added, removed, or asking anew); None compares them all.
        A caller that keeps its entries between requests names only those, so an
        incremental request costs the partitions that changed (a request without an answer
        makes the next one full, so the last request built is the last one answered)."""
        self._pending = dict(wanted)
        if self.epoch == INITIAL_EPOCH:
            return FetchRequestData(self.session_id, INITIAL_EPOCH, dict(wanted), [], True)
        to_send = {}
        candidates = wanted.keys() if changed is None else [tp for tp in changed if tp in wanted]
        for tp in candidates:
            f = wanted[tp]
            old = self.sent.get(tp)
            if old is None or old.fetch_offset != f.fetch_offset or old.log_start_offset != f.log_start_offset \
                    or old.max_bytes != f.max_bytes or old.current_leader_epoch != f.current_leader_epoch:
                to_send[tp] = f
        gone = self.sent if changed is None else [tp for tp in changed if tp in self.sent]
        forgotten = [tp for tp in gone if tp not in wanted]
        return FetchRequestData(self.session_id, self.epoch, to_send, forgotten, False)

    def handle_response(self, session_id: int, error: str | None = None) -> None:
        """The leader answered the last built request (``error``: its session error, if any)."""
        pending, self._pending = self._pending, None
        if error is not None:
            self.reset(keep_id=error != FETCH_SESSION_ID_NOT_FOUND)
            return
        if session_id == INVALID_SESSION_ID:  # the leader keeps no session for us: full fetches
            self.session_id, self.epoch, self.sent = INVALID_SESSION_ID, INITIAL_EPOCH, {}
            return
        if self.epoch == INITIAL_EPOCH or session_id != self.session_id:
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        self.sent = pending or {}

    def handle_error(self) -> None:
        """The last request got no answer (or was called off): the leader may or may not
        have moved the session's epoch, so start over with a full fetch closing it."""
        self._pending = None
        self.reset(keep_id=True)

    def reset(self, keep_id: bool = False) -> None:
        """Next request is a full fetch; ``keep_id`` makes it close the current session at
        the leader (else the leader lost it: session id 0)."""
        if not keep_id:
            self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.sent = {}
