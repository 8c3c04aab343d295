"""The asyncio clients on a scripted Transport (minikafka/client/ports.py): no HTTP, no
threads, one in-memory broker whose leadership the test moves, answering with the msgpack
API's typed responses and real record batches.  Each request is validated and decoded as
the broker's listener does, and each answer read back as the clients' Connection reads it.

Guards the two client fixes the simulation found: a consumer whose partition's leader
epoch moved while no leader was known asks for metadata again (it stalled for good), and
a batch expired by delivery_timeout_ms makes its transaction abortable (it committed
without that batch's records), bumping the epoch at abort; an idempotent producer
continues under a new producer id.  And one the type checker found: a partition sought while
the consumer validated its position at another leader keeps the new position (poll() raised)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from minikafka import errors
from minikafka.client import AIOConsumer, AIOProducer
from minikafka.client.types import TopicPartition
from minikafka.protocol.records.batch import BatchHeader, encode_batch, read_header, split_batches, stamp
from minikafka.protocol.rpc import codec, http
from minikafka.protocol.rpc.types import (
    DECODE_REQUEST,
    ENCODE_RESPONSE,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    Broker,
    EndTxnRequest,
    EndTxnResponse,
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    PartitionMetadata,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    TopicMetadata,
)

BROKER = 1
ADDRESS = ("broker-1", 9092)
BOOTSTRAP = f"{ADDRESS[0]}:{ADDRESS[1]}"


# ---------------------------------------------------------------- the scripted transport
@dataclass
class PartitionLog:
    """One partition as its (only) broker holds it: who leads at which epoch, and the
    batches stamped with their base offset and the leader epoch that appended them."""

    leader: int = BROKER
    epoch: int = 0
    batches: list[tuple[BatchHeader, bytes]] = field(default_factory=list)
    leo: int = 0

    def append(self, records: bytes) -> int:
        base = self.leo
        for h, raw in split_batches(records):
            stamped = stamp(raw, self.leo, self.epoch)
            self.batches.append((read_header(stamped), stamped))
            self.leo += h.record_count
        return base

    def error(self, current_leader_epoch: int = -1) -> errors.KafkaError | None:
        if self.leader != BROKER:
            return errors.NotLeaderOrFollowerError(f"broker {BROKER} does not lead (leader {self.leader})")
        if 0 <= current_leader_epoch < self.epoch:
            return errors.FencedLeaderEpochError(f"epoch {current_leader_epoch} < {self.epoch}")
        if current_leader_epoch > self.epoch:
            return errors.UnknownLeaderEpochError(f"epoch {current_leader_epoch} > {self.epoch}")
        return None


class ScriptedBroker:
    """A Transport to one broker (id 1) holding every partition in memory.  ``before[api]``
    is called with each typed request before it is answered (the test's script: a leader
    stepping down, an election); ``requests`` keeps every typed request, ``written`` the
    header of every batch a produce appended."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.partitions = {(t, p): PartitionLog() for t, n in topics.items() for p in range(n)}
        self.before: dict[str, Callable[[Any], None]] = {}
        self.requests: list[tuple[str, Any]] = []
        self.written: list[tuple[tuple[str, int], BatchHeader]] = []
        self._pids: dict[str | None, tuple[int, int]] = {}
        self._next_pid = 1000
        self.closed = False

    def sent(self, api: str) -> list:
        return [req for name, req in self.requests if name == api]

    # -- Transport
    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        assert (host, port) == ADDRESS, f"{api} request to an unknown broker {host}:{port}"
        await asyncio.sleep(0)  # an answer is never there at once
        req = DECODE_REQUEST[api](codec.decode_request(api, codec.pack(body)))
        self.requests.append((api, req))
        if api in self.before:
            self.before[api](req)
        handler = getattr(self, f"_{api}", None)
        if handler is None:
            raise errors.UnsupportedVersionError(f"the scripted broker does not answer {api}")
        answer = ENCODE_RESPONSE[api](await handler(req))
        return http.decode_answer(codec.pack(answer), 200, f"{api} request to {host}:{port}")

    async def close(self) -> None:
        self.closed = True

    # -- answers
    async def _metadata(self, req: MetadataRequest) -> MetadataResponse:
        names = sorted({t for t, _ in self.partitions}) if req.topics is None else req.topics
        topics = []
        for name in names:
            parts = sorted((p, log) for (t, p), log in self.partitions.items() if t == name)
            if not parts:
                topics.append(TopicMetadata(name=name, partitions=[],
                                            error=errors.UnknownTopicOrPartitionError(f"no topic {name}")))
                continue
            topics.append(TopicMetadata(name=name, partitions=[PartitionMetadata(
                partition=p, leader=log.leader, leader_epoch=log.epoch, replicas=[BROKER],
                isr=[BROKER] if log.leader >= 0 else [], offline_replicas=[],
                error=None if log.leader >= 0 else errors.LeaderNotAvailableError("no leader elected yet"))
                for p, log in parts]))
        return MetadataResponse(cluster_id="scripted", controller_id=BROKER, controller_epoch=1,
                                brokers=[Broker(id=BROKER, host=ADDRESS[0], port=ADDRESS[1])], topics=topics)

    async def _find_coordinator(self, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
        return FindCoordinatorResponse(node_id=BROKER, host=ADDRESS[0], port=ADDRESS[1])

    async def _init_producer_id(self, req: InitProducerIdRequest) -> InitProducerIdResponse:
        known = self._pids.get(req.transactional_id) if req.transactional_id is not None else None
        if known is not None:
            pid, epoch = known[0], known[1] + 1  # the same transactional id: the epoch goes up
        else:
            self._next_pid += 1
            pid, epoch = self._next_pid, 0
        if req.transactional_id is not None:
            self._pids[req.transactional_id] = (pid, epoch)
        return InitProducerIdResponse(producer_id=pid, producer_epoch=epoch)

    async def _add_partitions_to_txn(self, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
        return AddPartitionsToTxnResponse(partitions=[
            AddPartitionsToTxnResult(topic=tp.topic, partition=tp.partition) for tp in req.partitions])

    async def _end_txn(self, req: EndTxnRequest) -> EndTxnResponse:
        return EndTxnResponse()

    async def _produce(self, req: ProduceRequest) -> ProduceResponse:
        out = []
        for pp in req.partitions:
            tp = (pp.topic, pp.partition)
            log = self.partitions.get(tp)
            exc = errors.UnknownTopicOrPartitionError(f"no partition {tp}") if log is None else log.error()
            base = -1
            if exc is None:
                base = log.append(pp.records)
                self.written.extend((tp, h) for h, _ in log.batches if h.base_offset >= base)
            out.append(ProducePartitionResponse(topic=pp.topic, partition=pp.partition, base_offset=base,
                                                log_append_time=-1, log_start_offset=0, error=exc))
        return ProduceResponse(partitions=out)

    def _read(self, fp: FetchPartition) -> FetchPartitionResponse:
        log = self.partitions.get((fp.topic, fp.partition))
        exc = errors.UnknownTopicOrPartitionError("no such partition") if log is None \
            else log.error(fp.current_leader_epoch)
        records = b""
        if exc is None and fp.fetch_offset > log.leo:
            exc = errors.OffsetOutOfRangeError(f"offset {fp.fetch_offset} > {log.leo}")
        if exc is None:
            records = b"".join(raw for h, raw in log.batches if h.last_offset >= fp.fetch_offset)
        leo = log.leo if log is not None else -1
        return FetchPartitionResponse(topic=fp.topic, partition=fp.partition, high_watermark=leo,
                                      log_start_offset=0, log_end_offset=leo, leader_epoch=log.epoch if log else -1,
                                      last_stable_offset=leo, records=records, error=exc)

    async def _fetch(self, req: FetchRequest) -> FetchResponse:
        parts = [self._read(fp) for fp in req.partitions]
        if not any(p.records or p.error for p in parts) and req.max_wait_ms > 0:
            await asyncio.sleep(req.max_wait_ms / 1000)  # a long poll that nothing ended early
            parts = [self._read(fp) for fp in req.partitions]
        return FetchResponse(partitions=parts)

    async def _list_offsets(self, req: ListOffsetsRequest) -> ListOffsetsResponse:
        out = []
        for lp in req.partitions:
            log = self.partitions[(lp.topic, lp.partition)]
            out.append(ListOffsetsPartitionResponse(
                topic=lp.topic, partition=lp.partition, offset=0 if lp.timestamp == -2 else log.leo, timestamp=-1,
                leader_epoch=log.epoch, error=log.error(lp.current_leader_epoch)))
        return ListOffsetsResponse(partitions=out)

    async def _offsets_for_leader_epoch(self, req: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        out = []
        for op in req.partitions:
            log = self.partitions[(op.topic, op.partition)]
            # where the asked epoch ends: the first offset a later epoch appended (else the log end)
            end = next((h.base_offset for h, _ in log.batches if h.leader_epoch > op.leader_epoch), log.leo)
            out.append(EpochEndOffset(topic=op.topic, partition=op.partition, leader_epoch=op.leader_epoch,
                                      end_offset=end, error=log.error(op.current_leader_epoch)))
        return OffsetsForLeaderEpochResponse(partitions=out)


def one_record(value: bytes) -> bytes:
    return encode_batch([(None, value, None, 1_700_000_000_000)])


def leader_steps_down_at_first_produce(broker: ScriptedBroker, tp: tuple[str, int]) -> Callable[[ProduceRequest], None]:
    """A produce hook: the first produce naming ``tp`` finds its leader gone (no leader
    elected, the epoch up by one): answered NOT_LEADER_OR_FOLLOWER, and Metadata shows
    leader -1 until the test elects one."""
    done = False

    def hook(req: ProduceRequest) -> None:
        nonlocal done
        if not done and any((p.topic, p.partition) == tp for p in req.partitions):
            done = True
            log = broker.partitions[tp]
            log.leader, log.epoch = -1, log.epoch + 1

    return hook


async def read_values(consumer: AIOConsumer, n: int, within_s: float = 1.5) -> list[bytes | None]:
    """Poll until ``n`` records came or ``within_s`` passed; their values."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    got: list[bytes | None] = []
    while len(got) < n and loop.time() < deadline:
        got += [r.value for r in await consumer.poll(timeout_ms=100)]
    return got


# ---------------------------------------------------------------- the consumer
async def test_consumer_reads_on_after_the_leader_epoch_moved_while_no_leader_was_known():
    """Guards the consumer's KIP-320 validation when a partition's leader epoch went up
    while Metadata showed no leader: the consumer must keep asking for metadata until a
    leader is known, validate its position there (OffsetsForLeaderEpoch) and read on.
    It used to skip the validation for want of a leader without asking again: it never
    fetched again and missed every later record."""
    broker = ScriptedBroker({"t": 1})
    log = broker.partitions[("t", 0)]
    log.append(one_record(b"r0"))
    consumer = AIOConsumer(BOOTSTRAP, auto_offset_reset="earliest", fetch_max_wait_ms=50, retry_backoff_ms=20,
                           request_timeout_ms=1000, enable_auto_commit=False, transport=broker)
    await consumer.start()
    try:
        consumer.assign([TopicPartition("t", 0)])
        assert await read_values(consumer, 1) == [b"r0"]
        assert log.batches[0][0].leader_epoch == 0

        # The leader steps down: epoch 1 without a leader for three metadata answers,
        # then broker 1 is elected at epoch 2 and a record is appended.
        log.leader, log.epoch = -1, 1
        leaderless = 0

        def election(req: MetadataRequest) -> None:
            nonlocal leaderless
            if log.leader < 0:
                leaderless += 1
                if leaderless > 3:
                    log.leader, log.epoch = BROKER, 2
                    log.append(one_record(b"r1"))

        broker.before["metadata"] = election
        assert await read_values(consumer, 1) == [b"r1"]
        assert leaderless == 4  # it asked for metadata again while no leader was known
        checks = broker.sent("offsets_for_leader_epoch")
        assert [(p.leader_epoch, p.current_leader_epoch) for r in checks for p in r.partitions] == [(0, 2)]
    finally:
        await consumer.close()
    assert broker.closed


class TwoLeaders(ScriptedBroker):
    """The scripted broker behind two addresses: partition 1 of every topic is led by
    broker 2 (``ADDRESS_2``), so a consumer of partitions 0 and 1 asks two leaders, one
    after the other."""

    def __init__(self, topics: dict[str, int]) -> None:
        super().__init__(topics)
        self.addresses: list[tuple[str, int]] = []

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        assert (host, port) in (ADDRESS, ADDRESS_2), f"{api} request to an unknown broker {host}:{port}"
        if api == "offsets_for_leader_epoch":
            self.addresses.append((host, port))
        return await super().call(*ADDRESS, api, body, timeout_s)

    async def _metadata(self, req: MetadataRequest) -> MetadataResponse:
        answer = await super()._metadata(req)
        answer.brokers.append(Broker(id=2, host=ADDRESS_2[0], port=ADDRESS_2[1]))
        for t in answer.topics:
            for pm in t.partitions:
                if pm.partition == 1 and pm.leader == BROKER:
                    pm.leader, pm.replicas, pm.isr = 2, [2], [2]
        return answer


ADDRESS_2 = ("broker-2", 9092)


def diverge(log: PartitionLog, keep: int, value: bytes) -> None:
    """An unclean election: the log keeps its first ``keep`` records and the new leader
    (epoch up by one) appends ``value`` after them."""
    log.batches = [(h, raw) for h, raw in log.batches if h.last_offset < keep]
    log.leo = keep
    log.epoch += 1
    log.append(one_record(value))


async def test_consumer_sought_while_validating_another_leader_keeps_its_new_position():
    """Guards the consumer's truncation check against a seek while it waits: it asks
    each new leader in turn where the epoch of its last records ends, and a partition
    found truncated at the first leader may be sought (here: seek_to_beginning) while
    the second one answers.  The seek stands, as in Kafka's consumer, which drops a
    validation whose position changed; the check used to compute the log line from the
    new position (None) and poll() raised TypeError."""
    broker = TwoLeaders({"t": 2})
    for p in (0, 1):
        log = broker.partitions[("t", p)]
        log.append(one_record(b"a%d" % p))
        log.append(one_record(b"b%d" % p))
    consumer = AIOConsumer(BOOTSTRAP, auto_offset_reset="earliest", fetch_max_wait_ms=50, retry_backoff_ms=20,
                           request_timeout_ms=1000, enable_auto_commit=False, transport=broker)
    await consumer.start()
    try:
        tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
        consumer.assign(tps)
        assert sorted(await read_values(consumer, 4)) == [b"a0", b"a1", b"b0", b"b1"]
        for p in (0, 1):
            diverge(broker.partitions[("t", p)], 1, b"c%d" % p)  # b0 and b1 are gone
        asked: list[TopicPartition] = []

        def seek_the_first_while_the_second_answers(req: OffsetsForLeaderEpochRequest) -> None:
            asked.extend(TopicPartition(p.topic, p.partition) for p in req.partitions)
            if len(asked) == 2:
                consumer.seek_to_beginning(asked[0])

        broker.before["offsets_for_leader_epoch"] = seek_the_first_while_the_second_answers
        got = await read_values(consumer, 3)
        assert sorted(broker.addresses) == [ADDRESS, ADDRESS_2]  # one leader, then the other
        first, second = asked
        # the sought partition reads its log from the start, the other from where it diverged
        assert sorted(got) == sorted([b"a%d" % first.partition, b"c%d" % first.partition,
                                      b"c%d" % second.partition])
    finally:
        await consumer.close()


# ---------------------------------------------------------------- the producer
async def test_transaction_whose_batch_expired_cannot_commit_and_its_abort_bumps_the_epoch():
    """Guards a transactional producer's delivery timeout: a batch expired by
    delivery_timeout_ms (its partition left without a leader) makes the transaction
    abortable, so commit_transaction() raises and no EndTxn commits it without that
    batch's records; abort_transaction() then succeeds and, the batch having taken
    sequence numbers, bumps the epoch (KIP-360: InitProducerId with the producer id and
    epoch); the next transaction commits under the new epoch, sequences from 0.  The
    expired batch used to fail its records only, and the transaction committed."""
    broker = ScriptedBroker({"t": 2})
    broker.before["produce"] = leader_steps_down_at_first_produce(broker, ("t", 1))
    producer = AIOProducer(BOOTSTRAP, transactional_id="tx-1", linger_ms=0, delivery_timeout_ms=300,
                           request_timeout_ms=100, retry_backoff_ms=20, transport=broker)
    await producer.start()
    try:
        await producer.init_transactions()
        pid, epoch = producer.producer_id, producer.producer_epoch
        producer.begin_transaction()
        kept = await producer.send("t", b"kept", partition=0)
        lost = await producer.send("t", b"lost", partition=1)
        with pytest.raises(errors.KafkaError):
            await producer.commit_transaction()
        assert not [r for r in broker.sent("end_txn") if r.committed]
        assert producer.transaction_state == "ABORTABLE_ERROR"
        assert (await kept).offset == 0
        with pytest.raises(errors.NotLeaderOrFollowerError):
            await lost
        assert broker.partitions[("t", 1)].leo == 0

        await producer.abort_transaction()
        assert [(r.committed, r.producer_epoch) for r in broker.sent("end_txn")] == [(False, epoch)]
        bump = broker.sent("init_producer_id")[-1]
        assert (bump.transactional_id, bump.producer_id, bump.producer_epoch) == ("tx-1", pid, epoch)
        assert (producer.producer_id, producer.producer_epoch) == (pid, epoch + 1)

        producer.begin_transaction()
        again = await producer.send("t", b"again", partition=0)
        await producer.commit_transaction()
        assert (await again).offset == 1
        assert [(r.committed, r.producer_epoch) for r in broker.sent("end_txn")][-1] == (True, epoch + 1)
        tp, h = broker.written[-1]
        assert (tp, h.producer_id, h.producer_epoch, h.base_sequence) == (("t", 0), pid, epoch + 1, 0)
    finally:
        await producer.close()


async def test_idempotent_producer_continues_under_a_new_producer_id_after_a_batch_expired():
    """Guards an idempotent (non-transactional) producer's delivery timeout: a batch that
    took sequence numbers and expired leaves a gap its partition's leader would refuse
    every later batch for, so the producer takes a new producer id (a second
    InitProducerId) and a later record goes under it from sequence 0 and is
    acknowledged."""
    broker = ScriptedBroker({"t": 1})
    broker.before["produce"] = leader_steps_down_at_first_produce(broker, ("t", 0))
    producer = AIOProducer(BOOTSTRAP, enable_idempotence=True, linger_ms=0, delivery_timeout_ms=300,
                           request_timeout_ms=100, retry_backoff_ms=20, transport=broker)
    await producer.start()
    try:
        first_pid = producer.producer_id
        assert first_pid >= 0
        lost = await producer.send("t", b"lost", partition=0)
        with pytest.raises(errors.NotLeaderOrFollowerError):
            await lost

        log = broker.partitions[("t", 0)]
        log.leader, log.epoch = BROKER, log.epoch + 1  # broker 1 is elected again
        later = await producer.send("t", b"later", partition=0)
        assert (await asyncio.wait_for(later, 2)).offset == 0
        assert len(broker.sent("init_producer_id")) == 2
        assert producer.producer_id not in (-1, first_pid)
        ((tp, h),) = broker.written
        assert (tp, h.producer_id, h.base_sequence) == (("t", 0), producer.producer_id, 0)
    finally:
        await producer.close()
