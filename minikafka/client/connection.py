"""The client side of the broker protocol: ``POST /v1/<api>`` with msgpack bodies.

One :class:`Connection` (one ``aiohttp.ClientSession``) per client; the calls
themselves are :func:`minikafka.rpc.call`.  A non-zero top-level ``error_code`` in an
answer is raised as the registered exception.  Failures of the transport itself are
raised as :class:`BrokerUnreachableError` (a NETWORK_EXCEPTION) or
:class:`NoResponseError` (a REQUEST_TIMED_OUT); both are indefinite, a write may have
happened.  Being subclasses of the registered classes, they are caught by
``except errors.NetworkExceptionError``.
"""
from __future__ import annotations

from typing import Any, Sequence

import aiohttp

from .. import errors
from ..protocol import http
from ..rpc import TRANSPORT_ERRORS, BrokerUnreachableError, NoResponseError, call

__all__ = ["BrokerUnreachableError", "Connection", "NoResponseError", "TRANSPORT_ERRORS", "parse_bootstrap"]


def parse_bootstrap(servers: str | Sequence[str] | Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """``"h:p,h:p"``, a list of ``"h:p"`` strings or of ``(host, port)`` pairs -> pairs."""
    if isinstance(servers, str):
        items: list[Any] = [s for s in (part.strip() for part in servers.split(",")) if s]
    else:
        items = list(servers)
    out: list[tuple[str, int]] = []
    for item in items:
        if isinstance(item, (tuple, list)) and len(item) == 2:
            host, port = item[0], item[1]
        elif isinstance(item, str):
            host, sep, port = item.strip().rpartition(":")
            if not sep or not host:
                raise errors.ClientError(f"bootstrap server {item!r} is not HOST:PORT")
        else:
            raise errors.ClientError(f"bootstrap server {item!r} is not HOST:PORT")
        host = str(host).strip("[]")
        try:
            port = int(port)
        except (TypeError, ValueError):
            raise errors.ClientError(f"bootstrap server {item!r} has an invalid port") from None
        if not 0 < port < 65536:
            raise errors.ClientError(f"bootstrap server {item!r} has an invalid port")
        out.append((host, port))
    if not out:
        raise errors.ClientError("no bootstrap servers given (expected HOST:PORT[,HOST:PORT...])")
    return out


class Connection:
    """Posts msgpack requests to brokers over one pooled aiohttp session."""

    def __init__(self, client_id: str | None = None) -> None:
        self.client_id = client_id
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise errors.ClientError("the client is closed")
        if self._session is None:
            headers = dict(http.HEADERS)
            if self.client_id:
                headers["X-Client-Id"] = self.client_id
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                headers=headers,
                auto_decompress=False,
            )
        return self._session

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        """Send ``body`` to ``api`` on ``host:port``; return the answer map.

        Raises the registered exception for a non-zero top-level ``error_code``,
        :class:`BrokerUnreachableError` or :class:`NoResponseError` for transport failures.
        """
        return await call(self._get_session(), host, port, api, body, timeout_s)

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

