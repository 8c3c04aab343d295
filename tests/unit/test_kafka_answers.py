"""The Kafka listener's answer queue: a produce that only waits lets the next request in,
and the answers still leave in the order of the requests."""
from __future__ import annotations

import asyncio

from minikafka.broker.kafka.connection import Connection
from minikafka.broker.kafka.server import _Answers
from minikafka.broker.purgatory import parking
from minikafka.protocol.kafka import apis, frames
from minikafka.protocol.kafka.frames import RequestHeader


class _Writer:
    def __init__(self) -> None:
        self.frames: list[int] = []  # correlation ids, in the order written
        self.closed = False

    def write(self, data: bytes) -> None:
        self.frames.append(int.from_bytes(data[4:8], "big"))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def _header(api: apis.KafkaApi, corr: int) -> RequestHeader:
    return RequestHeader(api.key, 7 if api is apis.PRODUCE else 9, corr, "t")


def _produce_answer(offset: int) -> dict:
    return {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": offset, "log_append_time_ms": -1, "log_start_offset": 0}]}]}


async def test_a_waiting_produce_lets_the_next_requests_in_and_answers_leave_in_order():
    writer = _Writer()
    answers = _Answers(writer, Connection(external=False, peer="x"))  # type: ignore[arg-type]
    commits = {1: asyncio.Event(), 2: asyncio.Event()}
    appended: list[int] = []

    async def produce(corr: int) -> dict:
        appended.append(corr)
        parking()  # appended: only the commit is left
        await commits[corr].wait()
        return _produce_answer(corr)

    await answers.run_until_parked(apis.PRODUCE, _header(apis.PRODUCE, 1), produce(1))
    await answers.run_until_parked(apis.PRODUCE, _header(apis.PRODUCE, 2), produce(2))
    answers.add(apis.METADATA, _header(apis.METADATA, 3), {"brokers": [], "cluster_id": None, "controller_id": 1,
                                                           "topics": []})
    assert appended == [1, 2], "the second produce ran while the first waited"
    assert writer.frames == [], "nothing leaves before the first answer"
    commits[2].set()
    await asyncio.sleep(0.01)
    assert writer.frames == [], "the second answer waits for the first"
    commits[1].set()
    await answers.written()
    assert writer.frames == [1, 2, 3]


async def test_a_produce_that_does_not_wait_is_answered_before_the_next_request():
    writer = _Writer()
    answers = _Answers(writer, Connection(external=False, peer="x"))  # type: ignore[arg-type]

    async def produce() -> dict:
        return _produce_answer(0)

    await answers.run_until_parked(apis.PRODUCE, _header(apis.PRODUCE, 1), produce())
    await asyncio.sleep(0)
    assert writer.frames == [1]


async def test_closing_the_connection_cancels_the_waiting_produce_requests():
    writer = _Writer()
    answers = _Answers(writer, Connection(external=False, peer="x"))  # type: ignore[arg-type]
    cancelled = asyncio.Event()

    async def produce() -> dict:
        parking()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return _produce_answer(0)

    await answers.run_until_parked(apis.PRODUCE, _header(apis.PRODUCE, 1), produce())
    await answers.close()
    assert cancelled.is_set() and writer.frames == []


def test_frames_are_encoded_as_kafka_answers():
    data = frames.encode_response(apis.PRODUCE, 7, 42, _produce_answer(5))
    corr, body = frames.decode_response(apis.PRODUCE, 7, data[4:])
    assert corr == 42 and body["responses"][0]["partition_responses"][0]["base_offset"] == 5
