#!/usr/bin/env python3
"""Example analytics job on minikafka, with Spark's own Kafka source or minikafka's.

    .venv/bin/python scripts/spark_job.py --topic orders --output /tmp/orders-report
    .venv/bin/python scripts/spark_job.py --bootstrap-server 127.0.0.1:9092 --topic orders --output out/
    .venv/bin/python scripts/spark_job.py --format kafka --bootstrap-server 127.0.0.1:29092 \
        --topic orders --output out/

Reads every committed record of a topic (offsets from the log start up to each
partition's high watermark) with ``spark.read.format("minikafka")`` through the brokers'
msgpack listeners, or with ``--format kafka`` through Spark's own Kafka source
(spark-sql-kafka-0-10, fetched by ``spark.jars.packages``) and the brokers' Kafka
listeners, then computes

* per-key counts (the key decoded as UTF-8; records without a key count as ``null``),
* records per minute of record timestamp,

writes both as Parquet under --output (``key_counts/`` and ``per_minute/``, replaced
if present), with --output-topic also writes the per-key counts back to the cluster
(``df.write.format(...)`` with the same format: key = the key, value = the count as text), and
prints a summary.  The cluster is the one recorded in --dir (default
``.minikafka``, as written by ``minikafka cluster up``) unless --bootstrap-server is given.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="spark_job.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST:PORT[,HOST:PORT...]")
    where.add_argument("--dir", default=".minikafka", help="cluster folder of `minikafka cluster up` (default .minikafka)")
    p.add_argument("--topic", required=True, help="topic to read (a comma list reads several)")
    p.add_argument("--output", required=True, help="folder for the Parquet results")
    p.add_argument("--output-topic", dest="output_topic", default=None,
                   help="also write the per-key counts to this topic (it must exist)")
    p.add_argument("--format", dest="fmt", choices=("minikafka", "kafka"), default="minikafka",
                   help="minikafka (default; no jar needed, the msgpack listeners) or kafka (Spark's own "
                        "source and sink; --bootstrap-server names the Kafka listeners)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--top", type=int, default=10, help="how many keys the summary lists (default 10)")
    return p.parse_args(argv)


def resolve_bootstrap(args: argparse.Namespace) -> str:
    if args.bootstrap_server:
        return args.bootstrap_server
    from minikafka.cluster.state import bootstrap_servers, load
    from minikafka.errors import ClientError

    try:
        if args.fmt == "kafka":
            kafka = [f"{b.host}:{b.kafka_port}" for _, b in sorted(load(args.dir).brokers.items()) if b.kafka_port]
            if not kafka:
                raise ClientError(f"the cluster in {args.dir} has no Kafka listeners")
            return ",".join(kafka)
        return bootstrap_servers(args.dir)
    except (ClientError, OSError) as exc:
        print(f"spark_job.py: error: {exc} (or pass --bootstrap-server)", file=sys.stderr)
        raise SystemExit(2) from None


def run_job(spark, bootstrap: str, topic: str, output: str | os.PathLike, top: int = 10,
            output_topic: str | None = None, fmt: str = "minikafka") -> dict:
    """Read ``topic``, write ``key_counts/`` and ``per_minute/`` Parquet under ``output``
    (and the key counts to ``output_topic``); return the summary (also printed).
    ``fmt`` "kafka" reads and writes with Spark's own Kafka source and sink (the session
    needs spark-sql-kafka-0-10: ``minikafka.spark.local_session(kafka=True)``)."""
    from pyspark.sql import functions as F

    import minikafka.spark

    started = time.perf_counter()
    minikafka.spark.register(spark)
    # the same options for both: Spark's Kafka source reads earliest..latest in batch
    # (latest = each partition's high watermark), minikafka's reads only committed records
    records = (spark.read.format(fmt)
               .option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", topic)
               .option("startingOffsets", "earliest")
               .option("endingOffsets", "latest")
               .load()
               .select(F.col("key").cast("string").alias("key"), "topic", "partition", "offset", "timestamp")
               .cache())
    try:
        ranges = (records.groupBy("topic", "partition")
                  .agg(F.count("*").alias("records"), F.min("offset").alias("first"), F.max("offset").alias("last"))
                  .orderBy("topic", "partition").collect())
        total = sum(r.records for r in ranges)
        key_counts = records.groupBy("key").agg(F.count("*").alias("records")).orderBy(F.desc("records"), "key")
        per_minute = (records.groupBy(F.date_trunc("minute", "timestamp").alias("minute"))
                      .agg(F.count("*").alias("records")).orderBy("minute"))
        out = Path(output)
        key_counts.write.mode("overwrite").parquet(str(out / "key_counts"))
        per_minute.write.mode("overwrite").parquet(str(out / "per_minute"))
        if output_topic:
            (key_counts.select("key", F.col("records").cast("string").alias("value"))
             .write.format(fmt).option("kafka.bootstrap.servers", bootstrap)
             .option("topic", output_topic).mode("append").save())
        top_keys = key_counts.limit(top).collect()
        distinct_keys = key_counts.count()
        minutes = per_minute.collect()
    finally:
        records.unpersist()
    took = time.perf_counter() - started

    print(f"topic {topic}: {total} committed records from {bootstrap} (format {fmt})")
    for r in ranges:
        print(f"  {r.topic}-{r.partition}: {r.records} records, offsets {r.first}..{r.last}")
    print(f"distinct keys: {distinct_keys}; top {len(top_keys)}:")
    for r in top_keys:
        print(f"  {'(null)' if r.key is None else r.key:<30} {r.records}")
    if minutes:
        busiest = max(minutes, key=lambda r: r.records)
        print(f"minutes: {len(minutes)} from {minutes[0].minute:%Y-%m-%d %H:%M} to {minutes[-1].minute:%Y-%m-%d %H:%M}; "
              f"busiest {busiest.minute:%Y-%m-%d %H:%M} with {busiest.records} records")
    print(f"wrote {out / 'key_counts'} and {out / 'per_minute'} (Parquet)"
          + (f" and {distinct_keys} key counts to topic {output_topic}" if output_topic else "") + f" in {took:.1f} s")
    return {
        "records": total,
        "partitions": {(r.topic, r.partition): (r.records, r.first, r.last) for r in ranges},
        "distinct_keys": distinct_keys,
        "top_keys": [(r.key, r.records) for r in top_keys],
        "minutes": [(r.minute, r.records) for r in minutes],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bootstrap = resolve_bootstrap(args)
    import minikafka.spark

    spark = minikafka.spark.local_session("minikafka-spark-job", args.master, kafka=args.fmt == "kafka")
    try:
        run_job(spark, bootstrap, args.topic, args.output, args.top, args.output_topic, args.fmt)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
