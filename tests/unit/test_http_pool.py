"""The lean HTTP/1.1 client under rpc.call: framing (minikafka/protocol/rpc/http1.py) and
the pool of kept-alive connections (minikafka/http_pool.py) against a small server of
the test's own on 127.0.0.1."""
from __future__ import annotations

import asyncio

import pytest

from minikafka import errors
from minikafka.http_pool import HttpPool
from minikafka.protocol.rpc import codec
from minikafka.protocol.rpc.http1 import HttpFramingError, header_lines, parse_response_head, request_head
from minikafka.rpc import BrokerUnreachableError, NoResponseError, call

# ------------------------------------------------------------------ framing (pure)


def test_request_head_has_host_length_and_the_fixed_headers():
    fixed = header_lines({"Content-Type": "application/msgpack", "X-Minikafka-Cluster-Credential": "s3cret"})
    head = request_head("/v1/fetch", "127.0.0.1", 9092, fixed, 17)
    assert head == (b"POST /v1/fetch HTTP/1.1\r\nHost: 127.0.0.1:9092\r\nContent-Length: 17\r\n"
                    b"Content-Type: application/msgpack\r\nX-Minikafka-Cluster-Credential: s3cret\r\n\r\n")
    assert b"Host: [::1]:9092\r\n" in request_head("/v1/x", "::1", 9092, b"", 0)


@pytest.mark.parametrize("name, value", [("X-A", "a\r\nInjected: 1"), ("X\nB", "v"), ("", "v"), ("A:B", "v")])
def test_a_header_that_would_break_the_framing_is_refused(name, value):
    with pytest.raises(ValueError):
        header_lines({name: value})


def test_answer_heads():
    ok = parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Type: application/msgpack\r\nContent-Length: 12\r\n\r\n")
    assert (ok.status, ok.content_length, ok.keep_alive) == (200, 12, True)
    closing = parse_response_head(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nConnection: close\r\n\r\n")
    assert (closing.status, closing.content_length, closing.keep_alive) == (401, 0, False)
    assert parse_response_head(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n").keep_alive is False
    assert parse_response_head(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\nConnection: Keep-Alive\r\n\r\n").keep_alive
    assert parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n").content_length == 3


@pytest.mark.parametrize("head, words", [
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "Transfer-Encoding 'chunked' is not supported"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", "HTTP 200 answer without Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "bad Content-Length"),
    (b"HTTP/2 200\r\nContent-Length: 0\r\n\r\n", "not an HTTP/1.x answer"),
    (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x answer"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
    (b"HTTP/1.1 100 Continue\r\n\r\n", "unexpected HTTP 100"),
])
def test_answers_not_framed_with_content_length_are_refused(head, words):
    with pytest.raises(HttpFramingError, match=words):
        parse_response_head(head)


# ------------------------------------------------------------------ the pool, on a server of the test's own

class Server:
    """Answers each ``POST`` with a msgpack map {"n": request number}; ``mode`` changes
    how: "ok", "close" (Connection: close), "silent" (never answers), "cut" (half an
    answer, then close), "chunked"."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.connections = 0
        self.requests: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.eofs = 0
        self.server: asyncio.base_events.Server | None = None
        self.port = 0

    async def start(self) -> "Server":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        for w in self.writers:
            w.close()
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.eofs += 1
                    return
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                await reader.readexactly(length)
                self.requests.append(head)
                answer = codec.pack({"n": len(self.requests)})
                if self.mode == "silent":
                    continue
                if self.mode == "chunked":
                    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                    continue
                extra = b"Connection: close\r\n" if self.mode in ("close", "cut") else b""
                data = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(answer), extra, answer)
                if self.mode == "cut":
                    data = data[:-2]
                writer.write(data)
                await writer.drain()
                if self.mode in ("close", "cut"):
                    writer.close()
                    return
        except ConnectionError:
            return

    def close_idle(self) -> None:
        """Close every connection from the server's side, as connections.max.idle.ms does."""
        for w in self.writers:
            w.close()


@pytest.fixture
async def server():
    s = await Server().start()
    yield s
    await s.stop()


async def wait_for(cond, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_calls_reuse_one_kept_alive_connection_and_send_the_pools_headers(server):
    pool = HttpPool({"Content-Type": "application/msgpack", "X-Minikafka-Cluster-Credential": "s3cret"})
    try:
        for n in (1, 2, 3):
            assert (await call(pool, "127.0.0.1", server.port, "metadata", {}, 5.0))["n"] == n
        assert server.connections == 1
        assert server.requests[0].startswith(b"POST /v1/metadata HTTP/1.1\r\n")
        assert b"X-Minikafka-Cluster-Credential: s3cret\r\n" in server.requests[0]
        assert b"Content-Type: application/msgpack\r\n" in server.requests[0]
    finally:
        await pool.close()
    await wait_for(lambda: server.eofs == 1)  # close() closed the idle connection


async def test_a_pooled_connection_the_server_closed_while_idle_is_replaced_without_an_error(server):
    pool = HttpPool()
    try:
        await call(pool, "127.0.0.1", server.port, "metadata", {}, 5.0)
        server.close_idle()
        await asyncio.sleep(0)  # the FIN is on its way; the client need not have read it yet
        assert (await call(pool, "127.0.0.1", server.port, "metadata", {}, 5.0))["n"] == 2
        assert server.connections == 2
    finally:
        await pool.close()


async def test_connection_close_in_an_answer_is_honoured(server):
    server.mode = "close"
    pool = HttpPool()
    try:
        for _ in range(2):
            await call(pool, "127.0.0.1", server.port, "metadata", {}, 5.0)
        assert server.connections == 2
    finally:
        await pool.close()


async def test_transport_failures_raise_the_usual_errors(server):
    pool = HttpPool()
    try:
        server.mode = "cut"
        with pytest.raises(BrokerUnreachableError, match="metadata request to 127.0.0.1:.* failed: the broker closed the connection"):
            await call(pool, "127.0.0.1", server.port, "metadata", {}, 5.0)
        server.mode = "chunked"
        with pytest.raises(BrokerUnreachableError, match="not HTTP/1.1 as brokers send it: Transfer-Encoding"):
            await call(pool, "127.0.0.1", server.port, "metadata", {}, 5.0)
        server.mode = "silent"
        eofs = server.eofs
        with pytest.raises(NoResponseError, match="no answer within 0.2 s") as info:
            await call(pool, "127.0.0.1", server.port, "metadata", {}, 0.2)
        assert info.value.code is errors.RequestTimedOutError.code
        await wait_for(lambda: server.eofs == eofs + 1)  # the timed-out connection was closed, not pooled
    finally:
        await pool.close()
    port = server.port
    await server.stop()
    with pytest.raises(BrokerUnreachableError, match="failed: cannot connect: connection refused") as info:
        await call(HttpPool(), "127.0.0.1", port, "metadata", {}, 5.0)
    assert info.value.code is errors.NetworkExceptionError.code
    server.writers.clear()


async def test_a_closed_pool_refuses_calls(server):
    pool = HttpPool()
    await pool.close()
    with pytest.raises(BrokerUnreachableError, match="pool is closed"):
        await call(pool, "127.0.0.1", server.port, "metadata", {}, 5.0)
