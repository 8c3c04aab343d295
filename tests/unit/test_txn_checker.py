"""The exactly-once checks of the transactional fault workload, against hand-made runs."""
from __future__ import annotations

from minikafka.faults.txn_checker import check_transactions, output_value, parse_output

INPUTS = {0: ["in-0-0", "in-0-1"], 1: ["in-1-0"]}


def outputs_for(copies: list[tuple[str, int, str, int]]) -> dict[int, list[str]]:
    """(input value, input partition, transactional id, attempt) -> both output partitions."""
    out: dict[int, list[str]] = {0: [], 1: []}
    for value, p, tid, attempt in copies:
        for q in (p % 2, (p + 1) % 2):
            out[q].append(output_value(value, tid, attempt))
    return out


def test_a_clean_run_passes():
    outs = outputs_for([("in-0-0", 0, "c0", 1), ("in-0-1", 0, "c0", 3), ("in-1-0", 1, "c1", 1)])
    v = check_transactions(INPUTS, {0: 2, 1: 1}, outs, 2, aborted={("c0", 2)})
    assert v.ok, v.problems()
    assert v.committed_inputs == 3 and v.outputs == 6


def test_each_violation_is_named():
    outs = outputs_for([("in-0-0", 0, "c0", 1), ("in-0-0", 0, "c0", 2), ("in-0-1", 0, "c0", 2),
                        ("in-1-0", 1, "c1", 5)])
    outs[0].remove(output_value("in-1-0", "c1", 5))  # visible in only one partition
    v = check_transactions(INPUTS, {0: 1, 1: 1}, outs, 2, aborted={("c0", 2)})
    assert len(v.duplicated) == 1           # in-0-0 copied by attempts 1 and 2
    assert len(v.uncommitted_visible) == 1  # in-0-1 is above the committed offset 1
    assert len(v.partial) == 1              # in-1-0
    assert len(v.aborted_visible) == 4      # attempt 2's four records
    assert not v.ok and len(v.problems()) == 4


def test_a_committed_input_without_outputs_is_missing():
    v = check_transactions(INPUTS, {0: 2, 1: 0}, outputs_for([("in-0-0", 0, "c0", 1)]), 2, aborted=set())
    assert [m.split(" ")[1] for m in v.missing] == ["0@1"]


def test_output_values_round_trip():
    assert parse_output(output_value("in-3-7", "copier-x-1", 12)) == ("in-3-7", "copier-x-1", 12)
    assert parse_output("garbage") is None
