"""Calls to a broker's msgpack API: the one place that moves the bytes.

:func:`call` (asyncio, on an :class:`~minikafka.http_pool.HttpPool` of kept-alive
connections) serves clients and brokers calling each other; :func:`request` is the typed
call over any transport (a request dataclass in, its response dataclass out);
:func:`call_sync` (urllib) serves the fault harness, the cluster launcher and tests.
Framing and answer decoding are :mod:`minikafka.protocol.rpc.http`'s.  Transport failures
are raised as :class:`BrokerUnreachableError` (NETWORK_EXCEPTION: the broker could not
be reached or dropped the connection) or :class:`NoResponseError` (REQUEST_TIMED_OUT);
both are indefinite, a write may have happened.
"""
from __future__ import annotations

import asyncio
import os
import socket
import ssl
import urllib.error
import urllib.request

from typing import Awaitable, Callable, TypeAlias, TypeVar

from . import errors
from .http_pool import CannotConnectError, ConnectionClosedError, HttpPool
from .protocol.rpc import http
from .protocol.rpc.http1 import HttpFramingError
from .protocol.rpc.types import DECODE_RESPONSE, ENCODE_REQUEST, Request

R = TypeVar("R")
# Any transport's call: (host, port, api, body map, timeout_s) -> the answer map; the
# client connections', the brokers' transport's, the simulation's network's.
Call: TypeAlias = Callable[[str, int, str, dict, float], Awaitable[dict]]


class BrokerUnreachableError(errors.NetworkExceptionError):
    """The connection to a broker failed or broke before an answer arrived."""


class NoResponseError(errors.RequestTimedOutError):
    """A broker did not answer within the caller's timeout."""


TRANSPORT_ERRORS = (BrokerUnreachableError, NoResponseError)


async def call(pool: HttpPool, host: str, port: int, api: str, body: dict,
               timeout_s: float | None, scheme: str = "http") -> dict:
    """POST ``body`` to ``api`` on ``host:port`` (``scheme`` https for a TLS listener) over
    one of ``pool``'s connections and return the answer map; a non-zero top-level
    ``error_code`` raises its registered exception."""
    where = f"{api} request to {host}:{port}"
    try:
        async with asyncio.timeout(timeout_s):
            status, raw = await pool.post(host, port, scheme, f"/v1/{api}", http.encode_request(body))
    except TimeoutError:
        raise NoResponseError(f"{where}: no answer within {timeout_s:g} s") from None
    except (OSError, ssl.SSLError, HttpFramingError) as exc:
        raise BrokerUnreachableError(f"{where} failed: {why(exc, host)}") from None
    return http.decode_answer(raw, status, where)


async def request(call: Call, host: str, port: int, req: Request[R], timeout_s: float) -> R:
    """Send a typed request (a dataclass of :mod:`minikafka.protocol.rpc.types`) with any
    transport's ``call`` and return its typed answer: ``await request(conn.call, host, port,
    FetchRequest(...), 5.0)`` is a ``FetchResponse``.  The wire map is made and read here
    only, so no caller builds or reads one; errors are raised as ``call`` raises them."""
    api = req.API
    answer: R = DECODE_RESPONSE[api](await call(host, port, api, ENCODE_REQUEST[api](req), timeout_s))
    return answer


def call_sync(host: str, port: int, api: str, body: dict, timeout_s: float = 5.0, raise_error: bool = True,
              headers: dict[str, str] | None = None) -> dict:
    """The blocking twin of :func:`call` (urllib); ``headers`` are added to the request's
    (e.g. ``Authorization``)."""
    where = f"{api} request to {host}:{port}"
    req = urllib.request.Request(http.url_for(host, port, api), data=http.encode_request(body), method="POST",
                                 headers={**http.HEADERS, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            raw, status = resp.read(), resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    except TimeoutError:
        raise NoResponseError(f"{where}: no answer within {timeout_s:g} s") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BrokerUnreachableError(f"{where} failed: {why(reason)}") from None
    return http.decode_answer(raw, status, where, raise_error=raise_error)


def why(exc: BaseException | str, host: str | None = None) -> str:
    """A transport failure in words (``host``: the name that was being reached)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"the broker's TLS certificate is not trusted ({exc.verify_message or 'verify failed'}; " \
               f"give its CA as ssl_cafile)"
    if isinstance(exc, (ssl.SSLError, ssl.CertificateError)):
        return "the TLS handshake failed (does the listener speak TLS, and does it want a client certificate?)"
    if isinstance(exc, HttpFramingError):
        return f"the answer is not HTTP/1.1 as brokers send it: {exc}"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host {host!r}" if host else "cannot resolve the host name"
    if isinstance(exc, (ConnectionClosedError, asyncio.IncompleteReadError)):
        return "the broker closed the connection"
    if isinstance(exc, CannotConnectError):
        return f"cannot connect: {os.strerror(exc.errno).lower() if exc.errno else 'connection failed'}"
    if isinstance(exc, ConnectionRefusedError):
        return "cannot connect: connection refused"
    if isinstance(exc, ConnectionResetError):
        return "the broker reset the connection"
    if isinstance(exc, OSError) and exc.errno and not str(exc).strip():
        return os.strerror(exc.errno).lower()
    return str(exc) or exc.__class__.__name__
