"""The differential scenarios' pure part: masking znode data, comparing layouts, the page."""
from __future__ import annotations

import json

from minikafka.reference import fidelity, znodes


def test_mask_keeps_keys_constants_and_list_lengths_and_hides_what_changes_per_run():
    state = json.dumps({"controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 0, "isr": [2, 3, 1]}).encode()
    assert znodes.mask("/brokers/topics/t/partitions/0/state", state) == {
        "controller_epoch": 1, "leader": "<broker>", "version": 1, "leader_epoch": 0, "isr": ["<3 brokers>"]}
    topic = json.dumps({"version": 3, "partitions": {"0": [1, 2], "1": [2, 3]}, "topic_id": "abc"}).encode()
    assert znodes.mask("/brokers/topics/t", topic) == {
        "version": 3, "partitions": {"0": ["<2 brokers>"], "1": ["<2 brokers>"]}, "topic_id": "<id>"}
    assert znodes.mask("/controller_epoch", b"7") == "<epoch>"
    registration = json.dumps({"version": 4, "storage": "memory", "log_since": 4294967326}).encode()
    assert znodes.mask("/brokers/ids/1", registration) == {"version": 4, "storage": "memory", "log_since": "<epoch>"}
    assert znodes.mask("/admin", b"") is None
    assert znodes.mask("/x", b"\x00not json") == "<bytes>"


def test_paths_lose_sequence_numbers_and_broker_ids():
    assert znodes.normalize_path("/config/changes/config_change_0000000012") == "/config/changes/config_change_N"
    assert znodes.normalize_path("/brokers/ids/3") == "/brokers/ids/<id>"
    assert znodes.normalize_path("/brokers/topics/t1/partitions/10") == "/brokers/topics/t1/partitions/10"


def test_compare_names_each_kind_of_difference():
    kafka = {"/a": 1, "/b": {"version": 2}, "/k": None}
    ours = {"/a": 1, "/b": {"version": 1}, "/o": None}
    assert [(d["path"], d["kind"]) for d in znodes.compare(kafka, ours)] == [
        ("/b", "value"), ("/k", "only in Kafka"), ("/o", "only in minikafka")]


def test_an_unexplained_difference_is_marked_on_the_page(monkeypatch):
    # a reason of the kind the page lists (minikafka writes /feature now: an example only)
    monkeypatch.setattr(fidelity, "KNOWN", (*fidelity.KNOWN, fidelity.Known("/feature", "only in Kafka", "an example")))
    known = {"path": "/feature", "kind": "only in Kafka", "kafka": {"status": 1}, "ours": None, "step": "start-up"}
    new = {"path": "/brokers/topics/t/partitions/0/state", "kind": "value", "kafka": {"version": 1},
           "ours": {"version": 2}, "step": "topic creation (t)"}
    for d in (known, new):
        d["known"] = fidelity.explain(d)
    assert known["known"] is not None and new["known"] is None
    assert fidelity.unexplained([known, new]) == [new]
    refused = [{"case": "delete t", "kafka": "UNKNOWN_TOPIC_OR_PART", "ours": "UNKNOWN_TOPIC_OR_PART", "reason": None},
               {"case": "create t", "kafka": "INVALID_CONFIG", "ours": "NONE", "reason": None}]
    assert fidelity.unexplained_refusals(refused) == [refused[1]]
    page = fidelity.render([known, new], "3.9.2", refused, [])
    assert "| `/feature` | only in Kafka | start-up |" in page
    assert "**unexplained**" in page and "Apache Kafka 3.9.2" in page
    assert "1 of 2 answers are the same" in page
    assert "| create t | `INVALID_CONFIG` | `NONE` | **unexplained** |" in page
