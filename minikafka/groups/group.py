"""One consumer group's state machine, as Kafka's GroupCoordinator runs it.

Pure: every call takes the time (``now`` in ms) and returns :class:`Effects`; the
coordinator (broker/coordinator.py) delivers the answers, writes the records and
calls :meth:`Group.tick` periodically.  States and rules follow Kafka:

* **Empty** (no members; offsets may remain) -> a JoinGroup starts a rebalance.
* **PreparingRebalance**: members (re)join.  The round ends when every known member
  has rejoined, or when the longest rebalance timeout (a consumer's
  max.poll.interval.ms) runs out; members that did not rejoin are removed.  A group
  that was empty waits group.initial.rebalance.delay.ms first, and longer while new
  members keep arriving, so a starting group rebalances once.
* **CompletingRebalance**: the generation is bumped; every member got its JoinGroup
  answer, the **group leader** (kept if still a member, else the first member to
  join) also the member list with their subscriptions.  The leader computes the
  assignment and sends it in its SyncGroup; the group's metadata record is written.
* **Stable**: members heartbeat within session.timeout.ms; a silent member is
  evicted and the group rebalances.
* **Dead**: the group was deleted or its partition moved away.

Generations fence stale members: a heartbeat, sync or commit from another
generation gets ILLEGAL_GENERATION, from an unknown member UNKNOWN_MEMBER_ID, and a
static member (group.instance.id) replaced by a newer instance FENCED_INSTANCE_ID.

Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447) stay *pending*, per
producer id, until the transaction's marker: a COMMIT makes them the committed offsets
(unless a commit written later in the log already replaced one), an ABORT drops them.
Each committed or pending offset remembers the log offset of its record, which decides
which of a transactional and a plain commit of the same partition is the newer.
"""
from __future__ import annotations

import enum
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from ..errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    KafkaError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from .consumer_protocol import decode_subscription
from .records import GroupValue, MemberValue, OffsetValue


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class Member:
    """A group member as the coordinator knows it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    last_heartbeat: int = 0
    joined_at: int = 0

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""


@dataclass
class JoinAnswer:
    """A JoinGroup answer: the generation, the chosen protocol, the leader and, for
    the leader only, every member's subscription."""

    member_id: str
    error: KafkaError | None = None
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncAnswer:
    member_id: str
    error: KafkaError | None = None
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


@dataclass
class Effects:
    """What a call asks the coordinator to do: answer parked joins and syncs, write
    the group's metadata record, log events."""

    joins: list[JoinAnswer] = field(default_factory=list)
    syncs: list[SyncAnswer] = field(default_factory=list)
    write_metadata: bool = False
    events: list[tuple[str, str]] = field(default_factory=list)

    def __iadd__(self, other: "Effects") -> "Effects":
        self.joins += other.joins
        self.syncs += other.syncs
        self.write_metadata = self.write_metadata or other.write_metadata
        self.events += other.events
        return self


@dataclass(frozen=True)
class PendingOffset:
    """A transactional offset commit waiting for its transaction's marker.

    ``position`` is the log offset of its record in ``__consumer_offsets``; None while
    the write is still on its way (a marker then leaves it out, as Kafka's does)."""

    value: OffsetValue
    position: int | None = None


@dataclass(frozen=True)
class GroupSettings:
    """The broker's group settings (Kafka's names and defaults)."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    max_size: int = 2**31 - 1


class Group:
    """One group: members, generation, leader, protocol and committed offsets."""

    def __init__(self, group_id: str, now: int = 0) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, Member] = {}  # in join order
        self.static: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_ids: dict[str, int] = {}  # ids handed out with MEMBER_ID_REQUIRED -> deadline
        self.offsets: dict[tuple[str, int], OffsetValue] = {}
        # log offset of the record of each committed offset (-1: unknown)
        self.positions: dict[tuple[str, int], int] = {}
        # producer id -> its transactional offset commits not yet ended by a marker
        self.pending_txn: dict[int, dict[tuple[str, int], PendingOffset]] = {}
        self.state_since = now
        self.round_deadline = 0  # end of the current join round or sync wait
        self.initial_delay = False
        self.round_started = 0

    # -- reading -----------------------------------------------------------------
    def is_empty(self) -> bool:
        return not self.members

    def describe(self) -> dict:
        return {"group": self.group_id, "state": self.state.value, "generation": self.generation,
                "protocol_type": self.protocol_type or "", "protocol": self.protocol or "",
                "leader": self.leader or "",
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "metadata": m.metadata(self.protocol) if self.protocol else b"",
                             "assignment": m.assignment} for m in self.members.values()]}

    def subscribed_topics(self) -> set[str]:
        """The topics the members of a consumer group subscribe to (their subscriptions in
        the chosen protocol's metadata); empty for other protocol types."""
        if self.protocol_type != "consumer" or not self.protocol:
            return set()
        topics: set[str] = set()
        for m in self.members.values():
            try:
                topics.update(decode_subscription(m.metadata(self.protocol)).topics)
            except Exception:  # a member's metadata that is not a consumer subscription
                continue
        return topics

    def value(self, now: int) -> GroupValue:
        """The group's metadata record (written after each rebalance)."""
        return GroupValue(self.protocol_type or "", self.generation, self.protocol, self.leader, now, tuple(
            MemberValue(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                        m.session_timeout_ms, m.metadata(self.protocol or ""), m.assignment)
            for m in self.members.values()))

    @classmethod
    def restore(cls, group_id: str, v: GroupValue, now: int) -> "Group":
        """A group as a new coordinator loads it: Stable with its members (their session
        timers start now) or Empty."""
        g = cls(group_id, now)
        g.generation, g.protocol_type, g.protocol, g.leader = v.generation, v.protocol_type or None, v.protocol, v.leader
        for m in v.members:
            g.members[m.member_id] = Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                            m.session_timeout_ms, m.rebalance_timeout_ms, v.protocol_type,
                                            [(v.protocol or "", m.subscription)], m.assignment, last_heartbeat=now)
            if m.group_instance_id:
                g.static[m.group_instance_id] = m.member_id
        g.state = GroupState.STABLE if g.members else GroupState.EMPTY
        return g

    # -- membership --------------------------------------------------------------
    def _check_member(self, member_id: str, instance_id: str | None) -> Member:
        if instance_id is not None and self.static.get(instance_id) not in (None, member_id):
            raise FencedInstanceIdError(f"group.instance.id {instance_id!r} now belongs to member "
                                        f"{self.static[instance_id]}, not {member_id}")
        m = self.members.get(member_id)
        if m is None:
            raise UnknownMemberIdError(f"member {member_id!r} is not in group {self.group_id!r}")
        return m

    def _candidates(self) -> set[str]:
        names: set[str] | None = None
        for m in self.members.values():
            own = {n for n, _ in m.protocols}
            names = own if names is None else names & own
        return names or set()

    def _transition(self, state: GroupState, now: int) -> None:
        self.state, self.state_since = state, now

    def join(self, member_id: str, instance_id: str | None, client_id: str, host: str, session_ms: int,
             rebalance_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]], now: int,
             new_member_id: str, settings: GroupSettings, require_known_id: bool) -> tuple[JoinAnswer | None, Effects]:
        """A JoinGroup.  Returns ``(answer, effects)``: an immediate answer (an error, a
        MEMBER_ID_REQUIRED with the id to use, or the current generation for a known
        member of a stable group that changed nothing), or ``None`` when the join waits
        for the round to end (its answer then comes in some later ``effects.joins``)."""
        eff = Effects()
        if self.state is GroupState.DEAD:
            return JoinAnswer(member_id, UnknownMemberIdError(f"group {self.group_id!r} was deleted")), eff
        if not protocol_type or not protocols:
            return JoinAnswer(member_id, InconsistentGroupProtocolError("a join needs a protocol type and protocols")), eff
        names = {n for n, _ in protocols}
        if self.members and (protocol_type != self.protocol_type or not (names & self._candidates())):
            return JoinAnswer(member_id, InconsistentGroupProtocolError(
                f"group {self.group_id!r} uses protocol type {self.protocol_type!r} with protocols "
                f"{sorted(self._candidates())}; this member offers {protocol_type!r} {sorted(names)}")), eff
        if not member_id:
            if instance_id is not None and instance_id in self.static:
                return self._replace_static(instance_id, new_member_id, client_id, host, session_ms, rebalance_ms,
                                            protocol_type, protocols, now, settings)
            if len(self.members) >= settings.max_size:
                from ..errors import GroupMaxSizeReachedError
                return JoinAnswer(member_id, GroupMaxSizeReachedError(f"group {self.group_id!r} has {len(self.members)} members")), eff
            if require_known_id and instance_id is None:
                self.pending_ids[new_member_id] = now + session_ms
                return JoinAnswer(new_member_id, MemberIdRequiredError(f"join again as {new_member_id}")), eff
            member_id = new_member_id
        elif member_id not in self.members:
            if self.pending_ids.pop(member_id, None) is None:
                return JoinAnswer(member_id, UnknownMemberIdError(f"member {member_id!r} is not in group {self.group_id!r}")), eff
        else:
            try:
                self._check_member(member_id, instance_id)
            except KafkaError as exc:
                return JoinAnswer(member_id, exc), eff
        m = self.members.get(member_id)
        if m is None:
            m = Member(member_id, instance_id, client_id, host, session_ms, rebalance_ms, protocol_type, list(protocols),
                       joined_at=now)
            if not self.members:  # the first member sets the type (an empty group keeps its last one, as Kafka's)
                self.protocol_type = protocol_type
            self.members[member_id] = m
            if instance_id is not None:
                self.static[instance_id] = member_id
            eff.events.append(("group_join", f"group {self.group_id}: member {member_id} ({client_id}) joins"))
            changed = True
        else:
            changed = m.protocols != list(protocols)
            m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = list(protocols), session_ms, rebalance_ms
        m.last_heartbeat = now
        if not changed and (self.state is GroupState.COMPLETING_REBALANCE
                            or (self.state is GroupState.STABLE and member_id != self.leader)):
            # Nothing changed: hand back the current generation (no rebalance).
            return self._join_answer(m), eff
        m.awaiting_join = True
        if self.state is not GroupState.PREPARING_REBALANCE:
            eff += self._prepare(now, f"member {member_id} joined", settings)
        elif self.initial_delay:
            self.round_deadline = min(now + settings.initial_rebalance_delay_ms, self.round_started + self._max_rebalance())
        eff += self._maybe_complete_join(now)
        return self._own_answer(eff, member_id), eff

    def _replace_static(self, instance_id: str, new_id: str, client_id: str, host: str, session_ms: int,
                        rebalance_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]], now: int,
                        settings: GroupSettings) -> tuple[JoinAnswer | None, Effects]:
        """A static member restarted (same group.instance.id, no member id): it takes
        the old member's place and assignment; the old id is fenced.  A stable group does
        not rebalance (KIP-345)."""
        eff = Effects()
        old = self.members.pop(self.static[instance_id])
        m = Member(new_id, instance_id, client_id, host, session_ms, rebalance_ms, protocol_type, list(protocols),
                   old.assignment, last_heartbeat=now, joined_at=old.joined_at)
        self.members[new_id] = m
        self.static[instance_id] = new_id
        if self.leader == old.member_id:
            self.leader = new_id
        eff.events.append(("group_join", f"group {self.group_id}: static member {instance_id} is back as {new_id} "
                                         f"(replaces {old.member_id})"))
        if self.state is GroupState.STABLE and old.protocols == list(protocols):
            return self._join_answer(m), eff
        m.awaiting_join = True
        if self.state is not GroupState.PREPARING_REBALANCE:
            eff += self._prepare(now, f"static member {instance_id} rejoined", settings)
        eff += self._maybe_complete_join(now)
        return self._own_answer(eff, new_id), eff

    @staticmethod
    def _own_answer(eff: Effects, member_id: str) -> JoinAnswer | None:
        """Take the joining member's own answer out of ``eff`` (it is returned directly)."""
        for a in eff.joins:
            if a.member_id == member_id:
                eff.joins.remove(a)
                return a
        return None

    def _join_answer(self, m: Member) -> JoinAnswer:
        members = []
        if m.member_id == self.leader:
            members = [(x.member_id, x.group_instance_id, x.metadata(self.protocol or "")) for x in self.members.values()]
        return JoinAnswer(m.member_id, None, self.generation, self.protocol_type, self.protocol, self.leader or "", members)

    def _max_rebalance(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def _prepare(self, now: int, why: str, settings: GroupSettings | None = None) -> Effects:
        """Start a rebalance: members waiting for a sync learn REBALANCE_IN_PROGRESS."""
        eff = Effects()
        for m in self.members.values():
            if m.awaiting_sync:
                m.awaiting_sync = False
                eff.syncs.append(SyncAnswer(m.member_id, RebalanceInProgressError(f"group {self.group_id} is rebalancing")))
        was_empty = self.state is GroupState.EMPTY
        self._transition(GroupState.PREPARING_REBALANCE, now)
        self.round_started = now
        self.initial_delay = was_empty and settings is not None and settings.initial_rebalance_delay_ms > 0
        if self.initial_delay:
            assert settings is not None
            self.round_deadline = now + min(settings.initial_rebalance_delay_ms, self._max_rebalance())
        else:
            self.round_deadline = now + self._max_rebalance()
        eff.events.append(("group_rebalance", f"group {self.group_id}: preparing rebalance (generation {self.generation}): {why}"))
        return eff

    def _maybe_complete_join(self, now: int) -> Effects:
        if self.state is not GroupState.PREPARING_REBALANCE:
            return Effects()
        everyone = all(m.awaiting_join for m in self.members.values())
        if now >= self.round_deadline or (everyone and not self.initial_delay):
            return self._complete_join(now)
        return Effects()

    def _complete_join(self, now: int) -> Effects:
        eff = Effects()
        for m in [m for m in self.members.values() if not m.awaiting_join]:
            eff += self._remove(m, f"did not rejoin within the rebalance timeout ({m.rebalance_timeout_ms} ms)")
        self.generation += 1
        self.initial_delay = False
        if not self.members:
            self.protocol, self.leader = None, None
            self._transition(GroupState.EMPTY, now)
            eff.write_metadata = True
            eff.events.append(("group_empty", f"group {self.group_id}: empty at generation {self.generation}"))
            return eff
        self.protocol = self._select_protocol()
        old_leader = self.leader
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        if self.leader != old_leader:
            eff.events.append(("group_leader", f"group {self.group_id}: member {self.leader} is the group leader"
                                               + (f" (was {old_leader})" if old_leader else "")))
        self._transition(GroupState.COMPLETING_REBALANCE, now)
        self.round_deadline = now + self._max_rebalance()
        for m in self.members.values():
            m.awaiting_join = False
            m.last_heartbeat = now
            m.assignment = b""
            eff.joins.append(self._join_answer(m))
        eff.events.append(("group_generation", f"group {self.group_id}: generation {self.generation} with "
                                               f"{len(self.members)} members, protocol {self.protocol}, leader {self.leader}"))
        return eff

    def _select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports;
        the most votes wins (ties: the earliest in the first member's order)."""
        candidates = self._candidates()
        votes: dict[str, int] = {}
        for m in self.members.values():
            pick = next(n for n, _ in m.protocols if n in candidates)
            votes[pick] = votes.get(pick, 0) + 1
        order = [n for n, _ in next(iter(self.members.values())).protocols]
        return max(votes, key=lambda n: (votes[n], -order.index(n) if n in order else -len(order)))

    def _remove(self, m: Member, why: str) -> Effects:
        eff = Effects()
        self.members.pop(m.member_id, None)
        if m.group_instance_id is not None and self.static.get(m.group_instance_id) == m.member_id:
            del self.static[m.group_instance_id]
        if m.awaiting_join:
            eff.joins.append(JoinAnswer(m.member_id, UnknownMemberIdError(f"member {m.member_id} left group {self.group_id}")))
        if m.awaiting_sync:
            eff.syncs.append(SyncAnswer(m.member_id, UnknownMemberIdError(f"member {m.member_id} left group {self.group_id}")))
        text = f"group {self.group_id}: member {m.member_id} leaves: {why}"
        if m.member_id == self.leader:
            text += " (it was the group leader; another member leads after the rebalance)"
        eff.events.append(("group_leave", text))
        return eff

    def _lose(self, m: Member, now: int, why: str) -> Effects:
        eff = self._remove(m, why)
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            eff += self._prepare(now, f"member {m.member_id} left")
        eff += self._maybe_complete_join(now)
        return eff

    # -- requests ----------------------------------------------------------------
    def sync(self, member_id: str, instance_id: str | None, generation: int,
             assignments: dict[str, bytes] | None, now: int) -> tuple[SyncAnswer | None, Effects]:
        """A SyncGroup.  The leader's carries the assignment; when it arrives the group
        asks for its metadata record to be written (:meth:`metadata_written` completes
        the parked syncs).  Others wait for that, or get their assignment at once."""
        eff = Effects()
        try:
            m = self._check_member(member_id, instance_id)
        except KafkaError as exc:
            return SyncAnswer(member_id, exc), eff
        if generation != self.generation:
            return SyncAnswer(member_id, IllegalGenerationError(
                f"generation {generation} is not group {self.group_id}'s current {self.generation}")), eff
        m.last_heartbeat = now
        if self.state is GroupState.PREPARING_REBALANCE:
            return SyncAnswer(member_id, RebalanceInProgressError(f"group {self.group_id} is rebalancing")), eff
        if self.state is GroupState.STABLE:
            return SyncAnswer(member_id, None, self.protocol_type, self.protocol, m.assignment), eff
        m.awaiting_sync = True
        if member_id == self.leader and assignments is not None:
            for mid, x in self.members.items():
                x.assignment = assignments.get(mid, b"")
            eff.write_metadata = True
        return None, eff

    def metadata_written(self, generation: int, error: KafkaError | None, now: int) -> Effects:
        """The group's metadata record for ``generation`` is committed (or failed)."""
        eff = Effects()
        if self.state is not GroupState.COMPLETING_REBALANCE or generation != self.generation:
            return eff
        if error is not None:
            for m in self.members.values():
                if m.awaiting_sync:
                    m.awaiting_sync = False
                    eff.syncs.append(SyncAnswer(m.member_id, error))
                m.assignment = b""
            eff += self._prepare(now, f"writing the group's metadata failed: {error}")
            return eff
        self._transition(GroupState.STABLE, now)
        for m in self.members.values():
            if m.awaiting_sync:
                m.awaiting_sync = False
                eff.syncs.append(SyncAnswer(m.member_id, None, self.protocol_type, self.protocol, m.assignment))
        eff.events.append(("group_stable", f"group {self.group_id}: stable at generation {self.generation}"))
        return eff

    def heartbeat(self, member_id: str, instance_id: str | None, generation: int, now: int) -> KafkaError | None:
        if self.state is GroupState.EMPTY and member_id not in self.members:
            return UnknownMemberIdError(f"group {self.group_id} has no member {member_id!r}")
        try:
            m = self._check_member(member_id, instance_id)
        except KafkaError as exc:
            return exc
        if generation != self.generation:
            return IllegalGenerationError(f"generation {generation} is not group {self.group_id}'s current {self.generation}")
        m.last_heartbeat = now
        if self.state is GroupState.PREPARING_REBALANCE:
            return RebalanceInProgressError(f"group {self.group_id} is rebalancing: join again")
        return None

    def leave(self, member_id: str, instance_id: str | None, now: int) -> tuple[KafkaError | None, Effects]:
        """A LeaveGroup for one member (by member id, or by group.instance.id)."""
        if instance_id is not None and not member_id:
            member_id = self.static.get(instance_id, "")
        try:
            m = self._check_member(member_id, instance_id)
        except KafkaError as exc:
            return exc, Effects()
        return None, self._lose(m, now, "LeaveGroup")

    def offsets_committed(self, offsets: Iterable[tuple[tuple[str, int], OffsetValue]],
                          base_position: int = -1) -> None:
        """Committed offsets now in the offsets log, by (topic, partition): a commit that was
        written, or records replayed when the coordinator loads the group.  The i-th
        entry's record is at log offset ``base_position + i`` (all -1 when unknown)."""
        for i, (tp, v) in enumerate(offsets):
            self.offsets[tp] = v
            self.positions[tp] = base_position + i if base_position >= 0 else -1

    def offsets_removed(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Tombstones for ``partitions`` are in the log: their committed offsets go, and so
        do pending transactional ones (as Kafka's coordinator replays a tombstone)."""
        for tp in partitions:
            self.offsets.pop(tp, None)
            self.positions.pop(tp, None)
            for pid in list(self.pending_txn):
                self.pending_txn[pid].pop(tp, None)
                if not self.pending_txn[pid]:
                    del self.pending_txn[pid]

    def topics_deleted(self, topics: Collection[str]) -> tuple[list[tuple[str, int]], bool]:
        """``topics`` were deleted (Kafka's onPartitionsDeleted and cleanupGroupMetadata):
        the group's committed offsets of their partitions go, and so do pending
        transactional offsets of them (a producer whose transaction still holds other
        partitions' offsets keeps them; one left with none still counts until its marker,
        as in Kafka).  Returns the partitions to tombstone in the offsets log (committed or
        pending, in order) and whether the group is now gone: an Empty group left with no
        offsets, committed or pending, is Dead (the caller removes it and tombstones its
        metadata too).  A group with members keeps living, without those offsets."""
        gone = {tp for tp in self.offsets if tp[0] in topics}
        for tp in gone:
            del self.offsets[tp]
            self.positions.pop(tp, None)
        for mine in self.pending_txn.values():
            for tp in [tp for tp in mine if tp[0] in topics]:
                del mine[tp]
                gone.add(tp)
        dead = self.state is GroupState.EMPTY and not self.offsets and not self.pending_txn
        return sorted(gone), dead

    # -- transactional offsets (KIP-98, KIP-447) -------------------------------------
    def check_txn_commit(self, member_id: str, instance_id: str | None, generation: int) -> None:
        """Raise unless a TxnOffsetCommit may stage offsets now (Kafka's
        validateOffsetCommit for transactional commits).  With a generation, a member id or
        a group.instance.id (v3+, KIP-447) the member must be current: FENCED_INSTANCE_ID,
        UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION as for OffsetCommit.  Without them (v0-v2)
        the commit is accepted whatever the group's state; no REBALANCE_IN_PROGRESS."""
        if self.state is GroupState.DEAD:
            raise CoordinatorNotAvailableError(f"group {self.group_id} is being removed")
        if generation < 0 and self.state is GroupState.EMPTY:
            return
        if generation >= 0 or member_id or instance_id is not None:
            self._check_member(member_id, instance_id)
            if generation != self.generation:
                raise IllegalGenerationError(f"generation {generation} is not group {self.group_id}'s "
                                             f"current {self.generation}")

    def stage_txn_offsets(self, producer_id: int,
                          offsets: Iterable[tuple[tuple[str, int], OffsetValue]]) -> list[tuple[tuple[str, int], PendingOffset]]:
        """Stage a TxnOffsetCommit's offsets as pending for ``producer_id`` before their
        records are written; returns the entries to pass to :meth:`txn_offsets_written`
        or :meth:`txn_offsets_failed`."""
        mine = self.pending_txn.setdefault(producer_id, {})
        staged = [(tp, PendingOffset(v)) for tp, v in offsets]
        mine.update(staged)
        return staged

    def txn_offsets_written(self, producer_id: int, staged: list[tuple[tuple[str, int], PendingOffset]],
                            base_position: int) -> None:
        """The staged records are in the log, the i-th at ``base_position + i``.  An entry
        replaced meanwhile (a later commit of the same producer) or ended by a marker is
        left alone."""
        mine = self.pending_txn.get(producer_id, {})
        for i, (tp, entry) in enumerate(staged):
            if mine.get(tp) is entry:
                mine[tp] = PendingOffset(entry.value, base_position + i)

    def txn_offsets_failed(self, producer_id: int, staged: list[tuple[tuple[str, int], PendingOffset]]) -> None:
        """Writing the staged records failed: they are not pending any more."""
        mine = self.pending_txn.get(producer_id)
        if mine is None:
            return
        for tp, entry in staged:
            if mine.get(tp) is entry:
                del mine[tp]
        if not mine:
            del self.pending_txn[producer_id]

    def complete_txn(self, producer_id: int, committed: bool) -> list[tuple[str, int]]:
        """The producer's transaction ended (its marker is committed in the log).  On
        COMMIT each pending offset becomes the committed one unless the partition's
        current offset was written later in the log (Kafka's rule: the newest record
        wins, a transactional commit does not undo a later plain commit); on ABORT they
        are dropped.  Returns the partitions whose committed offset changed."""
        mine = self.pending_txn.pop(producer_id, None)
        if not committed or not mine:
            return []
        changed = []
        for tp, entry in mine.items():
            if entry.position is None:
                continue
            if tp not in self.offsets or self.positions.get(tp, -1) < entry.position:
                self.offsets[tp] = entry.value
                self.positions[tp] = entry.position
                changed.append(tp)
        return changed

    def has_pending(self, tp: tuple[str, int]) -> bool:
        """Whether some open transaction holds an offset of ``tp`` (OffsetFetch with
        require_stable answers UNSTABLE_OFFSET_COMMIT for it)."""
        return any(tp in mine for mine in self.pending_txn.values())

    def pending_partitions(self) -> set[tuple[str, int]]:
        """Every partition with a pending transactional offset."""
        return {tp for mine in self.pending_txn.values() for tp in mine}

    def expired_offsets(self, now: int, retention_ms: int) -> tuple[list[tuple[str, int]], bool]:
        """offsets.retention.minutes: the committed offsets to tombstone now, and whether
        the group itself goes: an Empty group left without offsets (all of them expire now,
        or it has none at all: its members left without committing) and with none an open
        transaction holds, as Kafka's cleanupGroupMetadata turns such a group Dead at each
        offsets.retention.check.interval.ms.  Only an Empty group's offsets expire; a
        consumer group's count from when it went empty, a group without a protocol
        (offsets committed from outside the group protocol) from each offset's commit.  An
        offset with a pending transactional one for the same partition does not expire yet
        (as in Kafka)."""
        if self.state is not GroupState.EMPTY:
            return [], False
        expired = []
        for tp, v in sorted(self.offsets.items()):
            base = self.state_since if self.protocol_type else max(v.commit_timestamp, self.state_since)
            if now - base >= retention_ms and not self.has_pending(tp):
                expired.append(tp)
        whole = len(expired) == len(self.offsets) and not self.pending_txn
        return expired, whole

    def check_commit(self, member_id: str, instance_id: str | None, generation: int, now: int) -> None:
        """Raise unless this member may commit offsets now.  Generation -1 with no member
        id commits for a consumer outside the group protocol (allowed only while the
        group has no members, as in Kafka)."""
        if generation < 0 and not member_id:
            if self.members:
                raise UnknownMemberIdError(f"group {self.group_id} has members; a commit needs a member id and generation")
            return
        m = self._check_member(member_id, instance_id)
        if generation != self.generation:
            raise IllegalGenerationError(f"generation {generation} is not group {self.group_id}'s current {self.generation}")
        if self.state is GroupState.COMPLETING_REBALANCE:
            raise RebalanceInProgressError(f"group {self.group_id} is completing a rebalance")
        m.last_heartbeat = now  # a commit counts as a heartbeat, as in Kafka

    def tick(self, now: int) -> Effects:
        """Expire silent members, end join rounds and stuck syncs whose time ran out."""
        eff = Effects()
        for mid, deadline in list(self.pending_ids.items()):
            if now > deadline:
                del self.pending_ids[mid]
        for m in list(self.members.values()):
            if m.awaiting_join or m.awaiting_sync:
                continue
            if now - m.last_heartbeat > m.session_timeout_ms:
                eff += self._lose(m, now, f"no heartbeat within session.timeout.ms={m.session_timeout_ms}")
        if self.state is GroupState.PREPARING_REBALANCE:
            eff += self._maybe_complete_join(now)
        elif self.state is GroupState.COMPLETING_REBALANCE and now >= self.round_deadline:
            eff += self._prepare(now, "the group leader's assignment did not arrive within the rebalance timeout")
            for m in self.members.values():
                m.last_heartbeat = now
        return eff

    def mark_dead(self) -> Effects:
        """The group is deleted or its partition moved away: parked requests get
        NOT_COORDINATOR (the member finds the new coordinator)."""
        from ..errors import NotCoordinatorError
        eff = Effects()
        for m in self.members.values():
            if m.awaiting_join:
                eff.joins.append(JoinAnswer(m.member_id, NotCoordinatorError(f"group {self.group_id} moved")))
            if m.awaiting_sync:
                eff.syncs.append(SyncAnswer(m.member_id, NotCoordinatorError(f"group {self.group_id} moved")))
        self._transition(GroupState.DEAD, self.state_since)
        return eff
