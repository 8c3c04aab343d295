"""HTTP/1.1 message framing for both ends of the msgpack API, without the I/O.

The client's side (:mod:`minikafka.http_pool`): a request is written as one piece:
request line, headers (``Host``, ``Content-Length`` and the caller's) and body.  An
answer is read as a head (status line and headers, up to the blank line) and a body of
exactly ``Content-Length`` bytes.  Brokers always answer that way; anything else
(``Transfer-Encoding: chunked``, a body delimited by the connection's close, an HTTP
version other than 1.x) is refused with :class:`HttpFramingError` naming what was wrong.

The broker's side (:mod:`minikafka.broker.rpc_http_server`): :func:`parse_request_head`
reads the head of a ``POST /v1/<api>`` with a ``Content-Length`` body, the only request
the broker's lean path serves; it returns None for any other request (another method or
path, a query, percent-escapes, ``Transfer-Encoding``, ``Expect``, ``Upgrade``, a
malformed line), which the broker hands to its full web stack.  :func:`answer` frames an
answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

MAX_HEAD_BYTES = 64 * 1024  # an answer's status line and headers together, at most
HEAD_END = b"\r\n\r\n"


RPC_PATH_PREFIX = "/v1/"


class HttpFramingError(ValueError):
    """An answer that is not an HTTP/1.x message with a Content-Length body."""


@dataclass(frozen=True, slots=True)
class ResponseHead:
    status: int
    content_length: int
    keep_alive: bool  # False: the server closes the connection after this answer


def host_header(host: str, port: int) -> str:
    """``host:port`` as the ``Host`` header writes it (an IPv6 literal in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def header_lines(headers: Mapping[str, str]) -> bytes:
    """``Name: value\\r\\n`` for each header; a name or value with CR or LF is refused."""
    out = []
    for name, value in headers.items():
        if any(c in name + value for c in "\r\n") or not name or ":" in name:
            raise ValueError(f"header {name!r} cannot be sent in HTTP/1.1")
        out.append(f"{name}: {value}\r\n")
    return "".join(out).encode("latin-1")


def request_head(path: str, host: str, port: int, fixed_headers: bytes, body_length: int) -> bytes:
    """The request line and headers of a ``POST`` of ``body_length`` bytes to ``path``;
    ``fixed_headers`` are :func:`header_lines` of the headers every request carries."""
    return (f"POST {path} HTTP/1.1\r\nHost: {host_header(host, port)}\r\nContent-Length: {body_length}\r\n"
            .encode("latin-1") + fixed_headers + b"\r\n")


def _keep_alive(connection: str, default: bool) -> bool:
    """Whether a message with this ``Connection`` header keeps its connection open
    (``default``: its HTTP version's rule, when the header names neither)."""
    tokens = {t.strip().lower() for t in connection.split(",")}
    if "close" in tokens:
        return False
    return True if "keep-alive" in tokens else default


def parse_response_head(head: bytes | bytearray) -> ResponseHead:
    """The status, body length and keep-alive of an answer's head (through the blank line)."""
    lines = bytes(head).split(b"\r\n")
    status_line = lines[0].decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or parts[0] not in ("HTTP/1.1", "HTTP/1.0") or not (parts[1].isdigit() and len(parts[1]) == 3):
        raise HttpFramingError(f"not an HTTP/1.x answer: {status_line[:80]!r}")
    status = int(parts[1])
    keep_alive = parts[0] == "HTTP/1.1"
    length: int | None = None
    for raw in lines[1:]:
        if not raw:
            continue
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise HttpFramingError(f"malformed header line {raw[:80]!r}")
        name, value = name.strip().lower(), value.strip()
        if name == "content-length":
            if not value.isdigit() or (length is not None and int(value) != length):
                raise HttpFramingError(f"bad Content-Length {value[:40]!r}")
            length = int(value)
        elif name == "transfer-encoding":
            raise HttpFramingError(f"Transfer-Encoding {value[:40]!r} is not supported (a Content-Length body is)")
        elif name == "connection":
            keep_alive = _keep_alive(value, keep_alive)
    if length is None:
        if 100 <= status < 200 or status in (204, 304):
            raise HttpFramingError(f"unexpected HTTP {status} answer to a POST")
        raise HttpFramingError(f"HTTP {status} answer without Content-Length")
    return ResponseHead(status, length, keep_alive)


class Headers(dict):
    """A request's headers by lower-cased name (the last of repeated ones), looked up
    in any case, as HTTP header names are."""

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())


@dataclass(frozen=True, slots=True)
class RequestHead:
    """A ``POST /v1/<api>`` request's head, as :func:`parse_request_head` read it."""
    api: str
    headers: Headers
    content_length: int
    keep_alive: bool  # False: the client asked to close after this answer (or spoke HTTP/1.0)

    @property
    def path(self) -> str:
        return RPC_PATH_PREFIX + self.api

    @property
    def content_type(self) -> str:
        """The media type of ``Content-Type`` (no parameters), "" when absent."""
        return (self.headers.get("content-type") or "").split(";", 1)[0].strip()


_REFUSED_HEADERS = frozenset({"transfer-encoding", "expect", "upgrade"})


def parse_request_head(head: bytes | bytearray) -> RequestHead | None:
    """A request's head (through the blank line) if it is a ``POST /v1/<api>`` with one
    ``Content-Length``, HTTP/1.0 or 1.1, nothing else unusual; None otherwise (the full
    web stack answers those requests, and any malformed one)."""
    try:
        text = bytes(head).decode("latin-1")
    except ValueError:
        return None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[0] != "POST" or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        return None
    target = parts[1]
    if not target.startswith(RPC_PATH_PREFIX) or any(c in target for c in "?%#"):
        return None
    keep_alive = parts[2] == "HTTP/1.1"
    headers = Headers()
    length: int | None = None
    for line in lines[1:]:
        if not line:
            continue
        if line[0] in " \t":
            return None  # a folded header line (obsolete)
        name, sep, value = line.partition(":")
        name = name.lower()
        if not sep or not name or name != name.strip() or name in _REFUSED_HEADERS:
            return None
        value = value.strip()
        if name == "content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
        elif name == "connection":
            keep_alive = _keep_alive(value, keep_alive)
        headers[name] = value
    if length is None:
        return None
    return RequestHead(target[len(RPC_PATH_PREFIX):], headers, length, keep_alive)


_REASONS = {200: "OK", 403: "Forbidden", 408: "Request Timeout", 413: "Payload Too Large",
            415: "Unsupported Media Type"}


def answer(status: int, body: bytes, content_type: str, keep_alive: bool) -> bytes:
    """An answer in one piece: status line, ``Content-Type``, ``Content-Length``,
    ``Connection: close`` unless ``keep_alive``, and the body."""
    close = "" if keep_alive else "Connection: close\r\n"
    return (f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n{close}\r\n").encode("latin-1") + body
