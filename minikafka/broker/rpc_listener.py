"""The msgpack/HTTP listener's codec: bytes in, the request layer, bytes out.

``POST /v1/<api>`` takes a msgpack map and answers a msgpack map (docs/protocol.md).
The body is validated against the API's schema (INVALID_REQUEST names the first bad
field), turned into the request layer's typed request, answered by its one handler, and
the typed response turned back into a map.  Every answer carries ``error_code``,
``error`` and ``message``; bad input never changes stored state and never stops the
broker: a handler's bug is answered UNKNOWN_SERVER_ERROR, an unreachable ZooKeeper the
retriable REQUEST_TIMED_OUT (:func:`.connection_policy.request_failure`, which the Kafka
listener follows too).
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable

from ..auth.acls import ANONYMOUS
from ..config import BrokerConfig
from ..errors import ClusterAuthorizationFailedError
from ..metric_names import CLUSTER_AUTHORIZATION_FAILURES, REQUEST_ERRORS
from ..protocol.rpc import codec
from ..protocol.rpc.types import DECODE_REQUEST, ENCODE_RESPONSE
from . import cluster_auth
from .apis.context import RequestContext
from .apis.layer import RequestLayer
from .connection_policy import request_failure
from .listeners import current_listener
from .metrics import Metrics
from .services import Clock

log = logging.getLogger(__name__)


class RpcListener:
    """Answers one broker's msgpack requests: what a transport calls (``dispatch``)."""

    def __init__(self, config: BrokerConfig, layer: RequestLayer, metrics: Metrics, clock: Clock) -> None:
        self.config = config
        self.layer = layer
        self.metrics = metrics
        self.clock = clock

    async def dispatch(self, api: str, body: bytes | bytearray, *, remote: str, credential: str | None,
                       principal: Callable[[], Any]) -> bytes:
        """Answer one msgpack request.  ``remote`` is the caller's address, ``credential``
        the cluster credential it sent (or None) and ``principal()`` authenticates it.
        Every outcome is an answer map, packed.  A ``bytearray`` body is emptied once
        decoded, so that its memory is given back while the request is handled (the
        caller's frames still name it)."""
        return codec.pack(await self._answer(api, body, remote, credential, principal))

    async def _answer(self, api: str, body: bytes | bytearray, remote: str, credential: str | None,
                      principal: Callable[[], Any]) -> dict:
        try:
            try:
                msg = codec.decode_request(api, body)
            finally:
                if isinstance(body, bytearray):
                    with contextlib.suppress(BufferError):  # still viewed by a decoding error's frames
                        body.clear()
            # as in Kafka, ApiVersions needs no authentication
            who = ANONYMOUS if api == "api_versions" else principal()
            if cluster_auth.needs_cluster_action(api, msg) and not cluster_auth.allowed(self.config.cluster_secret, credential):
                self.metrics.count(CLUSTER_AUTHORIZATION_FAILURES)
                log.warning("refused %s from %s: no valid cluster credential", api, remote)
                raise ClusterAuthorizationFailedError(
                    f"{api} is a controller or replica request: it needs the cluster credential")
            ctx = RequestContext(listener=current_listener.get(), principal=who, client_host=remote)
            started = self.clock.monotonic()
            resp = ENCODE_RESPONSE[api](await self.layer.handlers[api](DECODE_REQUEST[api](msg), ctx))
            self.metrics.observe_request(api, self.clock.monotonic() - started)
            return resp
        except Exception as exc:  # noqa: BLE001 - answered as the connection policy says; the broker keeps serving
            failure = request_failure(api, exc)
            if failure.bug:
                log.exception("%s failed", api)
            else:
                self.metrics.count(REQUEST_ERRORS, error=failure.error.code.name)
            return codec.error_response(failure.error)
