"""The real transport: the broker's aiohttp server, and its pool of connections to other brokers.

``POST /v1/<api>`` bodies go to :meth:`~.served.ServedBroker.dispatch`; the dashboard's routes, the
external listener and the Kafka binary-protocol listener start here too.  Calls to other
brokers go through one :class:`~minikafka.http_pool.HttpPool` of kept-alive connections
carrying the cluster credential.

The HTTP listeners share the Kafka listener's limits (:mod:`.limits`): a connection
beyond ``max.connections`` or ``max.connections.per.ip`` is closed as soon as it is
accepted; one without a request for ``connections.max.idle.ms`` is closed (aiohttp's
keep-alive timeout); a body must arrive within ``request.timeout.ms`` and is read only
once its Content-Length fits in ``queued.max.request.bytes``; its bytes are given back
when the request ends, also when the client went away mid-upload.  A failed HTTP Basic
login is answered after ``connection.failed.authentication.delay.ms`` and closes the
connection.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..config import BrokerConfig
from ..errors import InvalidRequestError, SaslAuthenticationFailedError
from ..metric_names import CONNECTIONS_IDLE_CLOSED, REQUEST_ERRORS
from ..protocol.rpc import codec, http
from ..http_pool import HttpPool
from ..rpc import call
from . import cluster_auth, http_guard
from .listeners import current_listener

if TYPE_CHECKING:
    from .served import ServedBroker

log = logging.getLogger(__name__)

HTTP_LISTENER = "HTTP"  # the listener label of the msgpack/HTTP listeners in the connection metrics


def peercert(request: web.BaseRequest) -> dict | None:
    """The TLS client certificate of the request's connection, if it sent one."""
    return request.transport.get_extra_info("peercert") if request.transport is not None else None


class HttpTransport:
    """Serves one broker over HTTP (aiohttp) and calls other brokers over HTTP."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.pool: HttpPool | None = None
        self._runner: web.AppRunner | None = None
        self._broker: "ServedBroker | None" = None

    def _pool(self) -> HttpPool:
        if self.pool is None:
            secret = self.config.cluster_secret
            self.pool = HttpPool({**http.HEADERS, **({cluster_auth.CLUSTER_CREDENTIAL_HEADER: secret} if secret else {})})
        return self.pool

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        return await call(self._pool(), host, port, api, body, timeout_s)

    async def serve(self, broker: "ServedBroker") -> None:
        """Listen on the broker's listeners: msgpack API and dashboard, external, Kafka."""
        self._broker = broker
        self._pool()
        if self.config.cluster_secret is None:
            log.warning("no cluster credential (--cluster-secret-file or MINIKAFKA_CLUSTER_SECRET): anyone who reaches "
                        "this broker's port may send it controller and replica requests")
        app = web.Application(client_max_size=self.config.get("socket.request.max.bytes"),
                              middlewares=[broker.listeners.middleware, http_guard.middleware(
                                  lambda error: broker.metrics.count(REQUEST_ERRORS, error=error))])
        app.router.add_post("/v1/{api:.*}", self.handle)  # an empty or unknown name: UNSUPPORTED_VERSION
        from ..web import setup_routes
        setup_routes(app, broker.web_view())
        self.app = app
        self._runner = web.AppRunner(app, access_log=None,
                                     keepalive_timeout=self.config.get("connections.max.idle.ms") / 1000)
        await self._runner.setup()
        self._guard_connections(self._runner.server, broker)
        site = web.TCPSite(self._runner, self.config.listen_host, self.config.listen_port, reuse_address=True)
        await site.start()
        security = broker.security
        await broker.listeners.start_external(self._runner, security.server_ssl() if security.tls("EXTERNAL") else None)
        await broker.kafka.start()

    @staticmethod
    def _guard_connections(server: web.Server, broker: "ServedBroker") -> None:
        """Count the HTTP connections in the broker's limits; close one beyond them at once."""
        admitted: dict[object, str] = {}
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler, transport: asyncio.Transport) -> None:
            made(handler, transport)
            peer = transport.get_extra_info("peername")
            ip = str(peer[0]) if isinstance(peer, (tuple, list)) else str(peer)
            if broker.limits.admit(HTTP_LISTENER, ip):
                admitted[handler] = ip
            else:
                transport.abort()

        def connection_lost(handler, exc: BaseException | None = None) -> None:
            ip = admitted.pop(handler, None)
            if ip is not None:
                broker.limits.release(HTTP_LISTENER, ip)
            lost(handler, exc)

        server.connection_made = connection_made  # type: ignore[method-assign]
        server.connection_lost = connection_lost  # type: ignore[method-assign]

    async def handle(self, request: web.Request) -> web.Response:
        broker = self._broker
        assert broker is not None
        max_bytes = self.config.get("socket.request.max.bytes")
        # queued.max.request.bytes: wait until the declared body fits (a larger one is refused by read())
        held = await broker.memory.acquire(min(request.content_length or 0, max_bytes))
        try:
            try:
                async with asyncio.timeout(self.config.get("request.timeout.ms") / 1000):
                    body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                exc = InvalidRequestError(f"request body exceeds socket.request.max.bytes={max_bytes}")
                broker.metrics.count(REQUEST_ERRORS, error=exc.code.name)
                return web.Response(body=codec.pack(codec.error_response(exc)), content_type=http.CONTENT_TYPE)
            except TimeoutError:  # the body stopped arriving: close, as the Kafka listener does
                broker.metrics.count(CONNECTIONS_IDLE_CLOSED, listener=HTTP_LISTENER)
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=408)  # not sent: the connection is gone
            listener = current_listener.get()
            cert = peercert(request)
            failed_login = False

            def principal() -> Any:
                nonlocal failed_login
                try:
                    return broker.security.http_principal(listener, request.headers, cert)
                except SaslAuthenticationFailedError:
                    failed_login = True
                    raise

            answer = await broker.dispatch(
                request.match_info["api"], body, remote=request.remote or "",
                credential=request.headers.get(cluster_auth.CLUSTER_CREDENTIAL_HEADER), principal=principal)
        finally:
            broker.memory.release(held)
        response = web.Response(body=answer, content_type=http.CONTENT_TYPE)
        if failed_login:  # each guess costs the delay and a new connection
            await asyncio.sleep(self.config.get("connection.failed.authentication.delay.ms") / 1000)
            response.force_close()
        return response

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self.pool is not None:
            await self.pool.close()
