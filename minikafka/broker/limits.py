"""What one broker lets its clients hold: the counts of connections and request memory.

Both client listeners (the msgpack/HTTP one and the Kafka one) share one
:class:`ConnectionLimits` and one :class:`RequestMemory`, as Kafka's SocketServer shares
its connection quotas and its memory pool between listeners.  These are the counting
shells; the rules are :class:`~.connection_policy.ConnectionPolicy`'s:

* ``max.connections`` and ``max.connections.per.ip``: a connection beyond either is
  closed as soon as it is accepted, counted in ``minikafka_connections_refused_total``
  and logged (rate-limited).
* ``queued.max.request.bytes``: the bytes requests hold, from their first byte read
  until their answer has left (handed to the kernel).  A request is charged its head
  while it arrives, its body before the body is read, and its answer while the answer
  waits to be sent.  A connection whose next body does not fit waits before reading it
  (Kafka mutes the channel) until others free theirs; ``minikafka_request_bytes_in_flight``
  shows the bytes held.
"""
from __future__ import annotations

import asyncio
import collections
import logging

from ..metric_names import CONNECTIONS, CONNECTIONS_REFUSED, REQUEST_BYTES_IN_FLIGHT, REQUEST_MEMORY_WAITS
from .connection_policy import FD_RESERVE, ConnectionPolicy, effective_max_connections
from .metrics import Metrics

__all__ = ["FD_RESERVE", "ConnectionLimits", "RequestMemory", "effective_max_connections", "open_file_limit"]

log = logging.getLogger(__name__)


def open_file_limit() -> int | None:
    """The process's soft RLIMIT_NOFILE, or None when unlimited or unknown."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


class ConnectionLimits:
    """Counts the open client connections, per listener and per IP, and admits new ones
    as the policy says."""

    def __init__(self, policy: ConnectionPolicy, metrics: Metrics) -> None:
        self.policy = policy
        self.metrics = metrics
        self.total = 0
        self._by_ip: collections.Counter[str] = collections.Counter()
        self._by_listener: collections.Counter[str] = collections.Counter()

    def admit(self, listener: str, ip: str) -> bool:
        """Whether a connection just accepted from ``ip`` on ``listener`` may stay; if it
        may, it is counted until :meth:`release`.  A refusal is counted and logged."""
        refused = self.policy.refusal(self.total, self._by_ip[ip])
        if refused is None:
            self.total += 1
            self._by_ip[ip] += 1
            self._by_listener[listener] += 1
            self.metrics.set_level(CONNECTIONS, self._by_listener[listener], listener=listener)
            return True
        reason, limit = refused
        self.metrics.count(CONNECTIONS_REFUSED, listener=listener, reason=reason)
        log.warning("closing a new connection on the %s listener: %s=%d reached", listener, reason, limit)
        return False

    def release(self, listener: str, ip: str) -> None:
        """An admitted connection has closed."""
        self.total -= 1
        self._by_ip[ip] -= 1
        if self._by_ip[ip] <= 0:
            del self._by_ip[ip]
        self._by_listener[listener] -= 1
        self.metrics.set_level(CONNECTIONS, self._by_listener[listener], listener=listener)


class RequestMemory:
    """The broker-wide budget of request bytes (queued.max.request.bytes; -1: none): the
    bytes held, and the requests waiting until theirs fit (:meth:`ConnectionPolicy.fits`)."""

    def __init__(self, policy: ConnectionPolicy, metrics: Metrics) -> None:
        self.policy = policy
        self.metrics = metrics
        self.used = 0
        self._freed: asyncio.Event | None = None

    def try_acquire(self, size: int) -> int | None:
        """Take ``size`` bytes if they fit now and return what was taken (give it to
        :meth:`release`); None, taking nothing, when :meth:`acquire` would wait."""
        size = max(0, size)
        if not self.policy.fits(self.used, size):
            return None
        self.used += size
        self.metrics.set_level(REQUEST_BYTES_IN_FLIGHT, self.used)
        return size

    def take(self, size: int) -> int:
        """Take ``size`` bytes now, even past the limit, and return what was taken (give it
        to :meth:`release`): bytes already read or made (a request head as it arrives, an
        answer) are counted, and the next :meth:`acquire` waits until they are given back."""
        size = max(0, size)
        self.used += size
        self.metrics.set_level(REQUEST_BYTES_IN_FLIGHT, self.used)
        return size

    async def acquire(self, size: int) -> int:
        """Wait until ``size`` bytes fit, take them and return what was taken (give it to
        :meth:`release`).  A request larger than the whole budget waits until nothing else
        is held, then is read alone."""
        held = self.try_acquire(size)
        if held is None:
            self.metrics.count(REQUEST_MEMORY_WAITS)
            while held is None:
                if self._freed is None:
                    self._freed = asyncio.Event()
                await self._freed.wait()
                held = self.try_acquire(size)
        return held

    def release(self, size: int) -> None:
        """Give back bytes taken by :meth:`acquire`."""
        if not size:
            return
        self.used -= size
        self.metrics.set_level(REQUEST_BYTES_IN_FLIGHT, self.used)
        if self._freed is not None:
            self._freed.set()
            self._freed = None
