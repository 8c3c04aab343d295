#!/usr/bin/env python3
"""Overload a cluster and measure what its users see.

    python scripts/overload.py --bootstrap-server 127.0.0.1:9092 [--connections 200] [--seconds 30]
                               [--slow 20] [--pids 101,102,103] [--flood 1000 --flood-source 127.0.0.2]

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

Prints one summary line: requests sent and answered, transport failures (a request
without an answer), metadata latency p50/p99/max, and each broker's RSS before and at
its peak.  Exits 1 when a request went unanswered or metadata stopped answering.
"""
from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikafka import Admin  # noqa: E402
from minikafka.protocol.rpc import codec, http  # noqa: E402
from minikafka.protocol.records.batch import encode_batch  # noqa: E402

TOPIC = "overload"


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


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
    return 1 if tally.failures or not lat else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-server", required=True)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--slow", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--pids", default="", help="broker pids, comma-separated, to sample their memory")
    ap.add_argument("--flood", type=int, default=0, help="idle and half-sent connections to hold during the run")
    ap.add_argument("--flood-source", default=None, metavar="ADDRESS", help="local address of the flood connections")
    args = ap.parse_args(argv)
    return asyncio.run(_with_executor(args))


async def _with_executor(args: argparse.Namespace) -> int:
    import concurrent.futures

    asyncio.get_running_loop().set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=args.slow + 4))
    return await run(args)


if __name__ == "__main__":
    sys.exit(main())
