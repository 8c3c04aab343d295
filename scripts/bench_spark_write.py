#!/usr/bin/env python3
"""Write rate of the minikafka Spark sink: rows/s of ``df.write.format("minikafka")``.

    .venv/bin/python scripts/bench_spark_write.py --bootstrap-server 127.0.0.1:9092
    .venv/bin/python scripts/bench_spark_write.py --dir .minikafka --rows 1000000 --runs 3

Creates --topic (--partitions, RF 3, min.insync.replicas=2) if it is missing, then
--runs times writes --rows rows of a --value-size-byte value (from ``spark.range``,
--spark-partitions Spark partitions, so that many producers) with the sink's
defaults (acks=all, idempotent), and prints rows/s per run and the median.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", dest="bootstrap_server", default=None, metavar="HOST:PORT[,...]")
    p.add_argument("--dir", default=".minikafka", help="cluster folder (default .minikafka)")
    p.add_argument("--topic", default="spark-sink-bench")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--value-size", dest="value_size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--spark-partitions", dest="spark_partitions", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--master", default="local[2]")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.bootstrap_server:
        bootstrap = args.bootstrap_server
    else:
        from minikafka.cluster.state import bootstrap_servers

        bootstrap = bootstrap_servers(args.dir)
    from minikafka import Admin
    from minikafka.errors import TopicAlreadyExistsError

    with Admin(bootstrap) as admin:
        try:
            admin.create_topic(args.topic, args.partitions, 3, config={"min.insync.replicas": "2"})
        except TopicAlreadyExistsError:
            pass

    import minikafka.spark

    spark = minikafka.spark.local_session("minikafka-sink-bench", args.master)
    try:
        df = spark.range(0, args.rows, numPartitions=args.spark_partitions).selectExpr(
            f"rpad(CAST(id AS STRING), {args.value_size}, 'x') AS value")
        rates = []
        for run in range(1, args.runs + 1):
            start = time.perf_counter()
            (df.write.format("minikafka").option("kafka.bootstrap.servers", bootstrap)
               .option("topic", args.topic).mode("append").save())
            took = time.perf_counter() - start
            rates.append(args.rows / took)
            print(f"run {run}: {args.rows} rows in {took:.2f} s = {args.rows / took:,.0f} rows/s", flush=True)
        print(f"median {statistics.median(rates):,.0f} rows/s over {args.runs} runs "
              f"({args.rows} rows of {args.value_size} bytes, {args.spark_partitions} Spark partitions, acks=all)")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
