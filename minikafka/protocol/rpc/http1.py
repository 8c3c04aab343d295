"""HTTP/1.1 message framing for :mod:`minikafka.http_pool`, without the I/O.

A request is written as one piece: request line, headers (``Host``, ``Content-Length``
and the caller's) and body.  An answer is read as a head (status line and headers, up
to the blank line) and a body of exactly ``Content-Length`` bytes.  Brokers always
answer that way; anything else (``Transfer-Encoding: chunked``, a body delimited by the
connection's close, an HTTP version other than 1.x) is refused with
:class:`HttpFramingError` naming what was wrong.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

MAX_HEAD_BYTES = 64 * 1024  # an answer's status line and headers together, at most
HEAD_END = b"\r\n\r\n"


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
            tokens = {t.strip().lower() for t in value.split(",")}
            if "close" in tokens:
                keep_alive = False
            elif "keep-alive" in tokens:
                keep_alive = True
    if length is None:
        if 100 <= status < 200 or status in (204, 304):
            raise HttpFramingError(f"unexpected HTTP {status} answer to a POST")
        raise HttpFramingError(f"HTTP {status} answer without Content-Length")
    return ResponseHead(status, length, keep_alive)
