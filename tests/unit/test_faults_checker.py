"""The shared fault-testing vocabulary (minikafka/faults/): the workload's plans, the
history's outcomes and the checker's findings, on hand-made histories."""
from __future__ import annotations

from minikafka.faults.checker import check_offset_commits, check_records
from minikafka.faults.history import History, Outcome
from minikafka.faults.workload import ProducerPlan, Workload

T0 = ("t", 0)
T1 = ("t", 1)


def _acked(h: History, process: str, tp, value: str, offset: int, sent: float, done: float) -> None:
    h.ok(h.invoke_produce(process, tp, value, sent), done, offset)


def test_plans_name_unique_values_and_take_the_partitions_in_turn():
    p = ProducerPlan("p1", 3, first_partition=2)
    assert [p.value(s) for s in range(3)] == ["p1-0", "p1-1", "p1-2"]
    assert [p.partition(s) for s in range(4)] == [2, 0, 1, 2]
    w = Workload.spread("t", 3, producers=2, consumers=1, rate=5.0)
    assert [(q.name, q.first_partition) for q in w.producers] == [("p0", 0), ("p1", 1)]
    assert w.consumers == ("c0",) and w.tps == [("t", 0), ("t", 1), ("t", 2)]


def test_the_history_counts_ok_fail_info_and_unresolved():
    h = History()
    seen = []
    h.watch(seen.append)
    _acked(h, "p1", T0, "p1-0", 0, 0.0, 1.0)
    h.error(h.invoke_produce("p1", T0, "p1-1", 1.5), 2.0, "NOT_LEADER_OR_FOLLOWER", definite=True)
    h.error(h.invoke_produce("p1", T0, "p1-2", 2.5), 3.0, "REQUEST_TIMED_OUT", definite=False)
    h.invoke_produce("p1", T0, "p1-3", 3.5)
    h.read("c1", T0, 0, "p1-0", 4.0)
    assert (h.sent, h.acked, h.failed, h.unresolved) == (4, 1, 2, 1)
    assert [op.outcome for op in h.produces] == [Outcome.OK, Outcome.FAIL, Outcome.INFO, None]
    assert len(seen) == 4  # three completions and a read
    assert h.longest_without_ack(0.0, 10.0) == 9.0


def test_a_clean_history_passes():
    h = History()
    _acked(h, "p1", T0, "a", 0, 0.0, 1.0)
    _acked(h, "p1", T0, "b", 1, 2.0, 3.0)
    h.read("c1", T0, 0, "a", 4.0)
    v = check_records(h, {T0: {0: "a", 1: "b", 2: "unacknowledged"}})
    assert v.ok and v.problems() == [] and (v.acked, v.consumed) == (2, 1)


def test_a_lost_acknowledged_record_is_found():
    h = History()
    _acked(h, "p1", T0, "a", 0, 0.0, 1.0)
    v = check_records(h, {T0: {0: "other"}})
    assert not v.ok
    assert v.problems() == ["acknowledged record 'a' at t-0 offset 0 is lost (the log has 'other')"]


def test_a_partition_without_a_final_log_is_not_checked():
    h = History()
    _acked(h, "p1", T1, "a", 0, 0.0, 1.0)
    assert check_records(h, {T0: {}}).ok


def test_a_duplicate_fails_unless_the_workload_allows_it():
    h = History()
    final = {T0: {0: "a", 1: "a"}}
    assert not check_records(h, final).ok
    assert check_records(h, final).problems() == ["value 'a' is in the final log more than once"]
    allowed = check_records(h, final, duplicates_allowed=True)
    assert allowed.ok and allowed.duplicated == ["a"]


def test_records_acknowledged_out_of_order_are_found():
    h = History()
    _acked(h, "p1", T0, "a", 5, 0.0, 1.0)
    _acked(h, "p1", T0, "b", 4, 2.0, 3.0)  # sent after a was acknowledged, yet below it
    v = check_records(h, {T0: {4: "b", 5: "a"}})
    assert not v.ok and v.reordered == [(T0, "a", 5, "b", 4)]
    # overlapping sends (b sent before a's acknowledgement) may land in either order
    h2 = History()
    _acked(h2, "p1", T0, "a", 5, 0.0, 3.0)
    _acked(h2, "p1", T0, "b", 4, 2.0, 4.0)
    assert check_records(h2, {T0: {4: "b", 5: "a"}}).ok


def test_a_vanished_read_is_found():
    h = History()
    h.read("c1", T0, 3, "x", 1.0)
    v = check_records(h, {T0: {3: "y"}})
    assert v.problems() == ["consumed record 'x' at t-0 offset 3 vanished"]


def test_acknowledged_offset_commits_must_be_held():
    h = History()
    h.ok(h.invoke_commit("g1", "grp", {T0: 5, T1: 2}, 0.0), 1.0)
    h.ok(h.invoke_commit("g1", "grp", {T0: 7}, 2.0), 3.0)
    h.fail(h.invoke_commit("g1", "grp", {T0: 9}, 4.0), 5.0, "NOT_COORDINATOR")
    assert check_offset_commits(h, {T0: 7, T1: 2}).ok
    v = check_offset_commits(h, {T0: 6, T1: 2})
    assert v.problems() == ["acknowledged offset commit 7 of t-0 is lost (the coordinator has 6)"]
    assert check_offset_commits(h, None).problems() == \
        ["the group's committed offsets could not be fetched after healing"]
    assert check_offset_commits(History(), None).ok
