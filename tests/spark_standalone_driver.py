"""A Spark driver on a standalone cluster, for tests/process/test_spark_standalone.py.

    python tests/spark_standalone_driver.py spark://127.0.0.1:PORT

It runs in its own process, as a job submitted to a cluster does (a JVM holds one
SparkContext, and the test run's own SparkSession on local[2] may already be up).  It
builds one SparkSession on the given master, waits for 2 executors, then answers one
command per line of stdin (JSON) with one line ``RESULT {json}`` on stdout (or
``ERROR message``):

* ``{"op": "read", "bootstrap": B, "topic": T, "fmt": F}``: every record of T with
  ``format(F)`` (``minikafka``, the default, or Spark's own ``kafka``: the session has
  spark-sql-kafka-0-10, which the executors fetch from the driver) and
  ``kafka.isolation.level=read_committed``, as
  ``{"records": [[partition, offset, value], ...], "tasks": [{pid, executor_id}, ...]}``:
  the pid of the Python worker that handled each Spark partition and the id of the
  executor JVM it runs under;
* ``{"op": "write", "bootstrap": B, "topic": T, "rows": N}``: N rows ``v0..v{N-1}``
  through ``df.write.format("minikafka")``;
* ``{"op": "info"}``: the driver's pid, the application id and the executors' ids.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def executor_of(pid: int) -> str | None:
    """The ``--executor-id`` of the executor JVM above ``pid`` (a Python worker), by /proc."""
    while pid > 1:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in argv:
            return argv[argv.index(b"--executor-id") + 1].decode()
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent
    return None


def read(spark, bootstrap: str, topic: str, fmt: str = "minikafka") -> dict:
    df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("kafka.isolation.level", "read_committed").load())

    def tag(rows):
        import os as _os

        me = {"pid": _os.getpid(), "executor_id": executor_of(_os.getpid())}
        yield ("task", json.dumps(me))
        for r in rows:
            yield ("record", json.dumps([r.partition, r.offset, bytes(r.value).decode()]))

    out = df.select("partition", "offset", "value").rdd.mapPartitions(tag).collect()
    return {"records": [json.loads(v) for k, v in out if k == "record"],
            "tasks": [json.loads(v) for k, v in out if k == "task"]}


def write(spark, bootstrap: str, topic: str, rows: int) -> dict:
    df = spark.range(rows).selectExpr("CONCAT('v', CAST(id AS STRING)) AS value").repartition(2)
    df.write.format("minikafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic) \
        .mode("append").save()
    return {"rows": rows}


def executors(spark) -> list[str]:
    """The ids of the application's executors (the driver is not one)."""
    ids = spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")
    return sorted(i for i in ids.split(",") if i)


def main() -> int:
    (master,) = sys.argv[1:]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import minikafka.spark
    from minikafka.spark.kafka_jars import session_configs

    builder = SparkSession.builder
    for key, value in session_configs().items():  # Spark's own format("kafka")
        builder = builder.config(key, value)
    for key, value in minikafka.spark.driver_address(master).items():  # loopback: the executors are here
        builder = builder.config(key, value)
    spark = (builder.master(master).appName("minikafka-standalone-test")
             .config("spark.executor.memory", "512m")
             .config("spark.executor.cores", "1")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    minikafka.spark.register(spark)
    deadline = time.monotonic() + 120
    while len(executors(spark)) < 2:
        if time.monotonic() > deadline:
            print(f"ERROR only {executors(spark)} executors registered within 120 s", flush=True)
            return 1
        time.sleep(0.2)
    print("READY", flush=True)
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            op = cmd.pop("op")
            try:
                if op == "read":
                    result = read(spark, **cmd)
                elif op == "write":
                    result = write(spark, **cmd)
                else:
                    result = {"pid": os.getpid(), "app_id": spark.sparkContext.applicationId,
                              "executors": executors(spark)}
                print("RESULT " + json.dumps(result), flush=True)
            except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
                print("ERROR " + " ".join(str(exc).split())[:2000], flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
