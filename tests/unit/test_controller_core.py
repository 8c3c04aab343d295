"""The controller's pure decision core: events in, plans out (no ZooKeeper, no network)."""
from __future__ import annotations

from typing import TypeVar

import pytest

from minikafka import metric_names
from minikafka.config import BrokerConfig
from minikafka.controller import core
from minikafka.controller.core import (CREATE, AssignmentWrite, BrokersChanged, CheckImbalance, ControlledShutdown,
                                       ControllerCore, Delete, DeleteIfPresent, DeleteTopics, Failover, IsrChanged,
                                       PartitionsChanged, PreferredElection, Reassign, StateRead, StateWrite,
                                       SyncReassignZnode, TopicConfigChanged, TopicRead, TopicsAdded)
from minikafka.protocol.rpc.types import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from minikafka.zk.layout import BrokerInfo, LeaderIsr

EPOCH = 7


def broker(b: int, epoch: int = 100, storage: str = "disk", log_since: int = -1) -> BrokerInfo:
    return BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=epoch, storage=storage, log_since=log_since)


TID = "zWE-MNjxSt-Rt1hKImWx9Q"  # the topic id of the topics below


def topic(assignment: dict[int, list[int]], states: dict[int, tuple] | None = None, config=None, version=3,
          mzxid=500, topic_id: str | None = TID, new_topic_id: str | None = None) -> TopicRead:
    return TopicRead(assignment, dict(config or {}),
                     {p: StateRead(LeaderIsr(s[0], s[1], tuple(s[2]), 1), version, mzxid) for p, s in (states or {}).items()},
                     topic_id, new_topic_id)


def controller(live=(1, 2, 3), topics=None, **config) -> ControllerCore:
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused", settings={k.replace("_", "."): v for k, v in config.items()}))
    plan = c.plan(Failover({b: broker(b) for b in live}, topics or {}))
    c.commit(plan, 600)
    return c


def run(c: ControllerCore, event, zxid: int = 700) -> core.Plan:
    plan = c.plan(event)
    c.commit(plan, zxid)
    return plan


def state(c: ControllerCore, t: str = "t", p: int = 0) -> LeaderIsr:
    return c.ctx.info((t, p)).state


R = TypeVar("R", LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest)


def sends(plan: core.Plan, kind: type[R]) -> dict[int, list[R]]:
    """The plan's requests of one kind, per broker, in order."""
    out: dict[int, list[R]] = {}
    for s in plan.sends:
        if isinstance(s.request, kind):
            out.setdefault(s.broker, []).append(s.request)
    return out


T3 = {"t": topic({0: [1, 2, 3]}, {0: (1, 4, [1, 2, 3])})}


# -- failover -----------------------------------------------------------------------------------------
def test_failover_initialises_new_partitions_and_tells_every_broker():
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    plan = c.plan(Failover({b: broker(b) for b in (1, 2, 3)}, {"n": topic({0: [2, 3], 1: [3, 1]})}))
    assert plan.writes == [StateWrite(("n", 0), LeaderIsr(2, 0, (2, 3), EPOCH), CREATE),
                           StateWrite(("n", 1), LeaderIsr(3, 0, (3, 1), EPOCH), CREATE)]
    assert set(plan.channels_added) == {1, 2, 3}
    assert set(sends(plan, UpdateMetadataRequest)) == {1, 2, 3}
    lair = sends(plan, LeaderAndIsrRequest)
    assert {s.partition for s in lair[3][0].partition_states} == {0, 1}
    assert all(s.is_new for s in lair[3][0].partition_states)
    assert c.ctx.topics == {}  # nothing applied before the transaction commits
    c.commit(plan, 42)
    info = c.ctx.info(("n", 0))
    assert (info.zk_version, info.mzxid, info.state.leader) == (0, 42, 2)


def test_failover_moves_replicas_of_unregistered_brokers_offline_then_elects():
    # As Kafka's new controller: broker 1 leaves the ISRs first (t-0 leaderless, epoch 5),
    # then t-0 gets a leader (epoch 6): a partition the dead broker led steps by 2, one it
    # followed by 1; each is one conditional write of the version read.
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    plan = c.plan(Failover({b: broker(b) for b in (2, 3)},
                           {"t": topic({0: [1, 2, 3], 1: [2, 1]}, {0: (1, 4, [1, 2, 3]), 1: (2, 0, [2, 1])})}))
    by_tp = plan.state_writes()
    assert by_tp[("t", 0)].state == LeaderIsr(2, 6, (2, 3), EPOCH)
    assert by_tp[("t", 1)].state == LeaderIsr(2, 1, (2,), EPOCH)
    assert by_tp[("t", 0)].expected_version == 3
    assert [n.kind for n in plan.notes if n.kind != "controller_loaded"] == [
        "isr_shrink_controller", "isr_shrink_controller", "leader_elected"]
    c.commit(plan, 600)
    assert c.ctx.info(("t", 0)).zk_version == 4


def test_failover_with_no_live_isr_replica_leaves_the_partition_leaderless_with_its_last_member():
    c = controller(live=(2, 3), topics={"t": topic({0: [1, 2]}, {0: (1, 4, [1])})})
    assert state(c) == LeaderIsr(-1, 5, (1,), EPOCH)


def test_two_brokers_dying_at_once_leave_the_isr_one_at_a_time():
    # Kafka's OfflineReplica runs per broker: leader 1 stays, 2 and 3 leave: epoch + 2
    c = controller(live=(1, 2, 3), topics=T3)
    plan = run(c, BrokersChanged({1: broker(1)}))
    assert plan.writes == [StateWrite(("t", 0), LeaderIsr(1, 6, (1,), EPOCH), 3)]
    # the last ISR member dies: no election can replace it, so it stays listed, leaderless
    plan = run(c, BrokersChanged({}))
    assert state(c) == LeaderIsr(-1, 7, (1,), EPOCH)
    assert [n.kind for n in plan.notes] == ["broker_lost", "partition_offline"]


def test_failover_drops_restarted_memory_brokers_before_anything_else():
    # broker 2 registered (log_born 900) after the state's last write (mzxid 500): its log is new
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    live = {1: broker(1), 2: broker(2, epoch=900, storage="memory"), 3: broker(3)}
    plan = c.plan(Failover(live, {"t": topic({0: [2, 1, 3]}, {0: (2, 4, [2, 1, 3])}), "dead": topic({0: [4, 2]}, {0: (4, 1, [4, 2])})}))
    by_tp = plan.state_writes()
    assert by_tp[("t", 0)].state == LeaderIsr(1, 5, (1, 3), EPOCH)
    # the dead broker's partition: 2 left the ISR first, then 4 died: offline, last ISR member kept
    assert by_tp[("dead", 0)].state.leader == -1
    assert by_tp[("dead", 0)].expected_version == 3  # one write per partition, conditional on the version read


def test_a_memory_broker_that_only_re_registered_keeps_its_isr_places():
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    live = {1: broker(1), 2: broker(2, epoch=900, storage="memory", log_since=400), 3: broker(3)}
    plan = c.plan(Failover(live, {"t": topic({0: [2, 1, 3]}, {0: (2, 4, [2, 1, 3])})}))
    assert plan.writes == []


# -- broker death and return ---------------------------------------------------------------------------
def test_leader_death_elects_the_next_isr_replica_and_bumps_the_epoch_once():
    c = controller(topics=T3)
    plan = run(c, BrokersChanged({2: broker(2), 3: broker(3)}))
    assert plan.writes == [StateWrite(("t", 0), LeaderIsr(2, 5, (2, 3), EPOCH), 3)]
    assert plan.channels_removed == [1]
    assert set(sends(plan, LeaderAndIsrRequest)) == {2, 3}
    assert metric_names.LEADER_ELECTIONS in plan.counters
    assert [n.kind for n in plan.notes] == ["broker_lost", "leader_elected"]


def test_a_new_controller_records_the_old_controllers_death():
    # The old controller (3) died with its registration: no controller watched it go, so
    # the new one says so at failover, naming the broker that held /controller before.
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    plan = c.plan(Failover({b: broker(b) for b in (1, 2)}, T3, previous_controller=3))
    lost = [n for n in plan.notes if n.kind == "broker_lost"]
    assert [(n.fields, n.text) for n in lost] == [
        ({"broker_id": 3}, "controller: broker 3 is gone (it was the controller; its registration vanished)")]
    assert [n.kind for n in plan.notes][:2] == ["controller_loaded", "broker_lost"]
    # a controller that is still registered (it resigned), this broker itself, or nobody known: no event
    for previous in (2, 1, None, -1):
        again = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
        notes = again.plan(Failover({b: broker(b) for b in (1, 2)}, T3, previous_controller=previous)).notes
        assert "broker_lost" not in [n.kind for n in notes], previous


def test_registration_events_say_what_the_broker_epoch_is():
    c = controller(live=(1, 2), topics=T3)
    (born,) = [n for n in run(c, BrokersChanged({1: broker(1), 2: broker(2), 3: broker(3, epoch=32)})).notes
               if n.kind == "broker_registered"]
    assert born.text == ("controller: broker 3 registered at 127.0.0.1:9003 with broker epoch 32 "
                         "(the czxid of /brokers/ids/3)")
    (bounced,) = [n for n in run(c, BrokersChanged({1: broker(1), 2: broker(2), 3: broker(3, epoch=40)})).notes
                  if n.kind == "broker_bounced"]
    assert "new broker epoch 40 (the czxid of /brokers/ids/3)" in bounced.text


def test_follower_death_shrinks_the_isr_but_never_empties_it():
    c = controller(live=(1, 2), topics={"t": topic({0: [1, 2]}, {0: (1, 0, [1, 2])})})
    run(c, BrokersChanged({1: broker(1)}))
    assert state(c) == LeaderIsr(1, 1, (1,), EPOCH)
    run(c, BrokersChanged({}))
    assert state(c) == LeaderIsr(-1, 2, (1,), EPOCH)  # offline; ISR keeps its last member


def test_unclean_election_only_when_allowed():
    t = {"t": topic({0: [1, 2]}, {0: (-1, 2, [1])})}
    c = controller(live=(1, 2), topics=t)  # 1 is live and the ISR: clean election at failover
    assert state(c).leader == 1
    clean = controller(live=(2,), topics=t)
    assert state(clean).leader == -1
    unclean = controller(live=(2,), topics=t, unclean_leader_election_enable=True)
    assert state(unclean) == LeaderIsr(2, 4, (2,), EPOCH)  # dead 1 offline (+1), then elected (+1)


def test_unclean_election_enabled_on_a_topic_elects_its_offline_partitions():
    c = controller(live=(2,), topics={"t": topic({0: [1, 2]}, {0: (-1, 2, [1])})})
    assert state(c).leader == -1
    plan = run(c, TopicConfigChanged("t", {"unclean.leader.election.enable": "true"}))
    assert state(c) == LeaderIsr(2, 4, (2,), EPOCH)  # the failover moved dead 1 offline (+1)
    assert metric_names.UNCLEAN_LEADER_ELECTIONS in plan.counters
    assert run(c, TopicConfigChanged("t", {"unclean.leader.election.enable": "true"})).writes == []


def test_a_returning_broker_gets_its_states_and_leads_what_was_offline():
    c = controller(live=(1, 2), topics={"t": topic({0: [1, 2]}, {0: (1, 0, [1, 2])}), "o": topic({0: [3]}, {0: (3, 0, [3])})})
    assert state(c, "o").leader == -1
    plan = run(c, BrokersChanged({1: broker(1), 2: broker(2), 3: broker(3)}))
    assert state(c, "o") == LeaderIsr(3, 2, (3,), EPOCH)
    lair = sends(plan, LeaderAndIsrRequest)
    assert [s.topic for s in lair[3][0].partition_states] == ["o"]
    assert plan.channels_added == {3: ("127.0.0.1", 9003)}


def test_a_restarted_memory_broker_leaves_isrs_it_does_not_lead():
    c = controller(topics={"t": topic({0: [1, 2, 3]}, {0: (1, 4, [1, 2, 3])})})
    plan = run(c, BrokersChanged({1: broker(1), 2: broker(2, epoch=999, storage="memory"), 3: broker(3)}))
    # bounced: out as a dead broker (ISR shrink), back as a new one; one write, epochs add up
    assert state(c) == LeaderIsr(1, 5, (1, 3), EPOCH)
    assert len(plan.writes) == 1 and plan.writes[0].expected_version == 3


def test_nothing_changes_when_the_registrations_are_the_same():
    c = controller(topics=T3)
    plan = c.plan(BrokersChanged({b: broker(b) for b in (1, 2, 3)}))
    assert (plan.writes, plan.sends, plan.notes) == ([], [], [])


# -- topics, partitions, ISR notifications ---------------------------------------------------------------
def test_new_topics_and_added_partitions_are_initialised():
    c = controller(topics=T3)
    plan = run(c, TopicsAdded({"n": topic({0: [3, 1]}), "t": topic({0: [1]})}))
    assert [w.tp for w in plan.writes] == [("n", 0)]  # a known topic is not loaded twice
    plan = run(c, PartitionsChanged("n", {0: [3, 1], 1: [1, 2]}))
    assert plan.writes == [StateWrite(("n", 1), LeaderIsr(1, 0, (1, 2), EPOCH), CREATE)]
    assert run(c, PartitionsChanged("n", {0: [3, 1], 1: [1, 2]})).writes == []
    assert run(c, PartitionsChanged("unknown", {0: [1]})).writes == []


def test_a_topic_znode_adds_partitions_only_when_it_names_one_the_context_lacks():
    # the shell queues a topic watch's firing only then: what PartitionsChanged acts on
    c = controller(topics={"t": topic({0: [1, 2], 1: [2, 3]})})
    assert not c.adds_partitions("t", [0, 1])
    assert not c.adds_partitions("t", [1])
    assert c.adds_partitions("t", [0, 1, 2])
    assert not c.adds_partitions("unknown", [0])
    for q in (0, 1, 2):  # and the events agree
        assert bool(run(c, PartitionsChanged("t", {p: [1, 2] for p in range(q + 1)})).writes) == (q == 2)


def test_isr_change_notifications_update_the_context_and_every_broker():
    c = controller(topics=T3)
    plan = run(c, IsrChanged({("t", 0): StateRead(LeaderIsr(1, 4, (1, 2), 1), 9, 800), ("gone", 0): StateRead(LeaderIsr(1, 0, (1,), 1), 1, 1)}))
    assert plan.writes == []
    assert c.ctx.info(("t", 0)).zk_version == 9 and state(c).isr == (1, 2)
    assert set(sends(plan, UpdateMetadataRequest)) == {1, 2, 3}
    assert [s.partition for s in sends(plan, UpdateMetadataRequest)[1][0].partition_states] == [0]


# -- deletion ---------------------------------------------------------------------------------------------
def test_topic_deletion_stops_replicas_and_deletes_its_znodes_in_the_transaction():
    c = controller(topics=T3)
    plan = run(c, DeleteTopics(("t", "nope")))
    assert Delete("/brokers/topics/t") in plan.writes and Delete("/config/topics/t") in plan.writes
    assert DeleteIfPresent("/admin/delete_topics/nope") in plan.after
    stops = sends(plan, StopReplicaRequest)
    assert all(body[0].delete_partitions for body in stops.values()) and set(stops) == {1, 2, 3}
    assert sends(plan, UpdateMetadataRequest)[1][0].deleted_topics == ["t"]
    assert "t" not in c.ctx.topics


def test_topic_deletion_waits_while_it_is_disabled():
    c = controller(topics=T3, delete_topic_enable=False)
    plan = run(c, DeleteTopics(("t",)))
    assert plan.writes == [] and "t" in c.ctx.topics


# -- reassignment -----------------------------------------------------------------------------------------
def test_reassignment_phases():
    c = controller(live=(1, 2, 3, 4), topics={"t": topic({0: [1, 2]}, {0: (1, 0, [1, 2])})})
    plan = run(c, Reassign({("t", 0): [3, 4]}))
    # phase A: AR = target + old, epoch + 1, the new replicas learn their state
    # the znode keeps the topic id and lists what partition 0 adds and removes (Kafka's TopicZNode)
    assert AssignmentWrite("t", {0: [3, 4, 1, 2]}, TID, {0: [3, 4]}, {0: [1, 2]}) in plan.writes
    assert state(c) == LeaderIsr(1, 1, (1, 2), EPOCH)
    assert set(sends(plan, LeaderAndIsrRequest)) == {1, 2, 3, 4}
    assert plan.after == [SyncReassignZnode({("t", 0): [3, 4]})]
    # 3 joins: still waiting
    plan = run(c, IsrChanged({("t", 0): StateRead(LeaderIsr(1, 1, (1, 2, 3), EPOCH), 5, 900)}))
    assert plan.writes == []
    # 4 joins: phase B: 3 leads (epoch 2), then 1 and 2 leave the ISR one by one (epochs 3 and 4), as in Kafka
    plan = run(c, IsrChanged({("t", 0): StateRead(LeaderIsr(1, 1, (1, 2, 3, 4), EPOCH), 6, 901)}))
    assert plan.writes == [StateWrite(("t", 0), LeaderIsr(3, 4, (3, 4), EPOCH), 6), AssignmentWrite("t", {0: [3, 4]}, TID)]
    assert c.ctx.adding == {}
    assert {b for b, bodies in sends(plan, StopReplicaRequest).items() if bodies[0].delete_partitions} == {1, 2}
    assert plan.after == [SyncReassignZnode({})]
    assert c.ctx.reassigning == {}


def test_reassignment_to_replicas_already_in_sync_finishes_at_once():
    c = controller(topics=T3)
    plan = run(c, Reassign({("t", 0): [2, 3]}))
    # 2 leads (epoch 5), then the removed 1 leaves the ISR (epoch 6)
    assert plan.writes == [StateWrite(("t", 0), LeaderIsr(2, 6, (2, 3), EPOCH), 3), AssignmentWrite("t", {0: [2, 3]}, TID)]
    assert plan.after == [SyncReassignZnode({})]


def test_a_reassignment_that_removes_a_follower_bumps_the_leader_epoch_twice():
    """KafkaController.onPartitionReassignment, phase B with the leader kept: the new
    assignment goes out with a bumped epoch, then the removed follower leaves the ISR with
    another; the leader learns the last state (the fidelity scenario's +5 after +3)."""
    c = controller(topics={"t": topic({0: [1, 2, 3]}, {0: (1, 4, [3, 1, 2])})})
    plan = run(c, Reassign({("t", 0): [1, 2]}))
    assert plan.writes == [StateWrite(("t", 0), LeaderIsr(1, 6, (1, 2), EPOCH), 3), AssignmentWrite("t", {0: [1, 2]}, TID)]
    [lair] = sends(plan, LeaderAndIsrRequest)[1]
    assert [(s.leader, s.leader_epoch, s.isr) for s in lair.partition_states] == [(1, 6, [1, 2])]
    # a removed replica already out of the ISR costs no second bump
    c = controller(topics={"t": topic({0: [1, 2, 3]}, {0: (1, 4, [1, 2])})})
    plan = run(c, Reassign({("t", 0): [1, 2]}))
    assert state(c) == LeaderIsr(1, 5, (1, 2), EPOCH)


def test_malformed_reassignment_is_ignored_and_removed():
    c = controller(topics=T3)
    plan = run(c, Reassign(None))
    assert plan.writes == [] and plan.after == [DeleteIfPresent("/admin/reassign_partitions")]


# -- preferred election and controlled shutdown ------------------------------------------------------------
def test_preferred_election_from_the_znode_elects_only_what_it_lists():
    c = controller(topics={"t": topic({0: [1, 2], 1: [2, 1]}, {0: (2, 3, [1, 2]), 1: (1, 3, [1, 2])})})
    empty = run(c, PreferredElection((), from_znode=True))
    assert empty.writes == [] and empty.after == [DeleteIfPresent("/admin/preferred_replica_election")]
    bad = run(c, PreferredElection((), from_znode=True, malformed="'{'"))
    assert bad.writes == [] and [n.kind for n in bad.notes] == ["preferred_election_ignored"]
    plan = run(c, PreferredElection((("t", 0), ("t", 9))))
    assert plan.writes == [StateWrite(("t", 0), LeaderIsr(1, 4, (1, 2), EPOCH), 3)]
    assert plan.reply == {("t", 0): "NONE", ("t", 9): "UNKNOWN_TOPIC_OR_PARTITION"}
    assert run(c, PreferredElection((("t", 0),))).reply == {("t", 0): "ELECTION_NOT_NEEDED"}
    assert run(c, PreferredElection(None)).reply == {("t", 1): "NONE"}


def test_preferred_leader_not_in_the_isr_is_not_available():
    c = controller(topics={"t": topic({0: [1, 2]}, {0: (2, 3, [2])})})
    assert run(c, PreferredElection((("t", 0),))).reply == {("t", 0): "PREFERRED_LEADER_NOT_AVAILABLE"}


def test_controlled_shutdown_moves_leadership_shrinks_isrs_and_stops_the_broker_s_fetchers():
    c = controller(topics={"a": topic({0: [1, 2, 3]}, {0: (1, 4, [1, 2, 3])}), "b": topic({0: [2, 1]}, {0: (2, 0, [2, 1])}),
                           "c": topic({0: [3, 1]}, {0: (3, 0, [3])}), "d": topic({0: [1]}, {0: (1, 0, [1])})})
    plan = run(c, ControlledShutdown(1))
    assert state(c, "a") == LeaderIsr(2, 5, (2, 3), EPOCH)
    assert state(c, "b") == LeaderIsr(2, 1, (2,), EPOCH)
    assert state(c, "c") == LeaderIsr(3, 0, (3,), 1)  # not in the ISR: unchanged, fetcher stopped
    assert plan.reply == [("d", 0)]  # no other replica can lead it
    assert 1 not in sends(plan, LeaderAndIsrRequest)
    stop = sends(plan, StopReplicaRequest)[1][0]
    assert not stop.delete_partitions
    assert {(x.topic, x.partition) for x in stop.partitions} == {("a", 0), ("b", 0), ("c", 0)}
    # while it shuts down it is not elected, and the preferred election passes it over
    assert run(c, PreferredElection((("a", 0),))).reply == {("a", 0): "PREFERRED_LEADER_NOT_AVAILABLE"}


def test_auto_rebalance_elects_preferred_leaders_of_imbalanced_brokers():
    c = controller(topics={"t": topic({0: [1, 2], 1: [1, 2]}, {0: (2, 1, [1, 2]), 1: (1, 1, [1, 2])})})
    plan = run(c, CheckImbalance(0.1))
    assert plan.writes == [StateWrite(("t", 0), LeaderIsr(1, 2, (1, 2), EPOCH), 3)]
    assert run(c, CheckImbalance(0.1)).writes == []


# -- the plan's contract -------------------------------------------------------------------------------------
def test_a_plan_changes_nothing_until_it_commits_and_refresh_takes_zookeeper_s_state():
    c = controller(topics=T3)
    plan = c.plan(BrokersChanged({2: broker(2), 3: broker(3)}))
    assert state(c).leader == 1 and 1 in c.ctx.live
    # the transaction lost a race with the leader's own ISR write: re-read, plan again
    c.refresh({("t", 0): StateRead(LeaderIsr(1, 4, (1, 2), 1), 4, 650)})
    again = c.plan(BrokersChanged({2: broker(2), 3: broker(3)}))
    assert again.writes == [StateWrite(("t", 0), LeaderIsr(2, 5, (2,), EPOCH), 4)]
    assert plan.writes[0].expected_version == 3


def test_a_plan_copies_only_the_topics_it_changes_and_its_changes_stay_in_the_plan():
    many = {f"idle-{i}": topic({0: [1, 2, 3]}, {0: (1, 4, [1, 2, 3])}) for i in range(50)}
    c = controller(topics={**T3, **many})
    before = {t: c.ctx.topics[t] for t in c.ctx.topics}
    plan = c.plan(IsrChanged({("t", 0): StateRead(LeaderIsr(1, 4, (1, 2), 1), 9, 800)}))
    assert plan.draft.topics["t"] is not before["t"]  # the changed topic: the plan's own copy
    assert all(plan.draft.topics[t] is before[t] for t in many)  # the rest: shared, not copied
    assert state(c).isr == (1, 2, 3) and c.ctx.info(("t", 0)).zk_version == 3  # nothing leaked
    c.commit(plan, 900)
    assert state(c).isr == (1, 2) and c.ctx.info(("t", 0)).mzxid == 800
    # a context that was copied changes only its own copies from then on, whichever of the two changes
    draft = c.ctx.copy()
    c.refresh({("t", 0): StateRead(LeaderIsr(2, 5, (2,), 1), 10, 950)})
    assert draft.info(("t", 0)).state == LeaderIsr(1, 4, (1, 2), 1) and state(c).leader == 2
    draft.info(("idle-0", 0)).zk_version = 42
    assert c.ctx.info(("idle-0", 0)).zk_version == 3
    added = c.plan(PartitionsChanged("idle-1", {0: [1, 2, 3], 1: [2, 3, 1]}))
    assert sorted(added.draft.topics["idle-1"]) == [0, 1] and sorted(c.ctx.topics["idle-1"]) == [0]


def test_every_state_write_carries_the_controller_epoch():
    c = controller(live=(2, 3), topics={"t": topic({p: [1, 2, 3] for p in range(4)}, {p: (1, 0, [1, 2, 3]) for p in range(3)})})
    for tp, info in c.ctx.partitions():
        assert info.state.controller_epoch == EPOCH


@pytest.mark.parametrize("event", [CheckImbalance(0.1), IsrChanged({}), DeleteTopics(()), Reassign({}),
                                   TopicConfigChanged("nope", {}), PartitionsChanged("t", {0: [1, 2, 3]})])
def test_no_op_events_write_nothing(event):
    c = controller(topics=T3)
    assert c.plan(event).writes == []


def test_dynamic_broker_configs_allowing_unclean_election_elect_offline_partitions():
    c = controller(live=(2,), topics={"t": topic({0: [1, 2]}, {0: (-1, 2, [1])}), "u": topic({0: [1, 2]}, {0: (-1, 2, [1])},
                                                                                          config={"unclean.leader.election.enable": "false"})})
    assert run(c, core.BrokerConfigChanged(c.config)).writes == []
    before = c.config
    new, changed = before.with_dynamic({"unclean.leader.election.enable": "true"}, {})
    assert changed == {"unclean.leader.election.enable": True}
    plan = run(c, core.BrokerConfigChanged(new))
    assert c.config is new and before.get("unclean.leader.election.enable") is False  # a new value, the old one kept
    assert [w.tp for w in plan.writes] == [("t", 0)]  # "u" keeps its own override
    assert state(c) == LeaderIsr(2, 4, (2,), EPOCH)  # the failover moved dead 1 offline (+1)


def test_a_lost_controller_epoch_is_recovered_above_every_recorded_one():
    """/controller_epoch missing: the new controller starts from the largest controller
    epoch in the partition states, so the epoch it takes (one more) was never used."""
    assert core.recovered_controller_epoch([3, 9, 4]) == 9
    assert core.recovered_controller_epoch([1]) + 1 > 1
    assert core.recovered_controller_epoch([]) == 0  # a new cluster starts at epoch 1


# -- topic ids (KIP-516) -------------------------------------------------------------------------------------
def test_states_carry_the_topic_id_to_brokers():
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    plan = c.plan(Failover({b: broker(b) for b in (1, 2, 3)}, {"t": topic({0: [1, 2, 3]}, {0: (1, 0, [1, 2, 3])})}))
    assert plan.writes == []  # the znode has its id: nothing to write
    for kind in (LeaderAndIsrRequest, UpdateMetadataRequest):
        assert {s.topic_id for body in sends(plan, kind).values() for s in body[0].partition_states} == {TID}


def test_a_topic_stored_without_an_id_gets_the_fresh_one_at_failover():
    fresh = "Ad4pqWzfR9-dbfaAmlaZqg"
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    plan = c.plan(Failover({b: broker(b) for b in (1, 2, 3)},
                           {"old": topic({0: [1, 2, 3]}, {0: (1, 0, [1, 2, 3])}, topic_id=None, new_topic_id=fresh)}))
    assert plan.writes == [AssignmentWrite("old", {0: [1, 2, 3]}, fresh)]
    assert [n.kind for n in plan.notes if n.kind == "topic_id_assigned"] == ["topic_id_assigned"]
    c.commit(plan, 600)
    assert c.ctx.topic_ids == {"old": fresh}


def test_a_new_topic_written_without_an_id_gets_one_with_its_leaders():
    fresh = "Ad4pqWzfR9-dbfaAmlaZqg"
    c = controller()
    plan = run(c, TopicsAdded({"n": topic({0: [2, 3]}, topic_id=None, new_topic_id=fresh)}))
    assert AssignmentWrite("n", {0: [2, 3]}, fresh) in plan.writes
    assert {s.topic_id for s in sends(plan, LeaderAndIsrRequest)[2][0].partition_states} == {fresh}


def test_a_deleted_topic_forgets_its_id():
    c = controller(topics=T3)
    run(c, DeleteTopics(("t",)))
    assert "t" not in c.ctx.topic_ids


def test_a_failover_writes_each_partition_once_however_many_changes_it_plans():
    # broker 3 is gone: every partition leaves its ISR and those it led elect again, two
    # changes of one partition in one plan, one conditional write of the last state
    topics = {f"t{i}": topic({p: [3, 1, 2] for p in range(10)}, {p: (3, 4, [3, 1, 2]) for p in range(10)})
              for i in range(300)}
    c = ControllerCore(1, EPOCH, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    plan = c.plan(Failover({b: broker(b) for b in (1, 2)}, topics))
    writes = [w for w in plan.writes if isinstance(w, StateWrite)]
    assert len(writes) == len({w.tp for w in writes}) == 3000
    assert {(w.state.leader, w.state.isr, w.expected_version) for w in writes} == {(1, (1, 2), 3)}


def test_a_plan_finds_its_state_writes_again_after_its_list_is_replaced():
    plan = core.Plan(core.Context(1, EPOCH))
    plan.writes = [StateWrite(("t", 0), LeaderIsr(1, 1, (1,), EPOCH), 3)]
    assert plan.state_write_at() == {("t", 0): 0}
    plan.writes = [AssignmentWrite("t", {0: [1]}, TID), *plan.writes]
    assert plan.state_write_at() == {("t", 0): 1}
