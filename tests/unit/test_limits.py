"""The pure parts of the broker's client limits: the decompression cap (gzip bombs), the
log's repeat filter, max.connections from the open-file limit, connection counting and
the request-memory budget."""
from __future__ import annotations

import asyncio
import logging

import cramjam
import pytest

from minikafka.broker.limits import FD_RESERVE, ConnectionLimits, RequestMemory, effective_max_connections
from minikafka.broker.log_limit import RepeatFilter
from minikafka.broker.metrics import Metrics
from minikafka.config import BrokerConfig
from minikafka.errors import CorruptMessageError, MessageTooLargeError
from minikafka.metric_names import CONNECTIONS_REFUSED, REQUEST_BYTES_IN_FLIGHT
from minikafka.protocol.records.batch import encode_batch, validate_records
from minikafka.protocol.records.compression import COMPRESSION_CODECS, compress, decompress


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_section_expanding_past_the_cap_is_refused_naming_it(codec):
    code = COMPRESSION_CODECS[codec]
    bomb = compress(code, b"\0" * (4 << 20))
    with pytest.raises(MessageTooLargeError, match="more than 1048576 bytes"):
        decompress(code, bomb, 1 << 20)
    assert decompress(code, bomb, 4 << 20) == b"\0" * (4 << 20)  # exactly at the cap: fine
    assert decompress(code, bomb) == b"\0" * (4 << 20)  # no cap: as before


def test_capped_gzip_reads_concatenated_members_and_refuses_garbage():
    two = bytes(cramjam.gzip.compress(b"ab")) + bytes(cramjam.gzip.compress(b"cd"))
    assert decompress(1, two, 100) == b"abcd"
    with pytest.raises(CorruptMessageError):
        decompress(1, b"\x1f\x8bnot gzip at all", 100)
    with pytest.raises(CorruptMessageError):
        decompress(1, bytes(cramjam.gzip.compress(b"x" * 1000))[:-12], 10_000)


def test_the_leaders_validation_refuses_a_gzip_bomb_under_message_max_bytes():
    value = b"\0" * (8 << 20)
    batch = encode_batch([(None, value, None, 0)], compression="gzip")
    assert len(batch) < 1048588  # under message.max.bytes
    with pytest.raises(MessageTooLargeError, match="2097152"):
        validate_records(batch, 0, 2 << 20)
    validate_records(batch, 0, 16 << 20)


def test_repeat_filter_lets_one_line_per_interval_and_counts_the_rest():
    now = [0.0]
    f = RepeatFilter(10, clock=lambda: now[0])

    def rec(msg: str, *args) -> logging.LogRecord:
        return logging.LogRecord("minikafka.x", logging.WARNING, __file__, 1, msg, args, None)

    assert f.filter(rec("closing connection from %s", "a"))
    assert not any(f.filter(rec("closing connection from %s", str(i))) for i in range(1000))
    assert f.filter(rec("another line"))  # another key is not held back
    now[0] = 10.5
    r = rec("closing connection from %s", "b")
    assert f.filter(r)
    assert "suppressed 1000 similar" in r.getMessage() and r.getMessage().startswith("closing connection from b")


def test_repeat_filter_keeps_distinct_info_lines_and_every_timeline_event():
    f = RepeatFilter(10, clock=lambda: 0.0)

    def rec(name: str, level: int, msg: str, *args) -> logging.LogRecord:
        return logging.LogRecord(name, level, __file__, 1, msg, args, None)

    # the timeline logs every event with one template: each is news, none is held back
    assert all(f.filter(rec("minikafka.broker.timeline", logging.INFO, "[%s] %s", "group_join", f"member {i}"))
               for i in range(50))
    assert all(f.filter(rec("minikafka.broker.timeline", logging.INFO, "[%s] %s", "same", "same")) for _ in range(5))
    # below WARNING only identical lines count as repeats
    assert f.filter(rec("minikafka.x", logging.INFO, "follows broker %d", 1))
    assert f.filter(rec("minikafka.x", logging.INFO, "follows broker %d", 2))
    assert not f.filter(rec("minikafka.x", logging.INFO, "follows broker %d", 2))


def test_max_connections_leaves_the_descriptor_reserve():
    assert effective_max_connections(None, 20000) == 20000 - FD_RESERVE
    assert effective_max_connections(50000, 20000) == 20000 - FD_RESERVE
    assert effective_max_connections(100, 20000) == 100
    assert effective_max_connections(None, None) == 2147483647
    assert effective_max_connections(None, 10) == 1


def test_connection_limits_total_and_per_ip():
    metrics = Metrics()
    limits = ConnectionLimits(BrokerConfig(1, "zk", settings={"max.connections": "3", "max.connections.per.ip": "2"}),
                              metrics, nofile=100000)
    assert limits.admit("KAFKA", "10.0.0.1") and limits.admit("HTTP", "10.0.0.1")
    assert not limits.admit("KAFKA", "10.0.0.1")
    assert limits.admit("KAFKA", "10.0.0.2")
    assert not limits.admit("KAFKA", "10.0.0.3")
    assert metrics.value(CONNECTIONS_REFUSED, listener="KAFKA", reason="max.connections.per.ip") == 1
    assert metrics.value(CONNECTIONS_REFUSED, listener="KAFKA", reason="max.connections") == 1
    limits.release("KAFKA", "10.0.0.1")
    assert limits.admit("KAFKA", "10.0.0.3")


def test_request_memory_makes_a_request_wait_until_it_fits():
    async def run() -> None:
        metrics = Metrics()
        memory = RequestMemory(100, metrics)
        a = await memory.acquire(80)
        waiting = asyncio.ensure_future(memory.acquire(50))
        await asyncio.sleep(0)
        assert not waiting.done() and metrics.level(REQUEST_BYTES_IN_FLIGHT) == 80
        memory.release(a)
        b = await asyncio.wait_for(waiting, 5)
        assert metrics.level(REQUEST_BYTES_IN_FLIGHT) == 50
        memory.release(b)
        assert await memory.acquire(500) == 500  # larger than the budget: read alone
        assert metrics.level(REQUEST_BYTES_IN_FLIGHT) == 500

    asyncio.run(run())
