"""The blocking producer's per-record futures (Kafka's FutureRecordMetadata): one small
object per record, resolved a batch at a time."""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

import pytest

from minikafka import errors
from minikafka.client.accumulator import ProducerBatch
from minikafka.client.types import TopicPartition
from minikafka.client.futures import Completion, RecordFuture, delivery_future, fail_batch, resolve_batch


def _batch(futs: list[RecordFuture]) -> ProducerBatch:
    b = ProducerBatch("t", 2, created_ms=0)
    for i, f in enumerate(futs):
        b.try_append((None, b"v%d" % i, (), 1000 + i), f, 20, 1 << 20)
    return b


def test_a_batch_resolves_each_record_with_its_own_offset_and_timestamp():
    c = Completion()
    futs = [RecordFuture(c, 1000 + i) for i in range(5)]
    assert not any(f.done() for f in futs)
    _batch(futs).complete(40)
    assert all(f.done() for f in futs)
    assert [(m.topic, m.partition, m.offset, m.timestamp) for m in (f.result(0) for f in futs)] == [
        ("t", 2, 40 + i, 1000 + i) for i in range(5)]
    assert futs[0].exception() is None and futs[0].get(0).offset == 40


def test_acks_0_gives_offset_minus_one_to_every_record():
    c = Completion()
    futs = [RecordFuture(c, 5) for _ in range(3)]
    resolve_batch(futs, "t", 0, -1)
    assert [f.result().offset for f in futs] == [-1, -1, -1]


def test_a_failed_batch_raises_its_error_from_every_record():
    c = Completion()
    futs = [RecordFuture(c, 5) for _ in range(3)]
    _batch(futs).fail(errors.NotEnoughReplicasError("only 1 in sync"))
    for f in futs:
        with pytest.raises(errors.NotEnoughReplicasError):
            f.result(0)
        assert isinstance(f.exception(0), errors.NotEnoughReplicasError)


def test_a_record_is_resolved_once_the_first_outcome_wins():
    c = Completion()
    f = RecordFuture(c, 5)
    resolve_batch([f], "t", 0, 7)
    fail_batch([f], errors.RequestTimedOutError("late"))
    assert f.result(0).offset == 7


def test_result_waits_for_another_thread_and_times_out_like_a_future():
    c = Completion()
    f = RecordFuture(c, 5)
    with pytest.raises(concurrent.futures.TimeoutError):
        f.result(timeout=0.05)
    threading.Timer(0.05, resolve_batch, args=([f], "t", 1, 3)).start()
    assert f.result(timeout=10).offset == 3


def test_callbacks_run_once_at_resolution_or_at_once_when_already_done():
    c = Completion()
    f, g = RecordFuture(c, 5), RecordFuture(c, 5)
    seen = []
    f.add_done_callback(lambda fut: seen.append(("f", fut.result().offset)))
    f.add_done_callback(lambda fut: 1 / 0)  # a failing callback does not stop the others
    f.add_done_callback(lambda fut: seen.append(("f2", fut.done())))
    assert seen == []
    resolve_batch([f, g], "t", 0, 10)
    assert seen == [("f", 10), ("f2", True)]
    g.add_done_callback(lambda fut: seen.append(("g", fut.result().offset)))
    assert seen[-1] == ("g", 11)
    assert not f.cancel() and not f.cancelled()


def test_many_waiting_threads_all_wake_when_their_batches_resolve():
    c = Completion()
    futs = [RecordFuture(c, 5) for _ in range(40)]
    results: list[int] = []
    lock = threading.Lock()

    def wait(f: RecordFuture) -> None:
        off = f.result(timeout=30).offset
        with lock:
            results.append(off)

    threads = [threading.Thread(target=wait, args=(f,)) for f in futs]
    for t in threads:
        t.start()
    time.sleep(0.02)
    resolve_batch(futs[:20], "t", 0, 0)
    resolve_batch(futs[20:], "t", 0, 100)
    for t in threads:
        t.join(30)
    assert sorted(results) == list(range(20)) + list(range(100, 120))


# ----- delivery callbacks (send(..., on_delivery=cb)) ---------------------------------------
def test_on_delivery_is_called_once_per_record_in_offset_order_with_its_metadata():
    c = Completion()
    seen = []

    def cb(metadata, error):
        seen.append((metadata.topic, metadata.partition, metadata.offset, metadata.timestamp, error))

    futs = [RecordFuture(c, 1000 + i, on_delivery=cb) for i in range(4)]
    plain = RecordFuture(c, 9)  # a record without a callback in the same batch
    _batch(futs + [plain]).complete(70)
    assert seen == [("t", 2, 70 + i, 1000 + i, None) for i in range(4)]
    resolve_batch(futs, "t", 2, 500)  # settled already: nothing is called again
    assert len(seen) == 4
    assert futs[1].offset == 71 and futs[1].topic_partition == TopicPartition("t", 2)


def test_on_delivery_gets_the_error_of_a_failed_batch_and_no_metadata():
    c = Completion()
    seen = []
    futs = [RecordFuture(c, 5, on_delivery=lambda m, e: seen.append((m, e))) for _ in range(3)]
    exc = errors.NotEnoughReplicasError("only 1 in sync")
    _batch(futs).fail(exc)
    assert seen == [(None, exc)] * 3
    assert futs[0].offset == -1


def test_on_delivery_runs_before_the_done_callbacks_and_an_exception_is_logged_not_raised(caplog):
    c = Completion()
    order = []

    def bad(metadata, error):
        order.append(("on_delivery", metadata.offset))
        raise ValueError("a bug in the application's callback")

    futs = [RecordFuture(c, 5, on_delivery=bad) for _ in range(2)]
    futs[0].add_done_callback(lambda f: order.append(("done", f.offset)))
    futs[0].add_done_callback(lambda f: 1 / 0)
    futs[0].add_done_callback(lambda f: order.append(("done2", f.offset)))
    with caplog.at_level("ERROR", logger="minikafka.client.futures"):
        resolve_batch(futs, "t", 0, 3)  # raises nothing
    assert order == [("on_delivery", 3), ("done", 3), ("done2", 3), ("on_delivery", 4)]
    logged = [r for r in caplog.records if r.name == "minikafka.client.futures"]
    assert len(logged) == 3, logged  # two on_delivery failures and the failing done callback
    assert any("ValueError" in (r.exc_text or "") for r in logged)
    assert any("ZeroDivisionError" in (r.exc_text or "") for r in logged)


def test_a_batch_stamps_its_records_with_one_settling_time():
    c = Completion()
    futs = [RecordFuture(c, 5) for _ in range(3)]
    assert futs[0].settled_at is None
    before = time.perf_counter()
    resolve_batch(futs, "t", 0, 0)
    after = time.perf_counter()
    assert before <= futs[0].settled_at <= after
    assert len({f.settled_at for f in futs}) == 1
    failed = [RecordFuture(c, 5)]
    fail_batch(failed, errors.RequestTimedOutError("late"))
    assert failed[0].settled_at >= after


def test_the_asyncio_delivery_future_calls_on_delivery_as_its_batch_settles(caplog):
    async def main():
        loop = asyncio.get_running_loop()
        seen = []

        def cb(metadata, error):
            seen.append((metadata.offset if metadata else None, error))
            if len(seen) == 2:
                raise RuntimeError("a bug in the application's callback")

        futs = [delivery_future(loop, cb) for _ in range(3)]
        b = ProducerBatch("t", 0, created_ms=0)
        for i, f in enumerate(futs[:2]):
            b.try_append((None, b"v", (), 1000 + i), f, 20, 1 << 20)
        with caplog.at_level("ERROR", logger="minikafka.client.futures"):
            b.complete(8)
        # called from the settling itself, before the loop runs anything
        assert seen == [(8, None), (9, None)]
        assert (await futs[1]).offset == 9
        exc = errors.RequestTimedOutError("late")
        futs[2].set_exception(exc)
        assert seen[-1] == (None, exc)
        with pytest.raises(errors.RequestTimedOutError):
            await futs[2]

    asyncio.run(main())
    assert [r for r in caplog.records if r.name == "minikafka.client.futures"]
