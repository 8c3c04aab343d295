#!/usr/bin/env python3
"""Keep thousands of loopback sockets in TIME_WAIT, as a busy machine has them.

    python scripts/time_wait.py [--sockets 4000] [--seconds 1800] &   # stop it by its pid

A listener of its own on 127.0.0.1 (a port the kernel picks) accepts connections and
waits for the client to close; the client side connects and closes first, so each
closed connection leaves the client's port, taken from the ephemeral range, in
TIME_WAIT for a minute.  It opens --sockets connections in a first burst, prints one
line ``TIME_WAIT sockets: N`` (counted in /proc/net/tcp) and then opens about
--sockets connections a minute, so the count stays near --sockets while the load
runs, until --seconds have passed or it gets SIGTERM / SIGINT.  Only loopback, only
its own listener: nothing else is touched.
"""
from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import time

TIME_WAIT = "06"  # the st column of /proc/net/tcp


def time_wait_count() -> int:
    """Sockets in TIME_WAIT on this machine (IPv4 and IPv6), from /proc/net/tcp*."""
    count = 0
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f, None)
                count += sum(1 for line in f if line.split()[3] == TIME_WAIT)
        except OSError:
            pass
    return count


def serve(listener: socket.socket, stop: threading.Event) -> None:
    """Accept and close each connection after the client closed it (the client closes first)."""
    listener.settimeout(0.5)
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(1)  # b"" once the client has closed
            except OSError:
                pass


def one_connection(port: int) -> bool:
    """Connect to our listener and close first; True when it connected."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the loop; exit 0 when stopped or when --seconds have passed."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sockets", type=int, default=4000, help="connections per minute to keep in TIME_WAIT (default 4000)")
    p.add_argument("--seconds", type=float, default=1800, help="stop after this long at most (default 1800)")
    args = p.parse_args(argv)
    if args.sockets < 1 or args.seconds <= 0:
        print("time_wait.py: error: --sockets and --seconds must be positive", file=sys.stderr)
        return 2

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    port = listener.getsockname()[1]
    server = threading.Thread(target=serve, args=(listener, stop), daemon=True)
    server.start()

    deadline = time.monotonic() + args.seconds
    opened = sum(one_connection(port) for _ in range(args.sockets))
    print(f"TIME_WAIT sockets: {time_wait_count()} (opened and closed {opened} connections to 127.0.0.1:{port})",
          flush=True)
    interval = 60.0 / args.sockets
    next_at = time.monotonic()
    while not stop.is_set() and time.monotonic() < deadline:
        one_connection(port)
        next_at += interval
        stop.wait(max(0.0, next_at - time.monotonic()))
    stop.set()
    listener.close()
    server.join(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
