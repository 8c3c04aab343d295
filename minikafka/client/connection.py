"""The client side of the broker protocol: ``POST /v1/<api>`` with msgpack bodies.

One :class:`Connection` (one ``aiohttp.ClientSession``) per client.  A non-zero
top-level ``error_code`` in an answer is raised as the registered exception.
Failures of the transport itself are raised as :class:`BrokerUnreachableError`
(a NETWORK_EXCEPTION: the broker could not be reached or dropped the
connection) or :class:`NoResponseError` (a REQUEST_TIMED_OUT: no answer in
time); both are indefinite, a write may have happened.  Being subclasses of the
registered classes, they are caught by ``except errors.NetworkExceptionError``.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, Sequence

import aiohttp

from .. import errors
from ..protocol import codec

CONTENT_TYPE = "application/x-msgpack"


class BrokerUnreachableError(errors.NetworkExceptionError):
    """The connection to a broker failed or broke before an answer arrived."""


class NoResponseError(errors.RequestTimedOutError):
    """A broker did not answer within the client's timeout."""


TRANSPORT_ERRORS = (BrokerUnreachableError, NoResponseError)


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


def url_for(host: str, port: int, api: str) -> str:
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"http://{host}:{port}/v1/{api}"


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
            headers = {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE}
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
        session = self._get_session()
        data = codec.pack(body)
        where = f"{api} request to {host}:{port}"
        try:
            async with session.post(
                url_for(host, port, api), data=data, timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as resp:
                raw = await resp.read()
                status = resp.status
        except asyncio.TimeoutError:
            raise NoResponseError(f"{where}: no answer within {timeout_s:g} s") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise BrokerUnreachableError(f"{where} failed: {_why(exc)}") from None
        if not raw:
            if status >= 400:
                raise errors.UnknownServerError(f"{where}: HTTP {status} without body")
            return {}
        try:
            answer = codec.unpack(raw)
        except errors.KafkaError:
            text = raw[:200].decode("utf-8", "replace")
            raise errors.UnknownServerError(f"{where}: HTTP {status}, answer is not msgpack: {text!r}") from None
        if not isinstance(answer, dict):
            raise errors.UnknownServerError(f"{where}: answer is a {type(answer).__name__}, expected a map")
        code = answer.get("error_code", 0)
        if code:
            raise errors.error_for(code, answer.get("message") or "")
        if status >= 400:
            raise errors.UnknownServerError(f"{where}: HTTP {status}")
        return answer

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


def _why(exc: BaseException) -> str:
    """A transport failure in words, without aiohttp's internals ("ssl:default [...]")."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        errno = getattr(exc.os_error, "errno", None)
        return f"cannot connect: {os.strerror(errno).lower() if errno else 'connection failed'}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the broker closed the connection"
    return str(exc) or exc.__class__.__name__
