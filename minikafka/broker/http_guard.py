"""Keeps web pages of other sites away from a broker's HTTP listeners (cross-site requests,
DNS rebinding).

**The Host check comes first, on every request** (any method, any path: the msgpack API,
the dashboard's pages and JSON, ``/metrics``).  A page of ``attacker.example`` whose name
the attacker then points at 127.0.0.1 (DNS rebinding) is, to the browser, the same site
as the broker: its requests carry ``Host: attacker.example`` and a matching ``Origin``,
so the Origin check below cannot see them, and the page may read the answers.  So a
request whose ``Host`` names none of the broker's own names gets **421 Misdirected
Request** and changes nothing (:class:`HostAllowList`): the names are each listener's
host and advertised host (wildcard binds aside), ``localhost``, ``127.0.0.1`` and
``::1``, and those of ``minikafka.http.allowed.hosts`` (``*``: any).  The port of the
Host is not compared.  A request without a Host (HTTP/1.0 programs) is not concerned: a
browser always sends one.  Brokers call each other by their advertised names, which are
their own.

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

from typing import TYPE_CHECKING, Awaitable, Callable, Iterable
from urllib.parse import urlsplit

from aiohttp import web

from ..protocol.rpc.http import CONTENT_TYPE, REQUEST_CONTENT_TYPES

if TYPE_CHECKING:
    from ..config import BrokerConfig

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


LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # a listener binding every interface: not a name
ANY_HOST = "*"
MISDIRECTED = 421  # RFC 9110: the server does not answer for this Host


def _name(host: str) -> str:
    """A host name as compared: lower case, no trailing dot, an IPv6 literal without brackets."""
    host = host.strip().lower().rstrip(".")
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


class HostAllowList:
    """The names a broker answers for on its HTTP listeners (see the module docstring)."""

    def __init__(self, names: Iterable[str], any_host: bool = False) -> None:
        self.names = frozenset(n for n in (_name(h) for h in names) if n not in WILDCARD_HOSTS)
        self.any_host = any_host

    @classmethod
    def of(cls, config: "BrokerConfig") -> "HostAllowList":
        """The broker's own names (listen and advertised hosts of its four listeners,
        ``localhost``, ``127.0.0.1``, ``::1``) and those of ``minikafka.http.allowed.hosts``."""
        extra = [n for n in config.get("minikafka.http.allowed.hosts").split(",") if n]
        names = [*LOCAL_NAMES, *(n for n in extra if n != ANY_HOST)]
        for (listen_host, _), (advertised_host, _) in config.listener_endpoints().values():
            names += [listen_host, advertised_host]
        return cls(names, any_host=ANY_HOST in extra)

    def allows(self, host_header: str | None) -> bool:
        """True when a request's ``Host`` header (its port aside) is one of the names, or
        is missing."""
        if self.any_host or not host_header or not host_header.strip():
            return True
        try:
            host = urlsplit(f"//{host_header.strip()}").hostname
        except ValueError:
            return False
        return host is not None and _name(host) in self.names


def misdirected(method: str, path: str, host_header: str) -> str:
    """The text of the 421 answer to a request for a Host the broker does not answer for."""
    return (f"INVALID_REQUEST: refused {method} {path} for host {host_header.strip()[:100]!r}: this broker "
            "does not answer for that name (a page of another site whose name points here: DNS rebinding); "
            "a name of its own is allowed with minikafka.http.allowed.hosts (docs/security.md)\n")


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


def refused(method: str, path: str, headers, host: str, scheme: str, content_type: str,
            hosts: HostAllowList | None = None) -> tuple[int, str] | None:
    """The status (421, 403 or 415) and text of the answer to a request a web page of
    another site could have sent, or None when it may go on.  ``hosts``: the names the
    broker answers for (None: not checked)."""
    host_header = headers.get("Host")  # the raw header (``host`` may be the socket's name)
    if hosts is not None and not hosts.allows(host_header):
        return MISDIRECTED, misdirected(method, path, host_header or "")
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


def refusal(method: str, path: str, headers, host: str, scheme: str, content_type: str,
            hosts: HostAllowList | None = None) -> web.Response | None:
    """:func:`refused` as an aiohttp answer."""
    got = refused(method, path, headers, host, scheme, content_type, hosts)
    return None if got is None else web.Response(status=got[0], text=got[1])


def middleware(count: Callable[[str], None], hosts: HostAllowList | None = None):
    """The aiohttp middleware applying :func:`refusal` with ``hosts``; ``count`` is told
    each refusal's Kafka error name (the broker's request error counter)."""

    @web.middleware
    async def guard(request: web.Request,
                    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        # the raw header: aiohttp's content_type property gives a missing one as octet-stream
        raw_type = request.headers.get("Content-Type", "")
        answer = refusal(request.method, request.path, request.headers, request.host, request.scheme,
                         raw_type.split(";", 1)[0].strip(), hosts)
        if answer is not None:
            count("INVALID_REQUEST")
            return answer
        return await handler(request)

    return guard
