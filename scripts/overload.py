#!/usr/bin/env python3
"""Overload a cluster and measure what its users see.

    python scripts/overload.py --bootstrap-server 127.0.0.1:9092 [--connections 200] [--seconds 30]
                               [--slow 20] [--pids 101,102,103] [--flood 1000 --flood-source 127.0.0.2]
                               [--bodies 200 --body-mb 50] [--bombs 50 --bomb-mb 256 --kafka 127.0.0.1:29092]
                               [--settle 60]

For ``--seconds``: ``--connections`` concurrent client connections, each on its own TCP
connection, loop over produce (acks=1, one small batch), fetch (consumer) and metadata
requests; ``--slow`` of them are slow consumers that ask for a lot and read the answer
a few bytes at a time.  Meanwhile a separate client asks for metadata every 100 ms and
times the answers.  Brokers' resident memory is sampled (``--pids``).

``--flood N`` first opens N more connections spread over the brokers (from
``--flood-source``, an address of this host, e.g. another loopback address) that send
nothing, or half a request, and hold on: a broker closes those beyond
``max.connections`` / ``max.connections.per.ip`` at once and the others after
``connections.max.idle.ms`` or ``request.timeout.ms``, while the clients above must
still be answered.  The summary counts the flood connections the brokers closed.

Memory floods, before the run above (``--seconds 0`` runs only them), against the first
broker: ``--bodies N`` sends N ``POST /v1/produce`` at once, each with a body of
``--body-mb`` MB (one record batch that large, which the broker must refuse with
MESSAGE_TOO_LARGE); ``--bombs N`` sends N "compression bombs" of every codec (gzip,
snappy, lz4, zstd: one batch of zeros expanding to ``--bomb-mb`` MB), 8 at a time, through
``/v1/produce`` and, with ``--kafka``, as Produce v7 through the Kafka listener.  The
brokers' RSS (``/proc/<pid>/status`` VmRSS, sampled every 50 ms, and VmHWM) is reported
at the start, at its peak and ``--settle`` seconds after the floods.

Prints one summary line: requests sent and answered, transport failures (a request
without an answer), metadata latency p50/p99/max, and each broker's RSS before and at
its peak; with the floods, one line each: the answers' error names and the RSS figures.
Exits 1 when a request went unanswered, metadata stopped answering, or a broker died.
"""
from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time
from pathlib import Path

import aiohttp
import cramjam
import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikafka import Admin  # noqa: E402
from minikafka.protocol.rpc import codec, http  # noqa: E402
from minikafka.errors import error_for  # noqa: E402
from minikafka.protocol.kafka import frames  # noqa: E402
from minikafka.protocol.kafka.apis import PRODUCE  # noqa: E402
from minikafka.protocol.records.batch import encode_batch  # noqa: E402
from minikafka.protocol.records.varint import varint_bytes  # noqa: E402

TOPIC = "overload"


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory (``VmRSS``) or its peak so far (``VmHWM``), in MB; 0 when gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# -- memory floods -------------------------------------------------------------------------

_CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _zeros_compressed(codec: str, prefix: bytes, size: int, suffix: bytes) -> bytes:
    """``prefix + size zero bytes + suffix`` compressed as Kafka's clients do, made piece by
    piece (the zeros are never held whole)."""
    step = 1 << 20
    zeros = bytes(step)
    pieces = [prefix] + [zeros] * (size // step) + [bytes(size % step), suffix]
    if codec == "gzip":
        import zlib
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        return b"".join(z.compress(p) for p in pieces) + z.flush()
    if codec == "snappy":  # xerial framing, 32 KiB blocks: one zero block compressed once
        block = 32 * 1024
        data_len = len(prefix) + size + len(suffix)
        head = prefix + bytes(block - len(prefix))
        zero_block = bytes(cramjam.snappy.compress_raw(bytes(block)))
        out = [b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")]
        first = bytes(cramjam.snappy.compress_raw(head))
        out.append(len(first).to_bytes(4, "big") + first)
        left = data_len - block
        full, rest = divmod(left - len(suffix), block)
        out.extend([len(zero_block).to_bytes(4, "big") + zero_block] * full)
        tail = bytes(cramjam.snappy.compress_raw(bytes(rest) + suffix))
        out.append(len(tail).to_bytes(4, "big") + tail)
        return b"".join(out)
    c = cramjam.lz4.Compressor(block_linked=False) if codec == "lz4" else cramjam.zstd.Compressor()
    for p in pieces:
        c.compress(p)
    return bytes(c.finish())


def bomb_batch(codec: str, size: int) -> bytes:
    """One record batch v2 holding one record whose value is ``size`` zero bytes, compressed
    with ``codec``: small on the wire, ``size`` bytes once decompressed."""
    body_head = b"\x00" + varint_bytes(0) + varint_bytes(0) + varint_bytes(-1) + varint_bytes(size)
    suffix = varint_bytes(0)  # no headers
    record_len = len(body_head) + size + len(suffix)
    section = _zeros_compressed(codec, varint_bytes(record_len) + body_head, size, suffix)
    ts = int(time.time() * 1000)
    tail = (_CODECS[codec].to_bytes(2, "big") + (0).to_bytes(4, "big") + ts.to_bytes(8, "big") * 2
            + (-1).to_bytes(8, "big", signed=True) + (-1).to_bytes(2, "big", signed=True)
            + (-1).to_bytes(4, "big", signed=True) + (1).to_bytes(4, "big") + section)
    batch_length = 4 + 1 + 4 + len(tail)  # leader epoch, magic, crc, then the rest
    return ((0).to_bytes(8, "big") + batch_length.to_bytes(4, "big") + (-1).to_bytes(4, "big", signed=True)
            + b"\x02" + crc32c.crc32c(tail).to_bytes(4, "big") + tail)


async def post_raw(host: str, port: int, api: str, body: bytes, timeout_s: float = 300) -> dict:
    """``POST /v1/<api>`` on a connection of its own, the body written 1 MB at a time (a
    client holding many large bodies at once keeps one copy of each); the answer map."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    try:
        writer.write(f"POST /v1/{api} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {http.CONTENT_TYPE}\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        view = memoryview(body)
        async with asyncio.timeout(timeout_s):
            for start in range(0, len(body), 1 << 20):
                writer.write(view[start:start + (1 << 20)])
                await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            raw = await reader.readexactly(length)
        return http.decode_answer(raw, status, api, raise_error=False)
    finally:
        writer.close()


async def kafka_produce(host: str, port: int, topic: str, batch: bytes, timeout_s: float = 300) -> str:
    """One Produce v7 (acks=1) through the Kafka listener; the partition's error name."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    try:
        writer.write(frames.encode_request(PRODUCE, 7, 1, "overload", {
            "transactional_id": None, "acks": 1, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}))
        async with asyncio.timeout(timeout_s):
            await writer.drain()
            size = int.from_bytes(await reader.readexactly(4), "big")
            _, answer = frames.decode_response(PRODUCE, 7, await reader.readexactly(size))
        code = answer["responses"][0]["partition_responses"][0]["error_code"]
        return error_for(code).code.name if code else "NONE"
    finally:
        writer.close()


class Flood:
    """The answers of one flood, by error name, and its failures."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.errors: dict[str, int] = {}
        self.failures: list[str] = []

    def answered(self, error: str) -> None:
        self.errors[error] = self.errors.get(error, 0) + 1

    def line(self) -> str:
        return (f"{self.name}: answered={sum(self.errors.values())} unanswered={len(self.failures)} "
                f"errors={dict(sorted(self.errors.items()))}")


async def flood_bodies(host: str, port: int, n: int, mb: int) -> Flood:
    """``n`` produce requests at once, each a body of ``mb`` MB (one batch that large)."""
    flood = Flood(f"bodies={n}x{mb}MB")
    value = bytes(range(256)) * ((mb << 20) // 256)
    batch = encode_batch([(None, value, None, int(time.time() * 1000))])
    del value
    body = codec.pack({"acks": 1, "timeout_ms": 30000, "partitions": [
        {"topic": TOPIC, "partition": 0, "records": batch}]})
    del batch

    async def one(i: int) -> None:
        try:
            answer = await post_raw(host, port, "produce", body)
            flood.answered(answer.get("error") if answer.get("error_code") else
                           answer["partitions"][0]["error"])
        except Exception as exc:  # noqa: BLE001 - counted as unanswered
            flood.failures.append(f"body {i}: {exc.__class__.__name__}: {exc}")

    await asyncio.gather(*(one(i) for i in range(n)))
    return flood


async def flood_bombs(host: str, port: int, kafka: tuple[str, int] | None, n: int, mb: int) -> Flood:
    """``n`` bombs of every codec through /v1/produce and, with ``kafka``, the Kafka listener,
    8 at a time."""
    flood = Flood(f"bombs={n}x{len(_CODECS)}codecs{'x2listeners' if kafka else ''}x{mb}MB")
    bombs = {c: bomb_batch(c, mb << 20) for c in _CODECS}
    gate = asyncio.Semaphore(8)

    async def one(c: str, i: int, listener: str) -> None:
        async with gate:
            try:
                if listener == "kafka":
                    assert kafka is not None
                    flood.answered(await kafka_produce(*kafka, TOPIC, bombs[c]))
                else:
                    answer = await post_raw(host, port, "produce", codec.pack({
                        "acks": 1, "timeout_ms": 30000,
                        "partitions": [{"topic": TOPIC, "partition": 0, "records": bombs[c]}]}))
                    flood.answered(answer["partitions"][0]["error"])
            except Exception as exc:  # noqa: BLE001 - counted as unanswered
                flood.failures.append(f"{c} bomb {i} via {listener}: {exc.__class__.__name__}: {exc}")

    listeners = ["http"] + (["kafka"] if kafka else [])
    await asyncio.gather(*(one(c, i, listener) for i in range(n) for c in _CODECS for listener in listeners))
    return flood


async def memory_floods(args: argparse.Namespace, endpoint: tuple[str, int], pids: list[int]) -> bool:
    """The --bodies and --bombs floods; prints their lines and the RSS figures.  False when a
    request went unanswered or a broker died."""
    start = {pid: rss_mb(pid) for pid in pids}
    peak = dict(start)
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            for pid in pids:
                peak[pid] = max(peak[pid], rss_mb(pid))
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    kafka = None
    if args.kafka:
        k_host, _, k_port = args.kafka.split(",")[0].rpartition(":")
        kafka = (k_host, int(k_port))
    floods = []
    began = time.monotonic()
    if args.bodies:
        floods.append(await flood_bodies(*endpoint, args.bodies, args.body_mb))
    if args.bombs:
        floods.append(await flood_bombs(*endpoint, kafka, args.bombs, args.bomb_mb))
    took = time.monotonic() - began
    done.set()
    await sampler
    for pid in pids:
        peak[pid] = max(peak[pid], rss_mb(pid, "VmHWM"))
    await asyncio.sleep(args.settle)
    final = {pid: rss_mb(pid) for pid in pids}
    alive = all(Path(f"/proc/{pid}").exists() for pid in pids)
    for flood in floods:
        print(flood.line())
        for f in flood.failures[:5]:
            print("unanswered:", f)
    print(f"floods_s={took:.1f} settle_s={args.settle:g} alive={alive} " + " ".join(
        f"rss_mb[{pid}]={start[pid]:.0f}->peak {peak[pid]:.0f}->final {final[pid]:.0f}" for pid in pids))
    return alive and not any(f.failures for f in floods)


class Tally:
    def __init__(self) -> None:
        self.sent = 0
        self.answered = 0
        self.errors: dict[str, int] = {}
        self.failures: list[str] = []


async def client(i: int, endpoints: list[tuple[str, int]], stop: float, tally: Tally, partitions: int) -> None:
    """One connection looping over produce, fetch and metadata."""
    host, port = endpoints[i % len(endpoints)]
    conn = aiohttp.TCPConnector(limit=1, force_close=False)
    async with aiohttp.ClientSession(connector=conn, headers=http.HEADERS) as s:
        n = 0
        while time.monotonic() < stop:
            n += 1
            part = (i + n) % partitions
            if n % 3 == 0:
                api, body = "produce", {"acks": 1, "timeout_ms": 30000, "partitions": [
                    {"topic": TOPIC, "partition": part,
                     "records": encode_batch([(None, b"x" * 100, None, int(time.time() * 1000))])}]}
            elif n % 3 == 1:
                api, body = "fetch", {"replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 65536,
                                      "partitions": [{"topic": TOPIC, "partition": part, "fetch_offset": 0}]}
            else:
                api, body = "metadata", {"topics": [TOPIC]}
            tally.sent += 1
            try:
                async with s.post(http.url_for(host, port, api), data=codec.pack(body),
                                  timeout=aiohttp.ClientTimeout(total=60)) as resp:
                    raw = await resp.read()
                answer = http.decode_answer(raw, resp.status, api, raise_error=False)
                tally.answered += 1
                if answer.get("error_code"):
                    tally.errors[answer["error"]] = tally.errors.get(answer["error"], 0) + 1
            except Exception as exc:
                tally.failures.append(f"{api} to {host}:{port}: {exc.__class__.__name__}: {exc}")


def slow_consumer(host: str, port: int, stop: float, tally: Tally) -> None:
    """A fetch of up to 8 MB whose answer is read 512 bytes every 50 ms (a slow reader)."""
    body = codec.pack({"replica_id": -1, "max_wait_ms": 0, "max_bytes": 8 << 20, "partitions": [
        {"topic": TOPIC, "partition": p, "fetch_offset": 0, "max_bytes": 1 << 20} for p in range(8)]})
    while time.monotonic() < stop:
        tally.sent += 1
        try:
            with socket.create_connection((host, port), timeout=60) as s:
                s.sendall(f"POST /v1/fetch HTTP/1.1\r\nHost: {host}\r\nContent-Type: {http.CONTENT_TYPE}\r\n"
                          f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
                got = 0
                while time.monotonic() < stop + 30:
                    chunk = s.recv(512)
                    if not chunk:
                        break
                    got += len(chunk)
                    time.sleep(0.05)
                if got:
                    tally.answered += 1
                else:
                    tally.failures.append("slow fetch: connection closed without an answer")
        except OSError as exc:
            tally.failures.append(f"slow fetch: {exc}")


async def watch_metadata(host: str, port: int, stop: float, latencies: list[float], tally: Tally) -> None:
    async with aiohttp.ClientSession(headers=http.HEADERS) as s:
        while time.monotonic() < stop:
            t0 = time.monotonic()
            try:
                async with s.post(http.url_for(host, port, "metadata"), data=codec.pack({"topics": None}),
                                  timeout=aiohttp.ClientTimeout(total=30)) as resp:
                    http.decode_answer(await resp.read(), resp.status, "metadata")
                latencies.append(time.monotonic() - t0)
            except Exception as exc:
                tally.failures.append(f"metadata watcher: {exc.__class__.__name__}: {exc}")
            await asyncio.sleep(0.1)


def open_flood(n: int, endpoints: list[tuple[str, int]], source: str | None) -> list[socket.socket]:
    """``n`` connections that send nothing (even ones) or half a request (odd ones)."""
    out = []
    for i in range(n):
        host, port = endpoints[i % len(endpoints)]
        try:
            s = socket.create_connection((host, port), timeout=10, source_address=(source, 0) if source else None)
        except OSError:
            continue  # refused before accept (a full backlog): counted as closed below
        if i % 2:
            try:
                s.sendall(b"POST /v1/metadata HTTP/1.1\r\nHost: x\r\nContent-Type: application/msgpack\r\n"
                          b"Content-Length: 100000\r\n\r\n" + b"\0" * 100)
            except OSError:
                pass
        out.append(s)
    return out


def flood_closed(flood: list[socket.socket]) -> int:
    """How many flood connections the brokers have closed; closes them all."""
    closed = 0
    for s in flood:
        s.setblocking(False)
        try:
            if s.recv(65536) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    return closed


async def run(args: argparse.Namespace) -> int:
    endpoints = []
    for item in args.bootstrap_server.split(","):
        h, _, p = item.rpartition(":")
        endpoints.append((h, int(p)))
    with Admin(args.bootstrap_server) as admin:
        if TOPIC not in admin.list_topics():
            admin.create_topic(TOPIC, partitions=8, replication_factor=min(3, len(admin.cluster().brokers)))
        brokers = {b.id: (b.host, b.port) for b in admin.cluster().brokers}
    endpoints = sorted(brokers.values())
    pids = [int(p) for p in args.pids.split(",")] if args.pids else []
    floods_ok = True
    if args.bodies or args.bombs:
        floods_ok = await memory_floods(args, endpoints[0], pids)
        if not args.seconds:
            return 0 if floods_ok else 1
    rss_before = {pid: rss_mb(pid) for pid in pids}
    rss_peak = dict(rss_before)
    tally = Tally()
    latencies: list[float] = []
    stop = time.monotonic() + args.seconds
    loop = asyncio.get_running_loop()

    async def sample() -> None:
        while time.monotonic() < stop:
            for pid in pids:
                rss_peak[pid] = max(rss_peak[pid], rss_mb(pid))
            await asyncio.sleep(0.5)

    flood = open_flood(args.flood, endpoints, args.flood_source) if args.flood else []
    flood_refused = args.flood - len(flood)
    slow = [loop.run_in_executor(None, slow_consumer, *endpoints[i % len(endpoints)], stop, tally)
            for i in range(args.slow)]
    await asyncio.gather(sample(), watch_metadata(*endpoints[0], stop, latencies, tally),
                         *(client(i, endpoints, stop, tally, 8) for i in range(args.connections)), *slow)
    flooded = f" flood={args.flood} flood_closed={flood_refused + flood_closed(flood)}" if args.flood else ""
    lat = sorted(latencies)
    p = (lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000) if lat else (lambda q: float("nan"))
    rss = " ".join(f"rss_mb[{pid}]={rss_before[pid]:.0f}->{rss_peak[pid]:.0f}" for pid in pids)
    print(f"connections={args.connections} slow={args.slow} seconds={args.seconds} sent={tally.sent} "
          f"answered={tally.answered} unanswered={len(tally.failures)} errors={dict(sorted(tally.errors.items()))} "
          f"metadata_ms_p50={p(0.5):.1f} p99={p(0.99):.1f} max={(lat[-1] * 1000 if lat else float('nan')):.1f} "
          f"metadata_samples={len(lat)}{flooded} {rss}".rstrip())
    for f in tally.failures[:10]:
        print("unanswered:", f)
    return 1 if tally.failures or not lat or not floods_ok else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-server", required=True)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--slow", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--pids", default="", help="broker pids, comma-separated, to sample their memory")
    ap.add_argument("--flood", type=int, default=0, help="idle and half-sent connections to hold during the run")
    ap.add_argument("--flood-source", default=None, metavar="ADDRESS", help="local address of the flood connections")
    ap.add_argument("--bodies", type=int, default=0, help="produce requests sent at once, each --body-mb MB")
    ap.add_argument("--body-mb", type=int, default=50)
    ap.add_argument("--bombs", type=int, default=0, help="compression bombs of every codec, per listener")
    ap.add_argument("--bomb-mb", type=int, default=256, help="what each bomb expands to")
    ap.add_argument("--kafka", default=None, metavar="HOST:PORT", help="the first broker's Kafka listener (bombs)")
    ap.add_argument("--settle", type=float, default=60, help="seconds after the floods before the final RSS")
    args = ap.parse_args(argv)
    return asyncio.run(_with_executor(args))


async def _with_executor(args: argparse.Namespace) -> int:
    import concurrent.futures

    asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=args.slow + 4))
    return await run(args)


if __name__ == "__main__":
    sys.exit(main())
