"""Authorization lives in the request layer: a handler in ``broker/apis/`` checks the
principal and host its :class:`RequestContext` carries; the services below trust their
caller (the broker's own work calls them with no context and no check)."""
from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace

import pytest

from minikafka import errors
from minikafka.auth.acls import AclBinding
from minikafka.broker import security as security_mod
from minikafka.broker.apis.context import KAFKA, RequestContext
from minikafka.broker.apis.data import DataApis
from minikafka.broker.apis.groups import GroupApis
from minikafka.broker.apis.transactions import TransactionApis
from minikafka.broker.kafka.connection import Connection
from minikafka.broker.metrics import Metrics
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.security import Security
from minikafka.broker.storage import Storage
from minikafka.config import BrokerConfig
from minikafka.metric_names import AUTHORIZATION_FAILURES
from minikafka.protocol.records.batch import encode_batch
from minikafka.protocol.rpc.types import (
    EndTxnRequest,
    HeartbeatRequest,
    ListGroupsRequest,
    ProducePartition,
    ProduceRequest,
)
from minikafka.replication.partition import LeaderState, PartitionReplica

BOB = RequestContext(listener=KAFKA, principal="User:bob", client_host="10.0.0.1")


def _security(*bindings: AclBinding) -> tuple[Security, Metrics]:
    config = BrokerConfig(1, "zk", settings={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    metrics = Metrics()
    security = Security(config, metrics)
    security.authorizer.replace(bindings)
    return security, metrics


def _replicas(tmp_path, *topics: str) -> ReplicaManager:
    """A replica manager leading partition 0 of each topic alone; it knows no authorizer."""
    rm = ReplicaManager(BrokerConfig(1, "zk"), SimpleNamespace(time=time.time, monotonic=time.monotonic),
                        Storage(str(tmp_path), 1), None, Metrics(), lambda *args, **kw: None)
    for topic in topics:
        p = PartitionReplica(topic, 0, 1)
        p.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
        rm.partitions[(topic, 0)] = p
    return rm


def _produce(*topics: str) -> ProduceRequest:
    return ProduceRequest(acks=1, timeout_ms=1000, partitions=[
        ProducePartition(topic=t, partition=0, records=encode_batch([(None, b"v", None, 0)])) for t in topics])


def test_identity_is_no_context_variable_any_more():
    assert not hasattr(security_mod, "current_principal") and not hasattr(security_mod, "current_host")
    conn = Connection(external=False, peer="10.0.0.1:5555")
    conn.authenticate("User:bob")
    ctx = conn.context()
    assert (ctx.principal, ctx.client_host) == ("User:bob", "10.0.0.1")


def test_a_service_called_without_a_context_is_not_checked(tmp_path):
    """The replica manager appends what its caller gives it: an internal topic (a
    coordinator's write) and a topic nobody may write, with no principal at all."""
    rm = _replicas(tmp_path, "__consumer_offsets", "secret")
    answers = asyncio.run(rm.produce(_produce("__consumer_offsets", "secret")))
    assert [(a.topic, a.error, a.base_offset) for a in answers] == [("__consumer_offsets", None, 0), ("secret", None, 0)]


def test_the_produce_handler_refuses_partition_by_partition(tmp_path, caplog):
    security, metrics = _security(AclBinding.make("Topic", "open", "User:bob", "Write"),
                                  AclBinding.make("Topic", "secret", "User:alice", "Write"))
    rm = _replicas(tmp_path, "open", "secret", "__consumer_offsets")
    data = DataApis(1, rm, None, security)
    with caplog.at_level(logging.INFO, logger="minikafka.broker.security"):
        answer = asyncio.run(data.produce(_produce("secret", "open", "__consumer_offsets"), BOB))
    assert [(a.topic, a.error and a.error.code.name) for a in answer.partitions] == [
        ("secret", "TOPIC_AUTHORIZATION_FAILED"), ("open", None), ("__consumer_offsets", "INVALID_TOPIC_EXCEPTION")]
    assert "principal User:bob" in str(answer.partitions[0].error)
    assert rm.partitions[("open", 0)].log_end_offset == 1
    assert rm.partitions[("secret", 0)].log_end_offset == 0  # never reached the replica manager
    assert metrics.value(AUTHORIZATION_FAILURES) == 1
    assert "denied User:bob Write on Topic:secret from 10.0.0.1" in caplog.text


def test_the_context_s_host_is_checked_too(tmp_path):
    security, _ = _security(AclBinding.make("Topic", "t", "User:bob", "Write", host="10.0.0.1"))
    data = DataApis(1, _replicas(tmp_path, "t"), None, security)
    elsewhere = RequestContext(listener=KAFKA, principal="User:bob", client_host="10.0.0.2")
    assert asyncio.run(data.produce(_produce("t"), BOB)).partitions[0].error is None
    refused = asyncio.run(data.produce(_produce("t"), elsewhere)).partitions[0].error
    assert isinstance(refused, errors.TopicAuthorizationFailedError)


class _Coordinator:
    """A group or transaction coordinator that records what reaches it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.groups = [SimpleNamespace(group_id=g, protocol_type="consumer", state=SimpleNamespace(value="Stable"))
                       for g in ("mine", "theirs")]

    def heartbeat(self, *args: object) -> None:
        self.calls.append("heartbeat")

    def list_groups(self) -> list:
        self.calls.append("list_groups")
        return self.groups

    async def end_txn(self, *args: object) -> None:
        self.calls.append("end_txn")


def test_a_group_handler_refuses_a_principal_before_the_coordinator_sees_the_request():
    security, metrics = _security(AclBinding.make("Group", "mine", "User:bob", "Read"))
    coordinator = _Coordinator()
    groups = GroupApis(coordinator, None, security)
    asyncio.run(groups.heartbeat(HeartbeatRequest(group_id="mine", member_id="m", generation_id=1), BOB))
    with pytest.raises(errors.GroupAuthorizationFailedError, match="principal User:bob"):
        asyncio.run(groups.heartbeat(HeartbeatRequest(group_id="theirs", member_id="m", generation_id=1), BOB))
    assert coordinator.calls == ["heartbeat"] and metrics.value(AUTHORIZATION_FAILURES) == 1
    # ListGroups leaves out, and does not refuse, the groups the principal may not Describe
    listed = asyncio.run(groups.list_groups(ListGroupsRequest(), BOB))
    assert [g.group_id for g in listed.groups] == ["mine"] and metrics.value(AUTHORIZATION_FAILURES) == 1
    # the coordinator itself, called by the broker, lists every group
    assert [g.group_id for g in coordinator.list_groups()] == ["mine", "theirs"]


def test_a_transaction_handler_refuses_without_write_on_the_transactional_id():
    security, _ = _security(AclBinding.make("TransactionalId", "tx", "User:alice", "Write"))
    coordinator = _Coordinator()
    txn = TransactionApis(coordinator, None, security)
    with pytest.raises(errors.TransactionalIdAuthorizationFailedError):
        asyncio.run(txn.end_txn(EndTxnRequest(transactional_id="tx", producer_id=1, producer_epoch=0,
                                              committed=True), BOB))
    assert coordinator.calls == []
