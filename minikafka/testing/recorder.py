"""Record what an application's producers were acknowledged and what its consumers were
handed, then check it: lost, duplicated, reordered and aborted-but-seen records, with
their offsets (:func:`minikafka.faults.app_checker.check_application`).

Wrap each client; the wrapper behaves as the client (every other method and attribute
is the client's own) and records on the way::

    rec = Recorder()
    producer = rec.producer(confluent_kafka.Producer({...}))      # or kafka-python, aiokafka, minikafka
    consumer = rec.consumer(confluent_kafka.Consumer({...}), name="app")
    ...                                                           # the application runs, faults happen
    report = rec.check(cluster)                                   # reads the final logs
    assert report.ok, report

Producers: confluent-kafka's ``produce`` (the delivery report), kafka-python's and
minikafka's ``send`` (the future), aiokafka's ``send`` / ``send_and_wait``; a
transactional producer's records count as acknowledged once ``commit_transaction``
returned, and as aborted after ``abort_transaction`` (aiokafka's ``async with
producer.transaction():`` too: it begins, commits and aborts through the wrapper).  Consumers: ``poll``,
``consume`` (confluent-kafka), ``getone`` / ``getmany`` (aiokafka) and iteration.  A
consumer is ``once`` by default: it is expected to be handed every acknowledged record
of the topics it reads exactly once (``unread`` and ``reread`` otherwise); give
``once=False`` for readers that may read again.  Values are compared as text (UTF-8,
undecodable bytes escaped), so every record the test writes should have a value of its
own.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Iterable

from ..faults.app_checker import AppVerdict, check_application
from ..faults.history import History, Produce

TP = tuple[str, int]


def text(value: Any) -> str:
    """A record value as the checker compares it."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace")
    return str(value)


class _Txn:
    def __init__(self) -> None:
        self.status = "open"  # open, committed, aborted
        self.ops: list[Produce] = []


class Recorder:
    """A thread-safe history of one test's producers and consumers (see the module doc)."""

    def __init__(self) -> None:
        self.history = History()
        self.lock = threading.RLock()
        self.aborted: set[tuple[TP, int]] = set()
        self.once: set[str] = set()
        self.read_committed: set[str] = set()
        self.topics: dict[str, set[str]] = {}
        self._txn: dict[str, _Txn] = {}  # producer name -> its open transaction
        self._op_txn: dict[int, _Txn] = {}
        self._acks: dict[int, tuple[int, int]] = {}  # id(op) -> (partition, offset) awaiting the commit

    # -- the records --------------------------------------------------------------------------
    def sent(self, topic: str, value: Any, partition: int | None = None, producer: str = "producer") -> Produce:
        """A producer sent ``value`` to ``topic``; complete it with :meth:`acked` or :meth:`failed`."""
        with self.lock:
            op = self.history.invoke_produce(producer, (topic, -1 if partition is None else int(partition)),
                                             text(value), time.monotonic())
            txn = self._txn.get(producer)
            if txn is not None:
                txn.ops.append(op)
                self._op_txn[id(op)] = txn
            return op

    def acked(self, op: Produce, partition: int, offset: int) -> None:
        """``op`` was acknowledged at ``partition``/``offset``."""
        with self.lock:
            if op.outcome is not None:
                return
            op.tp = (op.tp[0], int(partition))
            txn = self._op_txn.get(id(op))
            if txn is None or txn.status == "committed":
                self.history.ok(op, time.monotonic(), int(offset))
            elif txn.status == "aborted":
                self.aborted.add((op.tp, int(offset)))
                op.offset = int(offset)
                self.history.fail(op, time.monotonic(), "aborted transaction")
            else:
                self._acks[id(op)] = (int(partition), int(offset))

    def failed(self, op: Produce, error: Any) -> None:
        """``op`` was not acknowledged (it may or may not have been written)."""
        with self.lock:
            if op.outcome is None:
                self.history.info(op, time.monotonic(), str(error))

    def consumed(self, topic: str, partition: int, offset: int, value: Any, consumer: str = "consumer") -> None:
        """A consumer was handed ``value`` at ``topic``-``partition``@``offset``."""
        with self.lock:
            self.history.read(consumer, (topic, int(partition)), int(offset), text(value), time.monotonic())

    def record(self, messages: Any, consumer: str = "consumer") -> Any:
        """Record what a consumer call returned (a message, a list, a dict of lists, None,
        from any of the four clients); returns it unchanged."""
        for m in _messages(messages):
            if callable(getattr(m, "error", None)) and m.error() is not None:
                continue  # confluent-kafka: an error event, not a record
            get = (lambda name: getattr(m, name)()) if callable(getattr(m, "topic", None)) else (lambda name: getattr(m, name))
            self.consumed(get("topic"), get("partition"), get("offset"), get("value"), consumer)
        return messages

    def unread(self, consumer: str = "consumer") -> int:
        """How many acknowledged records of the topics ``consumer`` reads it has not been
        handed yet (0: it caught up with every acknowledgement so far); for a test's loop."""
        with self.lock:
            seen = {(r.tp, r.offset) for r in self.history.reads if r.process == consumer}
            topics = self.topics.get(consumer) or {r.tp[0] for r in self.history.reads if r.process == consumer}
            if not topics:
                return self.history.acked
            return sum(1 for op in self.history.acknowledged()
                       if op.tp[0] in topics and (op.tp, op.offset) not in seen)

    # -- transactions ------------------------------------------------------------------------
    def begin(self, producer: str) -> None:
        """``producer`` began a transaction."""
        with self.lock:
            self._txn[producer] = _Txn()

    def end(self, producer: str, committed: bool | None) -> None:
        """``producer``'s transaction was committed (True), aborted (False) or ended
        without an answer (None: its records count as neither)."""
        with self.lock:
            txn = self._txn.pop(producer, None)
            if txn is None:
                return
            txn.status = {True: "committed", False: "aborted", None: "unknown"}[committed]
            for op in txn.ops:
                ack = self._acks.pop(id(op), None)
                if op.outcome is not None:
                    continue
                if committed and ack is not None:
                    op.tp = (op.tp[0], ack[0])
                    self.history.ok(op, time.monotonic(), ack[1])
                elif committed is False:
                    if ack is not None:
                        op.tp = (op.tp[0], ack[0])
                        op.offset = ack[1]
                        self.aborted.add((op.tp, ack[1]))
                    self.history.fail(op, time.monotonic(), "aborted transaction")
                elif committed is None:
                    self.history.info(op, time.monotonic(), "the transaction's end is not known")

    # -- wrappers ---------------------------------------------------------------------------
    def producer(self, client: Any, name: str = "producer") -> Any:
        """``client`` (confluent-kafka, kafka-python, aiokafka or minikafka producer),
        recording each record it sends and how it ends."""
        module = type(client).__module__
        if module.startswith(("confluent_kafka", "cimpl")):
            return _ConfluentProducer(self, client, name)
        if module.startswith("aiokafka"):
            return _AioProducer(self, client, name)
        return _FutureProducer(self, client, name)  # kafka-python and minikafka: send() returns a future

    def consumer(self, client: Any, name: str = "consumer", once: bool = True, read_committed: bool = False,
                 topics: Iterable[str] | None = None) -> Any:
        """``client`` (any of the four clients' consumers), recording every record it hands
        out as read by ``name``.  ``once``: it must be handed every acknowledged record of
        its topics (``topics``, or the ones it reads) exactly once; ``read_committed``: it
        reads with isolation.level=read_committed (it must never see an aborted record)."""
        with self.lock:
            if once:
                self.once.add(name)
            if read_committed:
                self.read_committed.add(name)
            if topics is not None:
                self.topics[name] = set(topics)
        if type(client).__module__.startswith("aiokafka"):
            return _AioConsumer(self, client, name)
        return _Consumer(self, client, name)

    # -- the check --------------------------------------------------------------------------
    def check(self, cluster: Any, topics: Iterable[str] | None = None, duplicates_allowed: bool = False,
              timeout_s: float = 60.0) -> AppVerdict:
        """Read the final logs of ``topics`` (default: every topic a recorded producer
        wrote) with read_committed from ``cluster`` (a :class:`LocalCluster` or a
        msgpack/HTTP bootstrap string) and check the history against them."""
        bootstrap = cluster if isinstance(cluster, str) else cluster.bootstrap
        with self.lock:
            names = sorted(set(topics) if topics is not None else {op.tp[0] for op in self.history.produces})
        final = read_final_logs(bootstrap, names, timeout_s)
        with self.lock:
            return check_application(self.history, final, set(self.aborted), set(self.once), set(self.read_committed),
                                     duplicates_allowed, {k: set(v) for k, v in self.topics.items()} or None)


def read_final_logs(bootstrap: str, topics: list[str], timeout_s: float = 60.0) -> dict[TP, dict[int, str]]:
    """Every record of ``topics`` below the last stable offset, as read_committed reads
    them: ``(topic, partition)`` -> offset -> value (as :func:`text`)."""
    from ..client.read_to_end import read_to_end
    from ..client.sync import Admin
    from ..client.types import TopicPartition

    if not topics:
        return {}
    with Admin(bootstrap) as admin:
        tps = [TopicPartition(d.name, p.partition) for d in admin.describe_topics(topics) for p in d.partitions]
    return read_to_end(bootstrap, tps, timeout_s, "read_committed", decode=text)


def _messages(result: Any) -> list:
    if result is None:
        return []
    if isinstance(result, dict):
        return [m for batch in result.values() for m in batch]
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]


class _Wrapper:
    def __init__(self, rec: Recorder, client: Any, name: str) -> None:
        self._rec = rec
        self._client = client
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._client, attr)

    def __enter__(self) -> Any:
        self._client.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._client.__exit__(*exc)


class _TxnMixin(_Wrapper):
    def begin_transaction(self, *args: Any, **kwargs: Any) -> Any:
        out = self._client.begin_transaction(*args, **kwargs)
        self._rec.begin(self._name)
        return out

    def commit_transaction(self, *args: Any, **kwargs: Any) -> Any:
        try:
            out = self._client.commit_transaction(*args, **kwargs)
        except BaseException:
            self._rec.end(self._name, None)
            raise
        self._rec.end(self._name, True)
        return out

    def abort_transaction(self, *args: Any, **kwargs: Any) -> Any:
        out = self._client.abort_transaction(*args, **kwargs)
        self._rec.end(self._name, False)
        return out


class _ConfluentProducer(_TxnMixin):
    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1, on_delivery: Any = None,
                callback: Any = None, **kwargs: Any) -> Any:
        op = self._rec.sent(topic, value, partition if partition >= 0 else None, self._name)
        user = on_delivery or callback

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                self._rec.failed(op, err)
            else:
                self._rec.acked(op, msg.partition(), msg.offset())
            if user is not None:
                user(err, msg)
        try:
            return self._client.produce(topic, value=value, key=key, partition=partition, on_delivery=delivered,
                                        **kwargs)
        except BaseException as exc:
            self._rec.failed(op, exc)
            raise


class _FutureProducer(_TxnMixin):
    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None, **kwargs: Any) -> Any:
        op = self._rec.sent(topic, value, partition, self._name)
        try:
            fut = self._client.send(topic, value=value, key=key, partition=partition, **kwargs)
        except BaseException as exc:
            self._rec.failed(op, exc)
            raise
        if hasattr(fut, "add_callback"):  # kafka-python
            fut.add_callback(lambda md: self._rec.acked(op, md.partition, md.offset))
            fut.add_errback(lambda exc: self._rec.failed(op, exc))
        else:  # minikafka: a concurrent.futures-like future
            def done(f: Any) -> None:
                exc = f.exception()
                if exc is not None:
                    self._rec.failed(op, exc)
                else:
                    md = f.result()
                    self._rec.acked(op, md.partition, md.offset)
            fut.add_done_callback(done)
        return fut


class _AioProducer(_Wrapper):
    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   **kwargs: Any) -> Any:
        op = self._rec.sent(topic, value, partition, self._name)
        try:
            fut = await self._client.send(topic, value=value, key=key, partition=partition, **kwargs)
        except BaseException as exc:
            self._rec.failed(op, exc)
            raise

        def done(f: Any) -> None:
            if f.cancelled() or f.exception() is not None:
                self._rec.failed(op, "cancelled" if f.cancelled() else f.exception())
            else:
                self._rec.acked(op, f.result().partition, f.result().offset)
        fut.add_done_callback(done)
        return fut

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                            **kwargs: Any) -> Any:
        fut = await self.send(topic, value=value, key=key, partition=partition, **kwargs)
        return await fut

    async def begin_transaction(self) -> None:
        await self._client.begin_transaction()
        self._rec.begin(self._name)

    async def commit_transaction(self) -> None:
        try:
            await self._client.commit_transaction()
        except BaseException:
            self._rec.end(self._name, None)
            raise
        self._rec.end(self._name, True)

    async def abort_transaction(self) -> None:
        await self._client.abort_transaction()
        self._rec.end(self._name, False)

    def transaction(self) -> "_AioTransaction":
        """aiokafka's ``async with producer.transaction():`` through this wrapper's own
        begin, commit and abort, so that the records sent inside count at the commit and
        as aborted after an abort (the client's own context would bypass the recorder)."""
        return _AioTransaction(self)

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._client.__aexit__(*exc)


class _AioTransaction:
    """aiokafka's TransactionContext on a recorded producer: begin on entry; on exit
    commit, or abort when the block raised (neither after a fatal error such as
    ProducerFenced: the transaction's end is then not known, as aiokafka leaves it)."""

    def __init__(self, producer: _AioProducer) -> None:
        self._producer = producer

    async def __aenter__(self) -> "_AioTransaction":
        await self._producer.begin_transaction()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        p = self._producer
        if exc_type is None:
            await p.commit_transaction()
            return
        manager = getattr(p._client, "_txn_manager", None)
        if manager is not None and manager.is_fatal_error():
            p._rec.end(p._name, None)
            return
        await p.abort_transaction()


class _Consumer(_Wrapper):
    def poll(self, *args: Any, **kwargs: Any) -> Any:
        return self._rec.record(self._client.poll(*args, **kwargs), self._name)

    def consume(self, *args: Any, **kwargs: Any) -> Any:
        return self._rec.record(self._client.consume(*args, **kwargs), self._name)

    def __iter__(self) -> Any:
        for m in self._client:
            self._rec.record(m, self._name)
            yield m

    def __next__(self) -> Any:
        return self._rec.record(next(self._client), self._name)


class _AioConsumer(_Wrapper):
    async def getone(self, *args: Any, **kwargs: Any) -> Any:
        return self._rec.record(await self._client.getone(*args, **kwargs), self._name)

    async def getmany(self, *args: Any, **kwargs: Any) -> Any:
        return self._rec.record(await self._client.getmany(*args, **kwargs), self._name)

    def __aiter__(self) -> Any:
        return self._iterate()

    async def _iterate(self) -> Any:
        async for m in self._client:
            self._rec.record(m, self._name)
            yield m

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._client.__aexit__(*exc)
