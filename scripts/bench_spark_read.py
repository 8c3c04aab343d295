#!/usr/bin/env python3
"""Batch read rate of the minikafka Spark source: records/s of a ``count()``.

    .venv/bin/python scripts/bench_spark_read.py --bootstrap-server 127.0.0.1:9092
    .venv/bin/python scripts/bench_spark_read.py --start-cluster --dir /tmp/bench   # starts one, stops it at the end

Uses the cluster given by --bootstrap-server (or the one recorded in --dir; with
--start-cluster a fresh one is started there, on free ports outside the kernel's
ephemeral range unless --base-port / --zookeeper-port name them).  If the topic is empty it first
produces --records records of --value-size bytes with ``Producer(acks=1,
linger_ms=20)`` over --partitions partitions.  Then it times
``spark.read.format("minikafka")...load().count()`` --runs times on one
SparkSession (local[2] by default) and prints one line per run and a summary.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", dest="bootstrap_server", default=None, metavar="HOST:PORT[,...]")
    p.add_argument("--dir", default=".minikafka", help="cluster folder (default .minikafka)")
    p.add_argument("--start-cluster", action="store_true",
                   help="start a 3-broker cluster in --dir (and stop it at the end)")
    p.add_argument("--base-port", dest="base_port", type=int, default=None,
                   help="with --start-cluster (default: free ports outside the ephemeral range)")
    p.add_argument("--zookeeper-port", dest="zookeeper_port", type=int, default=None,
                   help="with --start-cluster (default: a free port outside the ephemeral range)")
    p.add_argument("--topic", default="spark-bench")
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--value-size", dest="value_size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--replication-factor", dest="replication_factor", type=int, default=3)
    p.add_argument("--min-partitions", dest="min_partitions", type=int, default=None,
                   help="the source's minPartitions option (default: one Spark partition per topic-partition)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--master", default="local[2]")
    return p.parse_args(argv)


def produce_if_empty(bootstrap: str, args: argparse.Namespace) -> None:
    from minikafka import Admin, Consumer, Producer, TopicPartition
    from minikafka.errors import TopicAlreadyExistsError

    with Admin(bootstrap) as admin:
        try:
            admin.create_topic(args.topic, args.partitions, args.replication_factor)
            print(f"created topic {args.topic}: {args.partitions} partitions, RF {args.replication_factor}")
        except TopicAlreadyExistsError:
            pass
    with Consumer(bootstrap) as consumer:
        parts = sorted(consumer.partitions_for_topic(args.topic))
        ends = consumer.end_offsets([TopicPartition(args.topic, p) for p in parts])
    existing = sum(ends.values())
    if existing:
        print(f"topic {args.topic} already holds {existing} committed records: not producing")
        return
    value = os.urandom(args.value_size // 2 + 1).hex()[: args.value_size].encode()
    start = time.perf_counter()
    with Producer(bootstrap, acks=1, linger_ms=20) as producer:
        for _ in range(args.records):
            producer.send(args.topic, value)
        producer.flush()
    took = time.perf_counter() - start
    print(f"produced {args.records} records of {args.value_size} bytes in {took:.1f} s "
          f"({args.records / took:,.0f} records/s, acks=1, linger_ms=20)")
    # acks=1 answers before the followers have the records: wait until they are committed.
    with Consumer(bootstrap) as consumer:
        tps = [TopicPartition(args.topic, p) for p in sorted(consumer.partitions_for_topic(args.topic))]
        deadline = time.monotonic() + 120
        while sum(consumer.end_offsets(tps).values()) < args.records:
            if time.monotonic() > deadline:
                raise SystemExit("records were not all committed (high watermarks) within 120 s")
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = False
    if args.bootstrap_server:
        bootstrap = args.bootstrap_server
    else:
        from minikafka.cluster import launcher
        from minikafka.cluster.state import bootstrap_servers

        if args.start_cluster:
            from minikafka.cluster import free_ports

            # refuses a folder whose cluster is running
            base = args.base_port or free_ports.free_port_block(3)
            launcher.up(args.dir, brokers=3, base_port=base,
                        zookeeper_port=args.zookeeper_port or free_ports.free_port(),
                        kafka_base_port=None if args.base_port else free_ports.free_port_block(3),
                        on_warning=lambda message: print(f"warning: {message}", file=sys.stderr))
            started = True
        bootstrap = bootstrap_servers(args.dir)
    try:
        produce_if_empty(bootstrap, args)
        return run_spark(bootstrap, args)
    finally:
        if started:
            from minikafka.cluster import launcher

            launcher.down(args.dir)


def run_spark(bootstrap: str, args: argparse.Namespace) -> int:
    import minikafka.spark

    t0 = time.perf_counter()
    spark = minikafka.spark.local_session("minikafka-bench", args.master)
    print(f"SparkSession ({args.master}) started in {time.perf_counter() - t0:.1f} s")
    try:
        reader = (spark.read.format("minikafka").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", args.topic))
        if args.min_partitions:
            reader = reader.option("minPartitions", str(args.min_partitions))
        rates = []
        for run in range(1, args.runs + 1):
            start = time.perf_counter()
            n = reader.load().count()
            took = time.perf_counter() - start
            rates.append(n / took)
            print(f"run {run}: count() = {n} in {took:.2f} s: {n / took:,.0f} records/s")
        warm = sorted(rates[1:]) or rates
        median = warm[len(warm) // 2] if len(warm) % 2 else (warm[len(warm) // 2 - 1] + warm[len(warm) // 2]) / 2
        print(f"median of warm runs {median:,.0f} records/s, best {max(rates):,.0f} records/s, "
              f"first run (starts Spark's Python workers) {rates[0]:,.0f} records/s "
              f"(topic {args.topic}, {args.partitions} partitions, master {args.master}"
              f"{', minPartitions ' + str(args.min_partitions) if args.min_partitions else ''})")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
