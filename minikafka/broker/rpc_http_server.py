"""The broker's msgpack/HTTP listeners: a lean path for ``POST /v1/<api>``, aiohttp for the rest.

Every request between brokers and from our clients is a ``POST /v1/<api>`` with a
msgpack body, one at a time per kept-alive connection.  aiohttp's full web stack
(request and response objects, router, middlewares) cost about as much broker CPU per
request as all of our own request handling, and at one record per request (acks=all
with ``linger.ms`` 0) each record takes four such requests on the brokers.  So each
connection starts here, in :class:`_RpcConnection`, an ``asyncio.Protocol`` that reads
request heads itself (:func:`~minikafka.protocol.rpc.http1.parse_request_head`) and
answers the msgpack requests (:meth:`HttpTransport.answer_rpc`, the same code aiohttp's
route calls).  The first request it does not serve (the dashboard's pages, /metrics, any
other method or path, anything unusual or malformed) hands the connection, with the
bytes read so far, to aiohttp's request handler for the rest of its life.

Both paths keep the same rules, the broker's one
:class:`~.connection_policy.ConnectionPolicy` (which the Kafka listener asks too): the connection limits
(``max.connections``, ``max.connections.per.ip``), ``connections.max.idle.ms`` between
requests, ``request.timeout.ms`` for a request's head to arrive once its first byte did
(then 408 and closed) and for its body (then closed; both counted as idle closes), a body
read only once its ``Content-Length`` fits in ``queued.max.request.bytes`` (the
connection is not read meanwhile), a ``Content-Length`` past ``socket.request.max.bytes``
answered at once with 413 and INVALID_REQUEST (nothing of the body is kept; the
connection is closed), the cross-site checks (:mod:`.http_guard`), and a failed login
answered after ``connection.failed.authentication.delay.ms`` and closing the connection.

``queued.max.request.bytes`` (:class:`~.limits.RequestMemory`) counts every byte a request
holds, from the first byte of its head to the last byte of its answer handed to the
kernel: the head as it arrives, the body (taken before it is read, and handed to the
request layer without a copy, which empties it once decoded), and the answer while it
waits in the transport.  A client that reads its answers slowly holds only its own
connection and budget: until its answer has left, nothing more is read from it.  A client
that goes away mid-request does not stop its handling (as aiohttp's default); the answer
goes nowhere.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from aiohttp import web

from ..metric_names import CONNECTIONS_IDLE_CLOSED, REQUEST_ERRORS
from ..protocol.rpc.http import CONTENT_TYPE
from ..protocol.rpc.http1 import HEAD_END, MAX_HEAD_BYTES, RequestHead, answer, parse_request_head
from . import http_guard
from .connection_policy import Size
from .listeners import current_listener

if TYPE_CHECKING:
    from ..config import BrokerConfig
    from .served import ServedBroker

# (api, body, remote address, headers, TLS client certificate) -> (packed answer, login failed);
# a bytearray body is the callee's: the request layer empties it once decoded
AnswerRpc = Callable[[str, "bytes | bytearray", str, Any, "dict | None"], Awaitable[tuple[bytes, bool]]]

log = logging.getLogger(__name__)

HTTP_LISTENER = "HTTP"  # the listener label of the msgpack/HTTP listeners in the connection metrics


class RpcHttpServer:
    """The sockets of one broker's msgpack/HTTP listeners (internal, and external if
    configured) and the connections and request tasks they own."""

    def __init__(self, config: "BrokerConfig", broker: "ServedBroker", web_server: web.Server,
                 answer_rpc: AnswerRpc, too_large: Callable[[int], bytes]) -> None:
        self.broker = broker
        self.web_server = web_server
        self.answer_rpc = answer_rpc
        self.too_large = too_large
        self.policy = broker.policy  # connections, idle, head and body deadlines, sizes, failed logins
        self.hosts = http_guard.HostAllowList.of(config)  # the Host check (DNS rebinding)
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[_RpcConnection] = set()
        self.tasks: set[asyncio.Task] = set()
        self._handed_over: dict[object, str] = {}  # aiohttp handler -> client IP, released when it closes
        lost = web_server.connection_lost

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            ip = self._handed_over.pop(handler, None)
            if ip is not None:
                broker.limits.release(HTTP_LISTENER, ip)
            lost(handler, exc)

        web_server.connection_lost = connection_lost  # type: ignore[method-assign]

    async def listen(self, host: str, port: int, listener: str, ssl_context: ssl.SSLContext | None = None) -> None:
        """Serve ``host:port`` as ``listener`` (INTERNAL or EXTERNAL)."""
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _RpcConnection(self, listener), host, port, reuse_address=True,
                                          ssl=ssl_context)
        self._servers.append(server)

    def hand_over(self, transport: asyncio.Transport, ip: str, data: bytes) -> None:
        """Give a connection, and the bytes read from it so far, to aiohttp for good."""
        handler = self.web_server()
        self._handed_over[handler] = ip
        transport.set_write_buffer_limits()  # aiohttp's own flow control, with the default limits
        transport.set_protocol(handler)
        handler.connection_made(transport)
        if data:
            handler.data_received(data)

    async def close(self) -> None:
        """Stop listening, close every lean connection and end its request tasks (aiohttp's
        connections are its runner's to close)."""
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            conn.close()
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()


class _RpcConnection(asyncio.Protocol):
    """One connection on the lean path: heads parsed here, one request at a time."""

    def __init__(self, server: RpcHttpServer, listener: str) -> None:
        self.server = server
        self.listener = listener
        self.transport: asyncio.Transport | None = None
        self.ip = ""
        self.remote = ""
        self.host_scheme = "http"
        self._admitted = False
        self._buf = bytearray()
        self._busy = False  # a request is being handled: the bytes that come wait in _buf
        self._buf_held = 0  # queued.max.request.bytes taken for _buf between requests (a head)
        self._answer_held = 0  # taken by the request whose answer is still leaving
        self._body_need = 0
        self._skip_left = 0  # body bytes still to drop
        self._body_waiter: asyncio.Future | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._head_timer: asyncio.TimerHandle | None = None  # request.timeout.ms for a head begun
        self._linger_timer: asyncio.TimerHandle | None = None  # after a 413: closed when it fires
        self._discarding = False  # answered and closing: whatever comes is dropped
        self._paused = False  # reading paused by us (flow control)
        self._write_paused = False  # the answer has not all left yet (a slow reader)
        self._closed = False

    # -- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.ip = str(peer[0]) if isinstance(peer, (tuple, list)) else str(peer)
        self.remote = self.ip if isinstance(peer, (tuple, list)) else ""
        self.host_scheme = "https" if transport.get_extra_info("sslcontext") is not None else "http"
        if not self.server.broker.limits.admit(HTTP_LISTENER, self.ip):
            self._closed = True
            transport.abort()  # as Kafka: closed at once, nothing read
            return
        self._admitted = True
        self.server._connections.add(self)
        # told (pause_writing / resume_writing) as soon as an answer does not leave at once,
        # and once all of it has: its bytes are held in the budget until then
        self.transport.set_write_buffer_limits(high=0)
        self._arm_idle()

    def data_received(self, data: bytes) -> None:
        if self._closed or self._discarding:
            return
        if self._skip_left:  # the body of a request answered without it: dropped as it comes
            n = min(len(data), self._skip_left)
            self._skip_left -= n
            data = data[n:]
            if not self._skip_left and self._body_waiter is not None and not self._body_waiter.done():
                self._body_waiter.set_result(None)
        self._buf += data
        if not self._busy:
            self._hold_buffer()
        if self._body_waiter is not None:
            if not self._skip_left and len(self._buf) >= self._body_need and not self._body_waiter.done():
                self._body_waiter.set_result(None)
        elif not self._busy:
            self._next_request()
        elif len(self._buf) > MAX_HEAD_BYTES and not self._paused and self.transport is not None:
            self._paused = True  # a client sending ahead of its answers waits in the socket
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._disarm_idle()
        self._disarm_head()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        if self._body_waiter is not None and not self._body_waiter.done():
            self._body_waiter.set_exception(ConnectionResetError("the client went away"))
        self._buf = bytearray()
        self._hold_buffer()
        self._answer_sent()
        self.server._connections.discard(self)
        if self._admitted:
            self._admitted = False
            self.server.broker.limits.release(HTTP_LISTENER, self.ip)

    def pause_writing(self) -> None:
        self._write_paused = True  # the answer did not all leave at once: the client reads slowly

    def resume_writing(self) -> None:
        self._write_paused = False  # all of it has left
        self._answer_sent()
        if not self._busy and not self._closed:
            self._go_on()

    def close(self) -> None:
        if self.transport is not None and not self._closed:
            self.transport.abort()

    # -- queued.max.request.bytes ---------------------------------------------------------
    def _hold_buffer(self) -> None:
        """Count the bytes waiting in ``_buf`` between requests (a head as it arrives) in the
        budget.  While a request is served, what its connection has buffered (its body, at
        most a head's worth beyond) is the request's: it took its body's size."""
        want = len(self._buf)
        if want != self._buf_held:
            memory = self.server.broker.memory
            if want > self._buf_held:
                self._buf_held += memory.take(want - self._buf_held)
            else:
                memory.release(self._buf_held - want)
                self._buf_held = want

    def _answer_sent(self) -> None:
        """The last answer has left: give back what its request held."""
        if self._answer_held:
            held, self._answer_held = self._answer_held, 0
            self.server.broker.memory.release(held)

    # -- requests -----------------------------------------------------------------------
    def _next_request(self) -> None:
        end = self._buf.find(HEAD_END)
        if end < 0:
            if len(self._buf) > MAX_HEAD_BYTES:
                self._hand_over()  # aiohttp answers an oversized head
            elif self._buf and self._head_timer is None:  # request.timeout.ms from its first byte
                loop = asyncio.get_running_loop()
                self._head_timer = loop.call_at(self.server.policy.arrival_deadline(loop.time()),
                                                self._head_timed_out)
            self._hold_buffer()
            return
        head = parse_request_head(self._buf[:end + len(HEAD_END)])
        if head is None:
            self._hand_over()
            return
        del self._buf[:end + len(HEAD_END)]
        self._release_buffer_hold()
        self._disarm_idle()
        self._disarm_head()
        self._busy = True
        task = asyncio.get_running_loop().create_task(self._serve_or_close(head))
        self.server.tasks.add(task)
        task.add_done_callback(self.server.tasks.discard)

    def _hand_over(self) -> None:
        assert self.transport is not None
        self._disarm_idle()
        self._disarm_head()
        self._closed = True  # for this object: aiohttp's handler has the connection now
        self.server._connections.discard(self)
        self._admitted = False  # released by the aiohttp handler's end
        data, self._buf = bytes(self._buf), bytearray()
        self._hold_buffer()
        self.server.hand_over(self.transport, self.ip, data)

    async def _serve_or_close(self, head: RequestHead) -> None:
        try:
            await self._serve(head)
        except Exception:  # noqa: BLE001 - the request layer answers its own errors; this is a bug here
            log.exception("msgpack/HTTP request %s from %s failed; closing its connection", head.path, self.remote)
            self.close()

    async def _serve(self, head: RequestHead) -> None:
        server, broker = self.server, self.server.broker
        current_listener.set(self.listener)
        keep_alive = head.keep_alive
        refused = http_guard.refused("POST", head.path, head.headers, head.headers.get("host") or "",
                                     self.host_scheme, head.content_type, server.hosts)
        if refused is not None:
            broker.metrics.count(REQUEST_ERRORS, error="INVALID_REQUEST")
            if await self._skip(head.content_length):
                self._answer(refused[0], refused[1].encode(), "text/plain; charset=utf-8", False)
            return
        n = head.content_length
        if server.policy.request_size(n) is Size.TOO_LARGE:  # answered now, before any of the body is read
            self._refuse_too_large(n)
            return
        assert self.transport is not None
        held = broker.memory.try_acquire(n)
        if held is None:
            self.transport.pause_reading()  # queued.max.request.bytes: not read until it fits
            try:
                held = await broker.memory.acquire(n)
            finally:
                if not self._closed and not self._paused:
                    self.transport.resume_reading()
        handed = False
        try:
            try:
                body = await self._body(n)
            except TimeoutError:  # the body stopped arriving: close, as the Kafka listener does
                broker.metrics.count(CONNECTIONS_IDLE_CLOSED, listener=HTTP_LISTENER)
                self.close()
                return
            except ConnectionError:
                return  # the client went away
            cert = self.transport.get_extra_info("peercert")
            packed, failed_login = await server.answer_rpc(head.api, body, self.remote, head.headers, cert)
            del body  # emptied by the request layer: the answer is what is held now
            held += broker.memory.take(len(packed))
            if failed_login:  # each guess costs the delay and a new connection
                await asyncio.sleep(server.policy.failed_login_delay_s)
                keep_alive = False
            self._answer_held += held  # given back once the answer has left, or the connection is gone
            handed = True
        finally:
            if not handed:
                broker.memory.release(held)
        self._answer(200, packed, CONTENT_TYPE, keep_alive)
        del packed
        if not self._write_paused:
            self._answer_sent()
        if keep_alive and not self._closed:
            self._busy = False
            if self._write_paused:  # a client not reading its answers: nothing more is read from it
                if not self._paused:
                    self._paused = True
                    self.transport.pause_reading()
                return  # resume_writing() goes on
            self._go_on()

    def _release_buffer_hold(self) -> None:
        if self._buf_held:
            self.server.broker.memory.release(self._buf_held)
            self._buf_held = 0

    def _refuse_too_large(self, n: int) -> None:
        """413 with INVALID_REQUEST at once; the connection is closed for writing and what
        the client still sends is dropped as it comes (so that it reads the answer rather
        than a reset), until it closes or request.timeout.ms passes."""
        transport = self.transport
        assert transport is not None
        self._buf = bytearray()
        self._discarding = True
        transport.write(answer(413, self.server.too_large(n), CONTENT_TYPE, False))
        if transport.can_write_eof():
            transport.write_eof()
            loop = asyncio.get_running_loop()
            self._linger_timer = loop.call_at(self.server.policy.arrival_deadline(loop.time()), self.close)
        else:  # TLS cannot half-close
            self._closed = True
            transport.close()

    def _go_on(self) -> None:
        """Ready for the next request: read again, and serve one already buffered."""
        assert self.transport is not None
        if self._paused:
            self._paused = False
            self.transport.resume_reading()
        self._arm_idle()
        if self._buf:
            self._next_request()  # a pipelined request

    async def _skip(self, n: int) -> bool:
        """Drop the next ``n`` bytes (a body answered without being read) within
        request.timeout.ms, so that the client, still sending it, gets its answer rather than
        a reset connection; False when they did not come (the connection is then closed)."""
        dropped = min(n, len(self._buf))
        del self._buf[:dropped]
        self._skip_left = n - dropped
        if not self._skip_left:
            return True
        if self._closed:
            return False
        loop = asyncio.get_running_loop()
        self._body_waiter = loop.create_future()
        try:
            async with asyncio.timeout_at(self.server.policy.arrival_deadline(loop.time())):
                await self._body_waiter
            return True
        except TimeoutError:
            self.server.broker.metrics.count(CONNECTIONS_IDLE_CLOSED, listener=HTTP_LISTENER)
            self.close()
            return False
        except ConnectionError:
            return False
        finally:
            self._body_waiter = None

    async def _body(self, n: int) -> bytearray:
        """The next ``n`` bytes, within request.timeout.ms: the buffer itself when it holds
        just the body (no copy)."""
        if len(self._buf) < n:
            if self._closed:
                raise ConnectionResetError("the client went away")
            self._body_need = n
            loop = asyncio.get_running_loop()
            self._body_waiter = loop.create_future()
            try:
                async with asyncio.timeout_at(self.server.policy.arrival_deadline(loop.time())):
                    await self._body_waiter
            finally:
                self._body_waiter = None
        if len(self._buf) == n:
            body, self._buf = self._buf, bytearray()
            return body
        body = self._buf[:n]
        del self._buf[:n]
        return body

    def _answer(self, status: int, body: bytes, content_type: str, keep_alive: bool) -> None:
        """Write an answer; without keep-alive the connection closes after it."""
        transport = self.transport
        if transport is None or self._closed or transport.is_closing():
            return
        transport.write(answer(status, body, content_type, keep_alive))
        if not keep_alive:
            self._closed = True
            transport.close()

    # -- request.timeout.ms for a head ----------------------------------------------------------
    def _disarm_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        """A head begun request.timeout.ms ago is still not complete (a trickling client):
        408, and the connection is closed."""
        self._head_timer = None
        if self._closed or self._busy:
            return
        self.server.broker.metrics.count(CONNECTIONS_IDLE_CLOSED, listener=HTTP_LISTENER)
        text = (f"REQUEST_TIMED_OUT: the request head did not arrive within request.timeout.ms="
                f"{round(self.server.policy.request_timeout_s * 1000)}\n")
        self._answer(408, text.encode(), "text/plain; charset=utf-8", False)

    # -- connections.max.idle.ms ------------------------------------------------------------
    def _arm_idle(self) -> None:
        loop = asyncio.get_running_loop()
        self._idle_timer = loop.call_at(self.server.policy.idle_deadline(loop.time()), self._idle)

    def _disarm_idle(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _idle(self) -> None:
        self._idle_timer = None
        if not self._busy:
            self.server.broker.metrics.count(CONNECTIONS_IDLE_CLOSED, listener=HTTP_LISTENER)
            self.close()
