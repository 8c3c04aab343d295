"""What one broker lets its clients hold: connections and request memory.

Both client listeners (the msgpack/HTTP one and the Kafka one) share one
:class:`ConnectionLimits` and one :class:`RequestMemory`, as Kafka's SocketServer shares
its connection quotas and its memory pool between listeners:

* ``max.connections`` and ``max.connections.per.ip``: a connection beyond either is
  closed as soon as it is accepted, counted in ``minikafka_connections_refused_total``
  and logged (rate-limited).  ``max.connections`` unset means the open-file limit
  minus :data:`FD_RESERVE`, and a larger value is lowered to that: the reserve keeps
  descriptors for ZooKeeper, log files, checkpoints and replication, so that a flood of
  clients never costs the broker its ZooKeeper session.
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

from ..config import BrokerConfig
from ..metric_names import CONNECTIONS, CONNECTIONS_REFUSED, REQUEST_BYTES_IN_FLIGHT, REQUEST_MEMORY_WAITS
from .metrics import Metrics

log = logging.getLogger(__name__)

#: File descriptors kept out of reach of client connections (ZooKeeper, segments,
#: checkpoints, replication and controller connections).
FD_RESERVE = 256


def open_file_limit() -> int | None:
    """The process's soft RLIMIT_NOFILE, or None when unlimited or unknown."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def effective_max_connections(configured: int | None, nofile: int | None, reserve: int = FD_RESERVE) -> int:
    """max.connections as enforced: the configured value (unset: no bound of its own),
    never more than ``nofile - reserve`` (at least 1)."""
    cap = max(1, nofile - reserve) if nofile is not None else None
    if configured is None:
        return cap if cap is not None else 2147483647
    return min(configured, cap) if cap is not None else configured


class ConnectionLimits:
    """Counts the open client connections, per listener and per IP, and admits new ones."""

    def __init__(self, config: BrokerConfig, metrics: Metrics, nofile: int | None = None) -> None:
        self.metrics = metrics
        self.max_connections = effective_max_connections(
            config.get("max.connections"), open_file_limit() if nofile is None else nofile)
        self.max_per_ip = config.get("max.connections.per.ip")
        self.total = 0
        self._by_ip: collections.Counter[str] = collections.Counter()
        self._by_listener: collections.Counter[str] = collections.Counter()

    def admit(self, listener: str, ip: str) -> bool:
        """Whether a connection just accepted from ``ip`` on ``listener`` may stay; if it
        may, it is counted until :meth:`release`.  A refusal is counted and logged."""
        if self.total >= self.max_connections:
            reason = "max.connections"
            limit = self.max_connections
        elif self._by_ip[ip] >= self.max_per_ip:
            reason = "max.connections.per.ip"
            limit = self.max_per_ip
        else:
            self.total += 1
            self._by_ip[ip] += 1
            self._by_listener[listener] += 1
            self.metrics.set_level(CONNECTIONS, self._by_listener[listener], listener=listener)
            return True
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
    """The broker-wide budget of request bytes (queued.max.request.bytes; -1: none)."""

    def __init__(self, limit: int, metrics: Metrics) -> None:
        self.limit = limit
        self.metrics = metrics
        self.used = 0
        self._freed: asyncio.Event | None = None

    def try_acquire(self, size: int) -> int | None:
        """Take ``size`` bytes if they fit now and return what was taken (give it to
        :meth:`release`); None, taking nothing, when :meth:`acquire` would wait."""
        size = max(0, size)
        if self.limit >= 0 and self.used > 0 and self.used + size > self.limit:
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
