"""The Java program of examples/java, built with Maven and run against a 3-broker cluster
through its Kafka listener while the test kills a broker: Kafka's own AdminClient, an
idempotent KafkaProducer, a KafkaConsumer group of 3 and a Kafka Streams word count.

The program prints one JSON event per line; the test reacts to them (it kills the leader of
partition 0 once a third of the records are acknowledged, while the rest are in flight) and
checks what they report: every acknowledged record read by the group, no record stored twice,
each member holding one partition, and the word counts equal to the text's.
"""
from __future__ import annotations

import random
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from json_lines import JsonLinesProcess

pytestmark = pytest.mark.process

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "java"
RECORDS = 3000


def build_example() -> list[str]:
    """``mvn package`` in examples/java (offline first, so a warm ~/.m2 needs no network); the java -cp argv."""
    mvn = shutil.which("mvn")
    assert mvn, "Maven (mvn) is needed to build examples/java; .ci/run installs it"
    for offline in (["-o"], []):
        r = subprocess.run([mvn, "-q", "-B", *offline, "package"], cwd=EXAMPLE, capture_output=True, text=True,
                           timeout=600, stdin=subprocess.DEVNULL)
        if r.returncode == 0:
            break
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    classpath = (EXAMPLE / "target" / "classpath.txt").read_text().strip()
    return ["java", "-cp", f"{EXAMPLE / 'target' / 'classes'}:{classpath}", "minikafka.example.App"]


@pytest.fixture(scope="module")
def example_argv() -> list[str]:
    return build_example()


def text_lines(count: int = 300) -> list[str]:
    rnd = random.Random(30)
    words = ["kafka", "broker", "Replica", "leader", "follower", "ISR", "offset", "commit", "group", "stream",
             "zookeeper", "controller", "epoch", "watermark", "batch"]
    return [" ".join(rnd.choice(words) + rnd.choice(["", ",", ".", "!"]) for _ in range(rnd.randint(1, 12)))
            for _ in range(count)]


def test_java_program_through_a_broker_kill(make_cluster, example_argv, tmp_path):
    c = make_cluster(brokers=3)
    lines = text_lines()
    (tmp_path / "text.txt").write_text("\n".join(lines) + "\n")
    app = JsonLinesProcess([*example_argv, "all", "--bootstrap", c.kafka_bootstrap, "--records", str(RECORDS),
                            "--rate", "1000", "--text", str(tmp_path / "text.txt"), "--group", "example-group",
                            "--app-id", "wordcount-example"], tmp_path / "app.log")
    try:
        cluster_event = app.wait_event(lambda e: e["event"] == "cluster", 120, "the AdminClient's cluster")
        assert cluster_event["brokers"] == [1, 2, 3] and cluster_event["controller"] in (1, 2, 3)
        records_topic = app.wait_event(lambda e: e["event"] == "topic" and e["topic"] == "example-records", 120,
                                       "the records topic described")
        parts = records_topic["partitions"]
        assert [p["partition"] for p in parts] == [0, 1, 2]
        assert all(sorted(p["replicas"]) == [1, 2, 3] and sorted(p["isr"]) == [1, 2, 3] for p in parts)
        victim = parts[0]["leader"]
        app.wait_event(lambda e: e["event"] == "produce-progress", 120, "a third of the records acknowledged")
        c.kill(victim, "KILL")
        done = app.wait_event(lambda e: e["event"] == "done", 400, "the program's last step")
        assert app.wait_exit(60) == 0, app.tail()
    finally:
        app.stop()

    (produced,) = app.select(lambda e: e["event"] == "produced")
    assert produced["errors"] == {} and produced["acked"] == RECORDS, produced["errors"]
    acked = set(produced["acked_values"])

    (consumed,) = app.select(lambda e: e["event"] == "consumed")
    assert consumed["failures"] == []
    members = consumed["members"]
    assert sorted(p for m in members for p in m["partitions"]) == [0, 1, 2], "the 3 partitions split over the group"
    assert all(len(m["partitions"]) == 1 for m in members), [m["partitions"] for m in members]
    stored: dict[tuple[int, int], int] = {}
    for m in members:
        last: dict[int, int] = {}
        for partition, offset, value in m["records"]:
            assert offset > last.get(partition, -1), "each member reads a partition in offset order"
            last[partition] = offset
            assert stored.setdefault((partition, offset), int(value)) == int(value)
    values = Counter(stored.values())
    assert not set(acked) - set(values), f"acknowledged records not read: {sorted(set(acked) - set(values))[:10]}"
    assert [v for v, n in values.items() if n > 1] == [], "the idempotent producer stored no record twice"

    (wordcount,) = app.select(lambda e: e["event"] == "wordcount")
    expected = Counter(w for line in lines for w in re.split(r"\W+", line.lower()) if w)
    assert wordcount["expected"] == dict(expected)
    assert wordcount["counts"] == dict(expected), "at-least-once: with no failure during the run, exact counts"
    assert "RUNNING" in wordcount["states"] and "ERROR" not in wordcount["states"]
    assert done["step"] == "all"
