"""One connection policy for the broker's three front ends, without I/O.

The msgpack/HTTP listener's lean path (:mod:`.rpc_http_server`), the connections it
hands to aiohttp (:mod:`.http_transport`) and the Kafka listener (:mod:`.kafka.server`)
keep the same rules, and all of them ask this one object.  It reads no clock, opens
nothing and waits for nothing: it is given times (of the caller's loop) and sizes and
answers decisions.  The rules, with the setting behind each:

* ``max.connections`` / ``max.connections.per.ip``: :meth:`ConnectionPolicy.refusal`
  names the limit a new connection would pass (the shell closes it at once).
  ``max.connections`` unset means the open-file limit minus :data:`FD_RESERVE`, and a
  larger value is lowered to that (:func:`effective_max_connections`).
* ``connections.max.idle.ms``: a connection with no request for this long is closed
  (:meth:`~ConnectionPolicy.idle_deadline`).
* ``request.timeout.ms``: once the first byte of a request has arrived, its head (an
  HTTP request head, a Kafka frame's size) and then its body (or the rest of the
  frame) must each arrive within it (:meth:`~ConnectionPolicy.arrival_deadline`), else
  the connection is closed.  A connection handed to the dashboard's web app waits at
  most the shorter of the two for its next request
  (:attr:`~ConnectionPolicy.handed_over_keepalive_s`).
* ``socket.request.max.bytes``: :meth:`~ConnectionPolicy.request_size` refuses a larger
  request before any of its body is read (HTTP: 413; Kafka: the connection closes).
* ``queued.max.request.bytes``: :meth:`~ConnectionPolicy.fits` says whether a request
  may take its bytes now; the shell keeps the count (:class:`.limits.RequestMemory`)
  and does not read the connection until they fit.
* ``connection.failed.authentication.delay.ms``: a failed login is answered after
  :attr:`~ConnectionPolicy.failed_login_delay_s`, then the connection is closed.

:func:`request_failure` is the policy for a request whose handling raised: how it is
answered, whether it is a bug to log, and whether the Kafka listener answers it in the
request's own shape and keeps the connection.  A ZooKeeper that cannot answer
(:class:`~minikafka.zk.errors.ZooKeeperUnavailableError`) is the retriable
REQUEST_TIMED_OUT on both listeners, the connection kept.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import KafkaError, RequestTimedOutError, UnknownServerError
from ..zk.errors import ZooKeeperUnavailableError

#: File descriptors kept out of reach of client connections (ZooKeeper, segments,
#: checkpoints, replication and controller connections).
FD_RESERVE = 256

#: max.connections and max.connections.per.ip without a bound (Kafka's Int.MaxValue)
UNBOUNDED = 2147483647


def effective_max_connections(configured: int | None, nofile: int | None, reserve: int = FD_RESERVE) -> int:
    """max.connections as enforced: the configured value (unset: no bound of its own),
    never more than ``nofile - reserve`` (at least 1)."""
    cap = max(1, nofile - reserve) if nofile is not None else None
    if configured is None:
        return cap if cap is not None else UNBOUNDED
    return min(configured, cap) if cap is not None else configured


class Size(enum.Enum):
    """What to do with a request of a given size (:meth:`ConnectionPolicy.request_size`)."""

    READ = "read"  # read it (once it fits in queued.max.request.bytes)
    TOO_LARGE = "too large"  # past socket.request.max.bytes: refused before its body is read
    TOO_SMALL = "too small"  # shorter than the smallest well-formed request: malformed


@dataclass(frozen=True)
class ConnectionPolicy:
    """The limits every client connection of one broker is held to (see the module
    docstring); built once from the broker's configuration by :meth:`of`."""

    max_connections: int = UNBOUNDED
    max_connections_per_ip: int = UNBOUNDED
    idle_s: float = 600.0  # connections.max.idle.ms
    request_timeout_s: float = 30.0  # request.timeout.ms
    max_request_bytes: int = 104857600  # socket.request.max.bytes
    request_memory_bytes: int = 536870912  # queued.max.request.bytes; -1: no bound
    failed_login_delay_s: float = 0.1  # connection.failed.authentication.delay.ms

    @classmethod
    def of(cls, get: Callable[[str], Any], nofile: int | None = None) -> "ConnectionPolicy":
        """The policy of a configuration (``get`` is ``BrokerConfig.get``); ``nofile`` is
        the process's open-file limit (None: unlimited or unknown)."""
        return cls(max_connections=effective_max_connections(get("max.connections"), nofile),
                   max_connections_per_ip=get("max.connections.per.ip"),
                   idle_s=get("connections.max.idle.ms") / 1000,
                   request_timeout_s=get("request.timeout.ms") / 1000,
                   max_request_bytes=get("socket.request.max.bytes"),
                   request_memory_bytes=get("queued.max.request.bytes"),
                   failed_login_delay_s=get("connection.failed.authentication.delay.ms") / 1000)

    # -- connections ------------------------------------------------------------------------
    def refusal(self, open_total: int, open_from_ip: int) -> tuple[str, int] | None:
        """The setting and its value that a new connection passes, with ``open_total``
        client connections open and ``open_from_ip`` of them from its address; None when
        it may stay."""
        if open_total >= self.max_connections:
            return "max.connections", self.max_connections
        if open_from_ip >= self.max_connections_per_ip:
            return "max.connections.per.ip", self.max_connections_per_ip
        return None

    # -- deadlines (in the caller's clock) ----------------------------------------------------
    def idle_deadline(self, idle_since: float) -> float:
        """When a connection with no request since ``idle_since`` is closed."""
        return idle_since + self.idle_s

    def arrival_deadline(self, first_byte_at: float) -> float:
        """When a request head (a frame's size) whose first byte came at ``first_byte_at``,
        or a body (the rest of a frame) asked for at that time, must be complete."""
        return first_byte_at + self.request_timeout_s

    @property
    def handed_over_keepalive_s(self) -> float:
        """How long a connection handed to the dashboard's web app waits for its next
        request: it cannot tell a head begun from none, so the shorter of the idle time and
        a head's deadline."""
        return min(self.idle_s, self.request_timeout_s)

    # -- sizes ----------------------------------------------------------------------------------
    def request_size(self, size: int, smallest: int = 0) -> Size:
        """Whether a request of ``size`` bytes (an HTTP Content-Length, a Kafka frame's size)
        is read; ``smallest`` is the least a well-formed request has."""
        if size < smallest:
            return Size.TOO_SMALL
        if size > self.max_request_bytes:
            return Size.TOO_LARGE
        return Size.READ

    def fits(self, held: int, size: int) -> bool:
        """Whether a request may take ``size`` bytes of queued.max.request.bytes while
        ``held`` are taken: always when nothing is held (a request larger than the whole
        budget is then read alone), else when the sum stays within the budget."""
        return self.request_memory_bytes < 0 or held <= 0 or held + max(0, size) <= self.request_memory_bytes


@dataclass(frozen=True)
class RequestFailure:
    """How a request whose handling raised is answered (:func:`request_failure`)."""

    error: KafkaError  # the answer's error
    bug: bool  # not an error of the request: logged with its traceback
    keeps_connection: bool  # the Kafka listener answers it in the request's shape and keeps the connection


def request_failure(api: str, exc: BaseException) -> RequestFailure:
    """The answer to request ``api`` whose handling raised ``exc``, on either listener.

    * a :class:`~minikafka.errors.KafkaError` is the request's error (the msgpack
      listener answers it; the Kafka listener closes the connection, as it did for every
      whole-request error: Kafka's own errors travel in each entry of the answer);
    * ZooKeeper that cannot answer is the retriable REQUEST_TIMED_OUT, answered on both
      listeners with the connection kept: the client retries on it;
    * anything else is a bug: UNKNOWN_SERVER_ERROR, logged."""
    if isinstance(exc, KafkaError):
        return RequestFailure(exc, bug=False, keeps_connection=False)
    if isinstance(exc, ZooKeeperUnavailableError):
        return RequestFailure(RequestTimedOutError(f"{api} needs ZooKeeper, which does not answer ({exc}); try again"),
                              bug=False, keeps_connection=True)
    return RequestFailure(UnknownServerError(f"{exc.__class__.__name__}: {exc}"), bug=True, keeps_connection=False)
