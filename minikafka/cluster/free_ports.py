"""Free TCP ports on loopback for the clusters that tests, benchmarks and fault runs start.

Linux gives the ports of its ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``,
usually 32768-60999) to outgoing connections at any moment, and a closed connection
keeps its port for a minute in TIME_WAIT.  A port found free there and bound a moment
later by a new process may be taken by then, and on a machine with many connections
there may be no free block at all.  So the ports handed out here are:

* outside the ephemeral range, between :data:`FIRST_PORT` and 65535;
* searched from a random place, so that several runs on one machine rarely pick the
  same ports in the moment between choosing and binding them;
* bound on the host first (every port of a block at once), without ``SO_REUSEADDR``,
  so a port that any socket still holds, listening, connected or in TIME_WAIT, is
  passed over;
* never handed out twice by one process, so two clusters a process starts one after
  the other do not get each other's ports while one of them is stopped or restarting.

When nothing is found, :class:`NoFreePorts` names the ranges searched.
"""
from __future__ import annotations

import random
import socket
import threading
from collections.abc import Iterable

RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
#: Linux's default ephemeral range, used when :data:`RANGE_FILE` cannot be read.
LINUX_DEFAULT_RANGE = (32768, 60999)
#: The lowest port handed out: below it are the well-known and registered ports that
#: servers on a developer's machine commonly use (2181, 5432, 8080, 9092, ...).
FIRST_PORT = 10000
LAST_PORT = 65535
HOST = "127.0.0.1"

_handed_out: set[int] = set()
_lock = threading.Lock()


class NoFreePorts(RuntimeError):
    """No block of free ports was found; the message names the ranges searched."""


def ephemeral_range(path: str = RANGE_FILE) -> tuple[int, int]:
    """The kernel's ephemeral port range (first, last), Linux's default when unreadable."""
    try:
        with open(path) as f:
            first, last = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        return LINUX_DEFAULT_RANGE
    return first, last


def in_ephemeral_range(port: int, ephemeral: tuple[int, int] | None = None) -> bool:
    """True when outgoing connections may take ``port`` (it is in the ephemeral range)."""
    first, last = ephemeral or ephemeral_range()
    return first <= port <= last


def search_ranges(ephemeral: tuple[int, int] | None = None, first: int = FIRST_PORT,
                  last: int = LAST_PORT) -> list[tuple[int, int]]:
    """The ranges (first, last) of ports between ``first`` and ``last`` outside the ephemeral range."""
    low, high = ephemeral or ephemeral_range()
    ranges = [(first, min(low - 1, last)), (max(high + 1, first), last)]
    return [(a, b) for a, b in ranges if a <= b]


def describe(ranges: Iterable[tuple[int, int]]) -> str:
    """``"10000-32767 and 61000-65535"``."""
    parts = [f"{a}-{b}" if a != b else str(a) for a, b in ranges]
    return " and ".join(parts) if parts else "no port at all"


def port_free(port: int, host: str = HOST, reuse_address: bool = False) -> bool:
    """True when ``host:port`` can be bound now.  With ``reuse_address`` (what servers set)
    a port whose only sockets are closed connections in TIME_WAIT counts as free too."""
    return _bindable([port], host, reuse_address)


def _bindable(ports: Iterable[int], host: str, reuse_address: bool = False) -> bool:
    held: list[socket.socket] = []
    try:
        for port in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(s)
            if reuse_address:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                return False
        return True
    finally:
        for s in held:
            s.close()


def free_port_block(count: int = 1, avoid: Iterable[int] = (), host: str = HOST,
                    ranges: list[tuple[int, int]] | None = None, rng: random.Random | None = None) -> int:
    """The first of ``count`` consecutive ports that are free on ``host`` now, outside the
    ephemeral range (or within ``ranges`` when given), none of them in ``avoid`` nor handed
    out before by this process.

    Raises :class:`NoFreePorts`, naming the ranges searched, when there is none."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    eph = ephemeral_range()
    searched = search_ranges(eph) if ranges is None else ranges
    bases = [base for a, b in searched for base in range(a, b - count + 2)]
    avoided = set(avoid)
    with _lock:
        if bases:
            start = (rng or random).randrange(len(bases))
            for i in range(len(bases)):
                base = bases[(start + i) % len(bases)]
                block = range(base, base + count)
                if any(p in avoided or p in _handed_out for p in block):
                    continue
                if _bindable(block, host):
                    _handed_out.update(block)
                    return base
    why = "" if ranges is not None else (f" (the ports from {FIRST_PORT} to {LAST_PORT} outside the ephemeral "
                                         f"range {eph[0]}-{eph[1]} of {RANGE_FILE})")
    what = "no free port" if count == 1 else f"no block of {count} consecutive free ports"
    raise NoFreePorts(f"{what} on {host}: searched {describe(searched)}{why}")


def free_port(avoid: Iterable[int] = (), host: str = HOST) -> int:
    """One port that is free on ``host`` now, outside the ephemeral range (see :func:`free_port_block`)."""
    return free_port_block(1, avoid=avoid, host=host)


def ephemeral_warning(ports: Iterable[int], ephemeral: tuple[int, int] | None = None) -> str | None:
    """One line saying which of ``ports`` lie in the ephemeral range, or None when none does."""
    eph = ephemeral or ephemeral_range()
    inside = sorted(p for p in set(ports) if in_ephemeral_range(p, eph))
    if not inside:
        return None
    return (f"port{'s' if len(inside) != 1 else ''} {', '.join(map(str, inside))} "
            f"{'are' if len(inside) != 1 else 'is'} in this machine's ephemeral range {eph[0]}-{eph[1]} "
            f"({RANGE_FILE}), where outgoing connections take ports at any moment: choose ports in "
            f"{describe(search_ranges(eph))}")
