"""Spark's own Kafka source and sink (``format("kafka")``): the spark-sql-kafka-0-10 jar.

Spark does not ship its Kafka connector; it comes from Maven Central as
``org.apache.spark:spark-sql-kafka-0-10_2.13:<the PySpark version>`` with its
dependencies (kafka-clients, commons-pool2, spark-token-provider-kafka-0-10).
A session gets it in one of two ways:

* ``spark.jars.packages`` (the default): Spark's Ivy resolves it at the session's start
  into its cache outside the project (``~/.ivy2.5.2``), downloading only the first time;
* ``spark.jars`` from a folder of jars resolved earlier (``MINIKAFKA_SPARK_KAFKA_JARS``,
  or ``jars_dir=``): no network at run time, as in the spark image.

Resolve ahead of time (a CI warm-up, a container build):

    python -m minikafka.spark.kafka_jars              # into the Ivy cache
    python -m minikafka.spark.kafka_jars --into DIR   # and copy the jars into DIR
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
JARS_ENV = "MINIKAFKA_SPARK_KAFKA_JARS"


def pyspark_version() -> str:
    import pyspark

    return pyspark.__version__


def package(version: str | None = None) -> str:
    """The Maven coordinate of Spark's Kafka connector for this PySpark (or ``version``)."""
    return f"{ARTIFACT}:{version or pyspark_version()}"


def jars_in(folder: str | os.PathLike) -> list[str]:
    """The jar files of a folder filled by ``--into`` (sorted); an error if it holds none."""
    jars = sorted(str(p) for p in Path(folder).glob("*.jar"))
    if not jars:
        raise FileNotFoundError(f"no jar files in {folder} (fill it with: python -m minikafka.spark.kafka_jars --into {folder})")
    return jars


def session_configs(jars_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """The SparkSession configs that bring the connector: ``spark.jars`` from ``jars_dir`` (or
    the folder named by MINIKAFKA_SPARK_KAFKA_JARS), else ``spark.jars.packages``."""
    folder = jars_dir or os.environ.get(JARS_ENV)
    if folder:
        return {"spark.jars": ",".join(jars_in(folder))}
    return {"spark.jars.packages": package()}


def spark_submit() -> str:
    import pyspark

    home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    return os.path.join(home, "bin", "spark-submit")


def resolve(into: str | os.PathLike | None = None, ivy_home: str | os.PathLike | None = None,
            timeout_s: float = 600) -> list[str]:
    """Resolve the connector with Spark's own Ivy (``spark-submit --packages``, running an
    empty Python program: no SparkContext is started).  With ``into`` the resolved jars are
    copied there (resolved in a fresh Ivy home, so that the folder holds exactly them).
    Returns the jar files of ``into``, or [] when only the cache was filled."""
    with tempfile.TemporaryDirectory(prefix="minikafka-kafka-jars-") as tmp:
        empty = Path(tmp) / "empty.py"
        empty.write_text("")
        home = Path(tmp) / "ivy" if into is not None and ivy_home is None else ivy_home
        cmd = [spark_submit(), "--master", "local[1]", "--packages", package(),
               "--conf", "spark.ui.enabled=false"]
        if home is not None:
            cmd += ["--conf", f"spark.jars.ivy={home}"]
        env = dict(os.environ, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
        # spark-submit looks up this host's name; in a container build it may not resolve
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        env.setdefault("SPARK_LOCAL_HOSTNAME", "localhost")
        out = subprocess.run([*cmd, str(empty)], capture_output=True, text=True, timeout=timeout_s, env=env)
        if out.returncode != 0:
            raise RuntimeError(f"resolving {package()} failed ({out.returncode}):\n{out.stderr[-3000:]}")
        if into is None:
            return []
        dest = Path(into)
        dest.mkdir(parents=True, exist_ok=True)
        shipped = set(os.listdir(os.path.join(os.path.dirname(spark_submit()), "..", "jars")))
        for jar in (Path(home) / "jars").glob("*.jar"):  # type: ignore[arg-type]
            # Ivy names a jar "group_artifact-version.jar": skip those PySpark already ships
            if jar.name.split("_", 1)[-1] not in shipped:
                shutil.copy2(jar, dest / jar.name)
        return jars_in(dest)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minikafka.spark.kafka_jars",
                                description="Resolve Spark's Kafka connector (spark-sql-kafka-0-10) for this PySpark.")
    p.add_argument("--into", metavar="DIR", help="copy the resolved jars into DIR (for spark.jars / "
                                                 f"{JARS_ENV})")
    p.add_argument("--print", action="store_true", help="only print the Maven coordinate")
    args = p.parse_args(argv)
    if args.print:
        print(package())
        return 0
    started = time.monotonic()
    jars = resolve(into=args.into)
    where = f"{len(jars)} jars in {args.into}" if args.into else "the Ivy cache"
    print(f"{package()}: resolved into {where} in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
