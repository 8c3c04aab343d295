"""How long the test harness's cluster takes to start, and a test's topic to be created.

    .venv-test/bin/python scripts/harness_start.py --runs 5 [--brokers 3] [--topics 5] [--links off]

Each run starts a cluster with ``minikafka.testing.start_cluster`` (ZooKeeper and N
brokers on free ports, until every broker knows the controller and every broker),
times ZooKeeper's part (until it serves) from the launcher's progress messages, creates
``--topics`` topics of 3 partitions (every leader elected) and stops the cluster.  Prints
one line per run, then the medians.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from minikafka.cluster import launcher  # noqa: E402
from minikafka.testing import start_cluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="clusters started one after the other (default 5)")
    parser.add_argument("--brokers", type=int, default=3, help="brokers per cluster (default 3)")
    parser.add_argument("--topics", type=int, default=5, help="topics created per cluster (default 5)")
    parser.add_argument("--links", choices=("auto", "on", "off"), default="auto",
                        help="brokers in cgroups for link faults (default auto: when root)")
    args = parser.parse_args()
    starts, zks, topics = [], [], []
    original_up = launcher.up
    for run in range(args.runs):
        marks: dict[str, float] = {}
        t0 = time.monotonic()

        def up(*a, **kw):
            kw["on_progress"] = lambda message: marks.setdefault(message.split()[1], time.monotonic() - t0)
            return original_up(*a, **kw)
        launcher.up = up
        try:
            cluster = start_cluster(brokers=args.brokers, links=args.links)
        finally:
            launcher.up = original_up
        start = time.monotonic() - t0
        zk = marks.get("for", start) - marks.get("ZooKeeper", 0.0)  # "waiting for registrations": ZooKeeper serves
        times = []
        try:
            for _ in range(args.topics):
                t = time.monotonic()
                cluster.create_topic(partitions=3)
                times.append(time.monotonic() - t)
        finally:
            cluster.stop()
        starts.append(start)
        zks.append(zk)
        topics += times
        print(f"run {run + 1}: cluster {start:.2f} s (ZooKeeper until it serves {zk:.2f} s), topics "
              + " ".join(f"{t * 1000:.0f}" for t in times) + " ms", flush=True)
    print(f"median of {args.runs} runs: cluster {statistics.median(starts):.2f} s "
          f"(ZooKeeper {statistics.median(zks):.2f} s), topic {statistics.median(topics) * 1000:.0f} ms "
          f"(of {len(topics)}); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
