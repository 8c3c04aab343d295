"""Transactional offset commits on real processes, driven through the msgpack API as a
transaction coordinator and a transactional producer would: TxnOffsetCommit stays pending
(OffsetFetch shows the old offset, require_stable answers UNSTABLE_OFFSET_COMMIT) until a
COMMIT marker on the group's __consumer_offsets partition; an ABORT drops it; a stale
producer epoch and a stale consumer are fenced; and a new coordinator after a kill loads
committed, aborted and still-open transactions from the log."""
from __future__ import annotations

import urllib.request
import uuid

import pytest

from minikafka import Admin, errors
from minikafka.groups.records import OFFSETS_TOPIC, partition_for
from minikafka.protocol.rpc import http
from minikafka.protocol.rpc.http import CLUSTER_CREDENTIAL_HEADER
from minikafka.rpc import TRANSPORT_ERRORS
from process_helpers import cluster_secret, wait_for
from replica_checks import post

pytestmark = pytest.mark.process


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _as_broker(port: int, api: str, body: dict, secret: str) -> dict:
    """A request carrying the cluster credential, as a transaction coordinator sends it."""
    req = urllib.request.Request(http.url_for("127.0.0.1", port, api), data=http.encode_request(body),
                                 headers={**http.HEADERS, CLUSTER_CREDENTIAL_HEADER: secret}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return http.decode_answer(resp.read(), resp.status, api, raise_error=False)


class Txn:
    """A group's coordinator as a transactional producer and its transaction coordinator use it."""

    def __init__(self, cluster, group: str, topic: str) -> None:
        self.cluster, self.group, self.topic = cluster, group, topic
        self.secret = cluster_secret(cluster)
        r = post(self.coordinator_port(), "init_producer_id", {})
        assert r["error_code"] == 0, r
        self.pid = r["producer_id"]
        with Admin(cluster.bootstrap) as admin:
            self.offsets_partition = partition_for(group, len(admin.describe_topics([OFFSETS_TOPIC])[0].partitions))

    def coordinator_port(self) -> int:
        def found() -> int | None:
            for port in self.cluster.brokers.values():
                try:
                    r = post(port, "find_coordinator", {"key": self.group})
                except TRANSPORT_ERRORS:
                    continue  # a killed broker
                if r["error_code"] == 0:
                    return self.cluster.brokers[r["node_id"]]
            return None
        return wait_for(found, timeout_s=60, message=f"a coordinator for group {self.group}")

    def commit(self, offsets: dict[int, int], epoch: int, **member) -> dict[int, str]:
        """TxnOffsetCommit; partition -> error name."""
        body = {"transactional_id": "tx-1", "group_id": self.group, "producer_id": self.pid, "producer_epoch": epoch,
                "offsets": [{"topic": self.topic, "partition": p, "offset": o} for p, o in offsets.items()], **member}

        def answered() -> dict | None:
            r = post(self.coordinator_port(), "txn_offset_commit", body, timeout_s=30)
            errs = {x["partition"]: x["error"] for x in r.get("partitions", [])} or {-1: r["error"]}
            retriable = {"NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"}
            return None if set(errs.values()) & retriable else errs
        return wait_for(answered, timeout_s=60, message="a TxnOffsetCommit answer from the coordinator")

    def fetch(self, require_stable: bool = False) -> dict[int, object]:
        """OffsetFetch; partition -> offset, or the error name."""
        def answered() -> dict | None:
            r = post(self.coordinator_port(), "offset_fetch", {"group_id": self.group, "require_stable": require_stable,
                                                               "partitions": [{"topic": self.topic, "partition": p}
                                                                              for p in range(2)]})
            if r["error_code"]:
                return None  # moving or loading: ask again
            return {x["partition"]: x["error"] if x["error_code"] else x["offset"] for x in r["partitions"]}
        return wait_for(answered, timeout_s=60, message="an OffsetFetch answer from the coordinator")

    def end(self, committed: bool, epoch: int) -> None:
        """WriteTxnMarkers to the group's __consumer_offsets partition, on its leader."""
        body = {"markers": [{"producer_id": self.pid, "producer_epoch": epoch, "committed": committed,
                             "coordinator_epoch": 0,
                             "partitions": [{"topic": OFFSETS_TOPIC, "partition": self.offsets_partition}]}]}

        def written() -> bool:
            r = _as_broker(self.coordinator_port(), "write_txn_markers", body, self.secret)
            return r["error_code"] == 0 and all(p["error_code"] == 0 for m in r.get("markers", [])
                                                for p in m["partitions"])
        wait_for(written, timeout_s=60, message="the marker written on the group's __consumer_offsets partition")


def _setup(cluster) -> Txn:
    topic, group = _name("txo"), _name("g")
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic(topic, 2, 3)
    txn = Txn(cluster, group, topic)

    def committed() -> bool:  # once the coordinator's metadata has the new topic
        r = post(txn.coordinator_port(), "offset_commit", {"group_id": group, "offsets": [
            {"topic": topic, "partition": p, "offset": 1} for p in range(2)]})
        return r["error_code"] == 0 and all(x["error_code"] == 0 for x in r["partitions"])
    wait_for(committed, timeout_s=30, message="a plain commit of offset 1")
    return txn


def test_pending_until_the_commit_marker_dropped_on_abort_and_stale_producers_fenced(cluster):
    txn = _setup(cluster)
    assert txn.commit({0: 10}, epoch=1) == {0: "NONE"}
    assert txn.fetch() == {0: 1, 1: 1}  # still the old offset
    assert txn.fetch(require_stable=True) == {0: "UNSTABLE_OFFSET_COMMIT", 1: 1}
    txn.end(True, epoch=1)
    assert txn.fetch(require_stable=True) == {0: 10, 1: 1}

    assert txn.commit({0: 20, 1: 20}, epoch=1) == {0: "NONE", 1: "NONE"}
    txn.end(False, epoch=1)
    assert txn.fetch(require_stable=True) == {0: 10, 1: 1}  # aborted: dropped

    # an older epoch of the producer is fenced by the partition's producer state
    assert txn.commit({0: 30}, epoch=0) == {0: "INVALID_PRODUCER_EPOCH"}
    assert txn.fetch(require_stable=True) == {0: 10, 1: 1}

    # KIP-447: a consumer's generation and member id are checked (the group has no members)
    # (-1: the whole request's error, as OffsetCommit answers a membership error)
    assert txn.commit({0: 40}, epoch=1, generation_id=3, member_id="zombie") == {-1: "UNKNOWN_MEMBER_ID"}
    assert txn.fetch(require_stable=True) == {0: 10, 1: 1}


def test_a_new_coordinator_loads_committed_aborted_and_open_transactions(make_cluster):
    handle = make_cluster()
    txn = _setup(handle)
    assert txn.commit({0: 10}, epoch=0) == {0: "NONE"}
    txn.end(True, epoch=0)
    assert txn.commit({1: 20}, epoch=0) == {1: "NONE"}
    txn.end(False, epoch=0)
    assert txn.commit({0: 30, 1: 30}, epoch=0) == {0: "NONE", 1: "NONE"}  # left open
    assert txn.fetch() == {0: 10, 1: 1}

    with Admin(handle.bootstrap) as admin:
        before = admin.describe_group(txn.group).coordinator
    handle.kill(before)

    def moved() -> bool:
        try:
            with Admin(handle.bootstrap, request_timeout_ms=5000) as admin:
                return admin.describe_group(txn.group).coordinator not in (before, None, -1)
        except errors.KafkaError:
            return False
    wait_for(moved, timeout_s=60, message="a new coordinator for the group")
    assert txn.fetch() == {0: 10, 1: 1}
    assert txn.fetch(require_stable=True) == {0: "UNSTABLE_OFFSET_COMMIT", 1: "UNSTABLE_OFFSET_COMMIT"}
    txn.end(True, epoch=0)  # the transaction coordinator finishes the open transaction on the new leader
    assert txn.fetch(require_stable=True) == {0: 30, 1: 30}
