"""The broker's lean msgpack/HTTP path (minikafka.broker.rpc_http_server) on a real socket
on 127.0.0.1: kept-alive and pipelined requests, the hand-over of a connection to aiohttp
at its first other request, and the limits: connections, idle and body timeouts,
queued.max.request.bytes, socket.request.max.bytes, the cross-site checks, a failed
login, the deadline of a request head, and the budget held until an answer has left.
The request layer is replaced by a function that echoes the api and body."""
from __future__ import annotations

import asyncio
import contextlib
from types import SimpleNamespace

from aiohttp import web

from minikafka.broker.connection_policy import ConnectionPolicy
from minikafka.broker.limits import ConnectionLimits, RequestMemory
from minikafka.broker.metrics import Metrics
from minikafka.broker.rpc_http_server import RpcHttpServer
from minikafka.config import BrokerConfig
from minikafka.metric_names import CONNECTIONS_IDLE_CLOSED, REQUEST_ERRORS
from minikafka.protocol.rpc.http1 import Headers, answer, parse_request_head, parse_response_head

SETTINGS = {"max.connections.per.ip": "2", "connections.max.idle.ms": "400", "request.timeout.ms": "300",
            "socket.request.max.bytes": "1000", "queued.max.request.bytes": "1500",
            "connection.failed.authentication.delay.ms": "50"}


def post(api: str, body: bytes, *extra: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in extra)
    return (f"POST /v1/{api} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/msgpack\r\n"
            f"Content-Length: {len(body)}\r\n{head}\r\n").encode() + body


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    h = parse_response_head(head)
    return h.status, await reader.readexactly(h.content_length), h.keep_alive


async def closed(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), 5) == b""
    except ConnectionResetError:
        return True


@contextlib.asynccontextmanager
async def serving(settings: dict[str, str] | None = None):
    config = BrokerConfig(1, "zk", settings={**SETTINGS, **(settings or {})})
    metrics = Metrics()
    policy = ConnectionPolicy.of(config.get, nofile=100000)
    broker = SimpleNamespace(policy=policy, limits=ConnectionLimits(policy, metrics),
                             memory=RequestMemory(policy, metrics), metrics=metrics)
    calls: list[tuple[str, bytes]] = []

    async def answer_rpc(api: str, body: bytes, remote: str, headers, cert) -> tuple[bytes, bool]:
        calls.append((api, body))
        if api == "slow":
            await asyncio.sleep(0.2)
        if api == "huge":
            return b"h" * 2_000_000, False
        return b"lean:" + api.encode() + b":" + body, headers.get("Authorization") == "wrong"

    app = web.Application()
    app.router.add_get("/page", lambda request: web.Response(text="page"))

    async def full(request: web.Request) -> web.Response:
        return web.Response(body=b"full:" + await request.read())

    app.router.add_post("/v1/{api:.*}", full)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    server = RpcHttpServer(config, broker, runner.server, answer_rpc, lambda n: b"too large: %d" % n)
    await server.listen("127.0.0.1", 0, "INTERNAL")
    port = server._servers[0].sockets[0].getsockname()[1]
    try:
        yield SimpleNamespace(port=port, calls=calls, broker=broker, metrics=metrics,
                              connect=lambda: asyncio.open_connection("127.0.0.1", port))
    finally:
        await server.close()
        await runner.cleanup()


async def all_released(s) -> None:
    for _ in range(250):
        if s.broker.limits.total == 0:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{s.broker.limits.total} connections still counted")


def run(coro) -> None:
    asyncio.run(asyncio.wait_for(coro, 30))


def test_request_heads_the_lean_path_serves_and_the_ones_it_hands_over():
    head = parse_request_head(b"POST /v1/produce HTTP/1.1\r\nHost: b:9092\r\nContent-type: application/msgpack; x=1\r\n"
                              b"Content-Length: 12\r\nX-Minikafka-Cluster: s\r\n\r\n")
    assert head is not None and (head.api, head.content_length, head.keep_alive) == ("produce", 12, True)
    assert head.content_type == "application/msgpack" and head.headers.get("x-MINIKAFKA-cluster") == "s"
    assert parse_request_head(b"POST /v1/x HTTP/1.0\r\nContent-Length: 0\r\n\r\n").keep_alive is False
    assert parse_request_head(b"POST /v1/x HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").keep_alive is False
    for other in (b"GET /v1/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",  # another method
                  b"POST /api/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",  # another path
                  b"POST /v1/x?y=1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",  # a query
                  b"POST /v1/%78 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",  # an escape
                  b"POST /v1/x HTTP/1.1\r\n\r\n",  # no Content-Length
                  b"POST /v1/x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
                  b"POST /v1/x HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                  b"POST /v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                  b"POST /v1/x HTTP/1.1\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n",
                  b"POST /v1/x HTTP/1.1\r\nContent-Length: 1\r\n folded\r\n\r\n",
                  b"POST /v1/x HTTP/2\r\nContent-Length: 1\r\n\r\n",
                  b"POST  /v1/x HTTP/1.1\r\nContent-Length: 1\r\n\r\n"):
        assert parse_request_head(other) is None, other
    h = Headers({"authorization": "Basic x"})
    assert h.get("Authorization") == "Basic x" and "AUTHORIZATION" in h and h["authorization"] == "Basic x"
    framed = answer(200, b"abc", "application/msgpack", False)
    assert parse_response_head(framed[:-3]).content_length == 3 and framed.endswith(b"\r\n\r\nabc")
    assert parse_response_head(framed[:-3]).keep_alive is False


def test_kept_alive_and_pipelined_requests_are_answered_in_order():
    async def go() -> None:
        async with serving() as s:
            reader, writer = await s.connect()
            writer.write(post("metadata", b"\x80"))
            assert await read_answer(reader) == (200, b"lean:metadata:\x80", True)
            writer.write(post("slow", b"1") + post("fast", b"2"))  # the second waits for the first
            assert (await read_answer(reader))[1] == b"lean:slow:1"
            assert (await read_answer(reader))[1] == b"lean:fast:2"
            writer.write(post("last", b"", "Connection: close"))
            assert await read_answer(reader) == (200, b"lean:last:", False)
            assert await closed(reader)
            assert [api for api, _ in s.calls] == ["metadata", "slow", "fast", "last"]
    run(go())


def test_the_first_other_request_hands_the_connection_to_aiohttp_for_good():
    async def go() -> None:
        async with serving() as s:
            reader, writer = await s.connect()
            writer.write(post("lean", b"1"))
            assert (await read_answer(reader))[1] == b"lean:lean:1"
            writer.write(b"GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await read_answer(reader))[:2] == (200, b"page")
            writer.write(post("after", b"2"))  # the same connection stays with aiohttp
            assert (await read_answer(reader))[1] == b"full:2"
            assert s.broker.limits.total == 1
            writer.close()
            await all_released(s)  # the handed-over connection's limit slot is given back when it closes
    run(go())


def test_limits_timeouts_and_refusals():
    async def go() -> None:
        async with serving() as s:
            # max.connections.per.ip=2: a third is closed at once
            held = [await s.connect() for _ in range(2)]
            reader, _ = await s.connect()
            assert await closed(reader)
            for _, w in held:
                w.close()
            await all_released(s)
            # connections.max.idle.ms=400: a silent connection is closed
            reader, _ = await s.connect()
            assert await closed(reader)
            assert s.metrics.value(CONNECTIONS_IDLE_CLOSED, listener="HTTP") >= 1
            # request.timeout.ms: a body that stops arriving closes the connection, its bytes given back
            reader, writer = await s.connect()
            writer.write(post("half", b"x" * 900)[:-500])
            assert await closed(reader)
            assert s.broker.memory.used == 0 and ("half", b"x" * 400) not in s.calls
            # socket.request.max.bytes=1000: answered 413 at once, then closed for writing; what
            # the client still sends is dropped as it comes (it gets the answer, not a reset)
            reader, writer = await s.connect()
            writer.write(post("big", b"x" * 8_000_000))
            assert await read_answer(reader) == (413, b"too large: 8000000", False)
            await writer.drain()
            assert await closed(reader)
            # a page of another site (Origin), or another Content-Type: refused, nothing dispatched
            reader, writer = await s.connect()
            writer.write(post("delete_topics", b"", "Origin: http://evil.example"))
            status, text, keep_alive = await read_answer(reader)
            assert status == 403 and b"cross-site" in text and not keep_alive
            reader, writer = await s.connect()
            writer.write(post("delete_topics", b"").replace(b"application/msgpack", b"text/plain"))
            assert (await read_answer(reader))[0] == 415
            assert s.metrics.value(REQUEST_ERRORS, error="INVALID_REQUEST") == 2
            assert not [c for c in s.calls if c[0] in ("big", "delete_topics")]
            # a failed login: answered after the delay, then closed
            reader, writer = await s.connect()
            writer.write(post("metadata", b"", "Authorization: wrong"))
            assert (await read_answer(reader))[2] is False and await closed(reader)
    run(go())


def test_a_body_waits_until_it_fits_in_queued_max_request_bytes():
    async def go() -> None:
        async with serving() as s:
            held = await s.broker.memory.acquire(1000)
            reader, writer = await s.connect()
            writer.write(post("waits", b"y" * 900))
            await asyncio.sleep(0.1)
            assert s.calls == []  # 1000 + 900 > 1500: not read yet
            s.broker.memory.release(held)
            assert (await read_answer(reader))[1] == b"lean:waits:" + b"y" * 900
            assert s.broker.memory.used == 0
    run(go())


def test_a_client_that_does_not_read_its_answers_is_not_read_either():
    async def go() -> None:
        async with serving() as s:
            reader, writer = await s.connect()
            writer.write(post("huge", b"") * 40)
            await asyncio.sleep(1.0)
            served = len(s.calls)
            assert served < 40  # its answers fill the socket: the rest wait unread
            for _ in range(40):
                status, body, _ = await read_answer(reader)
                assert status == 200 and len(body) == 2_000_000
            assert len(s.calls) == 40
    run(go())


def test_a_head_that_does_not_arrive_within_request_timeout_ms_is_answered_408_and_closed():
    async def go() -> None:
        async with serving({"connections.max.idle.ms": "60000"}) as s:
            reader, writer = await s.connect()
            writer.write(b"POST /v1/metadata HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
            loop = asyncio.get_running_loop()
            began = loop.time()
            status, text, keep_alive = await read_answer(reader)
            assert status == 408 and text.startswith(b"REQUEST_TIMED_OUT") and not keep_alive
            assert await closed(reader)
            assert loop.time() - began < 10  # request.timeout.ms=300, not connections.max.idle.ms
            assert s.metrics.value(CONNECTIONS_IDLE_CLOSED, listener="HTTP") == 1
            # a head trickling in, byte by byte, is held to the same deadline from its first byte
            reader, writer = await s.connect()
            began = loop.time()
            for b in post("metadata", b""):
                if reader.at_eof() or loop.time() - began > 5:
                    break
                try:
                    writer.write(bytes([b]))
                except ConnectionError:
                    break
                await asyncio.sleep(0.05)
            got = b""
            with contextlib.suppress(ConnectionError):
                while chunk := await asyncio.wait_for(reader.read(1000), 5):  # until the broker closes it
                    got += chunk
            # closed by the deadline (the 408 may be lost to a reset: the client was still sending)
            assert got in (b"",) or got.startswith(b"HTTP/1.1 408 ")
            assert loop.time() - began < 10
            assert s.calls == [] and s.broker.memory.used == 0
    run(go())


def test_a_huge_content_length_is_answered_413_at_once_with_nothing_read():
    async def go() -> None:
        async with serving({"request.timeout.ms": "20000"}) as s:
            reader, writer = await s.connect()
            writer.write(post("produce", b"").replace(b"Content-Length: 0", b"Content-Length: 1000000000"))
            writer.write(b"x" * 100_000)
            status, text, keep_alive = await asyncio.wait_for(read_answer(reader), 5)
            assert (status, text, keep_alive) == (413, b"too large: 1000000000", False)
            assert await asyncio.wait_for(reader.read(1), 5) == b""  # closed for writing
            assert s.broker.memory.used == 0 and s.calls == []
    run(go())


def test_a_request_holds_its_budget_until_its_answer_has_left():
    async def poll(check) -> bool:
        for _ in range(250):
            if check():
                return True
            await asyncio.sleep(0.02)
        return False

    async def go() -> None:
        async with serving({"queued.max.request.bytes": "100000000"}) as s:
            reader, writer = await s.connect()
            writer.write(post("huge", b"abc") * 6)  # 12 MB of answers, more than the sockets take
            assert await poll(lambda: s.broker.memory.used >= 2_000_000)  # an answer waiting to leave
            for _ in range(6):
                status, body, _ = await read_answer(reader)
                assert status == 200 and len(body) == 2_000_000
            assert await poll(lambda: s.broker.memory.used == 0)
            # a head that has begun is counted as it arrives, and given back when its connection ends
            begun = b"POST /v1/metadata HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            writer.write(begun)
            assert await poll(lambda: s.broker.memory.used == len(begun))
            writer.close()
            assert await poll(lambda: s.broker.memory.used == 0)
    run(go())
