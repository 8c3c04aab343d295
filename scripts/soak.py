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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikafka.bench.soak import main  # noqa: E402

if __name__ == "__main__":
    main()
