"""The differential fuzzer's fault steps, their pure parts: where the generator puts them,
when a step counts the cluster as having moved on without its broker, and which of their
differences the allow-list explains."""
from __future__ import annotations

import json

import pytest

from minikafka.reference import fuzz, fuzz_compare, fuzz_faults, fuzz_ops


def test_fault_steps_come_from_a_second_stream_and_leave_the_other_operations_as_they_were():
    for seed in range(1, 40):
        with_faults = fuzz_ops.generate(seed, 150)
        rest = [op for op in with_faults if op["op"] != "fault"]
        assert rest == fuzz_ops.generate(seed, 150, faults=False)[:len(rest)]
        assert with_faults == fuzz_ops.generate(seed, 150)  # the same seed, the same faults
    json.dumps(fuzz_ops.generate(5, 300))


def test_fault_steps_are_a_handful_per_300_operations_with_every_role_and_signal():
    faults = [[op for op in fuzz_ops.generate(seed, 300) if op["op"] == "fault"] for seed in range(1, 41)]
    counts = [len(f) for f in faults]
    assert 2 <= sum(counts) / len(counts) <= 8
    every = [op for f in faults for op in f]
    assert {op["role"] for op in every} == set(fuzz_ops.FAULT_ROLES)
    assert {op["signal"] for op in every} == set(fuzz_ops.FAULT_SIGNALS)


def test_a_fault_step_names_a_partition_of_a_topic_created_before_it():
    for seed in range(1, 60):
        created: dict[str, int] = {}
        for op in fuzz_ops.generate(seed, 200):
            if op["op"] == "create_topic" and op["partitions"] > 0 and op["rf"] <= 3 \
                    and not op["validate_only"] and op["topic"] not in created:
                created[op["topic"]] = op["partitions"]
            if op["op"] == "fault" and op["role"] in ("leader", "follower"):
                assert op["topic"] in created and 0 <= op["partition"]
            if op["op"] == "fault" and op["role"] == "group_coordinator":
                assert op["group"] in fuzz_ops.GROUPS
            if op["op"] == "fault" and op["role"] == "txn_coordinator":
                assert op["txn"] in fuzz_ops.TXN_IDS


def test_the_drill_kills_a_leader_and_a_reproduction_may_hold_faults(tmp_path):
    drill = fuzz_ops.fault_drill()
    assert [(op["signal"], op["role"]) for op in drill if op["op"] == "fault"] == [("KILL", "leader")]
    path = tmp_path / "repro.json"
    path.write_text(fuzz_compare.reproduction(None, drill, []))
    assert fuzz.load_replay(str(path)) == (None, drill)


def _st(leader: int, isr: list[int], replicas: list[int], epoch: int = 0) -> dict:
    return {"leader": leader, "isr": isr, "replicas": replicas, "epoch": epoch}


def test_the_cluster_has_moved_on_once_every_partition_of_the_broker_has_another_leader_and_isr():
    before = {("t", 0): _st(1, [1, 2, 3], [1, 2, 3]), ("t", 1): _st(2, [2, 1], [2, 1]), ("t", 2): _st(3, [3], [3])}
    assert not fuzz_faults._reacted(before, before, 1)
    moved = {("t", 0): _st(2, [2, 3], [1, 2, 3], 1), ("t", 1): _st(2, [2], [2, 1], 1), ("t", 2): _st(3, [3], [3])}
    assert fuzz_faults._reacted(before, moved, 1)
    # a follower still in an ISR: not yet
    assert not fuzz_faults._reacted(before, {**moved, ("t", 1): _st(2, [2, 1], [2, 1])}, 1)
    # leaderless with other ISR members (Kafka's controller failover, before its election): not yet
    assert not fuzz_faults._reacted(before, {**moved, ("t", 0): _st(-1, [2, 3], [1, 2, 3], 1)}, 1)
    # leaderless with the broker as the ISR's last member: that is where it stays
    assert fuzz_faults._reacted({("t", 2): _st(3, [3], [3])}, {("t", 2): _st(-1, [3], [3], 1)}, 3)


def _diffs(ops: list[dict], path: str, kafka, ours) -> list[dict]:  # noqa: ANN001
    return fuzz_compare.compare(ops, {"answers": [], "state": {"znodes": {path: kafka}}},
                                {"answers": [], "state": {"znodes": {path: ours}}})


def test_leader_epochs_after_a_fault_step_are_not_compared_but_other_values_are():
    fault = {"op": "fault", "signal": "STOP", "role": "controller"}
    path = "/brokers/topics/t0/partitions/0/state/leader_epoch"
    for kafka, ours in ((4, 3), (0, 2)):
        (d,) = _diffs([fault], path, kafka, ours)
        assert d["allowed"] is not None and d["allowed"].name == "leader-epochs-after-a-fault-step"
    (no_fault,) = _diffs([{"op": "produce"}], path, 4, 3)  # no fault step before it
    assert no_fault["allowed"] is None
    (isr,) = _diffs([fault], "/brokers/topics/t0/partitions/0/state/isr/#", 3, 2)
    assert isr["allowed"] is None
    ops = [{"op": "create_topic"}, fault, {"op": "fault"}]
    kafka = {"answers": [{}, {}, {"checks": {"epoch_steps": False, "acked_kept": True}}], "state": {}}
    ours = {"answers": [{}, {}, {"checks": {"epoch_steps": True, "acked_kept": False}}], "state": {}}
    found = {d["path"]: d["allowed"] for d in fuzz_compare.compare(ops, kafka, ours)}
    assert found["op 2 fault/checks/epoch_steps"] is None  # the controller's epoch steps are Kafka's now
    assert found["op 2 fault/checks/acked_kept"] is None  # a lost record is never explained


@pytest.mark.parametrize("signal, was_controller, led, elected, step", [
    ("KILL", False, True, True, 1),   # a running controller elects, the dead leader is out of the ISR
    ("KILL", True, True, True, 2),    # a new controller: out of the ISR (leaderless), then elected
    ("STOP", True, True, True, 2),    # a paused controller's session expires: the same takeover
    ("TERM", True, True, True, 1),    # the controlled shutdown moved the leadership before it left
    ("KILL", True, True, False, 1),   # the last ISR member: leaderless, no election
    ("KILL", True, False, True, 1),   # a follower leaves the ISR
])
def test_the_expected_leader_epoch_step_is_kafka_s(signal, was_controller, led, elected, step):
    victim, other = 1, 2
    before = {"leader": victim if led else other, "isr": [victim, other] if elected or not led else [victim]}
    during = {"leader": other if elected else -1, "isr": [other] if elected else [victim]}
    assert fuzz_faults.expected_epoch_step(before, during, victim, was_controller, signal) == step
    assert fuzz_faults.expected_epoch_step({"leader": other, "isr": [other]}, during, victim, was_controller, signal) == 0


def test_both_clusters_get_the_fault_steps_settings():
    assert fuzz.FUZZ_CONFIGS["zookeeper.session.timeout.ms"] == "6000"
    assert fuzz.FUZZ_CONFIGS["auto.leader.rebalance.enable"] == "false"
    assert fuzz.STORAGE == "disk"
