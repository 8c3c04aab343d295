"""The real transport: the broker's HTTP listeners, and its pool of connections to other brokers.

``POST /v1/<api>`` bodies go to :meth:`~.served.ServedBroker.dispatch`, on the lean path of
:mod:`.rpc_http_server`, or through aiohttp's app on a connection handed to it (the
dashboard's routes are the app's); the external listener and the Kafka binary-protocol
listener start here too.  Calls to other brokers go through one
:class:`~minikafka.http_pool.HttpPool` of kept-alive connections carrying the cluster
credential.

The HTTP listeners keep the Kafka listener's rules, the broker's one
:class:`~.connection_policy.ConnectionPolicy`, with its counts (:mod:`.limits`): a connection
beyond ``max.connections`` or ``max.connections.per.ip`` is closed as soon as it is
accepted; one without a request for ``connections.max.idle.ms`` is closed (one handed to
aiohttp, the dashboard's, after ``request.timeout.ms``: the deadline of a request head); a
head and a body must each arrive within ``request.timeout.ms``; a body is read only once
its Content-Length fits in ``queued.max.request.bytes`` and a Content-Length past
``socket.request.max.bytes`` is answered 413 at once; its bytes, and then its answer's,
are held until the answer has been written, and given back when the request ends, also
when the client went away mid-upload.  A failed HTTP Basic
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
from .connection_policy import Size
from .listeners import EXTERNAL, INTERNAL, current_listener
from .rpc_http_server import HTTP_LISTENER, RpcHttpServer

if TYPE_CHECKING:
    from .served import ServedBroker

log = logging.getLogger(__name__)


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
        self._server: RpcHttpServer | None = None

    def _pool(self) -> HttpPool:
        if self.pool is None:
            secret = self.config.cluster_secret
            self.pool = HttpPool({**http.HEADERS, **({cluster_auth.CLUSTER_CREDENTIAL_HEADER: secret} if secret else {})})
        return self.pool

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        return await call(self._pool(), host, port, api, body, timeout_s)

    async def serve(self, broker: "ServedBroker") -> None:
        """Listen on the broker's listeners: msgpack API and dashboard, external, Kafka.
        The msgpack API's requests take the lean path (:mod:`.rpc_http_server`); the
        first other request of a connection hands it to the aiohttp app below."""
        self._broker = broker
        self._pool()
        if self.config.cluster_secret is None:
            log.warning("no cluster credential (--cluster-secret-file or MINIKAFKA_CLUSTER_SECRET): anyone who reaches "
                        "this broker's port may send it controller and replica requests")
        app = web.Application(client_max_size=broker.policy.max_request_bytes,
                              middlewares=[broker.listeners.middleware, http_guard.middleware(
                                  lambda error: broker.metrics.count(REQUEST_ERRORS, error=error),
                                  http_guard.HostAllowList.of(self.config))])
        app.router.add_post("/v1/{api:.*}", self.handle)  # an empty or unknown name: UNSUPPORTED_VERSION
        from ..web import setup_routes
        setup_routes(app, broker.web_view())
        self.app = app
        # aiohttp gets a connection from the lean path with a complete request head; between
        # its requests, and while the next head arrives, it waits at most keepalive_timeout:
        # request.timeout.ms here, the deadline of a head (a trickling client is closed)
        self._runner = web.AppRunner(app, access_log=None, keepalive_timeout=broker.policy.handed_over_keepalive_s)
        await self._runner.setup()
        self._server = RpcHttpServer(self.config, broker, self._runner.server, self.answer_rpc, self.too_large)
        await self._server.listen(self.config.listen_host, self.config.listen_port, INTERNAL)
        if broker.listeners.external_port is not None:
            security = broker.security
            await self._server.listen(self.config.external_listen_host or self.config.listen_host,
                                      broker.listeners.external_port, EXTERNAL,
                                      security.server_ssl() if security.tls("EXTERNAL") else None)
        await broker.kafka.start()

    def too_large(self, n: int) -> bytes:
        """The packed answer to a request whose body of ``n`` bytes exceeds socket.request.max.bytes."""
        assert self._broker is not None
        exc = InvalidRequestError(f"request body of {n} bytes exceeds socket.request.max.bytes="
                                  f"{self._broker.policy.max_request_bytes}")
        self._broker.metrics.count(REQUEST_ERRORS, error=exc.code.name)
        return codec.pack(codec.error_response(exc))

    async def answer_rpc(self, api: str, body: bytes, remote: str, headers: Any,
                         cert: dict | None) -> tuple[bytes, bool]:
        """The packed answer to ``POST /v1/<api>`` with ``body`` from ``remote`` on the
        current listener, and whether its login failed (the caller then answers after
        connection.failed.authentication.delay.ms and closes the connection).  Both the
        lean path and aiohttp's route answer through here."""
        broker = self._broker
        assert broker is not None
        listener = current_listener.get()
        failed_login = False

        def principal() -> Any:
            nonlocal failed_login
            try:
                return broker.security.http_principal(listener, headers, cert)
            except SaslAuthenticationFailedError:
                failed_login = True
                raise

        answer = await broker.dispatch(api, body, remote=remote,
                                       credential=headers.get(cluster_auth.CLUSTER_CREDENTIAL_HEADER),
                                       principal=principal)
        return answer, failed_login

    async def handle(self, request: web.Request) -> web.Response:
        """aiohttp's route for ``POST /v1/<api>`` on a connection it was handed."""
        broker = self._broker
        assert broker is not None
        policy = broker.policy
        declared = request.content_length or 0
        if policy.request_size(declared) is Size.TOO_LARGE:  # answered before any of the body is read
            response = web.Response(status=413, body=self.too_large(declared), content_type=http.CONTENT_TYPE)
            response.force_close()
            return response
        # queued.max.request.bytes: wait until the declared body fits (a larger one is refused by
        # read()); held, with the answer's bytes, until the answer has been written
        held = await broker.memory.acquire(declared)
        try:
            try:
                async with asyncio.timeout_at(policy.arrival_deadline(asyncio.get_running_loop().time())):
                    body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                response = web.Response(status=413, body=self.too_large(declared), content_type=http.CONTENT_TYPE)
                response.force_close()
                return response
            except TimeoutError:  # the body stopped arriving: close, as the Kafka listener does
                broker.metrics.count(CONNECTIONS_IDLE_CLOSED, listener=HTTP_LISTENER)
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=408)  # not sent: the connection is gone
            answer, failed_login = await self.answer_rpc(request.match_info["api"], body, request.remote or "",
                                                         request.headers, peercert(request))
            del body
            held += broker.memory.take(len(answer))
            response = web.Response(body=answer, content_type=http.CONTENT_TYPE)
            del answer
            if failed_login:  # each guess costs the delay and a new connection
                await asyncio.sleep(policy.failed_login_delay_s)
                response.force_close()
            await response.prepare(request)
            await response.write_eof()  # handed to the transport, its buffer drained
            return response
        finally:
            broker.memory.release(held)

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self.pool is not None:
            await self.pool.close()
