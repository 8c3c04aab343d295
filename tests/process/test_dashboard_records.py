"""The dashboard's JSON beside the page, without a browser: ``/api/records`` (the record
browser) with good and bad parameters, and the topic configs, min-ISR flags and
fetch/produce rates ``/api/state`` carries."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from minikafka import Admin, Consumer, Producer, TopicPartition
from process_helpers import wait_for

pytestmark = pytest.mark.process


def get(port: int, path: str, **query) -> tuple[int, dict, str]:
    """(status, JSON body, Content-Type) of a GET on a broker's HTTP port."""
    url = f"http://127.0.0.1:{port}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.load(resp), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers.get("Content-Type", "")


def test_record_endpoint_reads_committed_records_and_refuses_bad_parameters(make_cluster):
    handle = make_cluster()
    with Admin(handle.bootstrap) as admin:
        admin.create_topic("ledger", partitions=2, replication_factor=3,
                           config={"min.insync.replicas": "2", "retention.ms": "3600000"})
    with Producer(handle.bootstrap, acks="all", linger_ms=1) as producer:
        for i in range(30):
            producer.send("ledger", b"value-%d" % i, key=b"key-%d" % i, partition=0)
        producer.send("ledger", b"\x00\xff<script>alert(1)</script>", key=None, partition=0)
        producer.flush()
    port = handle.brokers[min(handle.brokers)]
    wait_for(lambda: get(port, "/api/records", topic="ledger", partition="0")[0] == 200, timeout_s=30,
             message="the serving broker knowing the topic")

    status, body, ctype = get(port, "/api/records", topic="ledger", partition="0", limit="5")
    assert status == 200 and ctype.startswith("application/json")
    assert body["high_watermark"] == 31
    assert [r["offset"] for r in body["records"]] == [26, 27, 28, 29, 30]
    assert {r["leader_epoch"] for r in body["records"]} == {0}
    assert body["records"][0]["key"] == {"encoding": "text", "data": "key-26", "size": 6, "truncated": False}
    assert body["records"][0]["value"]["data"] == "value-26"
    binary = body["records"][-1]
    assert binary["key"] is None
    assert binary["value"]["encoding"] == "hex"
    assert binary["value"]["data"] == b"\x00\xff<script>alert(1)</script>".hex()
    # the default is 20; never more than asked; an empty partition has none
    assert len(get(port, "/api/records", topic="ledger", partition="0")[1]["records"]) == 20
    assert [r["offset"] for r in get(port, "/api/records", topic="ledger", partition="0", limit="100")[1]["records"]] \
        == list(range(31))
    status, body, _ = get(port, "/api/records", topic="ledger", partition="1", limit="3")
    assert (status, body["records"], body["high_watermark"]) == (200, [], 0)

    for query, want_status, want_error in (
        ({"topic": "nope", "partition": "0"}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ({"topic": "ledger", "partition": "7"}, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
        ({"topic": "ledger", "partition": "-1"}, 400, "INVALID_REQUEST"),
        ({"topic": "ledger", "partition": "x"}, 400, "INVALID_REQUEST"),
        ({"topic": "ledger"}, 400, "INVALID_REQUEST"),
        ({"partition": "0"}, 400, "INVALID_REQUEST"),
        ({"topic": "ledger", "partition": "0", "limit": "0"}, 400, "INVALID_REQUEST"),
        ({"topic": "ledger", "partition": "0", "limit": "101"}, 400, "INVALID_REQUEST"),
        ({"topic": "ledger", "partition": "0", "limit": "2.5"}, 400, "INVALID_REQUEST"),
    ):
        status, body, ctype = get(port, "/api/records", **query)
        assert (status, body["error"]) == (want_status, want_error), (query, body)
        assert ctype.startswith("application/json") and body["message"] and "Traceback" not in body["message"]

    # /api/state: the topic's overrides and effective values, its min ISR, no flag while the ISR is full
    state = wait_for(lambda: (s := get(port, "/api/state")[1]) and s["topics"] and s["topics"][0]["configs"] and s,
                     timeout_s=30, message="the topic configs in /api/state")
    (topic,) = state["topics"]
    assert topic["overrides"] == {"min.insync.replicas": "2", "retention.ms": "3600000"}
    effective = {c["name"]: (c["value"], c["source"]) for c in topic["configs"]}
    assert effective["min.insync.replicas"] == ("2", "topic")
    assert effective["cleanup.policy"][1] != "topic"
    assert [p["min_insync_replicas"] for p in state["partitions"]] == [2, 2]
    assert [p["under_min_isr"] for p in state["partitions"]] == [False, False]
    assert state["summary"]["under_min_isr"] == 0

    # a consumer reading partition 0 makes its fetch counters move: the rate is positive
    with Consumer(handle.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("ledger", 0)])

        def fetching() -> bool:
            consumer.seek(TopicPartition("ledger", 0), 0)
            consumer.poll(timeout_ms=200)
            p0 = get(port, "/api/state")[1]["partitions"][0]
            return (p0["rates"]["fetch_records_per_s"] or 0) > 0 and (p0["rates"]["fetch_bytes_per_s"] or 0) > 0

        wait_for(fetching, timeout_s=30, message="a non-zero fetch rate on ledger-0")
