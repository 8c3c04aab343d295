"""scripts/kafka-jars.sh: both generations' jars are fetched once and run Kafka's tools."""
from __future__ import annotations

import re
import subprocess

import pytest

from kafka_tools import GENERATIONS, JARS_SCRIPT, REPO, run_tool, tool_class


def _pinned() -> dict[str, str]:
    text = (REPO / "scripts" / "kafka-versions.env").read_text()
    return dict(re.findall(r"^(\w+)=(\S+)$", text, re.M))


@pytest.mark.parametrize("generation", GENERATIONS)
def test_jars_of_each_generation_run_the_tools(kafka_jars, generation):
    jars = kafka_jars(generation)
    version = _pinned()["KAFKA_4_VERSION" if generation == "4" else "KAFKA_3_9_VERSION"]
    assert jars.name == version
    for artifact in ("kafka-clients", "kafka-tools", "kafka-streams", "kafka_2.13"):
        assert (jars / f"{artifact}-{version}.jar").exists(), artifact
    # A second call with the cache complete prints the same directory and fetches nothing.
    again = subprocess.run(["bash", str(JARS_SCRIPT), generation], capture_output=True,
                           text=True, timeout=30)
    assert again.returncode == 0 and again.stdout.strip() == str(jars)
    proc = run_tool(jars, tool_class(generation, "kafka-topics"), "--version", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(version), proc.stdout


def test_unknown_generation_is_refused():
    proc = subprocess.run(["bash", str(JARS_SCRIPT), "2.8"], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage" in proc.stderr
