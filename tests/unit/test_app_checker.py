"""The public checker of an application's records (minikafka.faults.app_checker) and the
recorder that feeds it (minikafka.testing.recorder), without a cluster: each planted
fault (a lost, duplicated, reordered, unread, reread or aborted-but-seen record) is
reported with its offsets, and a clean history is ok."""
from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest

from minikafka.errors import ClientError
from minikafka.faults.app_checker import check_application
from minikafka.faults.history import History
from minikafka.testing import Recorder, controller, follower_of, group_coordinator, leader_of, parse_role
from minikafka.testing.roles import Resolved, resolve
from minikafka.zk import layout

T = "orders"


def _history(values: list[tuple[int, int, str]], process: str = "p") -> History:
    """Each (partition, offset, value) sent and acknowledged in turn."""
    h = History()
    t = 0.0
    for p, o, v in values:
        op = h.invoke_produce(process, (T, p), v, t)
        h.ok(op, t + 0.5, o)
        t += 1.0
    return h


def _final(values: list[tuple[int, int, str]]) -> dict:
    out: dict = {}
    for p, o, v in values:
        out.setdefault((T, p), {})[o] = v
    return out


def test_a_clean_history_is_ok():
    recs = [(0, 0, "a"), (0, 1, "b"), (1, 0, "c")]
    h = _history(recs)
    for p, o, v in recs:
        h.read("app", (T, p), o, v, 10.0)
    v = check_application(h, _final(recs), once={"app"})
    assert v.ok, str(v)
    assert v.line() == ("acked=3 read=3 lost=0 unread=0 duplicated=0 reread=0 reordered=0 aborted_seen=0 "
                        "vanished=0 ok=true")


def test_a_planted_loss_names_the_offset_and_what_the_log_has():
    h = _history([(0, 0, "a"), (0, 1, "b"), (0, 2, "c")])
    v = check_application(h, _final([(0, 0, "a"), (0, 1, "x")]))
    assert not v.ok
    assert v.lost == [((T, 0), 1, "b", "x"), ((T, 0), 2, "c", None)]
    assert "lost: acknowledged 'b' at orders-0@1 (the log has 'x')" in v.problems()


def test_a_planted_duplicate_names_every_copy():
    h = _history([(0, 0, "a"), (0, 1, "b")])
    v = check_application(h, _final([(0, 0, "a"), (0, 1, "b"), (1, 7, "a")]))
    assert v.duplicated == [("a", [((T, 0), 0), ((T, 1), 7)])]
    assert not v.ok
    assert check_application(h, _final([(0, 0, "a"), (0, 1, "b"), (1, 7, "a")]), duplicates_allowed=True).ok
    # the same value in two topics (a copier's input and output) is no duplicate
    assert check_application(h, {**_final([(0, 0, "a"), (0, 1, "b")]), ("copies", 0): {0: "a", 1: "b"}}).ok


def test_a_planted_reorder_is_reported():
    # "b" was sent after "a" was acknowledged, yet it sits below "a"
    h = _history([(0, 5, "a"), (0, 4, "b")])
    v = check_application(h, _final([(0, 4, "b"), (0, 5, "a")]))
    assert v.reordered == [((T, 0), "a", 5, "b", 4)]
    assert not v.ok and any(p.startswith("reordered: 'b' at orders-0@4") for p in v.problems())


def test_unread_and_reread_records_of_a_once_consumer():
    recs = [(0, 0, "a"), (0, 1, "b"), (0, 2, "c")]
    h = _history(recs)
    h.read("app", (T, 0), 0, "a", 10.0)
    h.read("app", (T, 0), 0, "a", 11.0)  # handed twice: processed twice
    h.read("app", (T, 0), 2, "c", 12.0)  # b never handed
    h.read("audit", (T, 0), 0, "a", 13.0)  # another reader, not "once": no verdict on it
    v = check_application(h, _final(recs), once={"app"})
    assert v.unread == [("app", (T, 0), 1, "b")]
    assert v.reread == [("app", (T, 0), 0, 2)]
    assert not v.ok


def test_a_read_committed_consumer_handed_an_aborted_record():
    h = History()
    op = h.invoke_produce("txn", (T, 0), "x", 0.0)
    h.fail(op, 1.0, "aborted transaction")
    h.read("rc", (T, 0), 0, "x", 2.0)
    h.read("ru", (T, 0), 0, "x", 2.0)  # read_uncommitted may see it
    v = check_application(h, {(T, 0): {}}, aborted={((T, 0), 0)}, read_committed={"rc"})
    assert v.aborted_seen == [("rc", (T, 0), 0, "x")]
    assert v.vanished == []


def test_a_consumed_record_that_vanished():
    h = _history([(0, 0, "a")])
    h.read("app", (T, 0), 1, "ghost", 3.0)
    v = check_application(h, _final([(0, 0, "a")]))
    assert v.vanished == [("app", (T, 0), 1, "ghost", None)]


# ---------------------------------------------------------------- the recorder's wrappers


class _Msg:
    """A confluent-kafka Message: methods, not attributes."""

    def __init__(self, topic, partition, offset, value):
        self._t, self._p, self._o, self._v = topic, partition, offset, value

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def value(self):
        return self._v

    def error(self):
        return None


class FakeConfluentProducer:
    """Delivers each record at the next offset of partition 0 when flushed."""

    __module__ = "confluent_kafka.fake"

    def __init__(self):
        self.pending, self.offset = [], 0

    def produce(self, topic, value=None, key=None, partition=-1, on_delivery=None):
        self.pending.append((topic, value, on_delivery))

    def flush(self, timeout=None):
        for topic, value, cb in self.pending:
            cb(None, _Msg(topic, 0, self.offset, value))
            self.offset += 1
        self.pending = []

    def begin_transaction(self):
        pass

    def commit_transaction(self, timeout=None):
        self.flush()

    def abort_transaction(self, timeout=None):
        self.flush()


class FakeConsumer:
    def __init__(self, messages):
        self.messages = list(messages)

    def poll(self, timeout=None):
        return self.messages.pop(0) if self.messages else None


def test_recorder_wraps_a_confluent_producer_and_consumer():
    rec = Recorder()
    p = rec.producer(FakeConfluentProducer())
    delivered = []
    p.produce(T, b"v0", on_delivery=lambda err, msg: delivered.append(msg.offset()))
    p.produce(T, b"v1")
    p.flush()
    assert delivered == [0]  # the application's own callback still runs
    c = rec.consumer(FakeConsumer([_Msg(T, 0, 0, b"v0"), _Msg(T, 0, 1, b"v1"), _Msg(T, 0, 1, b"v1")]), name="app")
    while c.poll(0.1) is not None:
        pass
    assert [(op.tp, op.offset, op.value) for op in rec.history.acknowledged()] == [((T, 0), 0, "v0"), ((T, 0), 1, "v1")]
    v = check_application(rec.history, _final([(0, 0, "v0"), (0, 1, "v1")]), once=rec.once)
    assert v.reread == [("app", (T, 0), 1, 2)]


def test_recorder_counts_transactional_records_at_commit_and_marks_aborted_ones():
    rec = Recorder()
    p = rec.producer(FakeConfluentProducer(), name="copier")
    p.begin_transaction()
    p.produce(T, b"kept")
    p.commit_transaction()
    p.begin_transaction()
    p.produce(T, b"dropped")
    p.abort_transaction()
    assert [(op.value, op.outcome.value) for op in rec.history.produces] == [("kept", "ok"), ("dropped", "fail")]
    assert rec.aborted == {((T, 0), 1)}
    c = rec.consumer(FakeConsumer([_Msg(T, 0, 0, b"kept"), _Msg(T, 0, 1, b"dropped")]), name="rc", read_committed=True)
    c.poll()
    c.poll()
    v = check_application(rec.history, _final([(0, 0, "kept")]), rec.aborted, rec.once, rec.read_committed)
    assert v.aborted_seen == [("rc", (T, 0), 1, "dropped")]


def test_recorder_wraps_a_future_producer():
    import concurrent.futures

    class Md:
        def __init__(self, p, o):
            self.partition, self.offset = p, o

    class FutureProducer:
        def __init__(self):
            self.futures = []

        def send(self, topic, value=None, key=None, partition=None):
            f = concurrent.futures.Future()
            self.futures.append(f)
            return f

    inner = FutureProducer()
    rec = Recorder()
    p = rec.producer(inner)
    p.send(T, b"a")
    p.send(T, b"b")
    inner.futures[0].set_result(Md(2, 40))
    inner.futures[1].set_exception(TimeoutError("no answer"))
    assert [(op.tp, op.offset, op.outcome.value) for op in rec.history.produces] == [((T, 2), 40, "ok"),
                                                                                       ((T, -1), None, "info")]


class _Record:
    """kafka-python's and aiokafka's ConsumerRecord: attributes, not methods."""

    def __init__(self, topic, partition, offset, value):
        self.topic, self.partition, self.offset, self.value = topic, partition, offset, value


class _Md:
    """RecordMetadata: where a record was written."""

    def __init__(self, partition, offset):
        self.partition, self.offset = partition, offset


class KafkaPythonFuture:
    """kafka-python's FutureRecordMetadata: add_callback(f, *args) calls f(*args, metadata),
    add_errback(f, *args) calls f(*args, exception); one added after it resolved runs at once."""

    def __init__(self):
        self.value = self.exception = None
        self.is_done = False
        self.callbacks, self.errbacks = [], []

    def add_callback(self, f, *args):
        f = (lambda v, f=f: f(*args, v)) if args else f
        if not self.is_done:
            self.callbacks.append(f)
        elif self.exception is None:
            f(self.value)
        return self

    def add_errback(self, f, *args):
        f = (lambda e, f=f: f(*args, e)) if args else f
        if not self.is_done:
            self.errbacks.append(f)
        elif self.exception is not None:
            f(self.exception)
        return self

    def success(self, value):
        self.value, self.is_done = value, True
        for f in self.callbacks:
            f(value)
        return self

    def failure(self, exc):
        self.exception, self.is_done = exc, True
        for f in self.errbacks:
            f(exc)
        return self


class FakeKafkaPythonProducer:
    """kafka-python's KafkaProducer: send() returns a FutureRecordMetadata; ``deliver`` resolves
    the pending ones at the next offsets of their partitions (commit and abort deliver first)."""

    __module__ = "kafka.producer.kafka"

    def __init__(self):
        self.pending, self.offsets, self.calls = [], {}, []

    def send(self, topic, value=None, key=None, headers=None, partition=None, timestamp_ms=None):
        fut = KafkaPythonFuture()
        self.pending.append((partition or 0, fut))
        return fut

    def deliver(self):
        for partition, fut in self.pending:
            offset = self.offsets.get(partition, 0)
            self.offsets[partition] = offset + 1
            fut.success(_Md(partition, offset))
        self.pending = []

    def begin_transaction(self):
        self.calls.append("begin")

    def commit_transaction(self):
        self.deliver()
        self.calls.append("commit")

    def abort_transaction(self):
        self.deliver()
        self.calls.append("abort")


def test_recorder_wraps_a_kafka_python_producer_through_its_callbacks_and_errbacks():
    inner = FakeKafkaPythonProducer()
    rec = Recorder()
    p = rec.producer(inner)
    mine = []
    fut = p.send(T, b"a", partition=1)
    assert fut is inner.pending[0][1]  # the application gets kafka-python's own future
    fut.add_callback(mine.append)  # and its own callbacks still run
    p.send(T, b"b", partition=1)
    inner.deliver()
    assert [md.offset for md in mine] == [0]
    failing = p.send(T, b"c")
    inner.pending.pop()[1].failure(TimeoutError("KafkaTimeoutError: Batch expired"))
    done = KafkaPythonFuture().success(_Md(2, 9))  # already resolved when send returns it
    inner.send = lambda *a, **kw: done
    p.send(T, b"d", partition=2)
    assert [(op.value, op.tp, op.offset, op.outcome.value) for op in rec.history.produces] == [
        ("a", (T, 1), 0, "ok"), ("b", (T, 1), 1, "ok"), ("c", (T, -1), None, "info"), ("d", (T, 2), 9, "ok")]
    assert failing.exception is not None


def test_recorder_counts_kafka_python_transactions_at_commit_and_abort():
    inner = FakeKafkaPythonProducer()
    rec = Recorder()
    p = rec.producer(inner, name="copier")
    p.begin_transaction()
    p.send(T, b"kept", partition=0)
    p.commit_transaction()
    p.begin_transaction()
    p.send(T, b"dropped", partition=0)
    p.abort_transaction()
    assert inner.calls == ["begin", "commit", "begin", "abort"]
    assert [(op.value, op.outcome.value) for op in rec.history.produces] == [("kept", "ok"), ("dropped", "fail")]
    assert rec.aborted == {((T, 0), 1)}


def test_recorder_reads_a_kafka_python_consumers_dict_shaped_poll():
    from collections import namedtuple

    TopicPartition = namedtuple("TopicPartition", "topic partition")

    class FakeKafkaPythonConsumer:
        __module__ = "kafka.consumer.group"

        def __init__(self, batches):
            self.batches = list(batches)

        def poll(self, timeout_ms=0, max_records=None):
            return self.batches.pop(0) if self.batches else {}

    rec = Recorder()
    h = _history([(0, 0, "a"), (0, 1, "b"), (1, 0, "c")])
    rec.history = h
    c = rec.consumer(FakeKafkaPythonConsumer([
        {TopicPartition(T, 0): [_Record(T, 0, 0, b"a"), _Record(T, 0, 1, b"b")], TopicPartition(T, 1): [_Record(T, 1, 0, b"c")]},
        {},
    ]), name="app")
    first = c.poll(timeout_ms=500)
    assert sum(len(v) for v in first.values()) == 3  # handed back unchanged
    assert c.poll(timeout_ms=500) == {}
    assert [(r.tp, r.offset, r.value) for r in rec.history.reads] == [((T, 0), 0, "a"), ((T, 0), 1, "b"), ((T, 1), 0, "c")]
    assert rec.unread("app") == 0
    assert check_application(rec.history, _final([(0, 0, "a"), (0, 1, "b"), (1, 0, "c")]), once=rec.once).ok


class FakeAioProducer:
    """aiokafka's AIOKafkaProducer: ``await send()`` returns an asyncio future that ``deliver``
    resolves; commit and abort deliver first and then wait for the answer (a turn of the
    loop); ``transaction()`` is aiokafka's TransactionContext, on the producer's own
    methods."""

    __module__ = "aiokafka.producer.producer"

    def __init__(self, fatal=False):
        self.pending, self.offset, self.calls = [], 0, []
        if fatal:
            self._txn_manager = type("TxnManager", (), {"is_fatal_error": lambda self: True})()

    async def send(self, topic, value=None, key=None, partition=None, timestamp_ms=None, headers=None):
        fut = asyncio.get_running_loop().create_future()
        self.pending.append((partition or 0, fut))
        return fut

    def deliver(self):
        for partition, fut in self.pending:
            fut.set_result(_Md(partition, self.offset))
            self.offset += 1
        self.pending = []

    async def begin_transaction(self):
        self.calls.append("begin")

    async def commit_transaction(self):
        self.deliver()
        await asyncio.sleep(0)
        self.calls.append("commit")

    async def abort_transaction(self):
        self.deliver()
        await asyncio.sleep(0)
        self.calls.append("abort")

    def transaction(self):
        producer = self

        class TransactionContext:  # aiokafka.producer.producer.TransactionContext
            async def __aenter__(self):
                await producer.begin_transaction()
                return self

            async def __aexit__(self, exc_type, exc, tb):
                if exc_type is not None:
                    if getattr(producer, "_txn_manager", None) is not None:
                        return
                    await producer.abort_transaction()
                else:
                    await producer.commit_transaction()
        return TransactionContext()


async def test_recorder_wraps_aiokafkas_send_and_send_and_wait():
    inner = FakeAioProducer()
    rec = Recorder()
    p = rec.producer(inner)
    fut = await p.send(T, b"a", partition=0)
    waited = asyncio.ensure_future(p.send_and_wait(T, b"b", partition=0))
    await asyncio.sleep(0)
    inner.deliver()
    assert (await fut).offset == 0 and (await waited).offset == 1
    await asyncio.sleep(0)  # the done callbacks
    assert [(op.value, op.tp, op.offset, op.outcome.value) for op in rec.history.produces] == [
        ("a", (T, 0), 0, "ok"), ("b", (T, 0), 1, "ok")]


async def test_recorder_sees_aiokafkas_transaction_context_commit_and_abort():
    inner = FakeAioProducer()
    rec = Recorder()
    p = rec.producer(inner, name="copier")
    async with p.transaction():
        await p.send(T, b"kept", partition=0)
    with pytest.raises(RuntimeError, match="gave up"):
        async with p.transaction():
            await p.send(T, b"dropped", partition=0)
            raise RuntimeError("the application gave up")
    assert inner.calls == ["begin", "commit", "begin", "abort"]
    # the aborted record is not counted as acknowledged: the final log's lack of it is no loss
    assert [(op.value, op.outcome.value) for op in rec.history.produces] == [("kept", "ok"), ("dropped", "fail")]
    assert rec.aborted == {((T, 0), 1)}
    c = rec.consumer(FakeConsumer([_Msg(T, 0, 1, b"dropped")]), name="rc", read_committed=True, once=False)
    c.poll()
    v = check_application(rec.history, _final([(0, 0, "kept")]), rec.aborted, rec.once, rec.read_committed)
    assert v.lost == [] and v.aborted_seen == [("rc", (T, 0), 1, "dropped")]


async def test_a_fatal_error_in_aiokafkas_transaction_context_leaves_its_records_unknown():
    inner = FakeAioProducer(fatal=True)
    rec = Recorder()
    p = rec.producer(inner)
    with pytest.raises(RuntimeError):
        async with p.transaction():
            await p.send(T, b"fenced", partition=0)
            raise RuntimeError("ProducerFenced")
    assert inner.calls == ["begin"]  # neither committed nor aborted, as aiokafka does after a fatal error
    assert [(op.value, op.outcome.value) for op in rec.history.produces] == [("fenced", "info")]


async def test_recorder_wraps_aiokafkas_getmany_getone_and_iteration():
    class FakeAioConsumer:
        __module__ = "aiokafka.consumer.consumer"

        def __init__(self, records):
            self.records = list(records)

        async def getmany(self, timeout_ms=0, max_records=None):
            batch, self.records = self.records[:2], self.records[2:]
            return {(T, 0): batch} if batch else {}

        async def getone(self):
            return self.records.pop(0)

        def __aiter__(self):
            return self

        async def __anext__(self):
            if not self.records:
                raise StopAsyncIteration
            return self.records.pop(0)

    rec = Recorder()
    rec.history = _history([(0, o, f"v{o}") for o in range(5)])
    c = rec.consumer(FakeAioConsumer([_Record(T, 0, o, f"v{o}".encode()) for o in range(5)]), name="app")
    assert [r.offset for r in (await c.getmany(timeout_ms=100))[(T, 0)]] == [0, 1]
    assert (await c.getone()).offset == 2
    assert [r.offset async for r in c] == [3, 4]
    assert [r.offset for r in rec.history.reads] == [0, 1, 2, 3, 4] and rec.unread("app") == 0


# ---------------------------------------------------------------- roles


def test_roles_have_a_text_form_that_parses_back():
    for role in (leader_of("t", 2), follower_of("t", 0, 1), controller(), group_coordinator("g"), parse_role("3")):
        assert parse_role(str(role)) == role
    with pytest.raises(ClientError, match="unknown fault target 'leader:t'"):
        parse_role("leader:t")


class FakeZk:
    def __init__(self, nodes):
        self.nodes = nodes

    def get(self, path):
        return (self.nodes[path], None) if path in self.nodes else None


def test_roles_resolve_from_zookeeper():
    zk = FakeZk({
        layout.topic_path("t"): layout.encode_assignment({0: [2, 3, 1]}, "AAAAAAAAAAAAAAAAAAAAAA"),
        layout.partition_state_path("t", 0): layout.LeaderIsr(3, 4, (3, 1), 2).encode(),
        layout.CONTROLLER: b'{"brokerid":1}', layout.CONTROLLER_EPOCH: b"7",
        layout.topic_path("__consumer_offsets"): layout.encode_assignment({p: [p % 3 + 1] for p in range(10)},
                                                                          "AAAAAAAAAAAAAAAAAAAAAA"),
    })
    for p in range(10):
        zk.nodes[layout.partition_state_path("__consumer_offsets", p)] = layout.LeaderIsr(p % 3 + 1, 0, (p % 3 + 1,), 1).encode()
    assert resolve(zk, leader_of("t", 0)) == Resolved(leader_of("t", 0), 3, 4, "leader epoch", ("t", 0))
    assert resolve(zk, follower_of("t", 0)).broker == 2 and resolve(zk, follower_of("t", 0, 1)).broker == 1
    assert resolve(zk, controller()).describe() == "broker 1 (the controller, controller epoch 7)"
    # "g".hashCode() is 103: partition 3 of 10, led by broker 1
    assert resolve(zk, group_coordinator("g")).broker == 1
    with pytest.raises(ClientError, match="__transaction_state does not exist"):
        resolve(zk, parse_role("txn:x"))
    with pytest.raises(ClientError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        resolve(zk, leader_of("t", 1))


def test_a_wait_for_full_isrs_that_times_out_names_the_partition_short_of_it():
    from minikafka.testing import WaitTimeout, Waits

    zk = FakeZk({layout.topic_path("t"): layout.encode_assignment({0: [1, 2, 3]}, "AAAAAAAAAAAAAAAAAAAAAA"),
                 layout.partition_state_path("t", 0): layout.LeaderIsr(3, 4, (3, 1), 2).encode()})
    zk.children = lambda path: ["t"]
    with pytest.raises(WaitTimeout, match=r"waiting for every replica of every topic in its ISR, under a leader "
                                          r"\(last seen: t-0: leader 3, leader epoch 4, ISR \[1, 3\], replicas \[1, 2, 3\]\)"):
        Waits(zk, "127.0.0.1:1").isr_full(timeout_s=0.1)
    zk.nodes[layout.partition_state_path("t", 0)] = layout.LeaderIsr(3, 5, (3, 1, 2), 3).encode()
    assert Waits(zk, "127.0.0.1:1").isr_full("t", timeout_s=0.1) is True

def test_the_plugin_is_registered_as_a_pytest11_entry_point():
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"minikafka": "minikafka.testing.plugin"}
