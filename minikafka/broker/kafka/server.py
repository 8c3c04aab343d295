"""The Kafka listener's TCP side: accept connections, read frames, answer in order.

Each connection is served by one task owned by :class:`KafkaServer`.  Requests on a
connection are handled in the order they arrived and answered in that order, so a
client may pipeline.  A Kafka broker mutes a connection while one of its requests is
in flight; here an acks=all produce releases its connection once its records are
appended, so the next produce requests of a pipelining client join the same
replication round instead of waiting one round each (see :class:`_Answers`).  A frame
larger than ``socket.request.max.bytes``, a frame that does not decode, or an API or
version this broker does not serve closes the connection (an ApiVersions request of an
unknown version is answered instead, with UNSUPPORTED_VERSION and the supported
ranges); the broker itself never stops.

A listener whose protocol is SSL or SASL_SSL (``listener.security.protocol.map``)
serves TLS.  On a SASL_PLAINTEXT or SASL_SSL listener a client must authenticate
(SaslHandshake, then SaslAuthenticate or, after SaslHandshake v0, a bare token frame)
before anything but ApiVersions; any other request first closes the connection, as
Kafka does.  The connection's principal is the request principal of every handler.  A
failed authentication is answered after ``connection.failed.authentication.delay.ms``
and closes the connection, so each password guess costs a connection and that delay.

Limits (the msgpack listener's too: one :class:`~..connection_policy.ConnectionPolicy`
decides, :mod:`..limits` counts): a connection beyond
``max.connections`` or ``max.connections.per.ip`` is closed as soon as it is accepted;
one without a new request for ``connections.max.idle.ms`` is closed; a frame whose
bytes stop arriving (not all there ``request.timeout.ms`` after its size) closes its
connection, and so does a size prefix begun and not complete ``request.timeout.ms`` after
its first byte; and a frame is read only once its size fits in
``queued.max.request.bytes`` with every other request being read, handled or answered
(until then the connection waits).  A request holds its frame's size in the budget until
its answer has been written (an acks=all produce until its commit is answered), and the
bytes of an answer still in the socket's buffer until they drain.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections import deque
from typing import Any, Coroutine

from ...config import BrokerConfig
from ...protocol.kafka import frames
from ...protocol.kafka.apis import API_VERSIONS, PRODUCE, KafkaApi
from ...protocol.kafka.frames import RequestHeader
from ...protocol.kafka.wire import MalformedFrame
from ...auth.users import ANONYMOUS, cert_principal
from ...metric_names import (
    AUTHENTICATION_FAILURES,
    CONNECTIONS_IDLE_CLOSED,
    KAFKA_FRAMES_REJECTED,
    KAFKA_UNSUPPORTED_REQUESTS,
)
from ...errors import KafkaError
from ..connection_policy import ConnectionPolicy, Size
from ..limits import ConnectionLimits, RequestMemory
from ..metrics import Metrics
from ..purgatory import on_parking
from ..security import Security
from .connection import Connection
from .handlers import PRE_AUTHENTICATION_APIS, KafkaHandlers

log = logging.getLogger(__name__)


class KafkaServer:
    """The Kafka listener(s) of one broker and their connection tasks."""

    def __init__(self, config: BrokerConfig, security: Security, metrics: Metrics, handlers: KafkaHandlers,
                 policy: ConnectionPolicy, limits: ConnectionLimits, memory: RequestMemory) -> None:
        self.config = config
        self.policy = policy  # connections, idle, frame deadlines and sizes, failed logins
        self.limits = limits
        self.memory = memory
        self.security = security
        self.metrics = metrics
        self.handlers = handlers
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[asyncio.Task] = set()

    def endpoints(self) -> list[tuple[str, int, str]]:
        """``(host, port, listener name)`` of every Kafka socket this broker should listen on."""
        cfg = self.config
        out = []
        if cfg.kafka_listen_port is not None:
            out.append((cfg.kafka_listen_host or cfg.listen_host, cfg.kafka_listen_port, "KAFKA"))
        if cfg.kafka_external_listen_port is not None:
            out.append((cfg.kafka_external_listen_host or cfg.kafka_listen_host or cfg.listen_host,
                        cfg.kafka_external_listen_port, "KAFKA_EXTERNAL"))
        return out

    async def start(self) -> None:
        security = self.security
        for host, port, listener in self.endpoints():
            tls = security.tls(listener)
            server = await asyncio.start_server(
                functools.partial(self._accept, listener=listener), host, port, reuse_address=True,
                ssl=security.server_ssl() if tls else None,
                # a TLS handshake that stalls holds a descriptor before any limit sees it
                ssl_handshake_timeout=self.policy.request_timeout_s if tls else None)
            self._servers.append(server)

    async def stop(self) -> None:
        """Stop accepting, then end every open connection."""
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener: str) -> None:
        peer = writer.get_extra_info("peername")
        ip = str(peer[0]) if isinstance(peer, (tuple, list)) else str(peer)
        if not self.limits.admit(listener, ip):
            writer.transport.abort()  # as Kafka: closed at once, nothing read
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        conn = Connection(external=listener == "KAFKA_EXTERNAL",
                          peer=f"{peer[0]}:{peer[1]}" if isinstance(peer, (tuple, list)) else str(peer),
                          listener=listener, sasl=self.security.sasl(listener),
                          principal=cert_principal(writer.get_extra_info("peercert")) or ANONYMOUS)
        try:
            await self._serve(reader, writer, conn)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except TimeoutError:  # idle, or a frame whose bytes stopped arriving
            self.metrics.count(CONNECTIONS_IDLE_CLOSED, listener=listener)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("Kafka connection from %s failed", conn.peer)
        finally:
            self._connections.discard(task)
            self.limits.release(listener, ip)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass
            except Exception:  # noqa: BLE001 - closing a broken socket must not raise
                pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
        answers = _Answers(writer, conn)
        try:
            await self._serve_requests(reader, writer, conn, answers)
        finally:
            await answers.close()

    async def _serve_requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection,
                              answers: "_Answers") -> None:
        metrics = self.metrics
        policy = self.policy
        loop = asyncio.get_running_loop()
        while True:
            async with asyncio.timeout_at(policy.idle_deadline(loop.time())) as deadline:  # connections.max.idle.ms
                prefix = await reader.read(4)
                if len(prefix) < 4:  # the size trickles in: request.timeout.ms from its first byte
                    if not prefix:
                        raise asyncio.IncompleteReadError(prefix, 4)
                    deadline.reschedule(policy.arrival_deadline(loop.time()))
                    prefix += await reader.readexactly(4 - len(prefix))
            size = int.from_bytes(prefix, "big", signed=True)
            if conn.raw_sasl_next and policy.request_size(size) is Size.READ:
                # after SaslHandshake v0 the client sends the bare SASL/PLAIN token
                async with asyncio.timeout_at(policy.arrival_deadline(loop.time())):
                    token = await reader.readexactly(size)
                await self._raw_sasl(token, writer, conn)
                continue
            if policy.request_size(size, smallest=frames.SMALLEST_REQUEST) is not Size.READ:
                log.warning("closing Kafka connection from %s: frame of %d bytes (must be %d..%d, "
                            "socket.request.max.bytes)", conn.peer, size, frames.SMALLEST_REQUEST,
                            policy.max_request_bytes)
                metrics.count(KAFKA_FRAMES_REJECTED)
                return
            # queued.max.request.bytes: wait (muted) until it fits; held until its answer is written
            hold = _Held(self.memory, await self.memory.acquire(size))
            try:
                # the rest of the frame: request.timeout.ms
                async with asyncio.timeout_at(policy.arrival_deadline(loop.time())):
                    payload = await _read_frame(reader, size)
                if not await self._handle_frame(payload, writer, conn, answers, hold):
                    return
            finally:
                hold.release()

    async def _handle_frame(self, payload: bytes | bytearray, writer: asyncio.StreamWriter, conn: Connection,
                            answers: "_Answers", hold: "_Held") -> bool:
        """Decode and handle one frame; False when the connection is to be closed.  A
        bytearray ``payload`` is emptied once decoded (its memory given back while the
        request is handled); ``hold`` is the request's budget, which an acks=all produce
        takes along until its answer is written."""
        metrics = self.metrics
        try:
            try:
                header, api, body = frames.decode_request(payload)
            finally:
                if isinstance(payload, bytearray):
                    with contextlib.suppress(BufferError):  # still viewed by a decoding error's frames
                        payload.clear()
        except frames.UnsupportedRequest as exc:
            if exc.header.api_key == API_VERSIONS.key:
                answers.add_bytes(frames.api_versions_error(exc.header.correlation_id))
                await writer.drain()
                return True
            log.warning("closing Kafka connection from %s (client %r): %s", conn.peer, exc.header.client_id, exc)
            metrics.count(KAFKA_UNSUPPORTED_REQUESTS)
            return False
        except MalformedFrame as exc:
            log.warning("closing Kafka connection from %s: malformed request: %s", conn.peer, exc)
            metrics.count(KAFKA_FRAMES_REJECTED)
            return False
        conn.client_id = header.client_id
        if conn.sasl and not conn.authenticated and api.key not in PRE_AUTHENTICATION_APIS:
            log.warning("closing Kafka connection from %s (client %r): %s before SASL authentication on the "
                        "%s listener (ILLEGAL_SASL_STATE)", conn.peer, header.client_id, api.name, conn.listener)
            metrics.count(AUTHENTICATION_FAILURES)
            return False
        if api.key == PRODUCE.key and body.get("acks") == -1:  # may wait for its commit
            await answers.run_until_parked(api, header, self.handlers.handle(api, header, body, conn), hold)
        else:
            response = await self.handlers.handle(api, header, body, conn)
            del body
            if conn.close_after_answer:  # a failed authentication: connection.failed.authentication.delay.ms
                await asyncio.sleep(self.policy.failed_login_delay_s)
            answers.add(api, header, response)
            del response
            # the answer's bytes still in the transport are held too, until drained
            hold.take(writer.transport.get_write_buffer_size())
        if conn.close_after or conn.close_after_answer:
            # earlier answers leave first; a failed authentication is answered, then closed
            await answers.written()
            return False
        await writer.drain()
        return True

    async def _raw_sasl(self, token: bytes, writer: asyncio.StreamWriter, conn: Connection) -> None:
        """SaslHandshake v0's next frame: the bare token; success is an empty frame, failure
        closes the connection (Kafka's SaslServerAuthenticator)."""
        conn.raw_sasl_next = False
        try:
            conn.authenticate(self.security.plain(token))
        except KafkaError as exc:
            log.warning("closing Kafka connection from %s: %s", conn.peer, exc)
            await asyncio.sleep(self.policy.failed_login_delay_s)  # connection.failed.authentication.delay.ms
            raise ConnectionError("SASL authentication failed") from None
        writer.write((0).to_bytes(4, "big"))
        await writer.drain()


async def _read_frame(reader: asyncio.StreamReader, size: int) -> bytes | bytearray:
    """The next ``size`` bytes.  A large frame is read piece by piece into one buffer (the
    stream's own buffer never holds it whole besides)."""
    if size <= _FRAME_PIECE:
        return await reader.readexactly(size)
    payload = bytearray(size)
    with memoryview(payload) as view:
        got = 0
        while got < size:
            piece = await reader.read(min(_FRAME_PIECE, size - got))
            if not piece:
                raise asyncio.IncompleteReadError(bytes(view[:got]), size)
            view[got:got + len(piece)] = piece
            got += len(piece)
    return payload


_FRAME_PIECE = 1 << 20


class _Held:
    """The queued.max.request.bytes one request holds, given back once (when its answer has
    been written, or the connection ends)."""

    __slots__ = ("memory", "size", "parked")

    def __init__(self, memory: RequestMemory, size: int) -> None:
        self.memory = memory
        self.size = size
        self.parked = False  # an acks=all produce's task has it: released when that task ends

    def take(self, size: int) -> None:
        """More bytes now held by the request (its answer, already made)."""
        if size > 0:
            self.size += self.memory.take(size)

    def release(self, _: object = None) -> None:
        if self.parked and _ is None:
            return  # the parked task's end gives it back
        size, self.size = self.size, 0
        if size:
            self.memory.release(size)


# An acks=all produce waits for its commit; while it does, its connection's next requests
# are read and handled (their answers still leave in order).  At most this many wait at once.
MAX_PARKED_ANSWERS = 100


class _Answers:
    """A connection's answers, written in the order of its requests.

    A Kafka broker handles one request of a connection at a time.  Here an acks=all
    produce lets the next request start as soon as its records are appended (it calls
    :func:`~minikafka.broker.purgatory.parking`), so a client with several produce
    requests in flight on one connection (librdkafka, Kafka's Java producer) has them
    all appended and replicated together instead of one replication round trip each.
    Each request is still applied in arrival order, and answers leave in that order.
    The waiting produce requests are tasks owned by this object, cancelled with the
    connection."""

    def __init__(self, writer: asyncio.StreamWriter, conn: Connection) -> None:
        self._writer = writer
        self._conn = conn
        self._queue: deque[tuple[KafkaApi | None, RequestHeader | None, asyncio.Future]] = deque()
        self._tasks: set[asyncio.Task] = set()

    def add(self, api: KafkaApi, header: RequestHeader, response: dict | None) -> None:
        """A handled request's answer (None: no answer), written now or after those before it."""
        if not self._queue:
            self._write(api, header, response)
            return
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(response)
        self._queue.append((api, header, fut))

    def add_bytes(self, frame: bytes) -> None:
        """An answer already framed (an ApiVersions of an unknown version)."""
        if not self._queue:
            self._writer.write(frame)
            return
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(frame)
        self._queue.append((None, None, fut))

    async def run_until_parked(self, api: KafkaApi, header: RequestHeader,
                               handling: Coroutine[Any, Any, dict | None], hold: _Held | None = None) -> None:
        """Run ``handling`` until it is done or only waits (it called ``parking()``); its
        answer is written when it is ready and every earlier answer has been written.
        ``hold``, the request's budget, is given back when ``handling`` ends."""
        loop = asyncio.get_running_loop()
        if len(self._queue) >= MAX_PARKED_ANSWERS:
            await asyncio.wait([self._queue[0][2]])
            self._flush()
        parked = loop.create_future()

        def park() -> None:
            if not parked.done():
                parked.set_result(None)

        def done(_: asyncio.Future) -> None:
            park()
            self._flush()

        ctx = contextvars.copy_context()
        ctx.run(on_parking.set, park)
        task = loop.create_task(handling, context=ctx)
        if hold is not None:
            hold.parked = True
            task.add_done_callback(hold.release)
        self._tasks.add(task)
        self._queue.append((api, header, task))
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(done)
        await parked

    async def written(self) -> None:
        """Wait until every answer so far has been written."""
        while self._queue:
            await asyncio.wait([self._queue[0][2]])
            self._flush()

    def cancel(self) -> None:
        """The connection ends: requests still waiting get no answer."""
        for _, _, fut in self._queue:
            fut.cancel()
        self._queue.clear()

    async def close(self) -> None:
        """Cancel what still waits and wait until those tasks have ended."""
        self.cancel()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _flush(self) -> None:
        queue = self._queue
        while queue and queue[0][2].done():
            api, header, fut = queue.popleft()
            if fut.cancelled():
                self.cancel()
                return
            response = fut.result()
            if api is None or header is None:
                self._writer.write(response)
            else:
                self._write(api, header, response)
                if response is None and self._conn.close_after:
                    self.cancel()
                    self._writer.close()  # the connection's reader ends on the closed socket
                    return

    def _write(self, api: KafkaApi, header: RequestHeader, response: dict | None) -> None:
        if response is None or self._writer.is_closing():
            return  # Produce with acks=0 gets no answer
        self._writer.write(frames.encode_response(api, header.api_version, header.correlation_id, response))
