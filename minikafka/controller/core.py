"""The controller's decision core: context and events in, decisions out.

Kafka's KafkaController decides in its event thread and writes ZooKeeper as it goes.
Here the deciding half is pure, like :mod:`minikafka.replication.partition`: no
ZooKeeper, no network, no clock, no awaits.  :class:`ControllerCore` holds what the
controller knows (:class:`Context`, Kafka's ControllerContext); :meth:`ControllerCore.plan`
takes one event (a frozen dataclass below, built by the shell from what it read in
ZooKeeper; :data:`Event` is their union, and ``plan`` has one ``match`` case for each,
which mypy checks) and returns a :class:`Plan`:

- ``writes``: partition state, assignment and deletion ops that the shell runs as ONE
  ZooKeeper transaction, fenced by ``/controller_epoch``'s version; every partition
  state write is conditional on the state znode's version;
- ``sends``: LeaderAndIsr, UpdateMetadata and StopReplica requests, per broker, in order,
  as the msgpack API's typed messages (:data:`ControllerRequest`); the shell encodes them;
- ``after``: admin znode clean-ups (the preferred-election and reassignment znodes);
- ``notes`` and ``counters`` for the timeline and /metrics; ``reply`` for API requests.

The plan is computed on a copy of the context (``plan.draft``).  Only when the
transaction commits does the shell call :meth:`ControllerCore.commit`, which makes the
draft the context; if a conditional write loses a race, the shell re-reads and plans the
same event again from fresh state (never half-applied, never dropped).

Events and the decisions they lead to (Kafka's names in brackets):

=========================  ==================================================================
event                      decisions
=========================  ==================================================================
Failover                   [onControllerFailover] new partitions get leader and ISR; memory
                           brokers that restarted since the last state write leave ISRs;
                           replicas on unregistered brokers go offline first (out of the
                           ISRs, leaderless where they led: epoch + 1), then every
                           partition without a live leader is elected (epoch + 1 again);
                           UpdateMetadata to all, LeaderAndIsr for every partition
BrokersChanged             [BrokerChange] dead or re-registered brokers: new leaders where
                           they led, then out of every ISR, one broker at a time; new ones: LeaderAndIsr for their
                           replicas, elections of offline partitions they can lead
TopicsAdded                [TopicChange] leader = first live replica, ISR = live replicas, epoch 0;
                           a topic without a topic id (an older writer's znode) gets one
PartitionsChanged          [PartitionModifications] added partitions initialised like a new topic's
IsrChanged                 [IsrChangeNotification] the leaders' own ISR writes: UpdateMetadata,
                           and reassignments that waited for a replica move on
DeleteTopics               [TopicDeletion] StopReplica(delete) to every replica, znodes removed
Reassign                   [PartitionReassignment] AR = target + old, then target once it is in sync
PreferredElection          [PreferredReplicaLeaderElection] leader = first replica when in the ISR
UncleanElection            [ElectLeaders, UNCLEAN] partitions without a leader: the first live
                           replica, in the ISR or not (KIP-460)
ControlledShutdown         [ControlledShutdown] leaderships move off, ISRs drop the broker,
                           StopReplica (logs kept) to it
CheckImbalance             [AutoPreferredReplicaLeaderElection]
TopicConfigChanged         [TopicUncleanLeaderElectionEnable] new overrides; offline partitions
                           elected when unclean election became allowed
BrokerConfigChanged        the same for every topic (dynamic broker configs changed: the
                           core decides with the new value from then on)
=========================  ==================================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Any, Iterable, Mapping, assert_never

from ..config import BrokerConfig, topic_setting
from ..metric_names import LEADER_ELECTIONS, PREFERRED_LEADER_ELECTIONS, UNCLEAN_LEADER_ELECTIONS, Metric
from ..protocol.rpc.types import (Endpoint, LeaderAndIsrRequest, LiveBroker, PartitionState, StopReplicaRequest,
                                  TopicPartition, UpdateMetadataRequest)
from ..protocol.topic_ids import ZERO_TOPIC_ID
from ..replication import rules
from ..zk import layout
from .settings import ControllerSettings

TP = tuple[str, int]
NO_LEADER = rules.NO_LEADER
CREATE = -1  # expected version of a StateWrite that creates the partition's znodes


def recovered_controller_epoch(recorded: list[int]) -> int:
    """What a new controller writes to a missing ``/controller_epoch`` before it bumps it:
    the largest controller epoch recorded in the partition states (0 when there are
    none).  The epoch it takes is then greater than every one a controller used, so a
    lost or deleted ``/controller_epoch`` never hands out an old epoch again (brokers
    would refuse it as stale, or take a deposed controller's requests as current)."""
    return max(recorded, default=0)


# -- what the controller knows ----------------------------------------------------------------
@dataclass
class PartitionInfo:
    """One partition in the controller's context: assignment, state and its znode's version."""

    replicas: list[int]
    state: layout.LeaderIsr | None = None
    zk_version: int = -1
    # zxid of the state znode's last write: a memory-storage broker registered after it
    # (its log_born greater) restarted since and lost what the ISR says it holds.
    mzxid: int = -1

    def copy(self) -> "PartitionInfo":
        return PartitionInfo(list(self.replicas), self.state, self.zk_version, self.mzxid)


@dataclass
class Context:
    """What the controller knows (Kafka's ControllerContext).

    A plan works on a :meth:`copy` that shares every topic's partitions with the context
    it came from until it changes one: :meth:`info` and :meth:`own` give the copy its own
    partitions of that topic first (copy on write), so planning one event costs what the
    event touches, not every partition of the cluster.  Change a partition only through
    them; ``topics`` may be read directly."""

    controller_id: int
    epoch: int
    live: dict[int, layout.BrokerInfo] = field(default_factory=dict)
    topics: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    reassigning: dict[TP, list[int]] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    topic_ids: dict[str, str] = field(default_factory=dict)  # KIP-516, as in /brokers/topics/T
    # a moving partition's target replicas that were not among its replicas when the
    # reassignment began (the znode's adding_replicas; removing_replicas are the replicas
    # not in the target)
    adding: dict[TP, list[int]] = field(default_factory=dict)
    # topics whose partitions this context owns (the rest may be shared with the context
    # it was copied from, or with copies of it)
    _owned: set[str] = field(default_factory=set, repr=False, compare=False)

    def partitions(self) -> list[tuple[TP, PartitionInfo]]:
        """Every partition, sorted by topic and partition (to read, not to change)."""
        return [((t, p), info) for t, parts in sorted(self.topics.items()) for p, info in sorted(parts.items())]

    def own(self, topic: str) -> dict[int, PartitionInfo]:
        """``topic``'s partitions, this context's own to change."""
        parts = self.topics[topic]
        if topic not in self._owned:
            parts = self.topics[topic] = {q: i.copy() for q, i in parts.items()}
            self._owned.add(topic)
        return parts

    def info(self, tp: TP) -> PartitionInfo:
        """One partition, this context's own to change."""
        return self.own(tp[0])[tp[1]]

    def has(self, tp: TP) -> bool:
        return tp[0] in self.topics and tp[1] in self.topics[tp[0]]

    def copy(self) -> "Context":
        """A copy to plan on; the two share each topic's partitions until one of them
        changes that topic (:meth:`own`): this context gives up its own partitions too.  The
        other maps' values are replaced, never changed in place, so they are copied one
        level deep."""
        self._owned.clear()
        return Context(self.controller_id, self.epoch, dict(self.live), dict(self.topics), dict(self.configs),
                       dict(self.reassigning), set(self.shutting_down), dict(self.topic_ids), dict(self.adding))


@dataclass(frozen=True)
class StateRead:
    """A partition state znode as read from ZooKeeper."""

    state: layout.LeaderIsr
    version: int
    mzxid: int


@dataclass(frozen=True)
class TopicRead:
    """A topic as read from ZooKeeper: assignment, config overrides, partition states, its
    topic id and the replicas its moving partitions add.  ``topic_id`` is None in a znode
    written without one (an older cluster's, version 1); ``new_topic_id`` is then a fresh
    random id the shell drew, which the controller writes (Kafka's controller assigns ids
    to such topics at start-up and on topic changes)."""

    assignment: dict[int, list[int]]
    config: dict[str, str]
    states: dict[int, StateRead]
    topic_id: str | None = None
    new_topic_id: str | None = None
    adding: dict[int, list[int]] = field(default_factory=dict)


# -- events -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Failover:
    """This broker just became controller and read the cluster.  ``previous_controller`` is
    the broker that held /controller before, as this broker last saw it (None: unknown)."""

    live: dict[int, layout.BrokerInfo]
    topics: dict[str, TopicRead]
    previous_controller: int | None = None


@dataclass(frozen=True)
class BrokersChanged:
    """/brokers/ids changed; ``current`` is every registration now there."""

    current: dict[int, layout.BrokerInfo]


@dataclass(frozen=True)
class TopicsAdded:
    topics: dict[str, TopicRead]


@dataclass(frozen=True)
class PartitionsChanged:
    """/brokers/topics/T was rewritten (partitions added by CreatePartitions or a tool)."""

    topic: str
    assignment: dict[int, list[int]]


@dataclass(frozen=True)
class IsrChanged:
    """Leaders wrote ISR changes themselves and left notifications; the states read now."""

    states: dict[TP, StateRead]


@dataclass(frozen=True)
class DeleteTopics:
    topics: tuple[str, ...]


@dataclass(frozen=True)
class Reassign:
    """/admin/reassign_partitions: partition -> target replicas (None: malformed)."""

    wanted: dict[TP, list[int]] | None


@dataclass(frozen=True)
class PreferredElection:
    """Elect the preferred replica.  ``partitions`` None means every partition (the
    ElectLeaders API without a list); ``from_znode`` means /admin/preferred_replica_election
    asked (the znode is deleted afterwards); ``malformed`` is its text when unreadable."""

    partitions: tuple[TP, ...] | None
    from_znode: bool = False
    malformed: str | None = None


@dataclass(frozen=True)
class UncleanElection:
    """Elect a leader for partitions that have none, out of sync if need be (KIP-460's
    ElectLeaders with election type UNCLEAN).  ``partitions`` None means every partition
    without a leader."""

    partitions: tuple[TP, ...] | None


@dataclass(frozen=True)
class ControlledShutdown:
    broker_id: int


@dataclass(frozen=True)
class CheckImbalance:
    threshold: float


@dataclass(frozen=True)
class TopicConfigChanged:
    topic: str
    config: dict[str, str]


@dataclass(frozen=True)
class BrokerConfigChanged:
    """The controller's broker configs changed (dynamic broker configs): the new value."""

    config: BrokerConfig


# Every event the core decides on: ControllerCore.plan has one case per member, and mypy
# fails (at its assert_never) when a member has none.
Event = (Failover | BrokersChanged | TopicsAdded | PartitionsChanged | IsrChanged | DeleteTopics | Reassign
         | PreferredElection | UncleanElection | ControlledShutdown | CheckImbalance | TopicConfigChanged | BrokerConfigChanged)

# What a plan answers an API request with: partition -> error name for the elections,
# the partitions the broker still leads for a controlled shutdown, None for the rest.
Reply = dict[TP, str] | list[TP] | None


# -- decisions ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StateWrite:
    """Write a partition state; ``expected_version`` CREATE creates the partition znodes."""

    tp: TP
    state: layout.LeaderIsr
    expected_version: int


@dataclass(frozen=True)
class AssignmentWrite:
    """Rewrite /brokers/topics/T: the replicas, the topic id, and the replicas moving
    partitions add and remove."""

    topic: str
    assignment: dict[int, list[int]]
    topic_id: str = ZERO_TOPIC_ID
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Delete:
    """Delete a znode and everything below it (a topic's znodes)."""

    path: str


@dataclass(frozen=True)
class DeleteIfPresent:
    """Remove an admin znode when it exists (after the transaction, fenced too)."""

    path: str


@dataclass(frozen=True)
class SyncReassignZnode:
    """Leave in /admin/reassign_partitions exactly what is still moving (delete it when
    nothing is); written only when its content differs, conditional on its version."""

    remaining: dict[TP, list[int]]


# The requests the controller sends brokers, as the typed messages of the msgpack API
# (minikafka.protocol.rpc.types); the shell's channel encodes them for the wire.
ControllerRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


@dataclass(frozen=True)
class Send:
    """One request to one broker; a plan's sends go out in order, per broker."""

    broker: int
    request: ControllerRequest


@dataclass(frozen=True)
class Note:
    """A timeline event: kind, text and extra fields."""

    kind: str
    text: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    """What one event decided.  ``draft`` is the context once ``writes`` commit."""

    draft: Context
    writes: list[StateWrite | AssignmentWrite | Delete] = field(default_factory=list)
    after: list[DeleteIfPresent | SyncReassignZnode] = field(default_factory=list)
    sends: list[Send] = field(default_factory=list)
    channels_added: dict[int, tuple[str, int]] = field(default_factory=dict)
    channels_removed: list[int] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    counters: list[Metric] = field(default_factory=list)  # declared in minikafka.metric_names
    reply: Reply = None
    created: list[TP] = field(default_factory=list)  # partitions whose znodes this plan creates
    # where each partition's StateWrite sits in ``writes`` (see state_write_at), and the
    # list that index was made for: a plan that replaces ``writes`` gets a new index
    _state_at: dict[TP, int] = field(default_factory=dict, repr=False, compare=False)
    _indexed: list | None = field(default=None, repr=False, compare=False)

    def note(self, kind: str, text: str, **fields: Any) -> None:
        self.notes.append(Note(kind, text, fields))

    def state_write_at(self) -> dict[TP, int]:
        """The position of each partition's StateWrite in ``writes``: a failover writes
        every partition twice (offline, then elected), and looking for the first write
        along the list made its plan quadratic (seconds at 10,000 partitions)."""
        if self._indexed is not self.writes:
            self._state_at = {w.tp: i for i, w in enumerate(self.writes) if isinstance(w, StateWrite)}
            self._indexed = self.writes
        return self._state_at

    def state_writes(self) -> dict[TP, StateWrite]:
        return {w.tp: w for w in self.writes if isinstance(w, StateWrite)}


class ControllerCore:
    """The controller's decisions for one controller epoch (see the module docstring)."""

    def __init__(self, controller_id: int, epoch: int, config: BrokerConfig) -> None:
        self.ctx = Context(controller_id, epoch)
        self.config = config
        self.settings = ControllerSettings.of(config)

    # -- the two entry points -------------------------------------------------------------------
    def plan(self, event: Event) -> Plan:
        """Decide what ``event`` leads to, on a copy of the context."""
        p = Plan(self.ctx.copy())
        match event:
            case Failover():
                self._on_failover(p, event)
            case BrokersChanged():
                self._on_brokers_changed(p, event)
            case TopicsAdded():
                self._on_topics_added(p, event)
            case PartitionsChanged():
                self._on_partitions_changed(p, event)
            case IsrChanged():
                self._on_isr_changed(p, event)
            case DeleteTopics():
                self._on_delete_topics(p, event)
            case Reassign():
                self._on_reassign(p, event)
            case PreferredElection():
                self._on_preferred_election(p, event)
            case UncleanElection():
                self._on_unclean_election(p, event)
            case ControlledShutdown():
                self._on_controlled_shutdown(p, event)
            case CheckImbalance():
                self._on_check_imbalance(p, event)
            case TopicConfigChanged():
                self._on_topic_config_changed(p, event)
            case BrokerConfigChanged():
                self._on_broker_config_changed(p, event)
            case _:  # mypy fails here when an Event has no case above
                assert_never(event)
        return p

    def commit(self, plan: Plan, zxid: int) -> None:
        """The plan's transaction committed at ``zxid``: its draft becomes the context."""
        for tp in plan.state_writes():
            if plan.draft.has(tp):
                plan.draft.info(tp).mzxid = zxid
        self.ctx = plan.draft

    def refresh(self, states: Mapping[TP, StateRead | None]) -> None:
        """A conditional write lost a race: take the states as ZooKeeper has them now."""
        for tp, read in states.items():
            if self.ctx.has(tp) and read is not None:
                info = self.ctx.info(tp)
                info.state, info.zk_version, info.mzxid = read.state, read.version, read.mzxid

    # -- helpers on the draft ---------------------------------------------------------------------
    def _unclean_ok(self, d: Context, topic: str) -> bool:
        return bool(topic_setting("unclean.leader.election.enable", d.configs.get(topic, {}), self.config))

    def _write(self, p: Plan, tp: TP, new: layout.LeaderIsr) -> None:
        """A conditional state write; several changes of one partition in one plan make
        one write (conditional on the version before the plan) with the last state."""
        info = p.draft.info(tp)
        at = p.state_write_at()
        i = at.get(tp)
        if i is None:
            at[tp] = len(p.writes)
            p.writes.append(StateWrite(tp, new, info.zk_version))
            info.zk_version = 0 if info.zk_version == CREATE else info.zk_version + 1
        else:
            old = p.writes[i]
            assert isinstance(old, StateWrite)
            p.writes[i] = StateWrite(tp, new, old.expected_version)
        info.state = new

    def _load_topic(self, p: Plan, topic: str, read: TopicRead) -> None:
        """Take a topic as read into the draft; one stored without a topic id gets the
        fresh id the read carries, written back to its znode in this plan."""
        d = p.draft
        parts = {}
        for q, replicas in read.assignment.items():
            info = PartitionInfo(list(replicas))
            st = read.states.get(q)
            if st is not None:
                info.state, info.zk_version, info.mzxid = st.state, st.version, st.mzxid
            parts[q] = info
        d.topics[topic] = parts
        d.configs[topic] = dict(read.config)
        d.topic_ids[topic] = read.topic_id or read.new_topic_id or ZERO_TOPIC_ID
        for q, adding in read.adding.items():
            if q in parts:
                d.adding[(topic, q)] = list(adding)
        if read.topic_id is None and read.new_topic_id is not None:
            self._write_assignment(p, topic, {})
            p.note("topic_id_assigned", f"controller: topic {topic} had no topic id; assigned {read.new_topic_id}",
                   topic=topic, topic_id=read.new_topic_id)

    def _initialize(self, p: Plan, tps: list[TP]) -> None:
        """New partitions: leader = first live replica in AR order, ISR = live replicas,
        leader epoch 0 (Kafka's NewPartition -> OnlinePartition)."""
        d = p.draft
        for tp in tps:
            info = d.info(tp)
            live = [r for r in info.replicas if r in d.live]
            st = layout.LeaderIsr(live[0] if live else NO_LEADER, 0, tuple(live) if live else tuple(info.replicas), d.epoch)
            info.zk_version = CREATE
            self._write(p, tp, st)
            p.created.append(tp)
            p.note("leader_elected", f"{tp[0]}-{tp[1]}: new partition, leader {st.leader} at epoch 0, ISR {list(st.isr)}",
                   topic=tp[0], partition=tp[1], leader=st.leader, leader_epoch=0)

    def _elect_one(self, p: Plan, tp: TP, reason: str) -> bool:
        """Elect a leader for one partition whose leader is not alive; True if its state
        changes.  An election that finds no leader writes nothing (Kafka's failed
        OfflinePartition -> OnlinePartition): the partition stays as it is until a replica
        that may lead comes back."""
        d = p.draft
        info = d.info(tp)
        st = info.state
        if st is None:
            return False
        live = set(d.live) - d.shutting_down
        e = rules.elect_leader(info.replicas, st.isr, live, self._unclean_ok(d, tp[0]))
        if e.leader == NO_LEADER or (e.leader == st.leader and tuple(e.isr) == tuple(st.isr)):
            return False
        new = layout.LeaderIsr(e.leader, st.leader_epoch + 1, tuple(e.isr), d.epoch)
        self._write(p, tp, new)
        p.counters.append(LEADER_ELECTIONS)
        if e.unclean:
            p.counters.append(UNCLEAN_LEADER_ELECTIONS)
            p.note("unclean_election", f"{tp[0]}-{tp[1]}: UNCLEAN election of broker {e.leader} (no ISR replica alive; "
                                       f"data may be lost), epoch {new.leader_epoch}",
                   topic=tp[0], partition=tp[1], leader=e.leader, leader_epoch=new.leader_epoch)
        else:
            p.note("leader_elected", f"{tp[0]}-{tp[1]}: leader {e.leader} at epoch {new.leader_epoch}, ISR {list(e.isr)} "
                                     f"({reason})", topic=tp[0], partition=tp[1], leader=e.leader,
                   leader_epoch=new.leader_epoch)
        return True

    def _elect_leaderless(self, p: Plan, reason: str) -> list[TP]:
        """Elections for every partition whose leader is not a live broker (Kafka's
        triggerOnlinePartitionStateChange); returns those that got a leader."""
        d = p.draft
        return [tp for tp, info in d.partitions()
                if info.state is not None and info.state.leader not in d.live and self._elect_one(p, tp, reason)]

    def _replica_offline(self, p: Plan, b: int, reason: str) -> list[TP]:
        """Kafka's OfflineReplica for one dead broker: it leaves every ISR that lists it
        (never as the last member) and, where it still leads (no election could replace
        it), the partition is left without a leader; leader epoch + 1 on each change.
        Returns the partitions that changed."""
        d = p.draft
        changed: list[TP] = []
        for tp, info in d.partitions():
            st = info.state
            if st is None or b not in st.isr or b not in info.replicas:
                continue
            leader = NO_LEADER if st.leader == b else st.leader
            new = layout.LeaderIsr(leader, st.leader_epoch + 1, rules.shrink_isr_on_failure(st.isr, b), d.epoch)
            self._write(p, tp, new)
            live_isr = [r for r in new.isr if r in d.live and r not in d.shutting_down]
            if st.leader == b and not live_isr:
                p.note("partition_offline", f"{tp[0]}-{tp[1]}: no live ISR replica; offline with ISR {list(new.isr)} "
                                            f"({reason})", topic=tp[0], partition=tp[1])
            else:
                led = "; it led, so no leader until the election" if st.leader == b else ""
                p.note("isr_shrink_controller", f"{tp[0]}-{tp[1]}: controller removed [{b}] from ISR -> "
                                                f"{list(new.isr)} (leader epoch {new.leader_epoch}{led})",
                       topic=tp[0], partition=tp[1])
            changed.append(tp)
        return changed

    def _drop_restarted_memory_replicas(self, p: Plan) -> list[TP]:
        """A memory-storage broker whose log is newer than a partition's last state write
        restarted since: its log is gone, so it leaves that ISR and, if it leads, the
        partition gets a new leader (or goes offline)."""
        d = p.draft
        changed: list[TP] = []
        live = d.live
        for tp, info in d.partitions():
            st = info.state
            if st is None:
                continue
            stale = {b for b in st.isr if b in live and live[b].storage == "memory" and live[b].log_born > info.mzxid}
            if not stale:
                continue
            isr = tuple(b for b in st.isr if b not in stale)
            if st.leader in stale or st.leader not in live:
                e = rules.elect_leader(info.replicas, isr, set(live), self._unclean_ok(d, tp[0]))
                new = layout.LeaderIsr(e.leader, st.leader_epoch + 1, e.isr if e.leader != NO_LEADER else isr, d.epoch)
            else:
                new = layout.LeaderIsr(st.leader, st.leader_epoch + 1, isr, d.epoch)
            self._write(p, tp, new)
            p.note("isr_shrink_controller", f"{tp[0]}-{tp[1]}: brokers {sorted(stale)} restarted with memory storage after "
                                            f"the last state change: out of the ISR -> {list(new.isr)}, leader {new.leader} "
                                            f"at epoch {new.leader_epoch}", topic=tp[0], partition=tp[1])
            if new.leader != st.leader:
                p.counters.append(LEADER_ELECTIONS)
            changed.append(tp)
        return changed

    # -- requests to brokers ------------------------------------------------------------------------
    def _partition_state(self, d: Context, tp: TP, is_new: bool = False) -> PartitionState:
        info = d.info(tp)
        st = info.state
        assert st is not None
        return PartitionState(topic=tp[0], partition=tp[1], controller_epoch=st.controller_epoch, leader=st.leader,
                              leader_epoch=st.leader_epoch, isr=list(st.isr), zk_version=info.zk_version,
                              replicas=list(info.replicas), is_new=is_new,
                              topic_id=d.topic_ids.get(tp[0], ZERO_TOPIC_ID))

    @staticmethod
    def live_brokers(d: Context) -> list[LiveBroker]:
        """The live brokers as UpdateMetadata and LeaderAndIsr carry them."""
        def endpoint(hp: tuple[str, int] | None) -> Endpoint | None:
            return None if hp is None else Endpoint(host=hp[0], port=hp[1])

        return [LiveBroker(id=b, host=i.host, port=i.port, external=endpoint(i.external), kafka=endpoint(i.kafka),
                           kafka_external=endpoint(i.kafka_external))
                for b, i in sorted(d.live.items())]

    def _leader_and_isr(self, p: Plan, tps: list[TP], new: AbstractSet[TP] = frozenset(),
                        exclude: AbstractSet[int] = frozenset()) -> None:
        d = p.draft
        per_broker: dict[int, list[PartitionState]] = {}
        for tp in sorted(set(tps)):
            if not d.has(tp) or d.info(tp).state is None:
                continue
            state = self._partition_state(d, tp, tp in new)
            for r in d.info(tp).replicas:
                if r in d.live and r not in exclude:
                    per_broker.setdefault(r, []).append(state)
        brokers = self.live_brokers(d)
        for b, states in sorted(per_broker.items()):
            leaders = {s.leader for s in states}
            p.sends.append(Send(b, LeaderAndIsrRequest(
                controller_id=d.controller_id, controller_epoch=d.epoch, broker_epoch=d.live[b].epoch,
                partition_states=states, live_leaders=[x for x in brokers if x.id in leaders])))

    def _metadata(self, p: Plan, tps: list[TP] | None = None, deleted: list[str] | None = None) -> None:
        """UpdateMetadata to every live broker (``tps`` None: every partition)."""
        d = p.draft
        chosen = [tp for tp, _ in d.partitions()] if tps is None else sorted(set(tps))
        states = [self._partition_state(d, tp) for tp in chosen if d.has(tp) and d.info(tp).state is not None]
        request = UpdateMetadataRequest(controller_id=d.controller_id, controller_epoch=d.epoch, partition_states=states,
                                        live_brokers=self.live_brokers(d), deleted_topics=list(deleted or []))
        for b in sorted(d.live):
            p.sends.append(Send(b, request))

    def _stop_replica(self, p: Plan, broker: int, tps: list[TP], delete: bool) -> None:
        d = p.draft
        if tps and broker in d.live:
            p.sends.append(Send(broker, StopReplicaRequest(
                controller_id=d.controller_id, controller_epoch=d.epoch, delete_partitions=delete,
                partitions=[TopicPartition(topic=t, partition=q) for t, q in tps])))

    # -- event handlers -------------------------------------------------------------------------------
    def _on_failover(self, p: Plan, ev: Failover) -> None:
        """Kafka's onControllerFailover: context load, new partitions initialised, restarted
        memory replicas out of ISRs, dead replicas offline, then metadata and states to all."""
        d = p.draft
        d.live = dict(ev.live)
        d.topics, d.configs, d.topic_ids, d.adding = {}, {}, {}, {}
        for topic, read in sorted(ev.topics.items()):
            self._load_topic(p, topic, read)
        for b, live in sorted(d.live.items()):
            p.channels_added[b] = (live.host, live.port)
        p.note("controller_loaded", f"controller {d.controller_id} (epoch {d.epoch}) loaded {len(d.topics)} topics, "
                                    f"live brokers {sorted(d.live)}")
        # The old controller's death reached no controller: its own watch died with it, and
        # this one starts from the registrations as they are now.  Say it here.
        gone = ev.previous_controller
        if gone is not None and gone >= 0 and gone != d.controller_id and gone not in d.live:
            p.note("broker_lost", f"controller: broker {gone} is gone (it was the controller; its registration "
                                  f"vanished)", broker_id=gone)
        new = [tp for tp, info in d.partitions() if info.state is None]
        self._initialize(p, new)
        # Memory brokers that restarted since a partition's last state write first: the
        # comparison needs the mzxid from before this plan's writes.
        self._drop_restarted_memory_replicas(p)
        # Kafka's order at start-up: the replica state machine first moves the replicas of
        # unregistered brokers offline (out of the ISRs; a partition they led is left
        # without a leader, epoch + 1), then the partition state machine elects leaders for
        # every partition without a live one (epoch + 1 again).  So a partition the dead
        # controller led steps its leader epoch by 2, as in Kafka.
        dead = sorted({r for _, info in d.partitions() for r in info.replicas if r not in d.live})
        for b in dead:
            self._replica_offline(p, b, "controller failover")
        self._elect_leaderless(p, "controller failover")
        self._metadata(p)
        self._leader_and_isr(p, [tp for tp, _ in d.partitions()], new=set(new))

    def _on_brokers_changed(self, p: Plan, ev: BrokersChanged) -> None:
        d = p.draft
        current, old = ev.current, d.live
        dead = sorted(set(old) - set(current))
        born = sorted(set(current) - set(old))
        bounced = sorted(b for b in set(old) & set(current) if old[b].epoch != current[b].epoch)
        if not (dead or born or bounced):
            return
        for b in dead:
            p.note("broker_lost", f"controller: broker {b} is gone (its registration vanished)", broker_id=b)
        for b in bounced:
            p.note("broker_bounced", f"controller: broker {b} re-registered with a new broker epoch {current[b].epoch} "
                                     f"(the czxid of /brokers/ids/{b})", broker_id=b)
        if dead or bounced:
            self._broker_failure(p, dead + bounced)
        d.shutting_down -= set(dead)
        if born or bounced:
            for b in born + bounced:
                d.shutting_down.discard(b)
                d.live[b] = current[b]
                p.channels_added[b] = (current[b].host, current[b].port)
            for b in born:
                p.note("broker_registered", f"controller: broker {b} registered at {current[b].host}:{current[b].port} "
                                            f"with broker epoch {current[b].epoch} (the czxid of /brokers/ids/{b})",
                       broker_id=b)
            self._broker_startup(p, born + bounced)

    def _broker_failure(self, p: Plan, ids: list[int]) -> None:
        """Kafka's onBrokerFailure: new leaders where the leader died, then the dead brokers
        out of every ISR (never the last member), leader epoch + 1 on every change."""
        d = p.draft
        for b in ids:
            d.live.pop(b, None)
            p.channels_removed.append(b)
        # Kafka's onReplicasBecomeOffline: elections where the leader died, then each dead
        # broker's replicas offline (a leader no election replaced goes leaderless).
        changed = self._elect_leaderless(p, "leader failure")
        for b in sorted(ids):
            changed += self._replica_offline(p, b, "leader failure")
        changed = list(dict.fromkeys(changed))
        self._leader_and_isr(p, changed)
        self._metadata(p)

    def _broker_startup(self, p: Plan, ids: list[int]) -> None:
        """Kafka's onBrokerStartup: metadata to everyone, states to the new brokers for
        their replicas, elections for offline partitions they can lead.  A broker with
        memory storage whose process just started came back empty: it leaves every ISR it
        is still listed in (not when the same process re-registered: its log is kept)."""
        d = p.draft
        new = set(ids)
        changed: list[TP] = []
        for b in ids:
            if not d.live[b].memory_log_is_new:
                continue
            for tp, info in d.partitions():
                st = info.state
                if st is not None and b in st.isr and st.leader != b:
                    isr = tuple(x for x in st.isr if x != b)
                    self._write(p, tp, layout.LeaderIsr(st.leader, st.leader_epoch + 1, isr, d.epoch))
                    p.note("isr_shrink_controller", f"{tp[0]}-{tp[1]}: broker {b} registered anew with memory storage "
                                                    f"(its log may be gone): removed from ISR -> {list(isr)}",
                           topic=tp[0], partition=tp[1])
                    changed.append(tp)
        self._metadata(p)
        offline = [tp for tp, info in d.partitions()
                   if info.state is not None and info.state.leader not in d.live and new & set(info.replicas)]
        for tp in offline:
            if self._elect_one(p, tp, "broker startup"):
                changed.append(tp)
        hosted = [tp for tp, info in d.partitions() if new & set(info.replicas)]
        self._leader_and_isr(p, sorted(set(changed) | set(hosted)))
        if changed:
            self._metadata(p, changed)

    def _on_topics_added(self, p: Plan, ev: TopicsAdded) -> None:
        d = p.draft
        new: list[TP] = []
        for topic, read in sorted(ev.topics.items()):
            if topic in d.topics:
                continue
            self._load_topic(p, topic, read)
            new += [(topic, q) for q, info in sorted(d.topics[topic].items()) if info.state is None]
        if not new:
            return
        self._initialize(p, new)
        self._leader_and_isr(p, new, new=set(new))
        self._metadata(p, new)

    def adds_partitions(self, topic: str, partitions: Iterable[int]) -> bool:
        """Whether /brokers/topics/``topic`` naming ``partitions`` adds any to the context
        (the only change :class:`PartitionsChanged` acts on; a topic not in the context
        adds none)."""
        known = self.ctx.topics.get(topic)
        return known is not None and any(q not in known for q in partitions)

    def _on_partitions_changed(self, p: Plan, ev: PartitionsChanged) -> None:
        """Partitions added to /brokers/topics/T are initialised like a new topic's; changes
        to existing partitions belong to reassignments."""
        d = p.draft
        if ev.topic not in d.topics:
            return
        added = sorted(q for q in ev.assignment if q not in d.topics[ev.topic])
        if not added:
            return
        parts = d.own(ev.topic)
        for q in added:
            parts[q] = PartitionInfo(list(ev.assignment[q]))
        new = [(ev.topic, q) for q in added]
        self._initialize(p, new)
        self._leader_and_isr(p, new, new=set(new))
        self._metadata(p, new)

    def _on_isr_changed(self, p: Plan, ev: IsrChanged) -> None:
        d = p.draft
        known = sorted(tp for tp in ev.states if d.has(tp))
        for tp in known:
            read = ev.states[tp]
            info = d.info(tp)
            info.state, info.zk_version, info.mzxid = read.state, read.version, read.mzxid
        if known:
            self._metadata(p, known)
        progressed = [tp for tp in known if tp in d.reassigning]
        for tp in progressed:
            self._reassign_step(p, tp)
        if progressed:
            p.after.append(SyncReassignZnode(dict(d.reassigning)))

    def _on_delete_topics(self, p: Plan, ev: DeleteTopics) -> None:
        """/admin/delete_topics/T: StopReplica with deletion to every replica, then the
        topic's znodes go (in the fenced transaction)."""
        d = p.draft
        deleted = []
        for topic in sorted(ev.topics):
            if topic not in d.topics:
                p.after.append(DeleteIfPresent(f"{layout.DELETE_TOPICS}/{topic}"))
                continue
            if not self.settings.delete_topic_enable:
                continue
            per_broker: dict[int, list[TP]] = {}
            for q, info in sorted(d.topics[topic].items()):
                for r in info.replicas:
                    per_broker.setdefault(r, []).append((topic, q))
            for b, tps in sorted(per_broker.items()):
                self._stop_replica(p, b, tps, delete=True)
            p.writes += [Delete(layout.topic_path(topic)), Delete(layout.topic_config_path(topic)),
                         Delete(f"{layout.DELETE_TOPICS}/{topic}")]
            del d.topics[topic]
            d.configs.pop(topic, None)
            d.topic_ids.pop(topic, None)
            for tp in [tp for tp in d.reassigning if tp[0] == topic]:
                del d.reassigning[tp]
                d.adding.pop(tp, None)
            deleted.append(topic)
            p.note("topic_deleted", f"controller: topic {topic} deleted")
        if deleted:
            self._metadata(p, [], deleted=deleted)

    def _on_reassign(self, p: Plan, ev: Reassign) -> None:
        d = p.draft
        if ev.wanted is None:
            p.note("reassignment_ignored", f"controller: malformed {layout.REASSIGN_PARTITIONS} ignored")
            p.after.append(DeleteIfPresent(layout.REASSIGN_PARTITIONS))
            return
        for tp, target in sorted(ev.wanted.items()):
            if d.has(tp) and tp not in d.reassigning:
                d.reassigning[tp] = list(target)
                self._reassign_step(p, tp)
        p.after.append(SyncReassignZnode(dict(d.reassigning)))

    def _write_assignment(self, p: Plan, topic: str, changes: dict[int, list[int]]) -> None:
        """Rewrite the topic's znode with ``changes`` made (one write per topic and plan),
        keeping its topic id; a moving partition lists the replicas it adds (recorded when
        it began) and removes (its replicas outside the target), as Kafka's TopicZNode."""
        d = p.draft
        parts = d.own(topic)
        for q, replicas in changes.items():
            parts[q].replicas = list(replicas)
        adding, removing = {}, {}
        for q, info in sorted(parts.items()):
            target = d.reassigning.get((topic, q))
            if target is not None and info.replicas != list(target):
                adding[q] = list(d.adding.get((topic, q), []))
                removing[q] = [r for r in info.replicas if r not in target]
        p.writes = [w for w in p.writes if not (isinstance(w, AssignmentWrite) and w.topic == topic)]
        p.writes.append(AssignmentWrite(topic, {q: list(info.replicas) for q, info in sorted(parts.items())},
                                        d.topic_ids.get(topic, ZERO_TOPIC_ID), adding, removing))

    def _reassign_step(self, p: Plan, tp: TP) -> None:
        """Kafka's reassignment (KafkaController.onPartitionReassignment in ZooKeeper mode):
        AR = target + old with the leader epoch bumped (phase A); once every target replica
        is in the ISR (at once when the target only removes replicas), phase B: the leader
        epoch is bumped for the new assignment (the leader stays, or one of the target leads),
        then once more for each removed replica taken out of the ISR, as Kafka's replica
        state machine takes them out one by one; AR becomes the target, the old replicas are
        stopped and deleted.  The steps of one plan make one state write, with the last
        leader epoch (A,B,C -> B,C with leader B: epoch + 2, as in Kafka)."""
        d = p.draft
        target = d.reassigning.get(tp)
        if target is None:
            return
        info = d.info(tp)
        st = info.state
        if st is None:
            return
        if info.replicas == list(target):
            del d.reassigning[tp]
            d.adding.pop(tp, None)
            return
        union = list(target) + [r for r in info.replicas if r not in target]
        complete = all(r in st.isr for r in target)
        if not complete and info.replicas != union:
            p.note("reassign_start", f"{tp[0]}-{tp[1]}: reassigning {info.replicas} -> {target}")
            d.adding[tp] = [r for r in target if r not in info.replicas]
            self._write_assignment(p, tp[0], {tp[1]: union})
            self._write(p, tp, layout.LeaderIsr(st.leader, st.leader_epoch + 1, st.isr, d.epoch))
            self._leader_and_isr(p, [tp])
            self._metadata(p, [tp])
            return  # the new replicas join the ISR; their ISR change notifications finish it
        if not complete:
            return
        leader = st.leader if st.leader in target else next(
            (r for r in target if r in st.isr and r in d.live and r not in d.shutting_down), NO_LEADER)
        removed = [r for r in info.replicas if r not in target]
        epoch = st.leader_epoch + 1  # the new assignment (or leader) with a bumped epoch
        isr = list(st.isr)
        for r in removed:  # each removed replica out of the ISR: one more bump (never the last member)
            if r in isr and len(isr) > 1:
                isr.remove(r)
                epoch += 1
        self._write(p, tp, layout.LeaderIsr(leader, epoch, tuple(isr), d.epoch))
        del d.reassigning[tp]
        d.adding.pop(tp, None)
        self._write_assignment(p, tp[0], {tp[1]: list(target)})
        self._leader_and_isr(p, [tp])
        for r in removed:
            self._stop_replica(p, r, [tp], delete=True)
        self._metadata(p, [tp])
        p.note("reassign_done", f"{tp[0]}-{tp[1]}: replicas now {list(target)}, leader {leader}")

    def _on_preferred_election(self, p: Plan, ev: PreferredElection) -> None:
        """Move leadership to the preferred (first) replica where it is alive and in the ISR.
        The reply maps each partition to an error name (NONE, ELECTION_NOT_NEEDED,
        PREFERRED_LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION).  From the znode, only
        the listed partitions are elected: an empty or malformed list elects none."""
        if ev.from_znode:
            p.after.append(DeleteIfPresent(layout.PREFERRED_REPLICA_ELECTION))
            if ev.malformed is not None:
                p.note("preferred_election_ignored", f"controller: malformed {layout.PREFERRED_REPLICA_ELECTION} "
                                                     f"ignored: {ev.malformed}")
                p.reply = {}
                return
        p.reply = self._elect_preferred(p, list(ev.partitions) if ev.partitions is not None else None)

    def _elect_preferred(self, p: Plan, tps: list[TP] | None) -> dict[TP, str]:
        d = p.draft
        results: dict[TP, str] = {}
        changed: list[TP] = []
        wanted = tps if tps is not None else [tp for tp, _ in d.partitions()]
        for tp in wanted:
            if not d.has(tp):
                results[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
                continue
            info = d.info(tp)
            st = info.state
            preferred = info.replicas[0]
            if st is None or st.leader == preferred:
                if tps is not None:
                    results[tp] = "ELECTION_NOT_NEEDED"
                continue
            if preferred not in d.live or preferred not in st.isr or preferred in d.shutting_down:
                results[tp] = "PREFERRED_LEADER_NOT_AVAILABLE"
                continue
            new = layout.LeaderIsr(preferred, st.leader_epoch + 1, st.isr, d.epoch)
            self._write(p, tp, new)
            p.counters += [LEADER_ELECTIONS, PREFERRED_LEADER_ELECTIONS]
            p.note("leader_elected", f"{tp[0]}-{tp[1]}: preferred leader {preferred} at epoch {new.leader_epoch}",
                   topic=tp[0], partition=tp[1], leader=preferred, leader_epoch=new.leader_epoch)
            changed.append(tp)
            results[tp] = "NONE"
        if changed:
            self._leader_and_isr(p, changed)
            self._metadata(p, changed)
        return results

    def _on_unclean_election(self, p: Plan, ev: UncleanElection) -> None:
        """A leader for each partition that has none: an ISR replica if one is alive, else
        the first live replica (unclean: records it lacks are lost), whatever the topic's
        unclean.leader.election.enable.  The reply maps each partition to NONE,
        ELECTION_NOT_NEEDED (it has a live leader), ELIGIBLE_LEADERS_NOT_AVAILABLE (no live
        replica) or UNKNOWN_TOPIC_OR_PARTITION; without a list, only elected partitions."""
        d = p.draft
        results: dict[TP, str] = {}
        changed: list[TP] = []
        wanted = list(ev.partitions) if ev.partitions is not None else [tp for tp, _ in d.partitions()]
        live = set(d.live) - d.shutting_down
        for tp in wanted:
            if not d.has(tp):
                results[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
                continue
            info = d.info(tp)
            st = info.state
            if st is None or (st.leader != NO_LEADER and st.leader in live):
                if ev.partitions is not None:
                    results[tp] = "ELECTION_NOT_NEEDED"
                continue
            e = rules.elect_leader(info.replicas, st.isr, live, unclean_enabled=True)
            if e.leader == NO_LEADER:
                results[tp] = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
                continue
            new = layout.LeaderIsr(e.leader, st.leader_epoch + 1, e.isr, d.epoch)
            self._write(p, tp, new)
            p.counters.append(LEADER_ELECTIONS)
            if e.unclean:
                p.counters.append(UNCLEAN_LEADER_ELECTIONS)
                p.note("unclean_election", f"{tp[0]}-{tp[1]}: UNCLEAN election of broker {e.leader} (asked by "
                                           f"ElectLeaders; data may be lost), epoch {new.leader_epoch}",
                       topic=tp[0], partition=tp[1], leader=e.leader, leader_epoch=new.leader_epoch)
            else:
                p.note("leader_elected", f"{tp[0]}-{tp[1]}: leader {e.leader} at epoch {new.leader_epoch}, ISR "
                                         f"{list(e.isr)} (ElectLeaders)", topic=tp[0], partition=tp[1],
                       leader=e.leader, leader_epoch=new.leader_epoch)
            changed.append(tp)
            results[tp] = "NONE"
        if changed:
            self._leader_and_isr(p, changed)
            self._metadata(p, changed)
        p.reply = results

    def _on_controlled_shutdown(self, p: Plan, ev: ControlledShutdown) -> None:
        """Kafka's ControlledShutdown: for each partition the broker leads, a new leader from
        the rest of the ISR; for each it follows, out of the ISR.  The stopping broker gets
        StopReplica (logs kept) for those partitions instead of LeaderAndIsr, so it stops
        fetching and no leader adds it back.  The reply lists what it still leads."""
        d = p.draft
        broker_id = ev.broker_id
        d.shutting_down.add(broker_id)
        changed: list[TP] = []
        stop_only: list[TP] = []
        remaining: list[TP] = []
        for tp, info in d.partitions():
            st = info.state
            if st is None or broker_id not in info.replicas:
                continue
            if st.leader == broker_id:
                live = set(d.live) - d.shutting_down
                e = rules.elect_leader(info.replicas, [b for b in st.isr if b != broker_id], live)
                if e.leader == NO_LEADER:
                    remaining.append(tp)
                    continue
                new = layout.LeaderIsr(e.leader, st.leader_epoch + 1, e.isr, d.epoch)
                self._write(p, tp, new)
                p.counters.append(LEADER_ELECTIONS)
                p.note("leader_elected", f"{tp[0]}-{tp[1]}: leader {e.leader} at epoch {new.leader_epoch}, ISR "
                                         f"{list(e.isr)} (controlled shutdown of broker {broker_id})",
                       topic=tp[0], partition=tp[1], leader=e.leader, leader_epoch=new.leader_epoch)
                changed.append(tp)
            elif broker_id in st.isr and len(st.isr) > 1:
                isr = tuple(b for b in st.isr if b != broker_id)
                self._write(p, tp, layout.LeaderIsr(st.leader, st.leader_epoch + 1, isr, d.epoch))
                changed.append(tp)
            elif broker_id not in st.isr:
                stop_only.append(tp)  # out of the ISR already: only stop its fetcher
        self._leader_and_isr(p, changed, exclude={broker_id})
        self._stop_replica(p, broker_id, changed + stop_only, delete=False)
        if changed:
            self._metadata(p, changed)
        p.reply = remaining

    def _on_check_imbalance(self, p: Plan, ev: CheckImbalance) -> None:
        """auto.leader.rebalance.enable: a preferred election for the brokers whose share
        of partitions they do not lead exceeds the threshold."""
        d = p.draft
        leaders = {tp: info.state.leader for tp, info in d.partitions() if info.state is not None}
        preferred = {tp: info.replicas[0] for tp, info in d.partitions()}
        ratios = rules.preferred_leader_imbalance(leaders, preferred)
        brokers = {b for b, r in ratios.items() if r > ev.threshold and b in d.live}
        if brokers:
            tps = [tp for tp, pref in preferred.items() if pref in brokers and leaders.get(tp) != pref]
            p.note("leader_rebalance", f"controller: leader imbalance above {ev.threshold:.0%} on brokers {sorted(brokers)}; "
                                       f"preferred election for {len(tps)} partitions")
            self._elect_preferred(p, tps)

    def _on_topic_config_changed(self, p: Plan, ev: TopicConfigChanged) -> None:
        """New overrides for a topic; its offline partitions are elected if they now may be
        (unclean election became allowed: Kafka's TopicUncleanLeaderElectionEnable)."""
        d = p.draft
        if ev.topic not in d.topics:
            return
        d.configs[ev.topic] = dict(ev.config)
        self._elect_offline(p, [ev.topic], "unclean.leader.election.enable set")

    def _on_broker_config_changed(self, p: Plan, ev: BrokerConfigChanged) -> None:
        """Dynamic broker configs changed: offline partitions are elected if they now may be.
        The new config is in effect on the broker already, so it is taken at once, not
        with the plan's commit."""
        self.config = ev.config
        self.settings = ControllerSettings.of(ev.config)
        self._elect_offline(p, sorted(p.draft.topics), "unclean.leader.election.enable set on the brokers")

    def _elect_offline(self, p: Plan, topics: list[str], reason: str) -> None:
        d = p.draft
        offline = [(t, q) for t in topics for q, info in sorted(d.topics[t].items())
                   if info.state is not None and info.state.leader not in d.live]
        changed = [tp for tp in offline if self._elect_one(p, tp, reason)]
        if changed:
            self._leader_and_isr(p, changed)
            self._metadata(p, changed)


__all__ = [
    "AssignmentWrite", "BrokerConfigChanged", "BrokersChanged", "CheckImbalance", "Context", "ControlledShutdown",
    "ControllerCore", "ControllerRequest", "CREATE", "Delete", "DeleteIfPresent", "DeleteTopics", "Event", "Failover",
    "IsrChanged", "Note", "PartitionInfo", "PartitionsChanged", "Plan", "PreferredElection", "Reassign", "Reply", "Send",
    "StateRead", "StateWrite", "SyncReassignZnode", "TopicConfigChanged", "TopicRead", "TopicsAdded", "UncleanElection",
]
