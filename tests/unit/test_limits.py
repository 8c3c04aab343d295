"""The pure parts of the broker's client limits: the decompression cap (gzip bombs), the
log's repeat filter, max.connections from the open-file limit, connection counting and
the request-memory budget."""
from __future__ import annotations

import asyncio
import logging

import cramjam
import pytest

from minikafka.broker.connection_policy import ConnectionPolicy
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
    config = BrokerConfig(1, "zk", settings={"max.connections": "3", "max.connections.per.ip": "2"})
    limits = ConnectionLimits(ConnectionPolicy.of(config.get, nofile=100000), metrics)
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
        memory = RequestMemory(ConnectionPolicy(request_memory_bytes=100), metrics)
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


# -- decompression, step by step -----------------------------------------------------------

def _random_bytes(n: int, seed: int = 7) -> bytes:
    """Incompressible bytes, made without a clock or the random module (a xorshift stream)."""
    out = bytearray(n)
    x = seed
    for i in range(0, n, 8):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out[i:i + 8] = x.to_bytes(8, "little")[:n - i]
    return bytes(out)


def _peak_while(fn) -> int:
    """The most bytes Python allocated at once while ``fn()`` ran, above what was held before."""
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_capped_decompression_holds_what_it_produced_not_the_cap(codec):
    code = COMPRESSION_CODECS[codec]
    data = _random_bytes(2 << 20)
    section = compress(code, data)
    got: list[bytes] = []
    peak = _peak_while(lambda: got.append(decompress(code, section, 100 << 20)))
    assert got == [data]
    # the output, its final copy and one step: no buffer guessed from the input or the cap
    assert peak < 2 * len(data) + (1 << 20), peak


@pytest.mark.parametrize("codec", ["snappy", "lz4", "zstd"])
def test_declared_sizes_past_the_cap_are_refused_before_anything_is_decompressed(codec, monkeypatch):
    import lz4.frame

    code = COMPRESSION_CODECS[codec]
    if codec == "lz4":  # a frame that declares its content size, as lz4.frame writes it
        bomb = lz4.frame.compress(b"\0" * (8 << 20), store_size=True, block_linked=False)
    else:  # xerial snappy's block lengths; zstd's frame content size (cramjam writes it)
        bomb = compress(code, b"\0" * (8 << 20))

    def no(*args, **kwargs):
        raise AssertionError("decompressed before the declared size was checked")

    monkeypatch.setattr(cramjam.snappy, "decompress_raw", no)
    monkeypatch.setattr(cramjam.lz4, "decompress_block_into", no)
    import zstandard
    monkeypatch.setattr(zstandard, "ZstdDecompressor", no)
    with pytest.raises(MessageTooLargeError, match="more than 1048576 bytes"):
        decompress(code, bomb, 1 << 20)


def test_capped_lz4_and_zstd_read_what_kafka_clients_write():
    import lz4.frame
    import zstandard

    data = b"".join(b"record %d;" % i for i in range(300_000))
    # lz4: checksums, content size, 4 MiB blocks; and two frames back to back
    framed = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=False,
                                content_checksum=True, block_checksum=True, store_size=True)
    assert decompress(3, framed, len(data)) == data
    assert decompress(3, framed + framed, 2 * len(data)) == data + data
    with pytest.raises(MessageTooLargeError):
        decompress(3, framed, len(data) - 1)
    # zstd from a streaming compressor (no content size, as Kafka's Java client writes it), a
    # skippable frame, and a checksum
    z = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    streamed = z.compress(data) + z.flush()
    skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    assert decompress(4, streamed + skippable + streamed, 2 * len(data)) == data + data
    with pytest.raises(MessageTooLargeError):
        decompress(4, streamed, len(data) - 1)
    for code, whole in ((3, framed), (4, streamed)):
        with pytest.raises(CorruptMessageError):
            decompress(code, whole[:len(whole) // 2], 1 << 30)  # truncated
        with pytest.raises(CorruptMessageError):
            decompress(code, b"\x00" * 64, 1 << 30)


def test_the_leader_refuses_an_oversized_batch_from_its_header_and_a_bomb_at_max_message_bytes():
    from minikafka.replication.partition import LeaderState, PartitionReplica

    leader = PartitionReplica("t", 0, 1)
    leader.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
    big = encode_batch([(None, _random_bytes(20 << 20), None, 0)], compression="snappy")
    assert len(big) > 20 << 20
    errors: list[Exception] = []

    def append(batch: bytes, cap: int) -> None:
        try:
            leader.append_as_leader(batch, 1, 1, 1048588, max_decompressed_bytes=cap)
        except MessageTooLargeError as exc:
            errors.append(exc)

    peak = _peak_while(lambda: append(big, 1048588))
    assert "exceeds max.message.bytes 1048588" in str(errors[-1])
    assert peak < 1 << 20, peak  # neither copied nor decompressed
    bomb = encode_batch([(None, b"\0" * (30 << 20), None, 0)], compression="zstd")
    assert len(bomb) < 1048588
    peak = _peak_while(lambda: append(bomb, 1048588))
    assert "more than 1048588 bytes" in str(errors[-1])
    assert peak < 3 << 20, peak
    assert leader.log_end_offset == 0


def test_a_refused_bomb_leaves_nothing_held_without_the_cyclic_collector(tmp_path):
    """The produce path frees a refused batch's buffers when the request ends: no reference
    cycle (an error kept with its traceback, whose frames name the answer entry) waits for
    the collector, which is off here."""
    import gc
    import time
    import tracemalloc
    from types import SimpleNamespace

    from minikafka.broker.replica_manager import ReplicaManager
    from minikafka.broker.storage import Storage
    from minikafka.protocol.rpc.types import ProducePartition, ProduceRequest
    from minikafka.replication.partition import LeaderState, PartitionReplica

    config = BrokerConfig(1, "zk")
    metrics = Metrics()
    rm = ReplicaManager(config, SimpleNamespace(time=time.time, monotonic=time.monotonic), Storage(str(tmp_path), 1),
                        None, metrics, lambda *args: None)
    leader = PartitionReplica("t", 0, 1)
    leader.become_leader(LeaderState(1, 0, (1,), (1,), 0, 1), 0)
    rm.partitions[("t", 0)] = leader
    rm.topic_configs["t"] = {"max.message.bytes": str(64 << 20)}
    bomb = encode_batch([(None, b"\0" * (200 << 20), None, 0)], compression="gzip")
    request = ProduceRequest(acks=1, timeout_ms=1000, partitions=[ProducePartition(topic="t", partition=0, records=bomb)])
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        [entry] = asyncio.run(rm.produce(request))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
    assert entry.error is not None and entry.error.code.name == "MESSAGE_TOO_LARGE"
    assert "more than 67108864 bytes" in str(entry.error)  # the topic's max.message.bytes
    assert held < 4 << 20, held
