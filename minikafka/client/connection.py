"""The client side of the broker protocol: ``POST /v1/<api>`` with msgpack bodies.

One :class:`Connection` (one :class:`~minikafka.http_pool.HttpPool` of kept-alive
connections) per client; the calls
themselves are :func:`minikafka.rpc.call`.  A non-zero top-level ``error_code`` in an
answer is raised as the registered exception.  Failures of the transport itself are
raised as :class:`BrokerUnreachableError` (a NETWORK_EXCEPTION) or
:class:`NoResponseError` (a REQUEST_TIMED_OUT); both are indefinite, a write may have
happened.  Being subclasses of the registered classes, they are caught by
``except errors.NetworkExceptionError``.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

from .. import errors
from ..protocol.rpc import http
from ..auth.users import basic_header
from ..http_pool import HttpPool
from ..rpc import TRANSPORT_ERRORS, BrokerUnreachableError, NoResponseError, call

__all__ = ["BrokerUnreachableError", "ClientSecurity", "Connection", "NoResponseError", "TRANSPORT_ERRORS", "parse_bootstrap"]


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


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ClientSecurity:
    """How a client reaches a secured listener, with kafka-python's option names.

    ``security_protocol``: PLAINTEXT (default), SSL (TLS), SASL_PLAINTEXT (user and
    password) or SASL_SSL (both), as the listener's ``listener.security.protocol.map``
    says.  ``sasl_plain_username`` / ``sasl_plain_password`` for SASL (sent as HTTP Basic
    authentication: SASL/PLAIN's content).  ``ssl_cafile`` (PEM CA that signed the broker
    certificates; the system's CAs without it), ``ssl_certfile`` / ``ssl_keyfile`` (a
    client certificate, for ``ssl.client.auth``), ``ssl_check_hostname`` (default True).
    Every client (Producer, Consumer, Admin and their asyncio twins) takes these keyword
    arguments.
    """

    security_protocol: str = "PLAINTEXT"
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_check_hostname: bool = True

    def __post_init__(self) -> None:
        proto = str(self.security_protocol).upper()
        if proto not in SECURITY_PROTOCOLS:
            raise errors.ClientError(f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                                     f"got {self.security_protocol!r}")
        object.__setattr__(self, "security_protocol", proto)
        if proto.startswith("SASL") and not (self.sasl_plain_username and self.sasl_plain_password is not None):
            raise errors.ClientError(f"security_protocol={proto} needs sasl_plain_username and sasl_plain_password")

    @classmethod
    def of(cls, options: dict[str, Any]) -> "ClientSecurity":
        """From a client's extra keyword arguments; a name that is not an option is a ClientError."""
        unknown = sorted(set(options) - {f.name for f in fields(cls)})
        if unknown:
            raise errors.ClientError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        return cls(**options)

    @property
    def tls(self) -> bool:
        return self.security_protocol.endswith("SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        try:
            ctx = ssl.create_default_context(cafile=self.ssl_cafile)
            ctx.check_hostname = bool(self.ssl_check_hostname)
            if self.ssl_certfile:
                ctx.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise errors.ClientError(f"cannot load the TLS CA or client certificate: {exc}") from None
        return ctx

    def headers(self) -> dict[str, str]:
        if not self.security_protocol.startswith("SASL"):
            return {}
        return {"Authorization": basic_header(self.sasl_plain_username or "", self.sasl_plain_password or "")}


class Connection:
    """Posts msgpack requests to brokers over one pool of kept-alive connections."""

    def __init__(self, client_id: str | None = None, security: ClientSecurity | None = None) -> None:
        self.client_id = client_id
        self.security = security or ClientSecurity()
        self._scheme = "https" if self.security.tls else "http"
        self._pool: HttpPool | None = None
        self._closed = False

    def _get_pool(self) -> HttpPool:
        if self._closed:
            raise errors.ClientError("the client is closed")
        if self._pool is None:
            headers = {**http.HEADERS, **self.security.headers()}
            if self.client_id:
                headers["X-Client-Id"] = self.client_id
            self._pool = HttpPool(headers, self.security.ssl_context())
        return self._pool

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        """Send ``body`` to ``api`` on ``host:port``; return the answer map.

        Raises the registered exception for a non-zero top-level ``error_code``,
        :class:`BrokerUnreachableError` or :class:`NoResponseError` for transport failures.
        """
        return await call(self._get_pool(), host, port, api, body, timeout_s, scheme=self._scheme)

    async def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

