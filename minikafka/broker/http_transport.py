"""The real transport: the broker's aiohttp server and its client session.

``POST /v1/<api>`` bodies go to :meth:`~.served.ServedBroker.dispatch`; the dashboard's routes, the
external listener and the Kafka binary-protocol listener start here too.  Calls to other
brokers go through one aiohttp session carrying the cluster credential.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import aiohttp
from aiohttp import web

from ..config import BrokerConfig
from ..errors import InvalidRequestError
from ..metric_names import REQUEST_ERRORS
from ..protocol.rpc import codec, http
from ..rpc import call
from . import cluster_auth, http_guard
from .listeners import current_listener

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
        self.session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self._broker: "ServedBroker | None" = None

    def _session(self) -> aiohttp.ClientSession:
        if self.session is None:
            secret = self.config.cluster_secret
            self.session = aiohttp.ClientSession(
                headers={cluster_auth.CLUSTER_CREDENTIAL_HEADER: secret} if secret else None)
        return self.session

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        return await call(self._session(), host, port, api, body, timeout_s)

    async def serve(self, broker: "ServedBroker") -> None:
        """Listen on the broker's listeners: msgpack API and dashboard, external, Kafka."""
        self._broker = broker
        self._session()
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
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.listen_host, self.config.listen_port, reuse_address=True)
        await site.start()
        security = broker.security
        await broker.listeners.start_external(self._runner, security.server_ssl() if security.tls("EXTERNAL") else None)
        await broker.kafka.start()

    async def handle(self, request: web.Request) -> web.Response:
        broker = self._broker
        assert broker is not None
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            exc = InvalidRequestError(
                f"request body exceeds socket.request.max.bytes={self.config.get('socket.request.max.bytes')}")
            broker.metrics.count(REQUEST_ERRORS, error=exc.code.name)
            return web.Response(body=codec.pack(codec.error_response(exc)), content_type=http.CONTENT_TYPE)
        listener = current_listener.get()
        answer = await broker.dispatch(
            request.match_info["api"], body, remote=request.remote or "",
            credential=request.headers.get(cluster_auth.CLUSTER_CREDENTIAL_HEADER),
            principal=lambda: broker.security.http_principal(listener, request.headers, peercert(request)))
        return web.Response(body=answer, content_type=http.CONTENT_TYPE)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self.session is not None:
            await self.session.close()
