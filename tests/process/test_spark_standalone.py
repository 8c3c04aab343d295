"""The minikafka Spark source and sink on a Spark standalone cluster: a master and two
workers (``minikafka.spark.standalone``, what ``minikafka spark-cluster up`` starts), a
driver in its own process (tests/spark_standalone_driver.py, one SparkSession for the
file) with two executors, one per worker, and the real 3-broker ``cluster``.

The driver runs apart from this pytest process because a JVM holds one SparkContext and
the run's ``spark`` fixture (local[2]) may already hold it; it is also how a job reaches
a real cluster.
"""
from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from minikafka import Admin, Producer
from minikafka.spark import standalone
from process_helpers import wait_for
from test_spark_source import consume_committed, new_topic, produce

pytestmark = pytest.mark.process

DRIVER = Path(__file__).resolve().parents[1] / "spark_standalone_driver.py"


class Driver:
    """The driver process: one JSON command per line in, one ``RESULT`` line out.  A thread
    reads its stdout, so that a driver that hangs fails the test after ``timeout_s``."""

    def __init__(self, master_url: str, log: Path, timeout_s: float = 300) -> None:
        self.timeout_s = timeout_s
        self.log = open(log, "wb")
        self.log_path = log
        self.proc = subprocess.Popen([sys.executable, str(DRIVER), master_url], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            line = self._line()
            assert line == "READY", line
        except BaseException:
            self.proc.kill()  # its executors end with it
            self.proc.wait(timeout=10)
            self.log.close()
            raise

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith(("READY", "RESULT ", "ERROR ")):
                self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # the driver exited

    def _line(self) -> str:
        try:
            line = self.lines.get(timeout=self.timeout_s)
        except queue.Empty:
            raise AssertionError(f"the driver did not answer within {self.timeout_s:g} s; its log: "
                                 f"{self.log_path.read_text()[-3000:]}") from None
        if line is None:
            raise AssertionError(f"the driver exited ({self.proc.wait()}); its log: "
                                 f"{self.log_path.read_text()[-3000:]}")
        return line

    def call(self, op: str, **args) -> dict:
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        line = self._line()
        assert line.startswith("RESULT "), line
        return json.loads(line[len("RESULT "):])

    def stop(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except Exception:
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            self.log.close()


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    """A master and two workers (1 core, 512m each), stopped by pid after the file.  It is
    handed over once the master is ALIVE: the driver starts while the workers register."""
    dir = tmp_path_factory.mktemp("spark-cluster") / "spark"
    try:
        yield standalone.up(dir, workers=2, cores=1, memory="512m", wait_workers=False)
    finally:
        if (dir / standalone.STATE_FILE).exists():
            standalone.down(dir)


@pytest.fixture(scope="module")
def driver(spark_cluster, tmp_path_factory):
    """The driver, once it has an executor on each worker."""
    d = Driver(spark_cluster.master_url, tmp_path_factory.mktemp("spark-driver") / "driver.log")
    try:
        yield d
    finally:
        d.stop()


def consumer_fetched(port: int, topic: str) -> dict[int, float]:
    """minikafka_consumer_fetch_records_total per partition of ``topic`` on one broker (served as leader)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out = {}
    for labels, value in re.findall(r'^minikafka_consumer_fetch_records_total\{([^}]*)\} (\S+)$', text, re.M):
        fields = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if fields.get("topic") == topic:
            out[int(fields["partition"])] = float(value)
    return out


def test_the_cluster_runs_executors_on_both_workers(spark_cluster, driver):
    info = driver.call("info")
    st = standalone.status(spark_cluster.dir)
    assert [w["registered"] for w in st["workers"]] == [True, True]
    assert [a["id"] for a in st["applications"]] == [info["app_id"]]
    # each worker runs one executor of the driver's application, in its own JVM
    for worker_id in spark_cluster.workers:
        executors = standalone.worker_json(spark_cluster, worker_id)["executors"]
        assert [e["appid"] for e in executors] == [info["app_id"]], (worker_id, executors)
    assert info["executors"] == ["0", "1"]


def test_committed_records_are_read_by_the_executors_from_each_leader(driver, cluster):
    # partition p is led by broker p+1
    topic = new_topic(cluster.bootstrap, partitions=3, assignment={0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
                      prefix="standalone")
    with Producer(cluster.bootstrap, transactional_id=f"standalone-{topic}") as p:
        p.init_transactions()
        p.begin_transaction()
        for i in range(3000):
            p.send(topic, f"c{i}", partition=i % 3)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(300):
            p.send(topic, f"a{i}", partition=i % 3)
        p.flush()
        p.abort_transaction()

    read = driver.call("read", bootstrap=cluster.bootstrap, topic=topic)
    assert Counter(v for _, _, v in read["records"]) == Counter(f"c{i}" for i in range(3000)), \
        "every committed record once, no aborted one"
    # the partitions were read in the executors' Python workers, not in the driver
    info = driver.call("info")
    assert len(read["tasks"]) == 3
    assert {t["executor_id"] for t in read["tasks"]} <= set(info["executors"])
    assert info["pid"] not in {t["pid"] for t in read["tasks"]}
    # each partition was read from its leader: only the leader served it to a consumer
    for broker_id, port in cluster.brokers.items():
        fetched = consumer_fetched(port, topic)
        led = broker_id - 1
        assert fetched.get(led, 0) >= 1000, (broker_id, fetched)
        assert all(n == 0 for p, n in fetched.items() if p != led), (broker_id, fetched)


def test_a_leader_killed_between_two_reads(driver, cluster):
    """Every committed record exactly once, before and after partition 0's leader dies."""
    topic = new_topic(cluster.bootstrap, partitions=3, assignment={0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
                      prefix="standalone-kill")
    produce(cluster.bootstrap, topic, [{"value": f"b{i}".encode(), "partition": i % 3} for i in range(1500)])
    first = driver.call("read", bootstrap=cluster.bootstrap, topic=topic)
    assert Counter(v for _, _, v in first["records"]) == Counter(f"b{i}" for i in range(1500))
    cluster.kill(1)
    try:
        produce(cluster.bootstrap, topic, [{"value": f"d{i}".encode(), "partition": i % 3} for i in range(1500)])
        second = driver.call("read", bootstrap=cluster.bootstrap, topic=topic)
        assert Counter(v for _, _, v in second["records"]) == \
            Counter([f"b{i}" for i in range(1500)] + [f"d{i}" for i in range(1500)])
        assert len({(p, o) for p, o, _ in second["records"]}) == 3000
    finally:
        cluster.start(1)
        with Admin(cluster.bootstrap) as admin:
            wait_for(lambda: all(len(p.isr) == 3 for d in admin.describe_topics([topic]) for p in d.partitions),
                     60, interval_s=0.5, message="broker 1 back in the ISR")


def test_sparks_own_kafka_format_through_the_executors(driver, cluster):
    """format("kafka") on the brokers' Kafka listeners: the executors load spark-sql-kafka-0-10
    from the driver and read what minikafka's consumer reads."""
    topic = new_topic(cluster.bootstrap, partitions=3, prefix="standalone-kafka")
    produce(cluster.bootstrap, topic, [{"value": f"k{i}".encode(), "partition": i % 3} for i in range(900)])
    read = driver.call("read", bootstrap=cluster.kafka_bootstrap, topic=topic, fmt="kafka")
    expected = sorted([p, o, v.decode()] for _, p, o, _, v, _, _ in consume_committed(cluster.bootstrap, topic))
    assert sorted(read["records"]) == expected and len(expected) == 900
    assert {t["executor_id"] for t in read["tasks"]} <= set(driver.call("info")["executors"])


def test_the_sink_writes_through_the_executors(driver, cluster):
    sink = new_topic(cluster.bootstrap, partitions=2, prefix="standalone-sink")
    driver.call("write", bootstrap=cluster.bootstrap, topic=sink, rows=2000)
    written = Counter(r[4] for r in consume_committed(cluster.bootstrap, sink))
    assert written == Counter(f"v{i}".encode() for i in range(2000))
