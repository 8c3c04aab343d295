"""Consumer-group timings on a running cluster: how long a group of N members takes to
form, to rebalance after one member leaves (LeaveGroup) and how many synchronous
offset commits per second one member gets.

    .venv/bin/python scripts/bench_groups.py --members 3 --commits 500
    .venv/bin/python scripts/bench_groups.py --bootstrap-server 127.0.0.1:9092

Uses the cluster in ./.minikafka unless --bootstrap-server is given; creates a topic
bench-groups-<random> with 6 partitions (replication factor 3, or fewer brokers).
Timings depend on group.initial.rebalance.delay.ms (3 s by default: a new group's first
rebalance waits that long for more members).
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid

from minikafka import Admin, Consumer, TopicPartition


def _bootstrap(args: argparse.Namespace) -> str:
    if args.bootstrap_server:
        return args.bootstrap_server
    from minikafka.cluster.state import load

    state = load(".minikafka")
    return ",".join(f"127.0.0.1:{b.port}" for b in state.brokers.values())


def _poll_until(consumers: list[Consumer], ok, timeout_s: float = 120.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        threads = [threading.Thread(target=c.poll, kwargs={"timeout_ms": 50}) for c in consumers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if ok():
            return time.monotonic() - start
    raise SystemExit("timed out")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-server", default=None)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--commits", type=int, default=500)
    args = ap.parse_args()
    boot = _bootstrap(args)
    topic, group = f"bench-groups-{uuid.uuid4().hex[:6]}", f"bench-{uuid.uuid4().hex[:6]}"
    with Admin(boot) as admin:
        rf = min(3, len(admin.cluster().brokers))
        admin.create_topic(topic, 6, rf)
    members = [Consumer(boot, group_id=group, enable_auto_commit=False, heartbeat_interval_ms=500) for _ in range(args.members)]
    try:
        for c in members:
            c.subscribe([topic])
        formed = _poll_until(members, lambda: sum(len(c.assignment()) for c in members) == 6
                             and all(c.assignment() for c in members))
        print(f"group of {args.members} formed: {formed:.2f} s")
        leaving = members.pop()
        t0 = time.monotonic()
        leaving.close()
        closed = time.monotonic() - t0
        rebalanced = _poll_until(members, lambda: sum(len(c.assignment()) for c in members) == 6)
        print(f"rebalance after a member left (LeaveGroup): {closed + rebalanced:.2f} s")
        c = members[0]
        tp = sorted(c.assignment())[0]
        times = []
        for i in range(args.commits):
            s = time.perf_counter()
            c.commit({tp: i})
            times.append(time.perf_counter() - s)
        total = sum(times)
        print(f"synchronous commits: {args.commits / total:.0f}/s, median {statistics.median(times) * 1000:.2f} ms, "
              f"p99 {sorted(times)[int(len(times) * 0.99) - 1] * 1000:.2f} ms")
        assert c.committed(TopicPartition(tp.topic, tp.partition)) == args.commits - 1
    finally:
        for c in members:
            c.close()
        with Admin(boot) as admin:
            admin.delete_topic(topic)


if __name__ == "__main__":
    main()
