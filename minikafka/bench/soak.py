"""A long-running load on a cluster, to see that retention and compaction keep each
broker's memory flat: every minute it prints each broker's RSS, the bytes produced so far
and the size of the topics' logs.

    minikafka cluster up --dir /tmp/soak --storage memory --zookeeper-port 2291 --base-port 9192 \\
        --kafka-base-port 29192 --config log.retention.check.interval.ms=5000 --config log.cleaner.backoff.ms=5000
    .venv/bin/python scripts/soak.py --dir /tmp/soak --minutes 30 --rate 5000
    minikafka cluster down --dir /tmp/soak

Two topics (3 partitions, replication factor 3, 1 MiB segments): ``soak-delete`` with
retention.bytes = 8 MiB per partition, and ``soak-compact`` (cleanup.policy=compact) with
1,000 keys.  Records are 100-byte values, produced with acks=all at ``--rate`` records/s
split between the two topics.  The last line compares each broker's RSS at the end with
its RSS after the first ``--warmup`` minutes.
"""
from __future__ import annotations

import argparse
import time

from ..client.sync import Admin, Producer
from ..cluster.state import load

SEGMENT = 1 << 20


def rss_bytes(pid: int) -> int:
    """The resident memory of process ``pid`` (from /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run the soak, printing a line a minute."""
    ap = argparse.ArgumentParser(prog="soak.py", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=".minikafka")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--rate", type=int, default=5000, help="records per second, both topics together")
    ap.add_argument("--warmup", type=float, default=5.0, help="minutes before the baseline RSS is taken")
    args = ap.parse_args(argv)

    state = load(args.dir)
    bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in state.brokers.values())
    pids = {b.id: b.pid for b in state.brokers.values()}
    with Admin(bootstrap) as admin:
        existing = set(admin.list_topics())
        if "soak-delete" not in existing:
            admin.create_topic("soak-delete", partitions=3, replication_factor=3,
                               config={"segment.bytes": str(SEGMENT), "retention.bytes": str(8 * SEGMENT)})
        if "soak-compact" not in existing:
            admin.create_topic("soak-compact", partitions=3, replication_factor=3,
                               config={"segment.bytes": str(SEGMENT), "cleanup.policy": "compact"})
    value = b"v" * 100
    produced = 0
    start = time.monotonic()
    next_report = start + 60
    baseline: dict[int, int] = {}
    print("minute\tproduced_MB\t" + "\t".join(f"rss_b{b}_MB" for b in sorted(pids)) + "\tlog_MB(delete,compact)")
    with Producer(bootstrap, acks="all", linger_ms=5) as producer, Admin(bootstrap) as admin:
        while time.monotonic() - start < args.minutes * 60:
            tick = time.monotonic()
            n = args.rate // 10
            for i in range(n):
                if i % 2:
                    producer.send("soak-delete", value)
                else:
                    producer.send("soak-compact", value, key=b"key-%d" % ((produced + i) % 1000))
            produced += n
            producer.flush()
            if time.monotonic() >= next_report:
                next_report += 60
                minute = (time.monotonic() - start) / 60
                rss = {b: rss_bytes(p) for b, p in pids.items()}
                if minute >= args.warmup and not baseline:
                    baseline = rss
                sizes = []
                for topic in ("soak-delete", "soak-compact"):
                    (desc,) = admin.describe_topics([topic])
                    sizes.append(sum(max(0, p.size_bytes) for p in desc.partitions) / 1e6)
                print(f"{minute:.0f}\t{produced * 100 / 1e6:.0f}\t" +
                      "\t".join(f"{rss[b] / 1e6:.0f}" for b in sorted(pids)) +
                      f"\t{sizes[0]:.1f},{sizes[1]:.1f}", flush=True)
            time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
    end = {b: rss_bytes(p) for b, p in pids.items()}
    print(f"records={produced} bytes={produced * 100} " + " ".join(
        f"broker{b}_rss_MB={baseline.get(b, 0) / 1e6:.0f}->{end[b] / 1e6:.0f}" for b in sorted(pids)))

