"""The one connection policy of the three front ends, the ZooKeeper adapter's own errors,
and the Kafka listener's answer to a request that ZooKeeper could not serve."""
from __future__ import annotations

import asyncio
import uuid

import pytest
from kazoo import exceptions as kz

from minikafka.broker.connection_policy import ConnectionPolicy, Size, effective_max_connections, request_failure
from minikafka.broker.kafka.connection import Connection
from minikafka.broker.kafka.handlers import KafkaHandlers
from minikafka.broker.metrics import Metrics
from minikafka.config import BrokerConfig
from minikafka.errors import NotControllerError
from minikafka.metric_names import REQUEST_ERRORS
from minikafka.protocol.kafka import apis, frames
from minikafka.protocol.kafka.error_response import error_response
from minikafka.protocol.kafka.frames import RequestHeader
from minikafka.protocol.kafka.schema import Struct
from minikafka.zk import errors as zk_errors
from minikafka.zk.launcher import is_no_node
from minikafka.zk.session import ZkSession, translate

# -- the policy: given sizes and times, it answers ------------------------------------------


def test_the_policy_reads_each_setting_once_from_the_configuration():
    config = BrokerConfig(1, "zk", settings={
        "max.connections": "50", "max.connections.per.ip": "7", "connections.max.idle.ms": "9000",
        "request.timeout.ms": "2500", "socket.request.max.bytes": "1000", "queued.max.request.bytes": "5000",
        "connection.failed.authentication.delay.ms": "250"})
    policy = ConnectionPolicy.of(config.get, nofile=100000)
    assert policy == ConnectionPolicy(max_connections=50, max_connections_per_ip=7, idle_s=9.0,
                                      request_timeout_s=2.5, max_request_bytes=1000, request_memory_bytes=5000,
                                      failed_login_delay_s=0.25)
    # the open-file limit lowers max.connections, and sets it when unset
    assert ConnectionPolicy.of(config.get, nofile=300).max_connections == effective_max_connections(50, 300) == 44
    assert ConnectionPolicy.of(BrokerConfig(1, "zk").get, nofile=1256).max_connections == 1000


def test_a_new_connection_is_refused_naming_the_limit_it_passes():
    policy = ConnectionPolicy(max_connections=3, max_connections_per_ip=2)
    assert policy.refusal(open_total=2, open_from_ip=1) is None
    assert policy.refusal(open_total=2, open_from_ip=2) == ("max.connections.per.ip", 2)
    assert policy.refusal(open_total=3, open_from_ip=0) == ("max.connections", 3)


def test_deadlines_are_counted_from_the_times_the_shell_gives():
    policy = ConnectionPolicy(idle_s=600.0, request_timeout_s=30.0)
    assert policy.idle_deadline(1000.0) == 1600.0
    assert policy.arrival_deadline(1000.0) == 1030.0  # a head (a frame's size), then a body, each
    assert policy.handed_over_keepalive_s == 30.0  # the web app cannot tell a head begun from none
    assert ConnectionPolicy(idle_s=5.0, request_timeout_s=30.0).handed_over_keepalive_s == 5.0


def test_request_sizes_past_socket_request_max_bytes_or_below_a_header_are_not_read():
    policy = ConnectionPolicy(max_request_bytes=1000)
    assert policy.request_size(1000) is Size.READ
    assert policy.request_size(1001) is Size.TOO_LARGE
    assert policy.request_size(0) is Size.READ  # an HTTP request without a body
    assert policy.request_size(7, smallest=frames.SMALLEST_REQUEST) is Size.TOO_SMALL
    assert policy.request_size(-1, smallest=frames.SMALLEST_REQUEST) is Size.TOO_SMALL


def test_request_memory_fits_within_the_budget_or_alone():
    policy = ConnectionPolicy(request_memory_bytes=100)
    assert policy.fits(held=0, size=500)  # larger than the whole budget: read alone
    assert policy.fits(held=60, size=40)
    assert not policy.fits(held=60, size=41)
    assert ConnectionPolicy(request_memory_bytes=-1).fits(held=10**12, size=10**9)  # -1: no bound


def test_a_zookeeper_outage_is_the_retriable_request_timed_out_with_the_connection_kept():
    failure = request_failure("create_topics", zk_errors.ZooKeeperUnavailableError("ConnectionLoss"))
    assert failure.error.code.name == "REQUEST_TIMED_OUT" and failure.error.retriable
    assert "ZooKeeper" in failure.error.message and "create_topics" in failure.error.message
    assert failure.keeps_connection and not failure.bug
    refused = request_failure("x", NotControllerError("not here"))
    assert refused.error.code.name == "NOT_CONTROLLER" and not refused.bug and not refused.keeps_connection
    bug = request_failure("x", KeyError("oops"))
    assert bug.error.code.name == "UNKNOWN_SERVER_ERROR" and bug.bug and not bug.keeps_connection
    # a ZooKeeper refusal other than an outage is no retriable condition
    assert request_failure("x", zk_errors.NoNodeError("/a")).bug


# -- the ZooKeeper adapter's own errors ----------------------------------------------------


@pytest.mark.parametrize("theirs, ours", [
    (kz.ConnectionLoss(), zk_errors.ZooKeeperUnavailableError),
    (kz.SessionExpiredError(), zk_errors.ZooKeeperUnavailableError),
    (kz.ConnectionClosedError("closed"), zk_errors.ZooKeeperUnavailableError),
    (kz.OperationTimeoutError(), zk_errors.ZooKeeperUnavailableError),
    (kz.NoNodeError(), zk_errors.NoNodeError),
    (kz.NodeExistsError(), zk_errors.NodeExistsError),
    (kz.BadVersionError(), zk_errors.BadVersionError),
    (kz.NotEmptyError(), zk_errors.NotEmptyError),
    (kz.RolledBackError(), zk_errors.RolledBackError),
    (kz.RuntimeInconsistency(), zk_errors.RolledBackError),
    (kz.NoAuthError(), zk_errors.ZooKeeperError),
])
def test_kazoo_exceptions_become_the_adapters_own(theirs, ours):
    mine = translate(theirs)
    assert type(mine) is ours and not isinstance(mine, kz.KazooException)
    assert type(theirs).__name__ in str(mine)  # the log still says what ZooKeeper said


def test_the_command_lines_short_lived_readers_tell_a_missing_znode_without_kazoo():
    assert is_no_node(kz.NoNodeError()) and not is_no_node(kz.ConnectionLoss()) and not is_no_node(KeyError("x"))


def test_the_session_raises_and_reports_only_the_adapters_errors():
    async def run() -> None:
        session = ZkSession("127.0.0.1:1")  # never started: only its result handling is used
        loop = asyncio.get_running_loop()
        lost = loop.create_future()
        lost.set_exception(kz.ConnectionLoss())
        with pytest.raises(zk_errors.ZooKeeperUnavailableError):
            await session._bounded(lost)
        session.request_timeout_s = 0.01  # ZooKeeper does not answer in time
        with pytest.raises(zk_errors.ZooKeeperUnavailableError, match="did not answer"):
            await session._bounded(loop.create_future())

        class Tx:  # a multi-op whose second op failed
            def commit_async(self):
                return "result"

        session.client.transaction = Tx  # type: ignore[method-assign]

        async def answered(_: object) -> list:
            return [kz.RolledBackError(), kz.BadVersionError(), kz.RuntimeInconsistency()]

        session._await = answered  # type: ignore[method-assign]
        results = await session.commit(lambda tx: None)
        assert [type(r) for r in results] == [zk_errors.RolledBackError, zk_errors.BadVersionError,
                                              zk_errors.RolledBackError]
        with pytest.raises(zk_errors.BadVersionError):
            await session.transaction(lambda tx: None)

    asyncio.run(run())


# -- the Kafka listener's answer to a whole request that failed --------------------------------


def _sample(struct: Struct, version: int) -> dict:
    """A request with one entry in every array and distinct key values."""
    out: dict = {}
    for f in struct.fields:
        if version not in f.versions:
            continue
        t = f.type
        if isinstance(t, list):
            elem = t[0]
            out[f.name] = [_sample(elem, version)] if isinstance(elem, Struct) else \
                (["entry"] if elem == "string" else [3])
        elif isinstance(t, Struct):
            out[f.name] = _sample(t, version)
        elif t == "string":
            out[f.name] = f"{f.name}-value"
        elif t in ("int8", "int16", "int32", "int64", "uint16"):
            out[f.name] = 3
        elif t == "uuid":
            out[f.name] = uuid.UUID(int=5)
        else:
            out[f.name] = f.default_value()
    return out


CASES = [(api, v) for api in apis.APIS.values() for v in range(api.min_version, api.max_version + 1)]


@pytest.mark.parametrize("api, version", CASES, ids=[f"{a.name}-v{v}" for a, v in CASES])
def test_every_error_answer_is_well_formed_for_its_version(api, version):
    answer = error_response(api, version, _sample(api.request, version), 7, "ZooKeeper does not answer")
    if answer is None:
        return  # no place for an error at this version: the connection is closed
    frame = frames.encode_response(api, version, 42, answer)
    correlation_id, decoded = frames.decode_response(api, version, memoryview(frame)[4:])
    assert correlation_id == 42 and 7 in _codes(decoded)


def _codes(value: object) -> set[int]:
    if isinstance(value, dict):
        found = {v for k, v in value.items() if k == "error_code" or k.endswith("_error_code")}
        for v in value.values():
            found |= _codes(v)
        return found
    if isinstance(value, list):
        return set().union(*(_codes(v) for v in value)) if value else set()
    return set()


def test_error_answers_name_each_entry_of_the_request():
    create = error_response(apis.CREATE_TOPICS, 7, {"topics": [{"name": "a"}, {"name": "b"}], "timeout_ms": 0,
                                                    "validate_only": False}, 7, "later")
    assert [(t["name"], t["error_code"], t["error_message"]) for t in create["topics"]] == \
        [("a", 7, "later"), ("b", 7, "later")]
    produce = error_response(apis.PRODUCE, 9, {"acks": -1, "timeout_ms": 1, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": b""}, {"index": 2, "records": b""}]}]}, 7, None)
    assert [(p["index"], p["error_code"]) for p in produce["responses"][0]["partition_responses"]] == [(0, 7), (2, 7)]
    assert produce["responses"][0]["name"] == "t"
    delete_v5 = error_response(apis.DELETE_TOPICS, 5, {"topic_names": ["x", "y"], "timeout_ms": 0}, 7, None)
    assert [(r["name"], r["error_code"]) for r in delete_v5["responses"]] == [("x", 7), ("y", 7)]
    configs = error_response(apis.ALTER_CONFIGS, 1, {"resources": [
        {"resource_type": 2, "resource_name": "t", "configs": []}], "validate_only": False}, 7, "later")
    assert configs["responses"] == [{"error_code": 7, "error_message": "later", "resource_type": 2,
                                     "resource_name": "t"}]
    coordinator = error_response(apis.FIND_COORDINATOR, 1, {"key": "g", "key_type": 0}, 7, "later")
    assert coordinator["error_code"] == 7


def _handlers(handler) -> KafkaHandlers:
    """The listener's dispatch (``handle``) around one handler."""
    h = KafkaHandlers.__new__(KafkaHandlers)
    h.table = {apis.CREATE_TOPICS.key: handler, apis.PRODUCE.key: handler}
    h.metrics = Metrics()
    h.clock = type("Clock", (), {"monotonic": staticmethod(lambda: 0.0)})()
    return h


def test_a_zookeeper_outage_is_answered_on_the_kafka_listener_and_the_connection_kept():
    async def outage(version: int, req: dict, conn: Connection) -> dict:
        raise zk_errors.ZooKeeperUnavailableError("ZooKeeper did not answer within 12 s")

    h = _handlers(outage)
    conn = Connection(external=False, peer="127.0.0.1:5000")
    body = {"topics": [{"name": "during", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                        "configs": []}], "timeout_ms": 0, "validate_only": False}
    answer = asyncio.run(h.handle(apis.CREATE_TOPICS, RequestHeader(19, 7, 1, "c"), body, conn))
    assert answer is not None and not conn.close_after
    [topic] = answer["topics"]
    assert topic["name"] == "during" and topic["error_code"] == 7 and "ZooKeeper" in topic["error_message"]
    assert h.metrics.value(REQUEST_ERRORS, error="REQUEST_TIMED_OUT") == 1
    # acks=0 has no answer to carry the error: the connection closes, as for any failed acks=0 produce
    conn = Connection(external=False, peer="127.0.0.1:5000")
    assert asyncio.run(h.handle(apis.PRODUCE, RequestHeader(0, 9, 2, "c"), {"acks": 0, "topic_data": []},
                                conn)) is None
    assert conn.close_after


def test_a_bug_still_closes_the_kafka_connection():
    async def bug(version: int, req: dict, conn: Connection) -> dict:
        raise KeyError("oops")

    conn = Connection(external=False, peer="127.0.0.1:5000")
    assert asyncio.run(_handlers(bug).handle(apis.CREATE_TOPICS, RequestHeader(19, 7, 1, "c"),
                                             {"topics": []}, conn)) is None
    assert conn.close_after
