"""Kept-alive HTTP/1.1 connections to brokers, pooled per (host, port, scheme).

The lean client under :func:`minikafka.rpc.call`: one ``POST`` at a time on a connection,
written in one piece (request line, headers, body) and answered with a Content-Length
body (framing in :mod:`minikafka.protocol.rpc.http1`).  A connection whose answer is
complete goes back to its pool unless the server said ``Connection: close``; one that
failed, timed out or was cancelled mid-request is closed.  A pooled connection the
server closed while it sat idle (``connections.max.idle.ms``) is noticed before it is
used again (its socket is readable: end of stream) and replaced by a new one, so that
case never surfaces as an error.  The pool owns every connection it made and closes
them all in :meth:`HttpPool.close`.
"""
from __future__ import annotations

import asyncio
import select
import socket
import ssl
from typing import Mapping

from .protocol.rpc.http1 import HEAD_END, MAX_HEAD_BYTES, HttpFramingError, ResponseHead, header_lines, \
    parse_response_head, request_head

MAX_IDLE_PER_HOST = 64  # idle connections kept per (host, port, scheme); more are closed


class ConnectionClosedError(ConnectionError):
    """The server closed the connection before its answer was complete."""


class PoolClosedError(ConnectionError):
    """A call on a pool that was closed (its owner is shutting down)."""


class CannotConnectError(OSError):
    """The TCP connection could not be made (refused, unreachable, ...)."""


class _Connection(asyncio.Protocol):
    """One socket and the answer being read on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buf = bytearray()
        self._head: ResponseHead | None = None
        self._waiter: asyncio.Future | None = None

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():  # bytes nobody asked for: this connection is unusable
            self.close()
            return
        self._buf += data
        if self._head is None:
            end = self._buf.find(HEAD_END)
            if end < 0:
                if len(self._buf) > MAX_HEAD_BYTES:
                    waiter.set_exception(HttpFramingError(f"answer head longer than {MAX_HEAD_BYTES} bytes"))
                return
            try:
                self._head = parse_response_head(self._buf[:end + len(HEAD_END)])
            except HttpFramingError as exc:
                waiter.set_exception(exc)
                return
            del self._buf[:end + len(HEAD_END)]
        n = self._head.content_length
        if len(self._buf) >= n:
            if len(self._buf) > n:  # bytes past the answer: not HTTP/1.1 as we speak it
                waiter.set_exception(HttpFramingError("bytes after the answer's body"))
                return
            body = bytes(self._buf)
            self._buf.clear()
            waiter.set_result((self._head, body))

    def eof_received(self) -> bool:
        self._lost(None)
        return False  # let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(exc)

    def _lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc if exc is not None else ConnectionClosedError("the broker closed the connection"))

    # the pool's side
    def stale(self) -> bool:
        """True when the connection cannot carry a request: closed, or (idle) its socket
        is readable, which for an idle connection means end of stream or stray bytes."""
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
            return True
        sock = transport.get_extra_info("socket")
        if sock is None:
            return False
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))

    async def exchange(self, data: bytes) -> tuple[ResponseHead, bytes]:
        """Write ``data`` (one request) and wait for the whole answer."""
        assert self.transport is not None
        waiter = asyncio.get_running_loop().create_future()
        self._waiter, self._head = waiter, None
        self._buf.clear()
        try:
            self.transport.write(data)
            return await waiter
        finally:
            self._waiter = None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class HttpPool:
    """Kept-alive connections sending ``headers`` with every request; ``ssl_context``
    serves ``https`` (the default context when None)."""

    def __init__(self, headers: Mapping[str, str] | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        self._fixed = header_lines(headers or {})
        self._ssl = ssl_context
        self._idle: dict[tuple[str, int, str], list[_Connection]] = {}
        self._busy: set[_Connection] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def post(self, host: str, port: int, scheme: str, path: str, body: bytes) -> tuple[int, bytes]:
        """``POST body`` to ``path``; the answer's status and body.  Raises OSError
        (connect, reset, end of stream), ``ssl.SSLError`` or :class:`HttpFramingError`."""
        if self._closed:
            raise PoolClosedError("the connection pool is closed")
        key = (host, port, scheme)
        conn = self._take_idle(key)
        if conn is None:
            conn = await self._connect(host, port, scheme)
        self._busy.add(conn)
        reusable = False
        try:
            head, answer = await conn.exchange(request_head(path, host, port, self._fixed, len(body)) + body)
            reusable = head.keep_alive
            return head.status, answer
        finally:
            self._busy.discard(conn)
            if reusable and not conn.closed and not self._closed:
                idle = self._idle.setdefault(key, [])
                if len(idle) < MAX_IDLE_PER_HOST:
                    idle.append(conn)
                else:
                    conn.close()
            else:
                conn.close()

    def _take_idle(self, key: tuple[str, int, str]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.stale():
                return conn
            conn.close()
        return None

    async def _connect(self, host: str, port: int, scheme: str) -> _Connection:
        if scheme not in ("http", "https"):
            raise ValueError(f"unknown scheme {scheme!r}")
        tls = (self._ssl or ssl.create_default_context()) if scheme == "https" else None
        try:
            _, conn = await asyncio.get_running_loop().create_connection(
                _Connection, host, port, ssl=tls, server_hostname=host if tls else None)
        except (socket.gaierror, ssl.SSLError, ssl.CertificateError, TimeoutError):
            raise
        except OSError as exc:  # refused, unreachable, or several addresses each failing
            if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)) and tls:
                raise  # the TLS handshake was cut off
            raise CannotConnectError(exc.errno, exc.strerror or str(exc)) from None
        if self._closed:  # closed while connecting
            conn.close()
            raise PoolClosedError("the connection pool is closed")
        return conn

    async def close(self) -> None:
        """Close every connection, idle or in use (a request in flight fails)."""
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        for conn in list(self._busy):
            conn.close()
        self._busy.clear()
