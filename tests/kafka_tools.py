"""Apache Kafka's own Java tools and client jars, fetched by scripts/kafka-jars.sh.

* ``GENERATIONS``: the client generations tested, ``"4"`` (the newest 4.x) and ``"3.9"``.
* ``kafka_jars`` (session fixture): ``kafka_jars(generation) -> Path``, the jar directory
  of that generation; the script runs at most once per generation and session (it does
  nothing when its cache is complete).
* ``tool_class(generation, name)``: the class behind one of Kafka's bin/*.sh scripts in
  that generation (some 3.9 tools still live in Kafka's core, package ``kafka.``).
* ``run_tool(jars, cls, *args, timeout=...)``: ``java -Xmx256m -cp "$JARS/*" cls args``,
  logging warnings only, as a CompletedProcess with text stdout and stderr.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
JARS_SCRIPT = REPO / "scripts" / "kafka-jars.sh"
GENERATIONS = ("4", "3.9")

# bin/<script>.sh -> class, per generation (Kafka's bin scripts at the pinned versions).
_TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
}
_TOOLS_3_9 = {
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-broker-api-versions": "kafka.admin.BrokerApiVersionsCommand",
}


def tool_class(generation: str, script: str) -> str:
    """The main class of Kafka's ``bin/<script>.sh`` in that generation."""
    if generation == "3.9" and script in _TOOLS_3_9:
        return _TOOLS_3_9[script]
    return _TOOLS[script]


def fetch_jars(generation: str) -> Path:
    """Run scripts/kafka-jars.sh for one generation; the jar directory it printed."""
    proc = subprocess.run(["bash", str(JARS_SCRIPT), generation], capture_output=True,
                          text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"kafka-jars.sh {generation} failed:\n{proc.stderr[-4000:]}")
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert (path / ".complete").exists(), path
    return path


@pytest.fixture(scope="session")
def kafka_jars():
    """``kafka_jars(generation) -> Path``: the jars of ``"4"`` or ``"3.9"``, fetched once."""
    cache: dict[str, Path] = {}

    def get(generation: str) -> Path:
        if generation not in cache:
            cache[generation] = fetch_jars(generation)
        return cache[generation]

    return get


JAVA_LOGGING = [
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-Dorg.slf4j.simpleLogger.logFile=System.err",
    "-Dlog4j2.level=WARN",
]


def run_tool(jars: Path, cls: str, *args: str, timeout: float = 120,
             input: str | None = None, java_opts: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run one of Kafka's Java tools (or any main class) from the jar directory ``jars``."""
    cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           *JAVA_LOGGING, *java_opts, "-cp", f"{jars}/*", cls, *args]
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_OPTS", "CLASSPATH")}
    if input is None:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          input=input, env=env)
