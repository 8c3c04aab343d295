"""A model of one replicated partition around PartitionReplica, for the KIP scenarios.

The smallest of the fault-testing stacks: the replica state machine alone, no broker,
network or event loop (the simulation of the whole cluster is :mod:`minikafka.sim.runner`).
No I/O, no clock, no randomness: a :class:`Cluster` holds one PartitionReplica per
live broker of a single partition and the brokers' own controller decision core
(:class:`~minikafka.controller.core.ControllerCore`, with ZooKeeper reduced to a
version and zxid counter), and offers the steps the KIP-101 scenarios are told in:
``produce``, ``fetch_round``, ``crash``, ``restart``, ``tick``.

Storage is "disk mode": a crashed broker keeps its log and its leader-epoch cache
(both are flushed), and comes back with the HW it had checkpointed, by default the HW
it had in memory when it died.  ``crash(..., lose_unflushed_from=offset)`` models a
power failure that also loses records the OS had not written yet (KIP-101 scenario 2).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..config import BrokerConfig
from ..controller.core import BrokersChanged, ControllerCore, Event, Failover, IsrChanged, Plan, StateRead, TopicRead
from ..errors import OffsetOutOfRangeError
from ..log.epoch_cache import LeaderEpochCache
from ..log.partition_log import PartitionLog
from ..protocol.records.batch import encode_batch, iter_records
from ..protocol.rpc.types import LeaderAndIsrRequest
from ..replication import rules
from ..replication.partition import Effects, LeaderState, PartitionReplica, Role, TruncationMode
from ..zk.layout import BrokerInfo, LeaderIsr

BIG = 1 << 30
NO_LEADER = rules.NO_LEADER


def log_values(log: PartitionLog) -> dict[int, str]:
    """Every record of a log as {offset: value} (a null value as "")."""
    return {r.offset: (r.value or b"").decode() for r in iter_records(log.read(log.log_start_offset, BIG, None))}


@dataclass
class Saved:
    """What survives a crash: the log, the epoch cache and the checkpointed HW."""

    log: PartitionLog
    epochs: LeaderEpochCache
    hw: int


@dataclass
class Cluster:
    """One partition replicated on ``brokers`` (AR order), with a controller."""

    brokers: tuple[int, ...] = (1, 2)
    truncation: TruncationMode = TruncationMode.LEADER_EPOCH
    min_insync_replicas: int = 1
    unclean: bool = False
    lag_time_max_ms: int = 10_000
    topic: str = "t"
    partition: int = 0
    controller_epoch: int = 1
    now_ms: int = 0
    replicas: dict[int, PartitionReplica] = field(default_factory=dict)
    saved: dict[int, Saved] = field(default_factory=dict)
    acked: list[str] = field(default_factory=list)
    pending_acks: list[tuple[int, int, int, str]] = field(default_factory=list)
    truncation_rounds: list[tuple[int, int, tuple[int, int]]] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    _next_value: int = 1

    zxid: int = 0  # ZooKeeper's transaction counter, as the controller's writes see it

    def __post_init__(self) -> None:
        self.brokers = tuple(self.brokers)
        for b in self.brokers:
            self.replicas[b] = PartitionReplica(self.topic, self.partition, b, truncation=self.truncation)
        config = BrokerConfig(broker_id=0, zookeeper_connect="simulated",
                              settings={"unclean.leader.election.enable": self.unclean})
        self.controller = ControllerCore(0, self.controller_epoch, config)
        self._control(Failover({b: self._registration(b) for b in self.brokers},
                               {self.topic: TopicRead({self.partition: list(self.brokers)}, {}, {})}))

    def _registration(self, broker: int) -> BrokerInfo:
        return BrokerInfo(broker, "simulated", broker, epoch=self.zxid, storage="disk")

    # -- the partition state znode, as the controller knows it ----------------------------------
    @property
    def _info(self):
        return self.controller.ctx.info((self.topic, self.partition))

    @property
    def leader(self) -> int:
        return self._info.state.leader

    @property
    def leader_epoch(self) -> int:
        return self._info.state.leader_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        return tuple(self._info.state.isr)

    @property
    def zk_version(self) -> int:
        return self._info.zk_version

    # -- state --------------------------------------------------------------------------
    @property
    def live(self) -> set[int]:
        return set(self.replicas)

    def state(self) -> LeaderState:
        return LeaderState(self.leader, self.leader_epoch, self.isr, self.brokers, self.zk_version,
                           self._info.state.controller_epoch)

    def replica(self, broker: int) -> PartitionReplica:
        return self.replicas[broker]

    def leader_replica(self) -> PartitionReplica:
        assert self.leader != NO_LEADER, "the partition is offline"
        return self.replicas[self.leader]

    def values(self, broker: int) -> dict[int, str]:
        """{offset: value} of every record in a broker's log (live or crashed)."""
        log = self.replicas[broker].log if broker in self.replicas else self.saved[broker].log
        return log_values(log)

    def checksum(self, broker: int, upto: int) -> int:
        return self.replicas[broker].log.checksum(upto)

    # -- controller ---------------------------------------------------------------------
    def _control(self, event: Event) -> Plan:
        """Run one controller event through the brokers' decision core: its transaction
        commits at once (the next zxid) and its LeaderAndIsr requests reach the live
        replicas, the leader first."""
        plan = self.controller.plan(event)
        self.zxid += 1
        self.controller.commit(plan, self.zxid)
        if plan.state_writes():
            self.pending_acks.clear()  # waiting produce requests are answered NOT_LEADER/timeout
            self.history.append(f"epoch {self.leader_epoch}: leader {self.leader} isr {list(self.isr)}")
        targets = sorted({s.broker for s in plan.sends if isinstance(s.request, LeaderAndIsrRequest)})
        self.send_leader_and_isr(targets)
        return plan

    def elect(self) -> int:
        """The controller notices which brokers are alive now (elections where the leader is
        gone, ISR shrinks); returns the leader."""
        self._sync_live()
        return self.leader

    def _sync_live(self) -> Plan:
        known = self.controller.ctx.live
        return self._control(BrokersChanged({b: known.get(b) or self._registration(b) for b in self.replicas}))

    def send_leader_and_isr(self, targets: Iterable[int]) -> None:
        """LeaderAndIsr to ``targets``: the leader first, then followers, which then run
        their truncation (OffsetsForLeaderEpoch rounds with leader-epoch truncation).  A
        replica that already has this leader epoch only takes the ISR and znode version
        (as a broker's replica manager does)."""
        if self.leader == NO_LEADER:
            return
        st = self.state()
        targets = [b for b in targets if b in self.replicas]
        order = [b for b in targets if b == self.leader] + [b for b in targets if b != self.leader]
        for b in order:
            r = self.replicas[b]
            if r.role is not Role.NONE and r.leader_epoch == st.leader_epoch:
                r.isr, r.zk_version = st.isr, max(r.zk_version, st.zk_version)
            elif b == self.leader:
                r.become_leader(st, self.now_ms)
            else:
                r.become_follower(st, self.now_ms)
                self.truncate(b)

    def on_broker_failure(self, broker: int) -> None:
        """The controller saw ``broker``'s registration vanish."""
        live = {b: info for b, info in self.controller.ctx.live.items() if b != broker}
        self._control(BrokersChanged(live))

    def on_broker_startup(self, broker: int) -> None:
        """A broker registered (again): the controller sees who is alive now, elects if the
        partition has no live leader, and tells the broker the partition's state (a restart
        it did not notice, whose registration never vanished, only gets the state)."""
        plan = self._sync_live()
        if broker not in {s.broker for s in plan.sends if isinstance(s.request, LeaderAndIsrRequest)}:
            self.send_leader_and_isr([broker])

    def _apply(self, eff: Effects) -> None:
        """Carry out a leader's effects: the conditional ISR write, then wake acks."""
        if eff.isr_update is not None:
            leader = self.leader_replica()
            if leader.zk_version == self.zk_version:
                # the leader's conditional write, then its ISR change notification
                st = self._info.state
                self.zxid += 1
                written = StateRead(LeaderIsr(st.leader, st.leader_epoch, tuple(eff.isr_update), st.controller_epoch),
                                    self.zk_version + 1, self.zxid)
                self.controller.commit(self.controller.plan(IsrChanged({(self.topic, self.partition): written})), self.zxid)
                self.history.append(f"isr {list(self.isr)} (leader's own change, epoch {self.leader_epoch})")
                self._apply(leader.isr_update_done(self.isr, self.zk_version))
            else:
                self._apply(leader.isr_update_done(None, None))
        self._complete_acks()

    def _complete_acks(self) -> None:
        if self.leader == NO_LEADER or self.leader not in self.replicas:
            return
        leader = self.replicas[self.leader]
        still = []
        for broker, epoch, offset, value in self.pending_acks:
            if broker == self.leader and epoch == self.leader_epoch and leader.high_watermark > offset:
                self.acked.append(value)
            else:
                still.append((broker, epoch, offset, value))
        self.pending_acks = still

    # -- steps ----------------------------------------------------------------------------
    def produce(self, n: int = 1, acks: int = -1) -> list[tuple[int, str]]:
        """``n`` records m1, m2, ... to the leader, one batch each; returns (offset, value)."""
        leader = self.leader_replica()
        out = []
        for _ in range(n):
            value = f"m{self._next_value}"
            self._next_value += 1
            batch = encode_batch([(None, value.encode(), None, self.now_ms)])
            res, eff = leader.append_as_leader(batch, acks, self.min_insync_replicas)
            out.append((res.base_offset, value))
            if acks == 1:
                self.acked.append(value)
            elif acks == -1:
                self.pending_acks.append((self.leader, self.leader_epoch, res.base_offset, value))
            self._apply(eff)
        return out

    def fetch_round(self, follower: int, deliver: bool = True, max_bytes: int = BIG) -> bytes:
        """One follower fetch: the leader reads from the follower's LEO, records the fetch
        (remote LEO, ISR, HW), then the follower appends with the leader's HW.  With
        ``deliver=False`` the response is lost (the follower dies before reading it)."""
        f = self.replicas[follower]
        assert f.role is Role.FOLLOWER and f.leader_id == self.leader, f"broker {follower} is not following"
        assert not f.needs_truncation, f"broker {follower} has not finished truncating"
        leader = self.leader_replica()
        leader.check_leader_epoch(f.leader_epoch)
        offset = f.log_end_offset
        try:
            data = leader.read(offset, max_bytes, for_follower=True)
        except OffsetOutOfRangeError:
            if deliver:
                f.handle_out_of_range(leader.log_end_offset, leader.log.log_start_offset)
            return b""
        self._apply(leader.update_follower_fetch(follower, offset, self.now_ms))
        if deliver:
            f.append_as_follower(data, leader.high_watermark, leader.log.log_start_offset)
        return data

    def replicate(self, rounds: int = 2) -> None:
        """``rounds`` fetch rounds of every live follower."""
        for _ in range(rounds):
            for b in sorted(self.live):
                if b != self.leader and self.leader in self.replicas:
                    if self.replicas[b].needs_truncation:
                        self.truncate(b)
                    self.fetch_round(b)

    def truncate(self, broker: int, max_rounds: int = 50) -> None:
        """Run a follower's truncation: OffsetsForLeaderEpoch rounds until it is done."""
        f = self.replicas[broker]
        if self.leader not in self.replicas:
            return  # the leader is down (unnoticed): the follower keeps asking later
        leader = self.replicas[self.leader]
        rounds = 0
        while f.needs_truncation:
            rounds += 1
            assert rounds <= max_rounds, f"broker {broker}: truncation did not finish in {max_rounds} rounds"
            epoch = f.truncation_epoch()
            leader.check_leader_epoch(f.leader_epoch)
            answer = leader.end_offset_for_epoch(epoch)
            self.truncation_rounds.append((broker, epoch, answer))
            f.on_leader_epoch_end_offset(*answer)

    def tick(self, ms: int) -> None:
        """Advance time and run the leader's ISR check."""
        self.now_ms += ms
        if self.leader != NO_LEADER:
            leader = self.leader_replica()
            self._apply(leader.maybe_shrink_isr(self.now_ms, self.lag_time_max_ms))

    def crash(self, broker: int, detected: bool = True, checkpointed_hw: int | None = None,
              lose_unflushed_from: int | None = None) -> None:
        """``broker`` dies.  Its log and epoch cache survive (disk mode) and it keeps the
        HW it had checkpointed (default: its in-memory HW at the crash).
        ``detected=False``: the controller does not notice (a quick restart, or a power
        failure that takes the controller down too)."""
        r = self.replicas.pop(broker)
        log, epochs = r.log, r.epochs
        if lose_unflushed_from is not None:
            log.truncate_to(lose_unflushed_from)
            epochs.truncate_from_end(log.log_end_offset)
        hw = r.high_watermark if checkpointed_hw is None else checkpointed_hw
        self.saved[broker] = Saved(log, epochs, min(hw, log.log_end_offset))
        self.history.append(f"broker {broker} crashed (hw {hw})")
        if detected:
            self.on_broker_failure(broker)

    def restart(self, broker: int) -> PartitionReplica:
        """Re-create ``broker``'s replica from what survived and register it again: it
        becomes follower of the current leader (and truncates), or leader if elected."""
        s = self.saved.pop(broker)
        r = PartitionReplica(self.topic, self.partition, broker, s.log, s.epochs, s.hw, self.truncation)
        self.replicas[broker] = r
        self.history.append(f"broker {broker} restarted (log end {s.log.log_end_offset}, hw {r.high_watermark})")
        self.on_broker_startup(broker)
        return r

    def bounce(self, broker: int) -> PartitionReplica:
        """A restart the controller does not notice (the session did not expire)."""
        self.crash(broker, detected=False)
        return self.restart(broker)
