"""Keeps web pages of other sites away from a broker's HTTP listeners (cross-site requests).

A browser lets any page send a "simple" cross-origin request (a POST whose
``Content-Type`` is ``text/plain``, a form's type, ...) without asking the server
first; only the answer is hidden from the page.  The msgpack API changes state on such
a POST (``delete_topics``, ``produce``), so every request that may change something (any
method but GET, HEAD and OPTIONS) must pass two checks before it is read:

* its ``Content-Type`` is msgpack's (:data:`~minikafka.protocol.rpc.http.REQUEST_CONTENT_TYPES`),
  which a page can only send after a CORS preflight, and the brokers answer no
  preflight: otherwise **415**;
* it carries no ``Origin`` header naming another site: a browser sends the page's
  origin, and one whose host and port differ from the request's ``Host`` is a page of
  another site (``Origin: null``, a sandboxed or local page, too): otherwise **403**.
  Programs (our clients, the brokers, curl) send no ``Origin`` and are not concerned.

The answers are plain text naming Kafka's error and the fix; nothing is dispatched.
The broker sends no ``Access-Control-Allow-*`` header on any route, so pages of other
sites cannot read the dashboard's JSON either (docs/security.md).
"""
from __future__ import annotations

from typing import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from ..protocol.rpc.http import CONTENT_TYPE, REQUEST_CONTENT_TYPES

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "https": 443}


def _host_port(netloc: str, scheme: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``host[:port]``, the scheme's port when none is given; None
    when it cannot be read."""
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.hostname.lower(), port if port is not None else DEFAULT_PORTS.get(scheme.lower(), -1)


def foreign_origin(origin: str, host: str, scheme: str) -> bool:
    """True when a browser's ``Origin`` header is not the site the request was sent to
    (its ``Host`` header, reached over ``scheme``): another host or another port, or an
    origin that is not one (``null``)."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return True
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.netloc:
        return True
    ours = _host_port(host, scheme)
    theirs = _host_port(parts.netloc, parts.scheme)
    return ours is None or theirs is None or ours != theirs


def refused(method: str, path: str, headers, host: str, scheme: str, content_type: str) -> tuple[int, str] | None:
    """The status (403 or 415) and text of the answer to a request a web page of another
    site could have sent, or None when it may go on."""
    if method.upper() in SAFE_METHODS:
        return None
    origin = headers.get("Origin")
    if origin is not None and foreign_origin(origin, host, scheme):
        return 403, (f"INVALID_REQUEST: refused a cross-site request: {method} {path} comes from a web page of "
                     f"another site (Origin {origin!r}, this broker is {host!r}); web pages may not change a broker "
                     "(docs/security.md)\n")
    if content_type.lower() not in REQUEST_CONTENT_TYPES:
        return 415, (f"INVALID_REQUEST: {method} {path} takes a msgpack map with Content-Type: {CONTENT_TYPE}, "
                     f"not {repr(content_type) if content_type else 'none'} (docs/protocol.md)\n")
    return None


def refusal(method: str, path: str, headers, host: str, scheme: str, content_type: str) -> web.Response | None:
    """:func:`refused` as an aiohttp answer."""
    got = refused(method, path, headers, host, scheme, content_type)
    return None if got is None else web.Response(status=got[0], text=got[1])


def middleware(count: Callable[[str], None]):
    """The aiohttp middleware applying :func:`refusal`; ``count`` is told each refusal's
    Kafka error name (the broker's request error counter)."""

    @web.middleware
    async def guard(request: web.Request,
                    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        # the raw header: aiohttp's content_type property gives a missing one as octet-stream
        raw_type = request.headers.get("Content-Type", "")
        answer = refusal(request.method, request.path, request.headers, request.host, request.scheme,
                         raw_type.split(";", 1)[0].strip())
        if answer is not None:
            count("INVALID_REQUEST")
            return answer
        return await handler(request)

    return guard
