"""Calls to a broker's msgpack API: the one place that moves the bytes.

:func:`call` (asyncio, aiohttp) serves clients and brokers calling each other;
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
import urllib.error
import urllib.request

import aiohttp

from . import errors
from .protocol.rpc import http


class BrokerUnreachableError(errors.NetworkExceptionError):
    """The connection to a broker failed or broke before an answer arrived."""


class NoResponseError(errors.RequestTimedOutError):
    """A broker did not answer within the caller's timeout."""


TRANSPORT_ERRORS = (BrokerUnreachableError, NoResponseError)


async def call(session: aiohttp.ClientSession, host: str, port: int, api: str, body: dict,
               timeout_s: float | None, scheme: str = "http") -> dict:
    """POST ``body`` to ``api`` on ``host:port`` (``scheme`` https for a TLS listener) and
    return the answer map; a non-zero top-level ``error_code`` raises its registered exception."""
    where = f"{api} request to {host}:{port}"
    try:
        async with session.post(http.url_for(host, port, api, scheme), data=http.encode_request(body), headers=http.HEADERS,
                                timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            raw = await resp.read()
            status = resp.status
    except asyncio.TimeoutError:
        raise NoResponseError(f"{where}: no answer within {timeout_s:g} s") from None
    except (aiohttp.ClientError, OSError) as exc:
        raise BrokerUnreachableError(f"{where} failed: {why(exc)}") from None
    return http.decode_answer(raw, status, where)


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


def why(exc: BaseException | str) -> str:
    """A transport failure in words, without aiohttp's internals ("ssl:default [...]")."""
    if isinstance(exc, aiohttp.ClientConnectorDNSError if hasattr(aiohttp, "ClientConnectorDNSError") else ()):
        return f"cannot resolve host {exc.host!r}"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"the broker's TLS certificate is not trusted ({getattr(exc.certificate_error, 'verify_message', None) or 'verify failed'}; " \
               f"give its CA as ssl_cafile)"
    if isinstance(exc, aiohttp.ClientSSLError):
        return "the TLS handshake failed (does the listener speak TLS, and does it want a client certificate?)"
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, socket.gaierror):
            return f"cannot resolve host {exc.host!r}"
        errno = getattr(exc.os_error, "errno", None)
        return f"cannot connect: {os.strerror(errno).lower() if errno else 'connection failed'}"
    if isinstance(exc, socket.gaierror):
        return "cannot resolve the host name"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the broker closed the connection"
    if isinstance(exc, ConnectionRefusedError):
        return "cannot connect: connection refused"
    return str(exc) or exc.__class__.__name__
