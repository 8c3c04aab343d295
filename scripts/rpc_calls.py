#!/usr/bin/env python3
"""Time N sequential msgpack calls against one broker: the cost of one HTTP hop.

    python scripts/rpc_calls.py --dir /tmp/pc-lat [--calls 5000] [--api api_versions]
    python scripts/rpc_calls.py --bootstrap-server 127.0.0.1:9092 --broker-credential

Each call is one ``POST /v1/<api>`` with a small body, sent through the client's
:class:`~minikafka.client.connection.Connection` (the same path our Producer, Consumer
and the brokers' fetchers take: :func:`minikafka.rpc.call`), one at a time, on one
kept-alive connection.  It prints the wall time per call, this process's CPU per call
(user + system, from ``time.process_time``) and the broker's CPU per call (from
``/proc/PID/stat`` when the broker runs on this machine and ``--dir`` names its cluster).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time


def proc_cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(host: str, port: int, api: str, calls: int, warmup: int) -> tuple[float, float]:
    from minikafka.client.connection import Connection
    conn = Connection(client_id="rpc-calls")
    try:
        for _ in range(warmup):
            await conn.call(host, port, api, {}, 5.0)
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(calls):
            await conn.call(host, port, api, {}, 5.0)
        return time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        await conn.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", default=None, help="a cluster folder (`minikafka cluster up --dir`): its first broker")
    p.add_argument("--bootstrap-server", dest="bootstrap", default=None, metavar="HOST:PORT")
    p.add_argument("--api", default="api_versions", help="the msgpack API to call with {} (default api_versions)")
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=200)
    args = p.parse_args()
    pid = None
    if args.dir:
        from minikafka.cluster.state import load
        state = load(args.dir)
        _, broker = sorted(state.brokers.items())[0]
        host, port, pid = broker.host, broker.port, getattr(broker, "pid", None)
    elif args.bootstrap:
        host, _, port_s = args.bootstrap.rpartition(":")
        port = int(port_s)
    else:
        p.error("give --dir or --bootstrap-server")
    broker0 = proc_cpu_s(pid) if pid else None
    wall, cpu = asyncio.run(run(host, port, args.api, args.calls, args.warmup))
    line = f"{args.calls} {args.api} calls: {wall / args.calls * 1e6:,.0f} us/call, client CPU {cpu / args.calls * 1e6:,.0f} us/call"
    if pid:
        line += f", broker CPU {(proc_cpu_s(pid) - broker0) / args.calls * 1e6:,.0f} us/call"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
