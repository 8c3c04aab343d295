"""The differential fuzzer's pure parts: the seeded generator, the comparator and its
allow-list, the shrinker, and the description of fetched batches."""
from __future__ import annotations

import json

import pytest

from minikafka.protocol.records.batch import encode_batch
from minikafka.protocol.records.control import encode_marker
from minikafka.reference import fuzz, fuzz_compare, fuzz_ops
from minikafka.reference.fuzz_run import describe_batches


def _run(answers: list, state: dict | None = None) -> dict:
    return {"answers": answers, "state": state or {}}


# -- the generator ------------------------------------------------------------------------
def test_a_seed_gives_the_same_sequence_and_another_seed_another():
    a, b = fuzz_ops.generate(7, 120), fuzz_ops.generate(7, 120)
    assert a == b and len(a) == 120
    assert fuzz_ops.generate(8, 120) != a
    json.dumps(a)  # a reproduction is JSON


def test_sequences_cover_every_operation_and_start_by_creating_a_topic():
    seen = {op["op"] for seed in range(1, 30) for op in fuzz_ops.generate(seed, 100)}
    assert seen == set(fuzz_ops.KINDS)
    for seed in range(1, 30):
        assert fuzz_ops.generate(seed, 5)[0]["op"] == "create_topic"


def test_sequences_hold_invalid_requests_too():
    ops = [op for seed in range(1, 40) for op in fuzz_ops.generate(seed, 100)]
    creates = [op for op in ops if op["op"] == "create_topic"]
    assert any(op["partitions"] == 0 for op in creates) and any(op["rf"] == 4 for op in creates)
    assert any(op["op"] == "alter_config" and op["key"] == "no.such.config" for op in ops)
    assert {op["acks"] for op in ops if op["op"] == "produce"} == {0, 1, -1}
    assert {op["codec"] for op in ops if op["op"] == "produce"} == set(fuzz_ops.CODECS)


# -- the comparator -----------------------------------------------------------------------
def test_the_comparator_catches_a_planted_difference():
    ops = [{"op": "produce"}, {"op": "fetch"}]
    kafka = _run([{"delivered": [["NONE", 0, None]]}, {"error": "NONE", "batches": [{"offsets": [0, 0]}]}],
                 {"topics": {"t0": {"0": {"high_watermark": 1}}}})
    same = json.loads(json.dumps(kafka))
    assert fuzz_compare.compare(ops, kafka, same) == []
    planted = json.loads(json.dumps(kafka))
    planted["answers"][1]["batches"][0]["offsets"][1] = 1
    planted["state"]["topics"]["t0"]["0"]["high_watermark"] = 2
    diffs = fuzz_compare.compare(ops, kafka, planted)
    assert [(d["path"], d["kafka"], d["ours"]) for d in diffs] == [
        ("op 1 fetch/batches/0/offsets/1", 0, 1), ("state topics/t0/0/high_watermark", 1, 2)]
    assert fuzz_compare.unexplained(diffs) == diffs


def test_a_missing_list_element_shows_as_a_length_and_the_element():
    diffs = fuzz_compare.diff_values("op 0 fetch", {"batches": [1, 2]}, {"batches": [1]})
    assert [(d["path"], d["kafka"], d["ours"]) for d in diffs] == [
        ("op 0 fetch/batches/#", 2, 1), ("op 0 fetch/batches/1", 2, "<absent>")]


def test_an_allowed_difference_is_explained_and_only_with_its_values(monkeypatch):
    known = fuzz_compare.Allowed("stamped", r"op \d+ fetch/batches/\d+/log_append_time", "an example", kafka=True,
                                 ours=False)
    monkeypatch.setattr(fuzz_compare, "ALLOWED", (known,))
    ops = [{"op": "fetch"}]
    kafka = _run([{"batches": [{"log_append_time": True}]}])
    ours = _run([{"batches": [{"log_append_time": False}]}])
    (diff,) = fuzz_compare.compare(ops, kafka, ours)
    assert diff["allowed"].name == "stamped" and fuzz_compare.unexplained([diff]) == []
    (reversed_diff,) = fuzz_compare.compare(ops, ours, kafka)  # the other way round is not what is known
    assert reversed_diff["allowed"] is None


def test_a_max_timestamp_lookup_below_the_log_start_is_explained_only_for_that_lookup():
    # Kafka still has the segment below the log start DeleteRecords moved past every record
    ops = [{"op": "delete_records", "topic": "t1", "partition": 0, "offset": "hw"},
           {"op": "list_offsets", "topic": "t1", "partition": 0, "spec": "max_timestamp"}]
    kafka = _run([{}, {"offset": 125, "timestamp": "<broker clock>"}])
    ours = _run([{}, {"offset": -1, "timestamp": -1}])
    diffs = fuzz_compare.compare(ops, kafka, ours)
    assert {d["allowed"].name for d in diffs} == {"max-timestamp-below-the-log-start"} and len(diffs) == 2
    latest = [ops[0], {**ops[1], "spec": "latest"}]
    assert fuzz_compare.unexplained(fuzz_compare.compare(latest, kafka, ours)) != []
    alone = fuzz_compare.compare(ops[1:], _run(kafka["answers"][1:]), _run(ours["answers"][1:]))
    assert len(fuzz_compare.unexplained(alone)) == 2  # no DeleteRecords before it


def test_a_max_timestamp_lookup_answering_an_older_record_with_a_larger_stamp_is_explained():
    # Kafka's largest timestamp is a marker in a segment below the log start; minikafka answers
    # the largest from the log start on: a later record with a smaller timestamp
    ops = [{"op": "delete_records", "topic": "t3", "partition": 2, "offset": "hw"},
           {"op": "list_offsets", "topic": "t3", "partition": 2, "spec": "max_timestamp"}]
    kafka = _run([{}, {"offset": 63, "timestamp": "<broker clock>"}])
    ours = _run([{}, {"offset": 78, "timestamp": 4749}])
    diffs = fuzz_compare.compare(ops, kafka, ours)
    assert {d["allowed"].name for d in diffs} == {"max-timestamp-below-the-log-start"} and len(diffs) == 2
    # a later record in Kafka's answer, or a larger timestamp in minikafka's, is not that
    later = _run([{}, {"offset": 80, "timestamp": "<broker clock>"}])
    assert len(fuzz_compare.unexplained(fuzz_compare.compare(ops, later, ours))) == 2
    larger = _run([{}, {"offset": 78, "timestamp": 9000}])
    assert len(fuzz_compare.unexplained(fuzz_compare.compare(ops, _run([{}, {"offset": 63, "timestamp": 5000}]),
                                                             larger))) == 2


def test_every_allowed_entry_names_its_difference_and_reason():
    for entry in fuzz_compare.ALLOWED:
        assert entry.name and len(entry.reason) > 40 and entry.pattern


# -- the shrinker -------------------------------------------------------------------------
def test_the_shrinker_reduces_a_sequence_to_the_operations_that_matter():
    ops = [{"op": "produce", "i": i} for i in range(40)]
    asked = []

    def fails(candidate: list[dict]) -> bool:  # fails while operations 7 and 31 are both there
        asked.append(len(candidate))
        return {7, 31} <= {op["i"] for op in candidate}
    shrunk = fuzz_compare.shrink(ops, fails, budget=200)
    assert [op["i"] for op in shrunk] == [7, 31]
    assert len(asked) < 200


def test_the_shrinker_stops_at_its_budget_and_keeps_a_failing_sequence():
    ops = [{"op": "produce", "i": i} for i in range(64)]
    shrunk = fuzz_compare.shrink(ops, lambda c: any(op["i"] == 50 for op in c), budget=3)
    assert any(op["i"] == 50 for op in shrunk) and len(shrunk) < 64


def test_a_reproduction_replays_as_the_same_operations(tmp_path):
    ops = fuzz_ops.generate(3, 10)
    path = tmp_path / "repro.json"
    path.write_text(fuzz_compare.reproduction(3, ops, [{"path": "op 1 x", "kafka": 1, "ours": 2, "allowed": None}]))
    assert fuzz.load_replay(str(path)) == (3, ops)
    path.write_text('{"ops": [{"op": "rm -rf"}]}')
    with pytest.raises(ValueError, match="not a reproduction"):
        fuzz.load_replay(str(path))


def test_seed_ranges():
    assert fuzz.parse_seeds("1..4") == [1, 2, 3, 4]
    assert fuzz.parse_seeds("3,9") == [3, 9]
    with pytest.raises(ValueError):
        fuzz.parse_seeds("5..2")


# -- what a fetch answer is compared by ----------------------------------------------------
def test_fetched_batches_are_described_without_producer_ids_and_a_cut_batch_is_dropped():
    data = encode_batch([(b"k", b"v", [("h", b"x")], fuzz_ops.BASE_TIMESTAMP + 5)], base_offset=3,
                        producer_id=4242, producer_epoch=1, base_sequence=0, is_transactional=True)
    marker = encode_marker(4242, 1, True, 0, fuzz_ops.BASE_TIMESTAMP)
    marker = (4).to_bytes(8, "big") + marker[8:]  # at offset 4
    got = describe_batches(data + marker + data[:20])
    assert [b["offsets"] for b in got] == [[3, 3], [4, 4]]
    assert got[0]["producer"] == "<id>" and got[0]["producer_epoch"] == 1 and got[0]["transactional"]
    assert got[0]["records"] == [[3, 5, "k", "v", [["h", "x"]]]]
    assert got[1]["control"] and got[1]["markers"] == ["COMMIT"]


# -- the command ----------------------------------------------------------------------------
@pytest.mark.parametrize("args,says", [
    ([], "give --seeds"),
    (["--seeds", "1..3", "--replay", "x.json"], "give --seeds"),
    (["--seeds", "three"], "--seeds three"),
    (["--seeds", "1", "--ops", "0"], "--ops must be at least 1"),
    (["--replay", "/nonexistent/repro.json"], "cannot read the reproduction"),
])
def test_fuzz_command_mistakes_are_one_line_and_exit_2(args, says):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "minikafka", "reference", "fuzz", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def test_a_shorter_fetch_on_either_side_is_explained_only_as_a_prefix():
    ops = [{"op": "fetch"}]
    kafka = _run([{"batches": [{"offsets": [0, 0]}]}])
    longer = _run([{"batches": [{"offsets": [0, 0]}, {"offsets": [1, 1]}]}])
    found = fuzz_compare.compare(ops, kafka, longer)
    assert fuzz_compare.unexplained(found) == []
    assert {d["allowed"].name for d in found} == {"fetch-stops-after-a-transactional-batch"}
    other = _run([{"batches": [{"offsets": [0, 1]}]}])  # the same count, another batch: not explained
    assert fuzz_compare.unexplained(fuzz_compare.compare(ops, kafka, other)) != []
    # minikafka's answer a prefix of Kafka's: recompressed batches of other sizes fit otherwise
    found = fuzz_compare.compare(ops, longer, kafka)
    assert fuzz_compare.unexplained(found) == []
    assert {d["allowed"].name for d in found} == {"fetch-fit-of-recompressed-batches"}
    shorter_other = _run([{"batches": [{"offsets": [0, 1]}]}])  # shorter, and not a prefix: not explained
    assert fuzz_compare.unexplained(fuzz_compare.compare(ops, longer, shorter_other)) != []


def test_an_aborted_transaction_in_kafka_s_batch_more_is_explained_only_there():
    """Seed 76: t3's compression.type gzip; a read_committed Fetch of max_bytes 300 from Kafka
    held the batch 14-14 (an aborted transaction's record) that minikafka's did not fit, and
    with it the aborted transaction beginning at 14."""
    ops = [{"op": "fetch"}]
    two = [{"offsets": [9, 12]}, {"offsets": [13, 13]}]
    kafka = _run([{"batches": [*two, {"offsets": [14, 14]}], "aborted": [14]}])
    ours = _run([{"batches": two, "aborted": []}])
    found = fuzz_compare.compare(ops, kafka, ours)
    assert fuzz_compare.unexplained(found) == []
    assert {d["allowed"].name for d in found} == {"fetch-fit-of-recompressed-batches"}
    # the same batches on both sides, an aborted transaction missing in minikafka's: a real difference
    same = fuzz_compare.compare(ops, _run([{"batches": two, "aborted": [9]}]), _run([{"batches": two, "aborted": []}]))
    assert [d["path"] for d in fuzz_compare.unexplained(same)] == ["op 0 fetch/aborted/#", "op 0 fetch/aborted/0"]
    # a batch more, but the missing transaction begins in a batch both returned: not explained
    early = fuzz_compare.compare(ops, _run([{"batches": [*two, {"offsets": [14, 14]}], "aborted": [9]}]), ours)
    assert [d["path"] for d in fuzz_compare.unexplained(early)] == ["op 0 fetch/aborted/0"]


def test_a_config_change_counts_as_applied_once_every_broker_logged_it_since(tmp_path):
    """Each broker is counted against its own number.  Counting against the fewest (a
    broker down during earlier changes is behind) took the others as applied before they
    read the new change: Kafka's leader then accepted keyless records on a topic just made
    compacted (seed 3 of the long sweep)."""
    from minikafka.reference.fuzz_run import AppliedConfigs

    a, b = tmp_path / "kafka-1.log", tmp_path / "kafka-2.log"
    line = "INFO Processing override for entityPath: topics/t3 with config: HashMap(cleanup.policy -> x)\n"
    a.write_text(line * 3)
    b.write_text(line)  # down during two earlier changes: behind
    applied = AppliedConfigs(str(tmp_path))
    before = applied.snapshot("t3")
    assert before == {a: 3, b: 1}
    with b.open("a") as f:
        f.write(line)
    assert not applied.applied_since("t3", before), "broker 1 has not logged the new change yet"
    with a.open("a") as f:
        f.write(line)
    assert applied.applied_since("t3", before)
    assert AppliedConfigs("").applied_since("t3", {}), "without logs to read, nothing to wait for"
